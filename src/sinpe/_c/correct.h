/* correct.h: factor * cos(p w) and factor * sin(p w) correctly rounded to float32, float16
   or bfloat16: the exact value's nearest element, ties to even (there are none: p w is a
   nonzero rational, so its cosine and sine are transcendental). The filler (fill.h) calls it
   for the few values its own float64 result cannot round with certainty (fill.h, "Narrow
   types"). Twin: _twin/correct.py, the same contract by big-integer arithmetic; both are
   correct, so both give the same bits (no operation order needs to match).

   Method, for finite p (|p| < 2^53) and w, p w != 0. |p| = mp 2^ep and |w| = mw 2^ew
   (integers below 2^53), M = mp mw (at most 106 bits), E = ep + ew, x = |p w| = M 2^E.

   1. Tiny x (M < 2^(-40 - E), so x < 2^-40): x = p w exactly as a double-double (a Dekker
      product; below 2^-969 its tail may underflow, where every narrow type rounds to
      zero or its smallest subnormal anyway), sin x = x - x^3/6 and cos x = 1 - x^2/2, the
      dropped terms below 2^-80 x and 2^-160.
   2. Otherwise (Payne-Hanek) x / (2 pi) mod 1 from the 1344-bit floor(2^1344 / (2 pi)) of
      correct_constants.h (the integer _exactmath/exact_constants.py holds): the L = 320 bits
      of 1/(2 pi) from 2^-k0, k0 = max(E, 0) + 1, times M (the bits above 2^-k0 add only
      integers to x/(2 pi)). The dropped bits add less than 2^(106 - FP) turns, FP =
      k0 + L - 1 - E >= 320 the binary point of the product: below 2^-214 turns. The
      fraction times 4 is q + r, q the quadrant and r in [-1/2, 1/2) (128 bits of its
      magnitude kept: relative 2^-105), x_red = r pi/2 as a double-double (pi/2 to
      2^-160: relative 2^-103).
   3. cos and sin of |x_red| <= pi/4 + 2^-200 by their Taylor series to x^28 and x^29
      (the rest below 2^-120), Horner in double-double: about 30 operations of relative
      error below 2^-103 on partial sums that stay within [0.7, 1] (the series' terms fall
      by more than 10 each step), so a relative error below 2^-98 for each of C and S/x.
      Quadrant q turns them into cos x and sin x; sin takes the sign of p w.
   4. Times the factor (a Dekker product, relative 2^-104). The value y has
          |y - exact| <= e = |y| 2^-96 + |factor| 2^(108 - FP) 1.6
      (the reduction's absolute error, radians, with margin; for tiny x, |y| 2^-96 alone,
      or |y| 2^-50 below 2^-900). y +- e are both rounded to
      the type (through round-to-odd to 53 bits, which then rounds to nearest exactly for
      types of at most 51 bits: Boldo and Melquiond); equal bits are the exact value's. If
      they differ (y within e of a halfway point: probability about 2^-70 per value), the
      tiny path decides by step 5; otherwise y's own rounding is returned and the call says
      "undecided" (fill.h counts them; none has been seen).
   5. Tiny x, y +- e straddling the halfway point H (the midpoint of the two roundings,
      exact in a double; a float32 infinity counts as 2^128, the half types' as the 2^16
      and 2^128 their rounding returns): the bracket cannot decide an exact quantity
      Q = |factor| (cos) or |factor p w| (sin) on H, nor one within Q x^2 of it, and below
      x ~ 2^-537 x^2 vanishes from the double-double (the tie then went to even, sometimes
      the wrong way). The exact value is |t| = Q (1 - s) with s = 1 - cos x in
      (0, x^2/2) (cos), s = 1 - sin(x)/x in (x^2/6 (1 - x^2/20), x^2/6) (sin), s > 0 as
      x != 0. So |t| > H iff Q - H > Q s:
      - Q <= H: |t| < H (then Q s > 0 >= Q - H).
      - cos, Q > H: Q and H are doubles (H >= 2^-150, normal), so Q - H >= ulp(H) >=
        2^-52 H, while Q s < Q 2^-81 and Q < H (1 + 2^-47) (y, so Q, is within 2^-48 of
        H): |t| > H.
      - sin, Q > H: Q = mf M 2^(ef + E) exactly (mf the factor's mantissa, M = mp mw: at
        most 159 bits) and H = mh 2^eh, so D = Q - H is an exact integer in units of
        2^min(ef + E, eh) (both shifted to that unit, below 2^256: Q and H are within
        2^-47 of each other). Q - H can be far smaller than H x^2/6 without being zero (a
        product of three doubles comes within 2^-150 of a 25-bit H), so its size is
        compared: rho = 6 (D / Q) / x^2 in doubles, each of the few operands within
        2^-50 (relative 2^-46 in all), with exponents kept apart so nothing under- or
        overflows. rho > 1 + 2^-40: D/Q > x^2/6 > s, |t| > H. rho < 1 - 2^-40: D/Q <
        x^2/6 (1 - 2^-41) < s (x^2/20 < 2^-84), |t| < H. Between: undecided (D/Q equal
        to x^2/6 to 40 bits, on top of Q within 2^-80 of H: never seen, and counted).
      |t| > H returns the rounding of larger magnitude, |t| < H the smaller. Twin: the
      twin's exact rationals (_twin/correct.py) decide the same values. */
