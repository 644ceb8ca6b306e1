/* The rotation loops of the compiled filler (included by _kernel.pyx).

   row[2i] = sin, row[2i+1] = cos of (anchor angle + fine angle): four multiplies and two adds
   per pair, the anchor and fine vectors read as [cos | sin] halves. AVX2 (chosen at run time),
   SSE2 (baseline on x86-64) and plain C round identically, and identically to the NumPy
   filler (_numpy.py): no FMA anywhere (-ffp-contract=off), the same operation order, the same
   clamp. The scheme and its error bound are derived at the top of _kernel.pyx. */
#ifndef SINPE_ROTATE_H
#define SINPE_ROTATE_H
#include "_config.h"

/* Clamp to [-1, 1]; the operand order is that of minpd/maxpd, so both paths agree. */
static inline double sinpe_unit(double v) {
    v = v < 1.0 ? v : 1.0;
    return v > -1.0 ? v : -1.0;
}

/* The body of both loops: rotate two pairs per SSE2 step, clamp if CLAMP, then STORE
   them; the plain C tail rounds identically (and converts to the row's type on assignment).
   float32 rows skip the clamp: a float64 value within 8.5e-16 of a sine or cosine rounds
   to the same float32 whether or not it was first clamped to [-1, 1] (1 + 8.5e-16 is far
   below the halfway point 1 + 2**-25), so the result is bit-identical and ~15% cheaper. */
#if SINPE_SSE2
#define SINPE_SSE2_LOOP(CLAMP, ...)                                                    \
    const __m128d one = _mm_set1_pd(1.0), minus_one = _mm_set1_pd(-1.0);             \
    for (; i + 2 <= pairs; i += 2) {                                                  \
        __m128d as = _mm_loadu_pd(a_sin + i), ac = _mm_loadu_pd(a_cos + i);          \
        __m128d fc = _mm_loadu_pd(f_cos + i), fs = _mm_loadu_pd(f_sin + i);          \
        __m128d s = _mm_add_pd(_mm_mul_pd(as, fc), _mm_mul_pd(ac, fs));              \
        __m128d c = _mm_sub_pd(_mm_mul_pd(ac, fc), _mm_mul_pd(as, fs));              \
        if (CLAMP) {                                                                  \
            s = _mm_max_pd(_mm_min_pd(s, one), minus_one);                            \
            c = _mm_max_pd(_mm_min_pd(c, one), minus_one);                            \
        }                                                                             \
        __VA_ARGS__                                                                   \
    }
#else
#define SINPE_SSE2_LOOP(CLAMP, ...)
#endif
#define SINPE_SCALAR_TAIL                                                              \
    for (; i < pairs; i++) {                                                          \
        row[2 * i] = sinpe_unit(a_sin[i] * f_cos[i] + a_cos[i] * f_sin[i]);           \
        row[2 * i + 1] = sinpe_unit(a_cos[i] * f_cos[i] - a_sin[i] * f_sin[i]);       \
    }

/* The hot loop: row[2i] = sin, row[2i+1] = cos of (anchor angle + fine angle), i < pairs.
   Four multiplies, two adds and a clamp per pair; SSE2 (baseline on x86-64) does two pairs
   per step, and the plain C tail rounds identically. */
