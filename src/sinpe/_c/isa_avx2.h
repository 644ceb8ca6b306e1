/* AVX2 helpers for rotate.h: four lanes, compiled for AVX2 + F16C by a function attribute
   (no -march flag) and chosen at run time (config.h). The same operations as isa_c.h lane
   by lane: no FMA, minpd/maxpd clamp as its min/max do, cvtpd_ps rounds as a cast to float.

   float16/bfloat16, four values per step, through float32: f = RN32(x) (cvtpd_ps), then the
   target's rounding of f (F16C for float16; adding 0x7FFF plus the lowest kept bit, for
   bfloat16). Rounding twice differs from rounding once only where the first rounding moved x
   onto a midpoint of the target format (the midpoints are float32 values, and rounding is
   monotone: x strictly between two midpoints keeps f between them, or on one). So the lanes
   are redone by half.h's exact converter when f != x and a lane of f is a midpoint,
   recognised by its low float32 mantissa bits (13 for float16, 16 for bfloat16: 1 followed
   by zeros), or lies below the target's normal range (where those bits mean something
   else). Otherwise the
   result is the single rounding, bit for bit; the tests compare it with rational rounding
   and the NumPy twin on adversarial doubles. */
#define SINPE_ISA_NAME avx2
#define SINPE_W 4
#define SINPE_ATTR SINPE_AVX2_TARGET
#define SINPE_VD __m256d
#define SINPE_VM __m256d /* a lane mask: all ones or all zeros */
#define SINPE_VI __m256i

SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_load(const double *p) { return _mm256_loadu_pd(p); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_set1(double v) { return _mm256_set1_pd(v); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_sub(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_min(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_max(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
/* the mask of lanes < n */
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_first(ptrdiff_t n)
{
    return _mm256_castsi256_pd(
        _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)));
}

/* isa_c.h's closest and within, four lanes */
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2__distance(__m256d v, __m256d keep,
                                                             __m256d half)
{   /* keep holds the sign bit: h has v's sign */
    return _mm256_andnot_pd(_mm256_set1_pd(-0.0),
                            _mm256_sub_pd(v, _mm256_or_pd(_mm256_and_pd(v, keep), half)));
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_closest(__m256d acc, __m256d c, __m256d s,
                                                        __m256d keep, __m256d half,
                                                        __m256d kappa, const int f16)
{
    acc = _mm256_min_pd(acc, _mm256_min_pd(sinpe_avx2__distance(c, keep, half),
                                           sinpe_avx2__distance(s, keep, half)));
    if (f16) {
        const __m256d sign = _mm256_set1_pd(-0.0);
        acc = _mm256_min_pd(acc, _mm256_mul_pd(_mm256_min_pd(_mm256_andnot_pd(sign, c),
                                                             _mm256_andnot_pd(sign, s)), kappa));
    }
    return acc;
}
SINPE_AVX2_TARGET static inline int sinpe_avx2_within(__m256d acc, __m256d bound)
{
    return _mm256_movemask_pd(_mm256_cmp_pd(acc, bound, _CMP_LE_OQ)) != 0;
}

SINPE_AVX2_TARGET static inline void sinpe_avx2_store_f64(double *d, __m256d v)
{
    _mm256_storeu_pd(d, v);
}
SINPE_AVX2_TARGET static inline void sinpe_avx2_dup_f64(double *d, __m256d v)
{
    _mm256_storeu_pd(d, _mm256_permute4x64_pd(v, 0x50));     /* v0 v0 v1 v1 */
    _mm256_storeu_pd(d + 4, _mm256_permute4x64_pd(v, 0xFA)); /* v2 v2 v3 v3 */
}
SINPE_AVX2_TARGET static inline void sinpe_avx2_pairs_f64(double *d, __m256d a, __m256d b)
{
    __m256d lo = _mm256_unpacklo_pd(a, b); /* a0 b0 a2 b2 */
    __m256d hi = _mm256_unpackhi_pd(a, b); /* a1 b1 a3 b3 */
    _mm256_storeu_pd(d, _mm256_permute2f128_pd(lo, hi, 0x20));
    _mm256_storeu_pd(d + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
}

SINPE_AVX2_TARGET static inline void sinpe_avx2_store_f32(float *d, __m256d v)
{
    _mm_storeu_ps(d, _mm256_cvtpd_ps(v));
}
SINPE_AVX2_TARGET static inline void sinpe_avx2_dup_f32(float *d, __m256d v)
{
    __m128 x = _mm256_cvtpd_ps(v);
    _mm_storeu_ps(d, _mm_unpacklo_ps(x, x));
    _mm_storeu_ps(d + 4, _mm_unpackhi_ps(x, x));
}
SINPE_AVX2_TARGET static inline void sinpe_avx2_pairs_f32(float *d, __m256d a, __m256d b)
{
    __m128 x = _mm256_cvtpd_ps(a), y = _mm256_cvtpd_ps(b);
    _mm_storeu_ps(d, _mm_unpacklo_ps(x, y));
    _mm_storeu_ps(d + 4, _mm_unpackhi_ps(x, y));
}

/* Eight values rounded once to float16 (f16 = 1) or bfloat16 (0): the low four 16-bit lanes
   of the result from a, the high four from b. The common path is one float32 conversion of
   each, two compares and the target's rounding; a lane that is a midpoint pattern or below
   the normal range (zero included, for a cheaper test) sends the eight to the exact check,
   which redoes them only when a float32 step was inexact. */
SINPE_AVX2_TARGET static inline __m128i sinpe_avx2_half2(__m256d a, __m256d b, const int f16)
{
    const __m256i low_mask = _mm256_set1_epi32(f16 ? 0x1FFF : 0xFFFF);
    const __m256i midpoint = _mm256_set1_epi32(f16 ? 0x1000 : 0x8000);
    const __m256i smallest_normal = _mm256_set1_epi32(f16 ? 0x38800000 : 0x00800000);
    __m128 fa = _mm256_cvtpd_ps(a), fb = _mm256_cvtpd_ps(b);
    __m256 f = _mm256_set_m128(fb, fa);
    __m256i bits = _mm256_castps_si256(f);
    __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i on_midpoint = _mm256_cmpeq_epi32(_mm256_and_si256(bits, low_mask), midpoint);
    __m256i below_normal = _mm256_cmpgt_epi32(smallest_normal, magnitude);
    __m128i h;
    if (f16) {
        h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
    } else {
        __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
        __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)),
                                           lowest_kept);
        __m256i packed = _mm256_packus_epi32(_mm256_srli_epi32(rounded, 16), _mm256_setzero_si256());
        h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
    }
    if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(on_midpoint, below_normal))) &&
        (_mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(fa), a, _CMP_NEQ_UQ)) |
         _mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(fb), b, _CMP_NEQ_UQ)))) {
        double v[8];
        uint16_t r[8];
        int l;
        _mm256_storeu_pd(v, a);
        _mm256_storeu_pd(v + 4, b);
        for (l = 0; l < 8; l++)
            r[l] = f16 ? sinpe_to_f16(v[l]) : sinpe_to_bf16(v[l]);
        h = _mm_loadu_si128((const __m128i *)r);
    }
    return h;
}

#define SINPE__AVX2_HALF(SFX, F16)                                                          \
    SINPE_AVX2_TARGET static inline void sinpe_avx2_put_##SFX(                             \
        uint16_t *c, uint16_t *s, ptrdiff_t c_dup, ptrdiff_t s_dup, __m256d vc, __m256d vs) \
    {                                                                                     \
        __m128i h = sinpe_avx2_half2(vc, vs, F16), hs = _mm_unpackhi_epi64(h, h);         \
        _mm_storel_epi64((__m128i *)c, h);                                                \
        _mm_storel_epi64((__m128i *)s, hs);                                               \
        if (c_dup)                                                                        \
            _mm_storel_epi64((__m128i *)(c + c_dup), h);                                  \
        if (s_dup)                                                                        \
            _mm_storel_epi64((__m128i *)(s + s_dup), hs);                                 \
    }                                                                                     \
    SINPE_AVX2_TARGET static inline void sinpe_avx2_put_dup_##SFX(uint16_t *c, uint16_t *s, \
                                                                 __m256d vc, __m256d vs)  \
    {                                                                                     \
        __m128i h = sinpe_avx2_half2(vc, vs, F16);                                        \
        _mm_storeu_si128((__m128i *)c, _mm_unpacklo_epi16(h, h));                         \
        _mm_storeu_si128((__m128i *)s, _mm_unpackhi_epi16(h, h));                         \
    }                                                                                     \
    SINPE_AVX2_TARGET static inline void sinpe_avx2_pairs_##SFX(uint16_t *d, __m256d a,    \
                                                               __m256d b)                 \
    {                                                                                     \
        __m128i h = sinpe_avx2_half2(a, b, F16);                                          \
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(h, _mm_unpackhi_epi64(h, h)));  \
    }
