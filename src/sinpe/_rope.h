/* RoPE rows of the compiled filler (included by _kernel.pyx); the NumPy twin is
   _numpy.fill_rope, and both round every operation identically.

   Value of an entry.  RoPE tables are read at arbitrary positions (rope_at) as well as in
   runs (rope), and the two must give the same bits, so the value at a position does not
   depend on the call: for an integer position p, with A = floor(p / 1024) * 1024,
   u = p - A = 16 j + k (j < 64, k < 16),

       e^{i p w} = e^{i A w} * e^{i 16 j w} * e^{i k w}:

   the anchor e^{iAw} comes from the exact evaluator (_exact.h), the mid and fine tables
   (e^{i 16 j w}, e^{i k w}) too, once per frequency vector. Then
       a = anchor * mid[j]                     (rounded products, as _kernel.pyx's fill)
       v = clamp(a * fine[k], -1, 1)           (four multiplies, two adds)
       value = factor * v                      (factor: the attention factor)
   A non-integer position takes the evaluator's value of p * w directly, times factor.
   Bound (derivation at the top of _kernel.pyx): |v - exact| <= 7.7 u = 8.5e-16, so
   |value - factor * exact| <= factor * (8.5e-16 + 2**-53) < 1e-15 * max(1, factor); float32
   output is rounded once from the float64 value.

   Layouts (h frequencies, v_i of frequency i):
       SINPE_ROPE_HALF         [v_0 .. v_{h-1}, v_0 .. v_{h-1}]   (rotate_half, GPT-NeoX)
       SINPE_ROPE_INTERLEAVED  [v_0, v_0, v_1, v_1, ...]          (GPT-J, Meta freqs_cis)
       SINPE_ROPE_COMPACT      [v_0 .. v_{h-1}]                   (flash-attn, vLLM)
   Each value is computed once and stored to both its places. */
#ifndef SINPE_ROPE_H
#define SINPE_ROPE_H
#include "_config.h"
#include "_rotate.h"

enum { SINPE_ROPE_HALF = 0, SINPE_ROPE_INTERLEAVED = 1, SINPE_ROPE_COMPACT = 2 };
#define SINPE_ROPE_FINE 16  /* e^{ikw}, k < 16 */
#define SINPE_ROPE_MID 64   /* e^{i 16 j w}, j < 64 */
#define SINPE_ROPE_BLOCK 1024.0  /* anchors at multiples of 16 * 64 */

/* c[i], s[i] = factor * clamp(cos, sin of (anchor angle + fine angle)), i < h, from index
   `i`: plain C (the tail of the vector loops, and the whole loop without SSE2). */
static inline void sinpe_rope_rotate_c(double *SINPE_RESTRICT c, double *SINPE_RESTRICT s,
                                       const double *SINPE_RESTRICT a_cos,
                                       const double *SINPE_RESTRICT a_sin,
                                       const double *SINPE_RESTRICT f_cos,
                                       const double *SINPE_RESTRICT f_sin, double factor,
                                       ptrdiff_t i, ptrdiff_t h)
{
    for (; i < h; i++) {
        s[i] = factor * sinpe_unit(a_sin[i] * f_cos[i] + a_cos[i] * f_sin[i]);
        c[i] = factor * sinpe_unit(a_cos[i] * f_cos[i] - a_sin[i] * f_sin[i]);
    }
}

/* The same, two lanes per SSE2 step: min/max round nothing and clamp as sinpe_unit does. */
static inline void sinpe_rope_rotate_sse2(double *SINPE_RESTRICT c, double *SINPE_RESTRICT s,
                                          const double *SINPE_RESTRICT a_cos,
                                          const double *SINPE_RESTRICT a_sin,
                                          const double *SINPE_RESTRICT f_cos,
                                          const double *SINPE_RESTRICT f_sin, double factor,
                                          ptrdiff_t i, ptrdiff_t h)
{
#if SINPE_SSE2
    const __m128d one = _mm_set1_pd(1.0), minus_one = _mm_set1_pd(-1.0);
    const __m128d f = _mm_set1_pd(factor);
    const int scale = factor != 1.0; /* times 1 is exact: skip it (block layouts) */
    for (; i + 2 <= h; i += 2) {
        __m128d as = _mm_loadu_pd(a_sin + i), ac = _mm_loadu_pd(a_cos + i);
        __m128d fc = _mm_loadu_pd(f_cos + i), fs = _mm_loadu_pd(f_sin + i);
        __m128d vs = _mm_add_pd(_mm_mul_pd(as, fc), _mm_mul_pd(ac, fs));
        __m128d vc = _mm_sub_pd(_mm_mul_pd(ac, fc), _mm_mul_pd(as, fs));
        vs = _mm_max_pd(_mm_min_pd(vs, one), minus_one);
        vc = _mm_max_pd(_mm_min_pd(vc, one), minus_one);
        if (scale) { /* (a loop-invariant test: the compiler unswitches the loop) */
            vs = _mm_mul_pd(f, vs);
            vc = _mm_mul_pd(f, vc);
        }
        _mm_storeu_pd(s + i, vs);
        _mm_storeu_pd(c + i, vc);
    }
#endif
    sinpe_rope_rotate_c(c, s, a_cos, a_sin, f_cos, f_sin, factor, i, h);
}

