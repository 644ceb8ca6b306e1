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
   astype before 0.7) and float64 -> float32 -> float16 round twice and land on the wrong
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
/* Four values per step, through float32: f = RN32(x) (cvtpd_ps), then the target's rounding
   of f (F16C for float16; adding 0x7FFF plus the lowest kept bit, for bfloat16). Rounding
   twice differs from rounding once only where the first rounding moved x onto a midpoint of
   the target format (the midpoints are float32 values, and rounding is monotone: x strictly
   between two midpoints keeps f between them, or on one). So a lane is redone by the exact
   scalar code above when f != x and f is a midpoint, recognised by its low float32 mantissa
   bits (13 for float16, 16 for bfloat16: 1 followed by zeros), or lies below the target's
   normal range (where those bits mean something else). Otherwise the result is the single
   rounding, bit for bit; the tests compare it with rational rounding and the NumPy twin. */
__attribute__((target("avx2,f16c")))
static void sinpe_half_row_avx2(uint16_t *SINPE_RESTRICT out, const double *SINPE_RESTRICT v,
                                ptrdiff_t n, int format)
{
    const int f16 = format == SINPE_F16;
    const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF);
    const __m128i low_mask = _mm_set1_epi32(f16 ? 0x1FFF : 0xFFFF);
    const __m128i midpoint = _mm_set1_epi32(f16 ? 0x1000 : 0x8000);
    const __m128i smallest_normal = _mm_set1_epi32(f16 ? 0x38800000 : 0x00800000); /* 2^-14, 2^-126 */
    const __m128i zero = _mm_setzero_si128();
    ptrdiff_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        __m256d x = _mm256_loadu_pd(v + i);
        __m128 f = _mm256_cvtpd_ps(x);
        int inexact = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(f), x, _CMP_NEQ_UQ));
        __m128i bits = _mm_castps_si128(f);
        __m128i magnitude = _mm_and_si128(bits, abs_mask);
        __m128i on_midpoint = _mm_cmpeq_epi32(_mm_and_si128(bits, low_mask), midpoint);
        __m128i below_normal = _mm_andnot_si128(_mm_cmpeq_epi32(magnitude, zero),
                                                _mm_cmplt_epi32(magnitude, smallest_normal));
        int doubtful = _mm_movemask_ps(_mm_castsi128_ps(_mm_or_si128(on_midpoint, below_normal)));
        __m128i h;
        if (f16) {
            h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
        } else {
            __m128i lowest_kept = _mm_and_si128(_mm_srli_epi32(bits, 16), _mm_set1_epi32(1));
            __m128i rounded = _mm_add_epi32(_mm_add_epi32(bits, _mm_set1_epi32(0x7FFF)),
                                            lowest_kept);
            h = _mm_packus_epi32(_mm_srli_epi32(rounded, 16), zero);
        }
        _mm_storel_epi64((__m128i *)(out + i), h);
        if (doubtful & inexact) /* about one value in 8192 (float16) or 65536 (bfloat16) */
            sinpe_half_row_c(out + i, v + i, 0, 4, format);
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