#ifndef SINPE_CORRECT_H
#define SINPE_CORRECT_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "constants.h"
#include "correct_constants.h"
#include "dd.h"
#include "half.h"

/* step 5 on; tests only (_kernel._set_exact_tiny): 0 leaves those values undecided as
   before it, the one way to make undecided values on purpose (the ring's test) */
static int sinpe__cr_exact_tiny = 1;

#define SINPE__CR_L 320   /* bits of 1/(2 pi) multiplied */
#define SINPE__CR_LIMBS 8 /* the product's limbs (2 + 5, and one of zeros) */

/* |x| = m 2^e, m < 2^53 (x finite, nonzero) */
static inline void sinpe__cr_mantissa(double x, uint64_t *m, int *e)
{
    uint64_t b;
    int be;
    memcpy(&b, &x, 8);
    be = (int)((b >> 52) & 0x7FF);
    *m = (b & 0xFFFFFFFFFFFFFull) | (be ? 0x10000000000000ull : 0);
    *e = (be ? be : 1) - 1075;
}

/* a * b = hi 2^64 + lo, without a 128-bit type */
static inline void sinpe__cr_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    *lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* 64 bits of floor(2^1344 / (2 pi)) from bit `pos` (0: its lowest bit) up */
static inline uint64_t sinpe__cr_inv_bits(int pos)
{
    int li = pos >> 6, off = pos & 63;
    uint64_t lo = li <= 20 ? sinpe__inv_2pi_limbs[20 - li] : 0;
    uint64_t hi = li + 1 <= 20 ? sinpe__inv_2pi_limbs[19 - li] : 0;
    return off ? (lo >> off) | (hi << (64 - off)) : lo;
}

/* bit `pos` of the little-endian number q (0 beyond its limbs) */
static inline int sinpe__cr_bit(const uint64_t *q, int pos)
{
    return pos < 64 * SINPE__CR_LIMBS ? (int)((q[pos >> 6] >> (pos & 63)) & 1) : 0;
}

/* 64 bits of q from bit pos (pos may be negative: zeros below bit 0) */
static inline uint64_t sinpe__cr_bits(const uint64_t *q, int pos)
{
    int li, off;
    uint64_t lo, hi;
    if (pos <= -64)
        return 0;
    if (pos < 0)
        return q[0] << -pos;
    li = pos >> 6;
    off = pos & 63;
    lo = li < SINPE__CR_LIMBS ? q[li] : 0;
    hi = li + 1 < SINPE__CR_LIMBS ? q[li + 1] : 0;
    return off ? (lo >> off) | (hi << (64 - off)) : lo;
}

/* Taylor sums in double-double of z = x^2: C = sum (-1)^k z^k/(2k)!, k <= 14;
   S = sum (-1)^k z^k/(2k+1)!, k <= 14 (sin x = x S), as c_0 - z (c_1 - z (c_2 - ...)) */