#if SINPE_AVX2
/* Four lanes per AVX2 step (no FMA: the same roundings as the SSE2 and C loops). */
__attribute__((target("avx2")))
static void sinpe_rope_rotate_avx2(double *SINPE_RESTRICT c, double *SINPE_RESTRICT s,
                                   const double *SINPE_RESTRICT a_cos,
                                   const double *SINPE_RESTRICT a_sin,
                                   const double *SINPE_RESTRICT f_cos,
                                   const double *SINPE_RESTRICT f_sin, double factor, ptrdiff_t h)
{
    const __m256d one = _mm256_set1_pd(1.0), minus_one = _mm256_set1_pd(-1.0);
    const __m256d f = _mm256_set1_pd(factor);
    const int scale = factor != 1.0;
    ptrdiff_t i = 0;
    for (; i + 4 <= h; i += 4) {
        __m256d as = _mm256_loadu_pd(a_sin + i), ac = _mm256_loadu_pd(a_cos + i);
        __m256d fc = _mm256_loadu_pd(f_cos + i), fs = _mm256_loadu_pd(f_sin + i);
        __m256d vs = _mm256_add_pd(_mm256_mul_pd(as, fc), _mm256_mul_pd(ac, fs));
        __m256d vc = _mm256_sub_pd(_mm256_mul_pd(ac, fc), _mm256_mul_pd(as, fs));
        vs = _mm256_max_pd(_mm256_min_pd(vs, one), minus_one);
        vc = _mm256_max_pd(_mm256_min_pd(vc, one), minus_one);
        if (scale) {
            vs = _mm256_mul_pd(f, vs);
            vc = _mm256_mul_pd(f, vc);
        }
        _mm256_storeu_pd(s + i, vs);
        _mm256_storeu_pd(c + i, vc);
    }
    sinpe_rope_rotate_sse2(c, s, a_cos, a_sin, f_cos, f_sin, factor, i, h);
}
#endif

static inline void sinpe_rope_rotate(double *c, double *s, const double *a_cos,
                                     const double *a_sin, const double *f_cos,
                                     const double *f_sin, double factor, ptrdiff_t h)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        sinpe_rope_rotate_avx2(c, s, a_cos, a_sin, f_cos, f_sin, factor, h);
        return;
    }
#endif
    sinpe_rope_rotate_sse2(c, s, a_cos, a_sin, f_cos, f_sin, factor, 0, h);
}

#if SINPE_AVX2
/* Fused AVX2 rows: for n_rows consecutive rows sharing one anchor (fine rows k, k+1, ...),
   rotate four lanes, clamp, scale, convert and store them to every place of the layout, with
   no scratch round trip. The roundings are those of sinpe_rope_rotate; `clamp` may be 0 only
   where clamping cannot change the stored value (float32 output with factor 1: see
   _rotate.h), `scale` 0 only where factor is 1. Lanes from 4 * (h / 4) on are left to the
   caller. The bodies take layout, clamp and scale as constants: each dispatcher inlines one
   copy per combination, so the vector loop carries no branch. */
#define SINPE_ROPE_BODY(T, NAME, STORE_LANES)                                             \
    __attribute__((target("avx2"), always_inline)) static inline void NAME(               \
        T *SINPE_RESTRICT cos_row, T *SINPE_RESTRICT sin_row, ptrdiff_t width,            \
        ptrdiff_t n_rows, const double *SINPE_RESTRICT a_cos,                             \
        const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT fine,            \
        double factor, ptrdiff_t h, const int layout, const int clamp, const int scale)   \
    {                                                                                     \
        const __m256d one = _mm256_set1_pd(1.0), minus_one = _mm256_set1_pd(-1.0);       \
        const __m256d f = _mm256_set1_pd(factor);                                         \
        ptrdiff_t i, t;                                                                   \
        for (t = 0; t < n_rows; t++) {                                                    \
            const double *f_cos = fine + 2 * h * t, *f_sin = f_cos + h;                   \
            T *c_row = cos_row + width * t, *s_row = sin_row + width * t;                 \
            for (i = 0; i + 4 <= h; i += 4) {                                             \
                __m256d as = _mm256_loadu_pd(a_sin + i), ac = _mm256_loadu_pd(a_cos + i); \
                __m256d fc = _mm256_loadu_pd(f_cos + i), fs = _mm256_loadu_pd(f_sin + i); \
                __m256d vs = _mm256_add_pd(_mm256_mul_pd(as, fc), _mm256_mul_pd(ac, fs)); \
                __m256d vc = _mm256_sub_pd(_mm256_mul_pd(ac, fc), _mm256_mul_pd(as, fs)); \
                if (clamp) {                                                              \
                    vs = _mm256_max_pd(_mm256_min_pd(vs, one), minus_one);                \
                    vc = _mm256_max_pd(_mm256_min_pd(vc, one), minus_one);                \
                }                                                                         \
                if (scale) {                                                              \
                    vs = _mm256_mul_pd(f, vs);                                            \
                    vc = _mm256_mul_pd(f, vc);                                            \
                }                                                                         \
                STORE_LANES                                                               \
            }                                                                             \
        }                                                                                 \
    }
