/* Half-precision output (float16, bfloat16), each value rounded once from float64; included by
   _kernel.pyx. The NumPy twin is _half.py: the same operations, so the same bits.

   Rounding. A format with M explicit mantissa bits and smallest normal exponent E_min has, for
   x in [2^e, 2^(e+1)), the spacing 2^(max(e, E_min) - M) (subnormals included). With
   k = max(e, E_min) - M and C = 1.5 * 2^(k + 52), the double x + C lies in C's binade, whose
   spacing is exactly 2^k (|x| < 2^(e+1) <= 2^(k+M+1) is far below C's 2^(k+52)), so
   fl(x + C) rounds x to a multiple of 2^k, to nearest, ties to even; subtracting C is exact.
   So r = fl(fl(x + C) - C) is x rounded once, to nearest-even, in the target format; its sign
   is that of x (a negative x that rounds to zero gives -0: the sign bit of x is put back).
   Above the format's largest finite value r may be 2^(E_max + 1), which encodes as infinity,
   as round-to-nearest requires; e is held at E_max + 1 at most, where every result is
   infinite anyway, so that C stays finite for any x.

   Encoding. r is exactly representable in the format (or overflows), hence in float32:
   (float)r is exact, and so are float32 -> float16 (F16C, or the bit fields by hand) and
   float32 -> bfloat16 (its upper 16 bits: the lower ones are zero). No step rounds twice.
   float16: M = 10, E_min = -14; bfloat16: M = 7, E_min = -126.

   The usual conversions are not one rounding: float64 -> float32 -> bfloat16 (ml_dtypes'
   astype among them) and float64 -> float32 -> float16 round twice and land on the wrong
   neighbour when the first rounding hits a halfway point: 1 + 2^-8 + 2^-30 becomes 1.0 in
   bfloat16 that way, 1.0078125 here. */
#ifndef SINPE_HALF_H
#define SINPE_HALF_H
#include <stdint.h>
#include <string.h>
#include "_config.h"
#include "_rotate.h" /* SINPE_AVX2 and immintrin.h where the build allows AVX2 */

enum { SINPE_F16 = 1, SINPE_BF16 = 2 };

static inline double sinpe_round_to_format(double x, int mantissa_bits, int min_exponent,
                                           int max_exponent)
{
    uint64_t bits, c_bits, sign;
    double c, r;
    int e, k;
    memcpy(&bits, &x, 8);
    sign = bits & 0x8000000000000000ull;
    e = (int)((bits >> 52) & 0x7FF) - 1023;
    e = e > min_exponent ? e : min_exponent;
    e = e < max_exponent + 1 ? e : max_exponent + 1; /* beyond: infinity whatever k is */
    k = e - mantissa_bits;
    c_bits = ((uint64_t)(k + 52 + 1023) << 52) | 0x0008000000000000ull; /* 1.5 * 2^(k+52) */
    memcpy(&c, &c_bits, 8);
    r = (x + c) - c;
    memcpy(&bits, &r, 8);
    bits |= sign;
    memcpy(&r, &bits, 8);
    return r;
}

/* Bits of r, which is exactly a float16 value or at least 2^16 in magnitude (infinity). */
static inline uint16_t sinpe_encode_f16(double r)
{
    uint64_t bits;
    uint16_t sign;
    double a = r < 0 ? -r : r;
    memcpy(&bits, &r, 8);
    sign = (uint16_t)((bits >> 48) & 0x8000);
    if (a >= 65536.0)
        return sign | 0x7C00;
    if (a < 0x1p-14) /* subnormal (or zero): an integer number of 2^-24 */
        return sign | (uint16_t)(a * 0x1p24);
    return sign | (uint16_t)((((bits >> 52) & 0x7FF) - 1023 + 15) << 10) |
           (uint16_t)((bits >> 42) & 0x3FF);
}

/* Bits of r, which is exactly a bfloat16 value or at least 2^128 in magnitude (infinity). */
static inline uint16_t sinpe_encode_bf16(double r)
{
    float f = (float)r; /* exact, or +-inf beyond float32's range */
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return (uint16_t)(bits >> 16);
}

