/* Plain C helpers for rotate.h: one lane (SINPE_W = 1), the reference every other
   instruction set reproduces bit for bit. Included by fill.h, before rotate.h. */
#define SINPE_ISA_NAME c
#define SINPE_W 1
#define SINPE_ATTR
#define SINPE_VD double

static inline double sinpe_c_load(const double *p) { return *p; }
static inline double sinpe_c_set1(double v) { return v; }
static inline double sinpe_c_add(double a, double b) { return a + b; }
static inline double sinpe_c_sub(double a, double b) { return a - b; }
static inline double sinpe_c_mul(double a, double b) { return a * b; }
/* the operand order of minpd/maxpd: min(v, 1) is v < 1 ? v : 1 */
static inline double sinpe_c_min(double a, double b) { return a < b ? a : b; }
static inline double sinpe_c_max(double a, double b) { return a > b ? a : b; }

/* The correct-rounding test (fill.h, "Narrow types"): sinpe__near, one lane; within: acc
   within the bound. */
static inline double sinpe_c_closest(double acc, double c, double s, double keep, double half,
                                  double kappa, const int f16)
{
    return sinpe__near(acc, c, s, keep, half, kappa, 0.0, f16);
}
static inline int sinpe_c_within(double acc, double bound) { return acc <= bound; }

/* One value to its place, converted once: store; dup (the value twice, adjacent);
   pairs (a then b, adjacent). Through memcpy: a caller's out= may be unaligned for T (NumPy
   allows it), and memcpy is a plain store where the machine allows one, never undefined. */
#define SINPE__C_STORES(SFX, T, CONVERT)                                                    \
    static inline void sinpe_c_store_##SFX(T *d, double v)                                \
    {                                                                                     \
        T x = CONVERT(v);                                                                 \
        memcpy(d, &x, sizeof x);                                                          \
    }                                                                                     \
    static inline void sinpe_c_dup_##SFX(T *d, double v)                                  \
    {                                                                                     \
        T x[2];                                                                           \
        x[0] = x[1] = CONVERT(v);                                                         \
        memcpy(d, x, sizeof x);                                                           \
    }                                                                                     \
    static inline void sinpe_c_pairs_##SFX(T *d, double a, double b)                      \
    {                                                                                     \
        T x[2];                                                                           \
        x[0] = CONVERT(a);                                                                \
        x[1] = CONVERT(b);                                                                \
        memcpy(d, x, sizeof x);                                                           \
    }
#define SINPE__AS_F64(v) (v)
#define SINPE__AS_F32(v) ((float)(v))
SINPE__C_STORES(f64, double, SINPE__AS_F64)
SINPE__C_STORES(f32, float, SINPE__AS_F32)
SINPE__C_STORES(f16, uint16_t, sinpe_to_f16)
SINPE__C_STORES(bf16, uint16_t, sinpe_to_bf16)
#undef SINPE__C_STORES
#undef SINPE__AS_F64
#undef SINPE__AS_F32
#include "isa_compose.h"
SINPE__COMPOSE_ALL(c, double)