SINPE_ROPE_BODY(double, sinpe_rope_fused_f64_body,
    if (layout == SINPE_ROPE_INTERLEAVED) {
        _mm256_storeu_pd(c_row + 2 * i, _mm256_permute4x64_pd(vc, 0x50));
        _mm256_storeu_pd(c_row + 2 * i + 4, _mm256_permute4x64_pd(vc, 0xFA));
        _mm256_storeu_pd(s_row + 2 * i, _mm256_permute4x64_pd(vs, 0x50));
        _mm256_storeu_pd(s_row + 2 * i + 4, _mm256_permute4x64_pd(vs, 0xFA));
    } else {
        _mm256_storeu_pd(c_row + i, vc);
        _mm256_storeu_pd(s_row + i, vs);
        if (layout == SINPE_ROPE_HALF) {
            _mm256_storeu_pd(c_row + h + i, vc);
            _mm256_storeu_pd(s_row + h + i, vs);
        }
    })
SINPE_ROPE_BODY(float, sinpe_rope_fused_f32_body,
    __m128 c4 = _mm256_cvtpd_ps(vc);
    __m128 s4 = _mm256_cvtpd_ps(vs);
    if (layout == SINPE_ROPE_INTERLEAVED) {
        _mm_storeu_ps(c_row + 2 * i, _mm_unpacklo_ps(c4, c4));
        _mm_storeu_ps(c_row + 2 * i + 4, _mm_unpackhi_ps(c4, c4));
        _mm_storeu_ps(s_row + 2 * i, _mm_unpacklo_ps(s4, s4));
        _mm_storeu_ps(s_row + 2 * i + 4, _mm_unpackhi_ps(s4, s4));
    } else {
        _mm_storeu_ps(c_row + i, c4);
        _mm_storeu_ps(s_row + i, s4);
        if (layout == SINPE_ROPE_HALF) {
            _mm_storeu_ps(c_row + h + i, c4);
            _mm_storeu_ps(s_row + h + i, s4);
        }
    })
#undef SINPE_ROPE_BODY

#define SINPE_ROPE_DISPATCH(BODY, ...)                                                   \
    switch (layout * 4 + clamp * 2 + scale) {                                           \
    case 0: BODY(__VA_ARGS__, 0, 0, 0); break;                                          \
    case 1: BODY(__VA_ARGS__, 0, 0, 1); break;                                          \
    case 2: BODY(__VA_ARGS__, 0, 1, 0); break;                                          \
    case 3: BODY(__VA_ARGS__, 0, 1, 1); break;                                          \
    case 4: BODY(__VA_ARGS__, 1, 0, 0); break;                                          \
    case 5: BODY(__VA_ARGS__, 1, 0, 1); break;                                          \
    case 6: BODY(__VA_ARGS__, 1, 1, 0); break;                                          \
    case 7: BODY(__VA_ARGS__, 1, 1, 1); break;                                          \
    case 8: BODY(__VA_ARGS__, 2, 0, 0); break;                                          \
    case 9: BODY(__VA_ARGS__, 2, 0, 1); break;                                          \
    case 10: BODY(__VA_ARGS__, 2, 1, 0); break;                                         \
    default: BODY(__VA_ARGS__, 2, 1, 1); break;                                         \
    }
#define SINPE_ROPE_FUSED(T, NAME, BODY)                                                   \
    __attribute__((target("avx2"))) static void NAME(                                    \
        T *cos_row, T *sin_row, ptrdiff_t width, ptrdiff_t n_rows, const double *a_cos,   \
        const double *a_sin, const double *fine, double factor, ptrdiff_t h, int layout,  \
        int clamp, int scale)                                                             \
    {                                                                                     \
        SINPE_ROPE_DISPATCH(BODY, cos_row, sin_row, width, n_rows, a_cos, a_sin, fine,    \
                            factor, h)                                                    \
    }