static inline void sinpe_rotate_pairs_f64(
    double *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
    const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
    const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
{
    ptrdiff_t i = 0;
    SINPE_SSE2_LOOP(1,
        _mm_storeu_pd(row + 2 * i, _mm_unpacklo_pd(s, c));
        _mm_storeu_pd(row + 2 * i + 2, _mm_unpackhi_pd(s, c));
    )
    SINPE_SCALAR_TAIL
}

/* The same for float32 output: computed in float64, rounded once per value. */
static inline void sinpe_rotate_pairs_f32(
    float *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
    const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
    const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
{
    ptrdiff_t i = 0;
    SINPE_SSE2_LOOP(0,
        __m128 lo = _mm_cvtpd_ps(_mm_unpacklo_pd(s, c));
        __m128 hi = _mm_cvtpd_ps(_mm_unpackhi_pd(s, c));
        _mm_storeu_ps(row + 2 * i, _mm_movelh_ps(lo, hi));
    )
    SINPE_SCALAR_TAIL
}
/* AVX2 twins of the two loops above (4 pairs per step), compiled for AVX2 by a function
   attribute and chosen at run time, so the build needs no -march flag. No FMA: the
   rounding stays exactly that of the SSE2/C loops and of the NumPy path. */
#if SINPE_SSE2 && defined(__GNUC__) && SINPE_MAX_SIMD >= 2
#include <immintrin.h>
#define SINPE_AVX2 1
#define SINPE_AVX2_BODY(CLAMP, ...)                                                    \
    const __m256d one = _mm256_set1_pd(1.0), minus_one = _mm256_set1_pd(-1.0);         \
    for (; i + 4 <= pairs; i += 4) {                                                    \
        __m256d as = _mm256_loadu_pd(a_sin + i), ac = _mm256_loadu_pd(a_cos + i);      \
        __m256d fc = _mm256_loadu_pd(f_cos + i), fs = _mm256_loadu_pd(f_sin + i);      \
        __m256d s = _mm256_add_pd(_mm256_mul_pd(as, fc), _mm256_mul_pd(ac, fs));        \
        __m256d c = _mm256_sub_pd(_mm256_mul_pd(ac, fc), _mm256_mul_pd(as, fs));        \
        if (CLAMP) {                                                                    \
            s = _mm256_max_pd(_mm256_min_pd(s, one), minus_one);                        \
            c = _mm256_max_pd(_mm256_min_pd(c, one), minus_one);                        \
        }                                                                               \
        __VA_ARGS__                                                                     \
    }
__attribute__((target("avx2")))
static void sinpe_rotate_pairs_f64_avx2(
    double *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
    const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
    const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
{
    ptrdiff_t i = 0;
    SINPE_AVX2_BODY(1,
        __m256d lo = _mm256_unpacklo_pd(s, c); /* s0 c0 s2 c2 */
        __m256d hi = _mm256_unpackhi_pd(s, c); /* s1 c1 s3 c3 */
        _mm256_storeu_pd(row + 2 * i, _mm256_permute2f128_pd(lo, hi, 0x20));
        _mm256_storeu_pd(row + 2 * i + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
    )
    sinpe_rotate_pairs_f64(row + 2 * i, a_cos + i, a_sin + i, f_cos + i, f_sin + i, pairs - i);
}
__attribute__((target("avx2")))
static void sinpe_rotate_pairs_f32_avx2(
    float *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
    const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
    const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
{
    ptrdiff_t i = 0;
    SINPE_AVX2_BODY(0,
        __m128 s4 = _mm256_cvtpd_ps(s), c4 = _mm256_cvtpd_ps(c);
        _mm_storeu_ps(row + 2 * i, _mm_unpacklo_ps(s4, c4));
        _mm_storeu_ps(row + 2 * i + 4, _mm_unpackhi_ps(s4, c4));
    )
    sinpe_rotate_pairs_f32(row + 2 * i, a_cos + i, a_sin + i, f_cos + i, f_sin + i, pairs - i);
}
static int sinpe_use_avx2(void) {
    static int answer = -1;  /* set once at import (SIMD below), before any fill can run */
    if (answer < 0) {
        __builtin_cpu_init();
        answer = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return answer;
}
#else
#define SINPE_AVX2 0
#endif

/* What the hot loop runs on this CPU: 2 AVX2, 1 SSE2, 0 plain C. */
static int sinpe_simd(void) {
#if SINPE_AVX2
    if (sinpe_use_avx2()) return 2;
#endif
    return SINPE_SSE2 ? 1 : 0;
}

static inline void sinpe_rotate_f64(
    double *row, const double *a_cos, const double *a_sin, const double *f_cos,
    const double *f_sin, ptrdiff_t pairs)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        sinpe_rotate_pairs_f64_avx2(row, a_cos, a_sin, f_cos, f_sin, pairs);
        return;
    }
#endif
    sinpe_rotate_pairs_f64(row, a_cos, a_sin, f_cos, f_sin, pairs);
}
static inline void sinpe_rotate_f32(
    float *row, const double *a_cos, const double *a_sin, const double *f_cos,
    const double *f_sin, ptrdiff_t pairs)
{
#if SINPE_AVX2
    if (sinpe_use_avx2()) {
        sinpe_rotate_pairs_f32_avx2(row, a_cos, a_sin, f_cos, f_sin, pairs);
        return;
    }
#endif
    sinpe_rotate_pairs_f32(row, a_cos, a_sin, f_cos, f_sin, pairs);
}

#endif /* SINPE_ROTATE_H */