SINPE__AVX2_HALF(f16, 1)
SINPE__AVX2_HALF(bf16, 0)
#undef SINPE__AVX2_HALF

/* float64 and float32: two-kind stores from the one-vector ones above */
#include "isa_compose.h"
SINPE__COMPOSE(avx2, f64, double, __m256d)
SINPE__COMPOSE(avx2, f32, float, __m256d)

/* The exact evaluator's helpers (exact_simd.h). */
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_load_part(const double *p, ptrdiff_t n)
{
    return _mm256_maskload_pd(p, _mm256_castpd_si256(sinpe_avx2_first(n)));
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_fmsub(__m256d a, __m256d b, __m256d c)
{
    return _mm256_fmsub_pd(a, b, c);
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_abs(__m256d v)
{
    return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_copysign(__m256d m, __m256d s)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    return _mm256_or_pd(_mm256_and_pd(s, sign), _mm256_andnot_pd(sign, m));
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_neg(__m256d v)
{
    return _mm256_xor_pd(v, _mm256_set1_pd(-0.0));
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_lt(__m256d a, __m256d b)
{
    return _mm256_cmp_pd(a, b, _CMP_LT_OQ);
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_select(__m256d m, __m256d a, __m256d b)
{
    return _mm256_blendv_pd(b, a, m);
}
SINPE_AVX2_TARGET static inline __m256d sinpe_avx2_both(__m256d m1, __m256d m2)
{
    return _mm256_and_pd(m1, m2);
}
SINPE_AVX2_TARGET static inline void sinpe_avx2_store_mask(double *d, __m256d m, __m256d v)
{
    if (_mm256_movemask_pd(m) == 0xF)
        _mm256_storeu_pd(d, v);
    else
        _mm256_maskstore_pd(d, _mm256_castpd_si256(m), v);
}
SINPE_AVX2_TARGET static inline __m256i sinpe_avx2_row_offsets(__m256d kd)
{
    return _mm256_slli_epi64(_mm256_and_si256(_mm256_castpd_si256(kd), _mm256_set1_epi64x(255)),
                             5);
}
/* Four 32-byte table rows {ca_hi, ca_lo, sa_hi, sa_lo}, transposed to one vector per field
   (faster than four gathers on Zen 3). */
SINPE_AVX2_TARGET static inline void sinpe_avx2_turn_rows(const char *base, __m256i o,
                                                          __m256d *ca_hi, __m256d *ca_lo,
                                                          __m256d *sa_hi, __m256d *sa_lo)
{
    __m256d e0 = _mm256_loadu_pd((const double *)(base + _mm256_extract_epi64(o, 0)));
    __m256d e1 = _mm256_loadu_pd((const double *)(base + _mm256_extract_epi64(o, 1)));
    __m256d e2 = _mm256_loadu_pd((const double *)(base + _mm256_extract_epi64(o, 2)));
    __m256d e3 = _mm256_loadu_pd((const double *)(base + _mm256_extract_epi64(o, 3)));
    __m256d hi01 = _mm256_unpacklo_pd(e0, e1), lo01 = _mm256_unpackhi_pd(e0, e1);
    __m256d hi23 = _mm256_unpacklo_pd(e2, e3), lo23 = _mm256_unpackhi_pd(e2, e3);
    *ca_hi = _mm256_permute2f128_pd(hi01, hi23, 0x20);
    *sa_hi = _mm256_permute2f128_pd(hi01, hi23, 0x31);
    *ca_lo = _mm256_permute2f128_pd(lo01, lo23, 0x20);
    *sa_lo = _mm256_permute2f128_pd(lo01, lo23, 0x31);
}