SINPE_ROPE_FUSED(double, sinpe_rope_fused_f64, sinpe_rope_fused_f64_body)
SINPE_ROPE_FUSED(float, sinpe_rope_fused_f32, sinpe_rope_fused_f32_body)
#undef SINPE_ROPE_FUSED
#undef SINPE_ROPE_DISPATCH
#endif

/* Rows r .. r + n_rows - 1 of both tables (row stride `width` elements), all from the anchor
   a (a_cos, a_sin) and the consecutive fine rows from `fine` on (2h doubles each): the lanes
   the fused AVX2 loop covered in every row (0 without AVX2); the caller finishes each row
   from there with rotate-then-write. */
static inline ptrdiff_t sinpe_rope_fused(int is_double, void *cos_row, void *sin_row,
                                         ptrdiff_t width, ptrdiff_t n_rows, const double *a_cos,
                                         const double *a_sin, const double *fine, double factor,
                                         ptrdiff_t h, int layout)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        int scale = factor != 1.0;
        /* float32 with factor 1: the clamp cannot change the stored value (see _rotate.h) */
        int clamp = is_double || scale;
        if (is_double)
            sinpe_rope_fused_f64((double *)cos_row, (double *)sin_row, width, n_rows, a_cos,
                                 a_sin, fine, factor, h, layout, clamp, scale);
        else
            sinpe_rope_fused_f32((float *)cos_row, (float *)sin_row, width, n_rows, a_cos,
                                 a_sin, fine, factor, h, layout, clamp, scale);
        return h - h % 4;
    }
#endif
    (void)is_double; (void)cos_row; (void)sin_row; (void)width; (void)n_rows; (void)a_cos;
    (void)a_sin; (void)fine; (void)factor; (void)h; (void)layout;
    return 0;
}

/* v[i] *= factor, i < n (the evaluator's values of a non-integer position). */
static inline void sinpe_rope_scale(double *v, double factor, ptrdiff_t n)
{
    ptrdiff_t i;
    for (i = 0; i < n; i++)
        v[i] = factor * v[i];
}

/* One output row from h values, in the layout's places, each converted once; plain loops
   the compiler vectorises (and again for AVX2 below: the same conversions, wider). */
#define SINPE_ROPE_WRITE(T, NAME, ATTRIBUTE)                                              \
    ATTRIBUTE static void NAME(T *SINPE_RESTRICT row, const double *SINPE_RESTRICT v,     \
                               ptrdiff_t first, ptrdiff_t h, int layout)                  \
    {                                                                                     \
        ptrdiff_t i;                                                                      \
        if (layout == SINPE_ROPE_HALF) {                                                  \
            T *SINPE_RESTRICT second = row + h;                                           \
            for (i = first; i < h; i++) {                                                 \
                T value = (T)v[i];                                                        \
                row[i] = value;                                                           \
                second[i] = value;                                                        \
            }                                                                             \
        } else if (layout == SINPE_ROPE_INTERLEAVED) {                                    \
            for (i = first; i < h; i++) {                                                 \
                T value = (T)v[i];                                                        \
                row[2 * i] = value;                                                       \
                row[2 * i + 1] = value;                                                   \
            }                                                                             \
        } else {                                                                          \
            for (i = first; i < h; i++)                                                   \
                row[i] = (T)v[i];                                                         \
        }                                                                                 \
    }
SINPE_ROPE_WRITE(double, sinpe_rope_write_f64_base, )
SINPE_ROPE_WRITE(float, sinpe_rope_write_f32_base, )
#if SINPE_AVX2
SINPE_ROPE_WRITE(double, sinpe_rope_write_f64_avx2, __attribute__((target("avx2"))))
SINPE_ROPE_WRITE(float, sinpe_rope_write_f32_avx2, __attribute__((target("avx2"))))
#endif
#undef SINPE_ROPE_WRITE

/* Values v[first .. h-1] of a row of h to their places (earlier lanes untouched). */
static inline void sinpe_rope_write_f64(double *row, const double *v, ptrdiff_t first,
                                        ptrdiff_t h, int layout)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        sinpe_rope_write_f64_avx2(row, v, first, h, layout);
        return;
    }
#endif
    sinpe_rope_write_f64_base(row, v, first, h, layout);
}

static inline void sinpe_rope_write_f32(float *row, const double *v, ptrdiff_t first,
                                        ptrdiff_t h, int layout)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        sinpe_rope_write_f32_avx2(row, v, first, h, layout);
        return;
    }
#endif
    sinpe_rope_write_f32_base(row, v, first, h, layout);
}

#endif /* SINPE_ROPE_H */