static inline void sinpe__cr_series(sinpe__dd z, sinpe__dd *c, sinpe__dd *s)
{
    sinpe__dd cc, ss, t;
    int k;
    cc.hi = sinpe__inv_factorial[28][0];
    cc.lo = sinpe__inv_factorial[28][1];
    ss.hi = sinpe__inv_factorial[29][0];
    ss.lo = sinpe__inv_factorial[29][1];
    for (k = 13; k >= 0; k--) {
        cc = sinpe__dd_mul(cc, z);
        t.hi = sinpe__inv_factorial[2 * k][0];
        t.lo = sinpe__inv_factorial[2 * k][1];
        cc.hi = -cc.hi;
        cc.lo = -cc.lo;
        cc = sinpe__dd_add(t, cc);
        ss = sinpe__dd_mul(ss, z);
        t.hi = sinpe__inv_factorial[2 * k + 1][0];
        t.lo = sinpe__inv_factorial[2 * k + 1][1];
        ss.hi = -ss.hi;
        ss.lo = -ss.lo;
        ss = sinpe__dd_add(t, ss);
    }
    *c = cc;
    *s = ss;
}

/* cos(p w) and sin(p w) as double-doubles, and the absolute error of the reduction in
   radians (0 for the tiny path): steps 1-3 above. Returns 1 for the tiny path. */