static inline void sinpe_half_row_c(uint16_t *SINPE_RESTRICT out, const double *SINPE_RESTRICT v,
                                    ptrdiff_t i, ptrdiff_t n, int format)
{
    if (format == SINPE_F16) {
        for (; i < n; i++)
            out[i] = sinpe_encode_f16(sinpe_round_to_format(v[i], 10, -14, 15));
    } else {
        for (; i < n; i++)
            out[i] = sinpe_encode_bf16(sinpe_round_to_format(v[i], 7, -126, 127));
    }
}

#if SINPE_AVX2
/* Four values per step: the same rounding in 64-bit integer lanes, then the exact encodings
   (F16C for float16). */
__attribute__((target("avx2,f16c")))
static void sinpe_half_row_avx2(uint16_t *SINPE_RESTRICT out, const double *SINPE_RESTRICT v,
                                ptrdiff_t n, int format)
{
    const int mantissa_bits = format == SINPE_F16 ? 10 : 7;
    const __m256i min_exponent = _mm256_set1_epi64x(format == SINPE_F16 ? -14 : -126);
    const __m256i top_exponent = _mm256_set1_epi64x(format == SINPE_F16 ? 16 : 128);
    const __m256i exponent_mask = _mm256_set1_epi64x(0x7FF);
    const __m256i bias = _mm256_set1_epi64x(1023);
    const __m256i c_offset = _mm256_set1_epi64x(52 + 1023 - mantissa_bits);
    const __m256i c_half = _mm256_set1_epi64x(0x0008000000000000ll);
    const __m256i sign_mask = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    ptrdiff_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        __m256d x = _mm256_loadu_pd(v + i);
        __m256i bits = _mm256_castpd_si256(x);
        __m256i e = _mm256_sub_epi64(_mm256_and_si256(_mm256_srli_epi64(bits, 52), exponent_mask),
                                     bias);
        e = _mm256_blendv_epi8(min_exponent, e, _mm256_cmpgt_epi64(e, min_exponent));
        e = _mm256_blendv_epi8(e, top_exponent, _mm256_cmpgt_epi64(e, top_exponent));
        __m256i c_bits = _mm256_or_si256(_mm256_slli_epi64(_mm256_add_epi64(e, c_offset), 52),
                                         c_half);
        __m256d c = _mm256_castsi256_pd(c_bits);
        __m256d r = _mm256_sub_pd(_mm256_add_pd(x, c), c);
        r = _mm256_or_pd(r, _mm256_castsi256_pd(_mm256_and_si256(bits, sign_mask)));
        __m128 f = _mm256_cvtpd_ps(r); /* exact (or +-inf beyond float32) */
        __m128i h;
        if (format == SINPE_F16)
            h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT); /* exact (inf beyond 65504) */
        else
            h = _mm_packus_epi32(_mm_srli_epi32(_mm_castps_si128(f), 16), _mm_setzero_si128());
        _mm_storel_epi64((__m128i *)(out + i), h);
    }
    sinpe_half_row_c(out, v, i, n, format);
}

static int sinpe_use_f16c(void)
{
    static int answer = -1; /* set at import (the kernel asks once), before any fill runs */
    if (answer < 0) {
        __builtin_cpu_init();
        answer = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") ? 1 : 0;
    }
    return answer;
}
#endif

/* What sinpe_half_row runs on this CPU: 1 AVX2 + F16C, 0 plain C (same bits). */
static inline int sinpe_half_simd(void)
{
#if SINPE_AVX2
    return sinpe_use_f16c();
#else
    return 0;
#endif
}

/* out[i] = v[i] rounded once to the format (SINPE_F16 or SINPE_BF16), as bits, i < n. */
static inline void sinpe_half_row(uint16_t *out, const double *v, ptrdiff_t n, int format)
{
#if SINPE_AVX2
    if (sinpe_use_f16c()) {
        sinpe_half_row_avx2(out, v, n, format);
        return;
    }
#endif
    sinpe_half_row_c(out, v, 0, n, format);
}

#endif /* SINPE_HALF_H */
