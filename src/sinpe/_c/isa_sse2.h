/* SSE2 helpers for rotate.h: two lanes (the x86-64 baseline). The same operations as
   isa_c.h lane by lane: minpd/maxpd clamp as its min/max do, cvtpd_ps rounds as a cast to
   float does, and float16/bfloat16 go through the plain C converter of half.h. */
#define SINPE_ISA_NAME sse2
#define SINPE_W 2
#define SINPE_ATTR
#define SINPE_VD __m128d

static inline __m128d sinpe_sse2_load(const double *p) { return _mm_loadu_pd(p); }
static inline __m128d sinpe_sse2_set1(double v) { return _mm_set1_pd(v); }
static inline __m128d sinpe_sse2_add(__m128d a, __m128d b) { return _mm_add_pd(a, b); }
static inline __m128d sinpe_sse2_sub(__m128d a, __m128d b) { return _mm_sub_pd(a, b); }
static inline __m128d sinpe_sse2_mul(__m128d a, __m128d b) { return _mm_mul_pd(a, b); }
static inline __m128d sinpe_sse2_min(__m128d a, __m128d b) { return _mm_min_pd(a, b); }
static inline __m128d sinpe_sse2_max(__m128d a, __m128d b) { return _mm_max_pd(a, b); }

/* isa_c.h's closest and within, two lanes */
static inline __m128d sinpe_sse2__distance(__m128d v, __m128d keep, __m128d half)
{   /* keep holds the sign bit: h has v's sign */
    return _mm_andnot_pd(_mm_set1_pd(-0.0), _mm_sub_pd(v, _mm_or_pd(_mm_and_pd(v, keep), half)));
}
static inline __m128d sinpe_sse2_closest(__m128d acc, __m128d c, __m128d s, __m128d keep,
                                      __m128d half, __m128d kappa, const int f16)
{
    acc = _mm_min_pd(acc, _mm_min_pd(sinpe_sse2__distance(c, keep, half),
                                     sinpe_sse2__distance(s, keep, half)));
    if (f16) {
        const __m128d sign = _mm_set1_pd(-0.0);
        acc = _mm_min_pd(acc, _mm_mul_pd(_mm_min_pd(_mm_andnot_pd(sign, c), _mm_andnot_pd(sign, s)), kappa));
    }
    return acc;
}
static inline int sinpe_sse2_within(__m128d acc, __m128d bound)
{
    return _mm_movemask_pd(_mm_cmple_pd(acc, bound)) != 0;
}

static inline void sinpe_sse2_store_f64(double *d, __m128d v) { _mm_storeu_pd(d, v); }
static inline void sinpe_sse2_dup_f64(double *d, __m128d v)
{
    _mm_storeu_pd(d, _mm_unpacklo_pd(v, v));
    _mm_storeu_pd(d + 2, _mm_unpackhi_pd(v, v));
}
static inline void sinpe_sse2_pairs_f64(double *d, __m128d a, __m128d b)
{
    _mm_storeu_pd(d, _mm_unpacklo_pd(a, b));
    _mm_storeu_pd(d + 2, _mm_unpackhi_pd(a, b));
}

static inline void sinpe_sse2_store_f32(float *d, __m128d v)
{
    _mm_storel_pi((__m64 *)d, _mm_cvtpd_ps(v));
}
static inline void sinpe_sse2_dup_f32(float *d, __m128d v)
{
    __m128 x = _mm_cvtpd_ps(v);
    _mm_storeu_ps(d, _mm_unpacklo_ps(x, x));
}
static inline void sinpe_sse2_pairs_f32(float *d, __m128d a, __m128d b)
{
    _mm_storeu_ps(d, _mm_unpacklo_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b)));
}

/* (through memcpy: an out= array may be unaligned for uint16_t) */
#define SINPE__SSE2_HALF(SFX, CONVERT)                                                      \
    static inline void sinpe_sse2_store_##SFX(uint16_t *d, __m128d v)                      \
    {                                                                                     \
        uint16_t x[2];                                                                    \
        x[0] = CONVERT(_mm_cvtsd_f64(v));                                                 \
        x[1] = CONVERT(_mm_cvtsd_f64(_mm_unpackhi_pd(v, v)));                             \
        memcpy(d, x, sizeof x);                                                           \
    }                                                                                     \
    static inline void sinpe_sse2_dup_##SFX(uint16_t *d, __m128d v)                        \
    {                                                                                     \
        uint16_t x[4];                                                                    \
        x[0] = x[1] = CONVERT(_mm_cvtsd_f64(v));                                          \
        x[2] = x[3] = CONVERT(_mm_cvtsd_f64(_mm_unpackhi_pd(v, v)));                      \
        memcpy(d, x, sizeof x);                                                           \
    }                                                                                     \
    static inline void sinpe_sse2_pairs_##SFX(uint16_t *d, __m128d a, __m128d b)           \
    {                                                                                     \
        uint16_t x[4];                                                                    \
        x[0] = CONVERT(_mm_cvtsd_f64(a));                                                 \
        x[1] = CONVERT(_mm_cvtsd_f64(b));                                                 \
        x[2] = CONVERT(_mm_cvtsd_f64(_mm_unpackhi_pd(a, a)));                             \
        x[3] = CONVERT(_mm_cvtsd_f64(_mm_unpackhi_pd(b, b)));                             \
        memcpy(d, x, sizeof x);                                                           \
    }
SINPE__SSE2_HALF(f16, sinpe_to_f16)
SINPE__SSE2_HALF(bf16, sinpe_to_bf16)
#undef SINPE__SSE2_HALF
#include "isa_compose.h"
SINPE__COMPOSE_ALL(sse2, __m128d)