static int sinpe__cr_cos_sin(double p, double w, sinpe__dd *cos_out, sinpe__dd *sin_out,
                             double *reduction_error, double *relative_error)
{
    uint64_t mp, mw, m[2], wn[5], q[SINPE__CR_LIMBS], hi, lo, carry, top, low;
    int ep, ew, e, k0, fp, s, i, j, quadrant, negative, b, bits_m;
    double sign = ((p < 0) != (w < 0)) ? -1.0 : 1.0;
    sinpe__dd r, x, z, c, sn, t;

    sinpe__cr_mantissa(p, &mp, &ep);
    sinpe__cr_mantissa(w, &mw, &ew);
    e = ep + ew;
    sinpe__cr_mul64(mp, mw, &m[1], &m[0]);
    for (bits_m = 128; bits_m > 0 && !((m[(bits_m - 1) >> 6] >> ((bits_m - 1) & 63)) & 1); bits_m--)
        ;
    *reduction_error = 0.0;
    *relative_error = 0x1p-96;
    if (bits_m + e <= -40) { /* 1. tiny */
        x = sinpe__two_prod_split(fabs(p), fabs(w));
        z = sinpe__dd_mul(x, x);
        t.hi = -z.hi / 6.0;
        t.lo = 0.0;
        t = sinpe__dd_mul(x, t); /* -x^3/6 to relative 2^-50: below 2^-130 x */
        *sin_out = sinpe__dd_add(x, t);
        t.hi = 1.0;
        t.lo = 0.0;
        z.hi *= -0.5;
        z.lo *= -0.5;
        *cos_out = sinpe__dd_add(t, z);
        sin_out->hi *= sign;
        sin_out->lo *= sign;
        if (bits_m + e <= -900) /* the product's tail may underflow: 2^-53 relative */
            *relative_error = 0x1p-50;
        return 1;
    }
    /* 2. the window of 1/(2 pi) and the product */
    k0 = (e > 0 ? e : 0) + 1;
    s = 1344 - (k0 + SINPE__CR_L - 1);
    for (j = 0; j < 5; j++)
        wn[j] = sinpe__cr_inv_bits(s + 64 * j);
    memset(q, 0, sizeof q);
    for (i = 0; i < 2; i++) {
        carry = 0;
        for (j = 0; j < 5; j++) {
            uint64_t sum;
            sinpe__cr_mul64(m[i], wn[j], &hi, &lo);
            sum = q[i + j] + lo;
            hi += sum < lo;
            sum += carry;
            hi += sum < carry;
            q[i + j] = sum;
            carry = hi;
        }
        for (j = i + 5; carry && j < SINPE__CR_LIMBS; j++) {
            q[j] += carry;
            carry = q[j] < carry;
        }
    }
    fp = k0 + SINPE__CR_L - 1 - e; /* the binary point: x / (2 pi) = q 2^-fp + integers */
    quadrant = 2 * sinpe__cr_bit(q, fp - 1) + sinpe__cr_bit(q, fp - 2);
    negative = sinpe__cr_bit(q, fp - 3); /* r >= 1/2: take r - 1 */
    /* the fraction below the quadrant bits, fp - 2 bits (its magnitude, when negative) */
    for (j = 0; j < SINPE__CR_LIMBS; j++) {
        int lo_bit = 64 * j, keep = fp - 2 - lo_bit;
        uint64_t mask = keep >= 64 ? ~0ull : keep <= 0 ? 0 : ((1ull << keep) - 1);
        q[j] &= mask;
    }
    if (negative) { /* 2^(fp-2) - q, within fp - 2 bits */
        carry = 1;
        for (j = 0; j < SINPE__CR_LIMBS; j++) {
            int keep = fp - 2 - 64 * j;
            uint64_t mask = keep >= 64 ? ~0ull : keep <= 0 ? 0 : ((1ull << keep) - 1);
            uint64_t v = (~q[j] & mask) + carry;
            carry = (carry && v == 0 && mask) ? 1 : 0;
            q[j] = v & mask;
        }
        quadrant = (quadrant + 1) & 3;
    }
    for (b = 64 * SINPE__CR_LIMBS - 1; b >= 0 && !sinpe__cr_bit(q, b); b--)
        ;
    if (b < 0) {
        r.hi = r.lo = 0.0;
    } else { /* the top 128 bits: 53 exactly, the next 75 rounded once */
        top = sinpe__cr_bits(q, b - 63);
        low = sinpe__cr_bits(q, b - 127);
        r.hi = ldexp((double)(top >> 11), b - 52 - (fp - 2));
        r.lo = ldexp((double)(top & 0x7FF), b - 63 - (fp - 2)) +
               ldexp((double)low, b - 127 - (fp - 2));
        r = sinpe__fast_two_sum(r.hi, r.lo);
    }
    if (negative) {
        r.hi = -r.hi;
        r.lo = -r.lo;
    }
    /* x_red = r pi / 2 */
    t = sinpe__two_prod_split(r.hi, sinpe__pio2[0]);
    x = sinpe__fast_two_sum(t.hi, t.lo + (r.hi * sinpe__pio2[1] + r.lo * sinpe__pio2[0]));
    *reduction_error = ldexp(1.0, 108 - fp) * 1.6;
    /* 3. the series and the quadrant */
    z = sinpe__dd_mul(x, x);
    sinpe__cr_series(z, &c, &sn);
    sn = sinpe__dd_mul(x, sn);
    switch (quadrant) {
    case 0: *cos_out = c; *sin_out = sn; break;
    case 1: cos_out->hi = -sn.hi; cos_out->lo = -sn.lo; *sin_out = c; break;
    case 2: cos_out->hi = -c.hi; cos_out->lo = -c.lo; sin_out->hi = -sn.hi; sin_out->lo = -sn.lo; break;
    default: *cos_out = sn; sin_out->hi = -c.hi; sin_out->lo = -c.lo; break;
    }
    sin_out->hi *= sign;
    sin_out->lo *= sign;
    return 0;
}

/* x rounded once to the kind (SINPE_KIND_F32/F16/BF16), as the double it is (2^16 or 2^128
   beyond the range: the infinity of the format, which the stores encode) */
static inline double sinpe__cr_narrow(double x, int kind)
{
    if (kind == SINPE_KIND_F32)
        return (double)(float)x;
    if (kind == SINPE_KIND_F16)
        return sinpe_round_to_format(x, SINPE_F16_MANTISSA, SINPE_F16_MIN_EXPONENT,
                                     SINPE_F16_MAX_EXPONENT);
    return sinpe_round_to_format(x, SINPE_BF16_MANTISSA, SINPE_BF16_MIN_EXPONENT,
                                 SINPE_BF16_MAX_EXPONENT);
}

