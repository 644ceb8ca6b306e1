/* Half-precision output (float16, bfloat16), each value rounded once from float64; used by
   the writers of rotate.h. The NumPy twin is _twin/half.py: the same operations, so the same bits.

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
#include "config.h"
#include "constants.h"

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
    if (a != a) /* NaN: the quiet NaN, as vcvtps2ph and NumPy write it */
        return sign | 0x7E00;
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

/* x rounded once to float16 / bfloat16, as bits: the reference every vector converter of the
   instruction-set headers reproduces. */
static inline uint16_t sinpe_to_f16(double x)
{
    return sinpe_encode_f16(
        sinpe_round_to_format(x, SINPE_F16_MANTISSA, SINPE_F16_MIN_EXPONENT, SINPE_F16_MAX_EXPONENT));
}
static inline uint16_t sinpe_to_bf16(double x)
{
    return sinpe_encode_bf16(sinpe_round_to_format(x, SINPE_BF16_MANTISSA, SINPE_BF16_MIN_EXPONENT,
                                                   SINPE_BF16_MAX_EXPONENT));
}

#endif /* SINPE_HALF_H */