/* hi + lo rounded to 53 bits towards odd, then to the kind: hi + lo rounded once */
static inline double sinpe__cr_round(sinpe__dd y, int kind)
{
    uint64_t bits;
    double h = y.hi;
    memcpy(&bits, &h, 8);
    if (y.lo != 0.0 && !(bits & 1))
        h = nextafter(h, y.lo > 0 ? INFINITY : -INFINITY);
    return sinpe__cr_narrow(h, kind);
}

/* y scaled by the factor, rounded to the kind with the bracket of step 4: 1 when decided;
   ends: the bracket's two roundings */
static inline int sinpe__cr_finish(sinpe__dd y, double factor, double reduction_error,
                                   double relative_error, int kind, double *out, double *ends)
{
    sinpe__dd v = sinpe__two_prod_split(y.hi, factor), lo_end, hi_end, d;
    double e, a, b;
    v = sinpe__fast_two_sum(v.hi, v.lo + y.lo * factor);
    e = fabs(v.hi) * relative_error + fabs(factor) * reduction_error;
    d.hi = -e;
    d.lo = 0.0;
    lo_end = sinpe__dd_add(v, d);
    d.hi = e;
    hi_end = sinpe__dd_add(v, d);
    a = sinpe__cr_round(lo_end, kind);
    b = sinpe__cr_round(hi_end, kind);
    ends[0] = a;
    ends[1] = b;
    if (memcmp(&a, &b, 8) == 0) {
        *out = a;
        return 1;
    }
    *out = sinpe__cr_round(v, kind);
    return 0;
}

/* n[0..3] += a << shift (little-endian 64-bit limbs, a < 2^128 as a[0..1], shift >= 0; the
   caller keeps the sum below 2^256): exact */
static inline void sinpe__cr_shift_in(uint64_t *n, const uint64_t *a, int na, int shift)
{
    int j, li = shift >> 6, off = shift & 63;
    uint64_t v[5] = {0, 0, 0, 0, 0};
    for (j = 0; j < na && j + li < 5; j++) {
        v[j + li] |= a[j] << off;
        if (off && j + li + 1 < 5)
            v[j + li + 1] |= a[j] >> (64 - off);
    }
    for (j = 0; j < 4; j++)
        n[j] = v[j];
}

/* n (4 limbs of SINPE__CR_LIMBS, the rest zero) as a double, within relative 2^-52 (its
   top 64 bits, rounded once) */
static inline double sinpe__cr_to_double(const uint64_t *n)
{
    int j, b;
    for (j = 3; j >= 0 && !n[j]; j--)
        ;
    if (j < 0)
        return 0.0;
    for (b = 63; !((n[j] >> b) & 1); b--)
        ;
    b += 64 * j; /* the top bit */
    return ldexp((double)sinpe__cr_bits(n, b - 63), b - 63);
}

/* Step 5 for sin: the sign of |factor sin(p w)| - h (1 above, -1 below, 0 undecided), with
   h > 0 within 2^-47 of |factor p w| and |p w| < 2^-40. */
static int sinpe__cr_tiny_sin_side(double p, double w, double factor, double h)
{
    uint64_t mp, mw, mf, mh, m[2], fm[3], hi, lo, borrow;
    uint64_t qn[SINPE__CR_LIMBS] = {0}, hn[SINPE__CR_LIMBS] = {0}, dn[SINPE__CR_LIMBS] = {0};
    int ep, ew, ef, eh, e, base, j, k, less;
    double r, xm, rho, g;
    sinpe__cr_mantissa(p, &mp, &ep);
    sinpe__cr_mantissa(w, &mw, &ew);
    sinpe__cr_mantissa(factor, &mf, &ef);
    sinpe__cr_mantissa(h, &mh, &eh);
    e = ep + ew;
    sinpe__cr_mul64(mp, mw, &m[1], &m[0]); /* M = mp mw, x = M 2^e */
    sinpe__cr_mul64(mf, m[0], &hi, &fm[0]); /* mf M: 3 limbs */
    sinpe__cr_mul64(mf, m[1], &fm[2], &lo);
    fm[1] = hi + lo;
    fm[2] += fm[1] < lo;
    base = ef + e < eh ? ef + e : eh;
    if (ef + e - base > 60 || eh - base > 200) /* not within 2^-47 of each other */
        return 0;
    sinpe__cr_shift_in(qn, fm, 3, ef + e - base); /* Q / 2^base */
    sinpe__cr_shift_in(hn, &mh, 1, eh - base);    /* H / 2^base */
    for (j = 3, less = 0; j >= 0; j--)
        if (qn[j] != hn[j]) {
            less = qn[j] < hn[j];
            break;
        }
    if (j < 0 || less) /* Q <= H: |t| < Q <= H */
        return -1;
    for (j = 0, borrow = 0; j < 4; j++) { /* D = Q - H > 0 */
        uint64_t d = qn[j] - hn[j];
        uint64_t b2 = qn[j] < hn[j];
        dn[j] = d - borrow;
        borrow = b2 | (d < borrow);
    }
    r = sinpe__cr_to_double(dn) / sinpe__cr_to_double(qn); /* D/Q, within 2^-50 */
    xm = ldexp((double)m[1], 64) + (double)m[0];            /* M, within 2^-52 */
    rho = 6.0 * r / (xm * xm);                              /* (D/Q) 6 / M^2: 2^-431 .. 2^-44 */
    g = frexp(rho, &k);                                     /* rho 2^-2e = g 2^(k - 2e) */
    if (k - 2 * e > 2)
        return 1;
    if (k - 2 * e < -2)
        return -1;
    g = ldexp(g, k - 2 * e);
    return g > 1.0 + 0x1p-40 ? 1 : g < 1.0 - 0x1p-40 ? -1 : 0;
}

/* Step 5: the tiny path's value whose bracket rounded to ends[0] != ends[1] (cos: is_sin 0,
   the value factor cos(p w)), decided exactly; 1 when decided (*out set), 0 otherwise */
static int sinpe__cr_tiny_decide(double p, double w, double factor, int is_sin,
                                 const double *ends, double *out)
{
    double a = ends[0], b = ends[1], ma, mb, h, q;
    int side;
    ma = isinf(a) ? 0x1p128 : fabs(a);
    mb = isinf(b) ? 0x1p128 : fabs(b);
    if (a != a || b != b || ma == mb)
        return 0;
    h = (ma + mb) * 0.5; /* adjacent values of at most 25 bits: exact */
    if (!is_sin) {
        q = fabs(factor);
        side = q > h ? 1 : -1;
    } else {
        side = sinpe__cr_tiny_sin_side(p, w, factor, h);
        if (!side)
            return 0;
    }
    *out = (side > 0) == (ma > mb) ? a : b;
    return 1;
}

/* factor cos(p w) and factor sin(p w) correctly rounded to the kind, as doubles (|p| <
   2^53, both finite; p w = 0 gives the factor and a signed zero): the number of the two
   that were decided (2 but for a value within about 2^-96 of a halfway point) */
static int sinpe_correct_cos_sin(double p, double w, double factor, int kind, double *c,
                                 double *s)
{
    sinpe__dd cd, sd;
    double err, rel;
    if (p == 0.0 || w == 0.0) { /* exact: factor and a zero of the sign of p w factor */
        *c = sinpe__cr_narrow(factor, kind);
        *s = sinpe__cr_narrow(p * w * factor, kind);
        return 2;
    }
    int tiny, dc, ds;
    double ends[2];
    tiny = sinpe__cr_cos_sin(p, w, &cd, &sd, &err, &rel);
    dc = sinpe__cr_finish(cd, factor, err, rel, kind, c, ends);
    if (!dc && tiny && sinpe__cr_exact_tiny) /* step 5 */
        dc = sinpe__cr_tiny_decide(p, w, factor, 0, ends, c);
    ds = sinpe__cr_finish(sd, factor, err, rel, kind, s, ends);
    if (!ds && tiny && sinpe__cr_exact_tiny)
        ds = sinpe__cr_tiny_decide(p, w, factor, 1, ends, s);
    if (*s == 0.0 && fabs(p * w) < 1.0) /* sin x has the sign of x for |x| < 1; a product
        below the least double loses it in the tail's arithmetic (+0 + -0) */
        *s = copysign(0.0, p) * copysign(1.0, w) * copysign(1.0, factor);
    return dc + ds;
}

#endif /* SINPE_CORRECT_H */
