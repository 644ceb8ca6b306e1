/*
 * exact.h: cos(p*w) and sin(p*w) to within half an ulp (plus 2^-65.3) for
 * double positions p and frequencies w, with double arithmetic only.
 *
 * Twin: _twin/exact.py (with _twin/turns.py) performs the same double operations in the same
 * order and returns bit-identical arrays.  It also computes the frequency
 * table this header consumes and the exact slow path for |w| >= 2^32.
 *
 * Build with -O3 -ffp-contract=off (setup.py does; for clang a pragma below
 * switches contraction off too).  No long double, no libm sin/cos.
 *
 * DERIVATION AND ERROR BOUND
 * ==========================
 * RN(.) is rounding to nearest even, u = 2^-53, ulp(y) = 2^(floor(log2|y|)-52).
 * Bounds are absolute; eps_* are in radians unless marked "turns".
 *
 * Contract.  For finite p with |p| < 2^53 and finite w != 0, taken as exact
 * binary numbers with their exact product, every returned y approximates
 * f = cos(p w) or sin(p w) with
 *     |y - f| <= ulp(y)/2 + E,   E = 2^-65.3 = 2^-12.3 u.
 * If |RN(p w)| < 2^-40 (SINPE_TINY_ARGUMENT) the kernels return cos = 1
 * (the correctly rounded value: 1 - cos < 2^-81) and sin = RN(p w), so
 * |y - f| <= ulp(y)/2 + |p w|^3/6 (relative accuracy, signed zeros kept).
 *
 * 1. Frequency constants (_twin/turns.py prepare_frequency_table, once per w):
 *    c = w / (2 pi) turns per unit of p, c0 = RN(c), c1 = RN(c - c0),
 *    c2 = RN(c - c0 - c1), from a 1344-bit 1/(2 pi):
 *    |c - c0 - c1 - c2| <= ulp(c2)/2 <= 2^-159 |c|.
 *
 * 2. Turns t = p c mod 1, fast path |w| < 2^32 (sinpe__fast_turns).
 *    |c0| < 2^29.35, so |c1| <= ulp(c0)/2 <= 2^-24, |c2| <= 2^-77.
 *    h0 + l0 = p c0, h1 + l1 = p c1 exactly (two_prod); m2 = RN(p c2).
 *    |h0| < 2^83 may carry an integer part, as may |l0| <= 2^29 and
 *    |h1| <= 2^29; |l1| <= 2^-24 and |m2| <= 2^-24 cannot.  Integers are
 *    dropped exactly: f0 = frac(h0); s1 + e1 = l0 + h1 (two_sum, |s1| <= 2^30,
 *    |e1| <= 2^-23); f1 = frac(s1); u + eu = f0 + f1 (two_sum, |u| <= 1).
 *    tail = ((eu + e1) + l1) + m2: partial sums below 2^-21, three
 *    roundings of at most 2^-75; t_hi + t_lo = u + tail exactly (two_sum).
 *      eps_t <= 3 * 2^-75 (tail) + 2^-77 (m2) + 2^53 ulp(c2)/2 (c truncated,
 *            <= 2^-77) = 3.5 * 2^-75 < 2^-73.19 turns;  2 pi eps_t < 2^-70.54.
 *    Slow path (|w| >= 2^32, _twin/turns.py slow_turns, big integers): t
 *    to 2^-191, t_hi = RN(t), t_lo = RN(t - t_hi): eps_t < 2^-106 turns.
 *    Either way |t_hi| <= 1 + 2^-21 and |t_lo| <= ulp(t_hi)/2 <= 2^-52.
 *
 * 3. Table split (sinpe__turns_to_radians).  k = RN(256 t_hi) through the
 *    1.5 * 2^52 magic constant (whose low mantissa bits then hold k, so
 *    j = k mod 256 is a mask).  r0 = t_hi - k/256 is exact: both are
 *    multiples of ulp(t_hi) and |r0| <= 2^-9 <= |t_hi| unless k = 0.
 *    r = r0 + t_lo exactly (fast_two_sum: r0 is 0 or >= ulp(t_hi) > |t_lo|),
 *    |r| <= 2^-9 + 2^-52.  x = 2 pi r as x_hi + x_lo: r_hi * PI2_HI exact
 *    (two_prod) plus RN(r_hi PI2_LO + r_lo PI2_HI) (< 2^-58.8, roundings
 *    < 2^-111); dropped r_lo PI2_LO < 2^-113.8 and (2 pi - PI2) r < 2^-116.
 *      eps_x < 2^-109;  |x| <= 0.0122718463 < 2^-6.34.
 *
 * 4. cos x - 1 and sin x - x_hi (sinpe__radians_cos_sin).  z + z' = x_hi^2
 *    exact (two_prod, |z'| <= 2^-66), q = RN(z' + 2 RN(x_hi x_lo)):
 *    x^2 = z + q to 2^-116, |x^2 - z| < 2^-64.8.
 *    m = (RN(z^2 P(z)) - q/2) - z/2, P(z) = 1/24 - z/720 + z^2/40320 (Horner,
 *    coefficients RN of the rationals), |z^2 P(z)| < 2^-29.9:
 *      z for x^2 in z^2 P: x^2 |x^2 - z| / 12 < 2^-81.1; evaluation
 *      roundings (relative 3u) < 2^-81.4; coefficients < 2^-83.4; rounding
 *      of RN(..) - q/2 <= 2^-84; truncation x^10/10! < 2^-85.2; and the last
 *      rounding, |m| < 2^-13: <= 2^-67.           eps_m < 2^-67 + 2^-79.9.
 *    sigma = x_lo + RN(x_hi z) S(z), S(z) = -1/6 + z/120 - z^2/5040:
 *      x_hi z for x^3: (3 x^2 |x_lo| + |x_hi z'|) / 6 < 2^-73.1; evaluation
 *      (relative 4.5u on |x^3/6| < 2^-21.63) < 2^-72.5; truncation
 *      x^9/9! < 2^-75.6; final add (|sigma| < 2^-21) <= 2^-75.
 *                                                   eps_sigma < 2^-71.5.
 *
 * 5. Recombination, a = 2 pi j / 256, table ca_hi + ca_lo = cos a and
 *    sa_hi + sa_lo = sin a to 2^-107 each (generated with mpmath):
 *      cos(a+x) = ca_hi + ca_hi m + ca_lo cx - sa_hi x_hi - sa_hi sigma - sa_lo sx
 *      sin(a+x) = sa_hi + sa_hi m + sa_lo cx + ca_hi x_hi + ca_hi sigma + ca_lo sx
 *    with cx = RN(1 + m) ~ cos x, sx = RN(x_hi + sigma) ~ sin x (they only
 *    multiply |lo| <= 2^-54: < 2^-106).  sa_hi x_hi = sp + sp' exact
 *    (two_prod); ca_hi - sp = cs + cs' exact (fast_two_sum: a table value
 *    is 0 or at least sin(2 pi/256) = 0.0245 > |x| >= |sp|), |cs'| <= 2^-53.
 *    The tail cs' - sp' + ca_lo cx - sa_lo sx - sa_hi sigma + ca_hi m is
 *    summed in that order: three roundings below 2^-106 (partials < 2^-52),
 *    two of 2^-75 (sa_hi sigma and its sum, < 2^-21), two of 2^-67 (ca_hi m
 *    and the last sum, < 2^-13).           eps_eval < 2^-66 + 2^-73.9.
 *    Errors of m and sigma arrive scaled by |ca_hi|, |sa_hi| <= 1.
 *
 * 6. The returned value is RN(cs + tail), so |y - f| <= ulp(y)/2 + E with
 *    E = 2 pi eps_t + eps_x + 2 * 2^-107 + eps_m + eps_sigma + eps_eval
 *      < 2^-70.54 + 2^-109 + 2^-106 + 2^-67 + 2^-79.9 + 2^-71.5 + 2^-66 + 2^-73.9
 *      < 3.14 * 2^-67 < 2^-65.35:  E = 2^-65.3 = 2^-12.3 u (0.0002 u).
 *    E is dominated by the three 2^-67 roundings around ca_hi m (for exact
 *    turns the bound is 3.06 * 2^-67; check.py measures up to 2.9 * 2^-67
 *    before the last rounding).  Near a zero of cos or sin
 *    the table entry multiplying the large terms is an exact 0 and the
 *    roundings above become relative to the result; what remains absolute
 *    is 2 pi eps_t of the reduction (2^-70.54 at |w| ~ 2^32, |p| ~ 2^53;
 *    it shrinks with |p c|).
 *
 * Exactness of the two_prod steps (and so the FMA/Dekker bit identity)
 * needs products free of underflow: outside the tiny rule |p c0| > 2^-43
 * and the later operands (r, x, table values) are 0 or above 2^-300,
 * since a double-double p w/(2 pi) cannot come closer than that to a
 * multiple of 1/256.  Lanes under the tiny rule or on the slow path are
 * computed and discarded.
 */
#ifndef SINPE_EXACT_H
#define SINPE_EXACT_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "dd.h"
/* AVX2 + FMA (FMA only for exact products) where config.h says the CPU has them. */

/* Columns with |w| >= SINPE_FAST_W_LIMIT are skipped by sinpe_exact_cos_sin (left
 * untouched): _twin/exact.py reduces them exactly with big integers and finishes them with
 * the same final stage, in NumPy (the same bits). |RN(p*w)| < SINPE_TINY_ARGUMENT: cos = 1
 * and sin = RN(p*w). Both are in constants.h, shared with the twin. */
#include "constants.h"

/* Rows of the per-frequency table (SINPE_TABLE_ROWS x n_w, row major). */
enum {
    SINPE_ROW_W,     /* w itself */
    SINPE_ROW_C0,    /* c0 + c1 + c2 = w / (2 pi), each the nearest double */
    SINPE_ROW_C1,    /*   to what the previous ones leave */
    SINPE_ROW_C2,
    SINPE_ROW_C0_HI, /* Veltkamp split of c0 (Dekker products only) */
    SINPE_ROW_C0_LO,
    SINPE_ROW_C1_HI, /* Veltkamp split of c1 */
    SINPE_ROW_C1_LO,
    SINPE_TABLE_ROWS
};

/* 256 t + 1.5 * 2^52 rounds 256 t to an integer k kept in the low mantissa bits. */
#define SINPE__ROUND_MAGIC 0x1.8p52
/* Columns per block of the batch kernels (see sinpe_exact_cos_sin_plain). */
#define SINPE__BLOCK 64

/* Taylor coefficients, each the nearest double to the rational. */
#define SINPE__SIN_C3 (-1.0 / 6.0)
#define SINPE__SIN_C5 (1.0 / 120.0)
#define SINPE__SIN_C7 (-1.0 / 5040.0)
#define SINPE__COS_C4 (1.0 / 24.0)
#define SINPE__COS_C6 (-1.0 / 720.0)
#define SINPE__COS_C8 (1.0 / 40320.0)

/* BEGIN GENERATED by tools/gen_exact_constants.py: do not edit by hand. */
#define SINPE__TWO_PI_HI 0x1.921fb54442d18p+2
#define SINPE__TWO_PI_LO 0x1.1a62633145c07p-52
#define SINPE__TWO_PI_HI_HI 0x1.921fb58000000p+2 /* Veltkamp split of SINPE__TWO_PI_HI */
#define SINPE__TWO_PI_HI_LO -0x1.dde9740000000p-25
/* sinpe__turn_table[j] = {cos_hi, cos_lo, sin_hi, sin_lo} of 2*pi*j/256. */
static const double sinpe__turn_table[256][4] = {
    {0x1.0000000000000p+0, 0x0.0p+0, 0x0.0p+0, 0x0.0p+0},
    {0x1.ffd886084cd0dp-1, -0x1.1354d4556e4cbp-55, 0x1.92155f7a3667ep-6, -0x1.b1d63091a0130p-64},
    {0x1.ff621e3796d7ep-1, -0x1.c57bc2e24aa15p-57, 0x1.91f65f10dd814p-5, -0x1.912bd0d569a90p-61},
    {0x1.fe9cdad01883ap-1, 0x1.521ecd0c67e35p-57, 0x1.2d52092ce19f6p-4, -0x1.9a088a8bf6b2cp-59},
    {0x1.fd88da3d12526p-1, -0x1.87df6378811c7p-55, 0x1.917a6bc29b42cp-4, -0x1.e2718d26ed688p-60},
    {0x1.fc26470e19fd3p-1, 0x1.1ec8668ecaceep-55, 0x1.f564e56a9730ep-4, 0x1.a2704729ae56dp-59},
    {0x1.fa7557f08a517p-1, -0x1.7a0a8ca13571fp-55, 0x1.2c8106e8e613ap-3, 0x1.13000a89a11e0p-58},
    {0x1.f8764fa714ba9p-1, 0x1.ab256778ffcb6p-56, 0x1.5e214448b3fc6p-3, 0x1.531ff779ddac6p-57},
    {0x1.f6297cff75cb0p-1, 0x1.562172a361fd3p-56, 0x1.8f8b83c69a60bp-3, -0x1.26d19b9ff8d82p-57},
    {0x1.f38f3ac64e589p-1, -0x1.d7bafb51f72e6p-56, 0x1.c0b826a7e4f63p-3, -0x1.af1439e521935p-62},
    {0x1.f0a7efb9230d7p-1, 0x1.52c7adc6b4989p-56, 0x1.f19f97b215f1bp-3, -0x1.42deef11da2c4p-57},
    {0x1.ed740e7684963p-1, 0x1.e82c791f59cc2p-56, 0x1.111d262b1f677p-2, 0x1.824c20ab7aa9ap-56},
    {0x1.e9f4156c62ddap-1, 0x1.760b1e2e3f81ep-55, 0x1.294062ed59f06p-2, -0x1.5d28da2c4612dp-56},
    {0x1.e6288ec48e112p-1, -0x1.16b56f2847754p-57, 0x1.4135c94176601p-2, 0x1.0c97c4afa2518p-56},
    {0x1.e212104f686e5p-1, -0x1.014c76c126527p-55, 0x1.58f9a75ab1fddp-2, -0x1.efdc0d58cf620p-62},
    {0x1.ddb13b6ccc23cp-1, 0x1.83c37c6107db3p-55, 0x1.7088530fa459fp-2, -0x1.44b19e0864c5dp-56},
    {0x1.d906bcf328d46p-1, 0x1.457e610231ac2p-56, 0x1.87de2a6aea963p-2, -0x1.72cedd3d5a610p-57},
    {0x1.d4134d14dc93ap-1, -0x1.4ef5295d25af2p-55, 0x1.9ef7943a8ed8ap-2, 0x1.6da81290bdbabp-57},
    {0x1.ced7af43cc773p-1, -0x1.e7b6bb5ab58aep-58, 0x1.b5d1009e15cc0p-2, 0x1.5b362cb974183p-57},
    {0x1.c954b213411f5p-1, -0x1.2fb761e946603p-58, 0x1.cc66e9931c45ep-2, 0x1.6850e59c37f8fp-58},
    {0x1.c38b2f180bdb1p-1, -0x1.6e0b1757c8d07p-56, 0x1.e2b5d3806f63bp-2, 0x1.e0d891d3c6841p-58},
    {0x1.bd7c0ac6f952ap-1, -0x1.825a732ac700ap-55, 0x1.f8ba4dbf89abap-2, -0x1.2ec1fc1b776b8p-60},
    {0x1.b728345196e3ep-1, -0x1.bc69f324e6d61p-55, 0x1.073879922ffeep-1, -0x1.a5a014347406cp-55},
    {0x1.b090a58150200p-1, -0x1.926da300ffccep-55, 0x1.11eb3541b4b23p-1, -0x1.ef23b69abe4f1p-55},
    {0x1.a9b66290ea1a3p-1, 0x1.9f630e8b6dac8p-60, 0x1.1c73b39ae68c8p-1, 0x1.b25dd267f6600p-55},
    {0x1.a29a7a0462782p-1, -0x1.128bb015df175p-56, 0x1.26d054cdd12dfp-1, -0x1.5da743ef3770cp-55},
    {0x1.9b3e047f38741p-1, -0x1.30ee286712474p-55, 0x1.30ff7fce17035p-1, -0x1.efcc626f74a6fp-57},
    {0x1.93a22499263fbp-1, 0x1.3d419a920df0bp-55, 0x1.3affa292050b9p-1, 0x1.e3e25e3954964p-56},
    {0x1.8bc806b151741p-1, -0x1.2c5e12ed1336dp-55, 0x1.44cf325091dd6p-1, 0x1.8076a2cfdc6b3p-57},
    {0x1.83b0e0bff976ep-1, -0x1.6f420f8ea3475p-56, 0x1.4e6cabbe3e5e9p-1, 0x1.3c293edceb327p-57},
    {0x1.7b5df226aafafp-1, -0x1.0f537acdf0ad7p-56, 0x1.57d69348ceca0p-1, -0x1.75720992bfbb2p-55},
    {0x1.72d0837efff96p-1, 0x1.0d4ef0f1d915cp-55, 0x1.610b7551d2cdfp-1, -0x1.251b352ff2a37p-56},
    {0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55, 0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55},
    {0x1.610b7551d2cdfp-1, -0x1.251b352ff2a37p-56, 0x1.72d0837efff96p-1, 0x1.0d4ef0f1d915cp-55},
    {0x1.57d69348ceca0p-1, -0x1.75720992bfbb2p-55, 0x1.7b5df226aafafp-1, -0x1.0f537acdf0ad7p-56},
    {0x1.4e6cabbe3e5e9p-1, 0x1.3c293edceb327p-57, 0x1.83b0e0bff976ep-1, -0x1.6f420f8ea3475p-56},
    {0x1.44cf325091dd6p-1, 0x1.8076a2cfdc6b3p-57, 0x1.8bc806b151741p-1, -0x1.2c5e12ed1336dp-55},
    {0x1.3affa292050b9p-1, 0x1.e3e25e3954964p-56, 0x1.93a22499263fbp-1, 0x1.3d419a920df0bp-55},
    {0x1.30ff7fce17035p-1, -0x1.efcc626f74a6fp-57, 0x1.9b3e047f38741p-1, -0x1.30ee286712474p-55},
    {0x1.26d054cdd12dfp-1, -0x1.5da743ef3770cp-55, 0x1.a29a7a0462782p-1, -0x1.128bb015df175p-56},
    {0x1.1c73b39ae68c8p-1, 0x1.b25dd267f6600p-55, 0x1.a9b66290ea1a3p-1, 0x1.9f630e8b6dac8p-60},
    {0x1.11eb3541b4b23p-1, -0x1.ef23b69abe4f1p-55, 0x1.b090a58150200p-1, -0x1.926da300ffccep-55},
    {0x1.073879922ffeep-1, -0x1.a5a014347406cp-55, 0x1.b728345196e3ep-1, -0x1.bc69f324e6d61p-55},
    {0x1.f8ba4dbf89abap-2, -0x1.2ec1fc1b776b8p-60, 0x1.bd7c0ac6f952ap-1, -0x1.825a732ac700ap-55},
    {0x1.e2b5d3806f63bp-2, 0x1.e0d891d3c6841p-58, 0x1.c38b2f180bdb1p-1, -0x1.6e0b1757c8d07p-56},
    {0x1.cc66e9931c45ep-2, 0x1.6850e59c37f8fp-58, 0x1.c954b213411f5p-1, -0x1.2fb761e946603p-58},
    {0x1.b5d1009e15cc0p-2, 0x1.5b362cb974183p-57, 0x1.ced7af43cc773p-1, -0x1.e7b6bb5ab58aep-58},
    {0x1.9ef7943a8ed8ap-2, 0x1.6da81290bdbabp-57, 0x1.d4134d14dc93ap-1, -0x1.4ef5295d25af2p-55},
    {0x1.87de2a6aea963p-2, -0x1.72cedd3d5a610p-57, 0x1.d906bcf328d46p-1, 0x1.457e610231ac2p-56},
    {0x1.7088530fa459fp-2, -0x1.44b19e0864c5dp-56, 0x1.ddb13b6ccc23cp-1, 0x1.83c37c6107db3p-55},
    {0x1.58f9a75ab1fddp-2, -0x1.efdc0d58cf620p-62, 0x1.e212104f686e5p-1, -0x1.014c76c126527p-55},
    {0x1.4135c94176601p-2, 0x1.0c97c4afa2518p-56, 0x1.e6288ec48e112p-1, -0x1.16b56f2847754p-57},
    {0x1.294062ed59f06p-2, -0x1.5d28da2c4612dp-56, 0x1.e9f4156c62ddap-1, 0x1.760b1e2e3f81ep-55},
    {0x1.111d262b1f677p-2, 0x1.824c20ab7aa9ap-56, 0x1.ed740e7684963p-1, 0x1.e82c791f59cc2p-56},
    {0x1.f19f97b215f1bp-3, -0x1.42deef11da2c4p-57, 0x1.f0a7efb9230d7p-1, 0x1.52c7adc6b4989p-56},
    {0x1.c0b826a7e4f63p-3, -0x1.af1439e521935p-62, 0x1.f38f3ac64e589p-1, -0x1.d7bafb51f72e6p-56},
    {0x1.8f8b83c69a60bp-3, -0x1.26d19b9ff8d82p-57, 0x1.f6297cff75cb0p-1, 0x1.562172a361fd3p-56},
    {0x1.5e214448b3fc6p-3, 0x1.531ff779ddac6p-57, 0x1.f8764fa714ba9p-1, 0x1.ab256778ffcb6p-56},
    {0x1.2c8106e8e613ap-3, 0x1.13000a89a11e0p-58, 0x1.fa7557f08a517p-1, -0x1.7a0a8ca13571fp-55},
    {0x1.f564e56a9730ep-4, 0x1.a2704729ae56dp-59, 0x1.fc26470e19fd3p-1, 0x1.1ec8668ecaceep-55},
    {0x1.917a6bc29b42cp-4, -0x1.e2718d26ed688p-60, 0x1.fd88da3d12526p-1, -0x1.87df6378811c7p-55},
    {0x1.2d52092ce19f6p-4, -0x1.9a088a8bf6b2cp-59, 0x1.fe9cdad01883ap-1, 0x1.521ecd0c67e35p-57},
    {0x1.91f65f10dd814p-5, -0x1.912bd0d569a90p-61, 0x1.ff621e3796d7ep-1, -0x1.c57bc2e24aa15p-57},
    {0x1.92155f7a3667ep-6, -0x1.b1d63091a0130p-64, 0x1.ffd886084cd0dp-1, -0x1.1354d4556e4cbp-55},
    {0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0, 0x0.0p+0},
    {-0x1.92155f7a3667ep-6, 0x1.b1d63091a0130p-64, 0x1.ffd886084cd0dp-1, -0x1.1354d4556e4cbp-55},
    {-0x1.91f65f10dd814p-5, 0x1.912bd0d569a90p-61, 0x1.ff621e3796d7ep-1, -0x1.c57bc2e24aa15p-57},
    {-0x1.2d52092ce19f6p-4, 0x1.9a088a8bf6b2cp-59, 0x1.fe9cdad01883ap-1, 0x1.521ecd0c67e35p-57},
    {-0x1.917a6bc29b42cp-4, 0x1.e2718d26ed688p-60, 0x1.fd88da3d12526p-1, -0x1.87df6378811c7p-55},
    {-0x1.f564e56a9730ep-4, -0x1.a2704729ae56dp-59, 0x1.fc26470e19fd3p-1, 0x1.1ec8668ecaceep-55},
    {-0x1.2c8106e8e613ap-3, -0x1.13000a89a11e0p-58, 0x1.fa7557f08a517p-1, -0x1.7a0a8ca13571fp-55},
    {-0x1.5e214448b3fc6p-3, -0x1.531ff779ddac6p-57, 0x1.f8764fa714ba9p-1, 0x1.ab256778ffcb6p-56},
    {-0x1.8f8b83c69a60bp-3, 0x1.26d19b9ff8d82p-57, 0x1.f6297cff75cb0p-1, 0x1.562172a361fd3p-56},
    {-0x1.c0b826a7e4f63p-3, 0x1.af1439e521935p-62, 0x1.f38f3ac64e589p-1, -0x1.d7bafb51f72e6p-56},
    {-0x1.f19f97b215f1bp-3, 0x1.42deef11da2c4p-57, 0x1.f0a7efb9230d7p-1, 0x1.52c7adc6b4989p-56},
    {-0x1.111d262b1f677p-2, -0x1.824c20ab7aa9ap-56, 0x1.ed740e7684963p-1, 0x1.e82c791f59cc2p-56},
    {-0x1.294062ed59f06p-2, 0x1.5d28da2c4612dp-56, 0x1.e9f4156c62ddap-1, 0x1.760b1e2e3f81ep-55},
    {-0x1.4135c94176601p-2, -0x1.0c97c4afa2518p-56, 0x1.e6288ec48e112p-1, -0x1.16b56f2847754p-57},
    {-0x1.58f9a75ab1fddp-2, 0x1.efdc0d58cf620p-62, 0x1.e212104f686e5p-1, -0x1.014c76c126527p-55},
    {-0x1.7088530fa459fp-2, 0x1.44b19e0864c5dp-56, 0x1.ddb13b6ccc23cp-1, 0x1.83c37c6107db3p-55},
    {-0x1.87de2a6aea963p-2, 0x1.72cedd3d5a610p-57, 0x1.d906bcf328d46p-1, 0x1.457e610231ac2p-56},
    {-0x1.9ef7943a8ed8ap-2, -0x1.6da81290bdbabp-57, 0x1.d4134d14dc93ap-1, -0x1.4ef5295d25af2p-55},
    {-0x1.b5d1009e15cc0p-2, -0x1.5b362cb974183p-57, 0x1.ced7af43cc773p-1, -0x1.e7b6bb5ab58aep-58},
    {-0x1.cc66e9931c45ep-2, -0x1.6850e59c37f8fp-58, 0x1.c954b213411f5p-1, -0x1.2fb761e946603p-58},
    {-0x1.e2b5d3806f63bp-2, -0x1.e0d891d3c6841p-58, 0x1.c38b2f180bdb1p-1, -0x1.6e0b1757c8d07p-56},
    {-0x1.f8ba4dbf89abap-2, 0x1.2ec1fc1b776b8p-60, 0x1.bd7c0ac6f952ap-1, -0x1.825a732ac700ap-55},
    {-0x1.073879922ffeep-1, 0x1.a5a014347406cp-55, 0x1.b728345196e3ep-1, -0x1.bc69f324e6d61p-55},
    {-0x1.11eb3541b4b23p-1, 0x1.ef23b69abe4f1p-55, 0x1.b090a58150200p-1, -0x1.926da300ffccep-55},
    {-0x1.1c73b39ae68c8p-1, -0x1.b25dd267f6600p-55, 0x1.a9b66290ea1a3p-1, 0x1.9f630e8b6dac8p-60},
    {-0x1.26d054cdd12dfp-1, 0x1.5da743ef3770cp-55, 0x1.a29a7a0462782p-1, -0x1.128bb015df175p-56},
    {-0x1.30ff7fce17035p-1, 0x1.efcc626f74a6fp-57, 0x1.9b3e047f38741p-1, -0x1.30ee286712474p-55},
    {-0x1.3affa292050b9p-1, -0x1.e3e25e3954964p-56, 0x1.93a22499263fbp-1, 0x1.3d419a920df0bp-55},
    {-0x1.44cf325091dd6p-1, -0x1.8076a2cfdc6b3p-57, 0x1.8bc806b151741p-1, -0x1.2c5e12ed1336dp-55},
    {-0x1.4e6cabbe3e5e9p-1, -0x1.3c293edceb327p-57, 0x1.83b0e0bff976ep-1, -0x1.6f420f8ea3475p-56},
    {-0x1.57d69348ceca0p-1, 0x1.75720992bfbb2p-55, 0x1.7b5df226aafafp-1, -0x1.0f537acdf0ad7p-56},
    {-0x1.610b7551d2cdfp-1, 0x1.251b352ff2a37p-56, 0x1.72d0837efff96p-1, 0x1.0d4ef0f1d915cp-55},
    {-0x1.6a09e667f3bcdp-1, 0x1.bdd3413b26456p-55, 0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55},
    {-0x1.72d0837efff96p-1, -0x1.0d4ef0f1d915cp-55, 0x1.610b7551d2cdfp-1, -0x1.251b352ff2a37p-56},
    {-0x1.7b5df226aafafp-1, 0x1.0f537acdf0ad7p-56, 0x1.57d69348ceca0p-1, -0x1.75720992bfbb2p-55},
    {-0x1.83b0e0bff976ep-1, 0x1.6f420f8ea3475p-56, 0x1.4e6cabbe3e5e9p-1, 0x1.3c293edceb327p-57},
    {-0x1.8bc806b151741p-1, 0x1.2c5e12ed1336dp-55, 0x1.44cf325091dd6p-1, 0x1.8076a2cfdc6b3p-57},
    {-0x1.93a22499263fbp-1, -0x1.3d419a920df0bp-55, 0x1.3affa292050b9p-1, 0x1.e3e25e3954964p-56},
    {-0x1.9b3e047f38741p-1, 0x1.30ee286712474p-55, 0x1.30ff7fce17035p-1, -0x1.efcc626f74a6fp-57},
    {-0x1.a29a7a0462782p-1, 0x1.128bb015df175p-56, 0x1.26d054cdd12dfp-1, -0x1.5da743ef3770cp-55},
    {-0x1.a9b66290ea1a3p-1, -0x1.9f630e8b6dac8p-60, 0x1.1c73b39ae68c8p-1, 0x1.b25dd267f6600p-55},
    {-0x1.b090a58150200p-1, 0x1.926da300ffccep-55, 0x1.11eb3541b4b23p-1, -0x1.ef23b69abe4f1p-55},
    {-0x1.b728345196e3ep-1, 0x1.bc69f324e6d61p-55, 0x1.073879922ffeep-1, -0x1.a5a014347406cp-55},
    {-0x1.bd7c0ac6f952ap-1, 0x1.825a732ac700ap-55, 0x1.f8ba4dbf89abap-2, -0x1.2ec1fc1b776b8p-60},
    {-0x1.c38b2f180bdb1p-1, 0x1.6e0b1757c8d07p-56, 0x1.e2b5d3806f63bp-2, 0x1.e0d891d3c6841p-58},
    {-0x1.c954b213411f5p-1, 0x1.2fb761e946603p-58, 0x1.cc66e9931c45ep-2, 0x1.6850e59c37f8fp-58},
    {-0x1.ced7af43cc773p-1, 0x1.e7b6bb5ab58aep-58, 0x1.b5d1009e15cc0p-2, 0x1.5b362cb974183p-57},
    {-0x1.d4134d14dc93ap-1, 0x1.4ef5295d25af2p-55, 0x1.9ef7943a8ed8ap-2, 0x1.6da81290bdbabp-57},
    {-0x1.d906bcf328d46p-1, -0x1.457e610231ac2p-56, 0x1.87de2a6aea963p-2, -0x1.72cedd3d5a610p-57},
    {-0x1.ddb13b6ccc23cp-1, -0x1.83c37c6107db3p-55, 0x1.7088530fa459fp-2, -0x1.44b19e0864c5dp-56},
    {-0x1.e212104f686e5p-1, 0x1.014c76c126527p-55, 0x1.58f9a75ab1fddp-2, -0x1.efdc0d58cf620p-62},
    {-0x1.e6288ec48e112p-1, 0x1.16b56f2847754p-57, 0x1.4135c94176601p-2, 0x1.0c97c4afa2518p-56},
    {-0x1.e9f4156c62ddap-1, -0x1.760b1e2e3f81ep-55, 0x1.294062ed59f06p-2, -0x1.5d28da2c4612dp-56},
    {-0x1.ed740e7684963p-1, -0x1.e82c791f59cc2p-56, 0x1.111d262b1f677p-2, 0x1.824c20ab7aa9ap-56},
    {-0x1.f0a7efb9230d7p-1, -0x1.52c7adc6b4989p-56, 0x1.f19f97b215f1bp-3, -0x1.42deef11da2c4p-57},
    {-0x1.f38f3ac64e589p-1, 0x1.d7bafb51f72e6p-56, 0x1.c0b826a7e4f63p-3, -0x1.af1439e521935p-62},
    {-0x1.f6297cff75cb0p-1, -0x1.562172a361fd3p-56, 0x1.8f8b83c69a60bp-3, -0x1.26d19b9ff8d82p-57},
    {-0x1.f8764fa714ba9p-1, -0x1.ab256778ffcb6p-56, 0x1.5e214448b3fc6p-3, 0x1.531ff779ddac6p-57},
    {-0x1.fa7557f08a517p-1, 0x1.7a0a8ca13571fp-55, 0x1.2c8106e8e613ap-3, 0x1.13000a89a11e0p-58},
    {-0x1.fc26470e19fd3p-1, -0x1.1ec8668ecaceep-55, 0x1.f564e56a9730ep-4, 0x1.a2704729ae56dp-59},
    {-0x1.fd88da3d12526p-1, 0x1.87df6378811c7p-55, 0x1.917a6bc29b42cp-4, -0x1.e2718d26ed688p-60},
    {-0x1.fe9cdad01883ap-1, -0x1.521ecd0c67e35p-57, 0x1.2d52092ce19f6p-4, -0x1.9a088a8bf6b2cp-59},
    {-0x1.ff621e3796d7ep-1, 0x1.c57bc2e24aa15p-57, 0x1.91f65f10dd814p-5, -0x1.912bd0d569a90p-61},
    {-0x1.ffd886084cd0dp-1, 0x1.1354d4556e4cbp-55, 0x1.92155f7a3667ep-6, -0x1.b1d63091a0130p-64},
    {-0x1.0000000000000p+0, 0x0.0p+0, 0x0.0p+0, 0x0.0p+0},
    {-0x1.ffd886084cd0dp-1, 0x1.1354d4556e4cbp-55, -0x1.92155f7a3667ep-6, 0x1.b1d63091a0130p-64},
    {-0x1.ff621e3796d7ep-1, 0x1.c57bc2e24aa15p-57, -0x1.91f65f10dd814p-5, 0x1.912bd0d569a90p-61},
    {-0x1.fe9cdad01883ap-1, -0x1.521ecd0c67e35p-57, -0x1.2d52092ce19f6p-4, 0x1.9a088a8bf6b2cp-59},
    {-0x1.fd88da3d12526p-1, 0x1.87df6378811c7p-55, -0x1.917a6bc29b42cp-4, 0x1.e2718d26ed688p-60},
    {-0x1.fc26470e19fd3p-1, -0x1.1ec8668ecaceep-55, -0x1.f564e56a9730ep-4, -0x1.a2704729ae56dp-59},
    {-0x1.fa7557f08a517p-1, 0x1.7a0a8ca13571fp-55, -0x1.2c8106e8e613ap-3, -0x1.13000a89a11e0p-58},
    {-0x1.f8764fa714ba9p-1, -0x1.ab256778ffcb6p-56, -0x1.5e214448b3fc6p-3, -0x1.531ff779ddac6p-57},
    {-0x1.f6297cff75cb0p-1, -0x1.562172a361fd3p-56, -0x1.8f8b83c69a60bp-3, 0x1.26d19b9ff8d82p-57},
    {-0x1.f38f3ac64e589p-1, 0x1.d7bafb51f72e6p-56, -0x1.c0b826a7e4f63p-3, 0x1.af1439e521935p-62},
    {-0x1.f0a7efb9230d7p-1, -0x1.52c7adc6b4989p-56, -0x1.f19f97b215f1bp-3, 0x1.42deef11da2c4p-57},
    {-0x1.ed740e7684963p-1, -0x1.e82c791f59cc2p-56, -0x1.111d262b1f677p-2, -0x1.824c20ab7aa9ap-56},
    {-0x1.e9f4156c62ddap-1, -0x1.760b1e2e3f81ep-55, -0x1.294062ed59f06p-2, 0x1.5d28da2c4612dp-56},
    {-0x1.e6288ec48e112p-1, 0x1.16b56f2847754p-57, -0x1.4135c94176601p-2, -0x1.0c97c4afa2518p-56},
    {-0x1.e212104f686e5p-1, 0x1.014c76c126527p-55, -0x1.58f9a75ab1fddp-2, 0x1.efdc0d58cf620p-62},
    {-0x1.ddb13b6ccc23cp-1, -0x1.83c37c6107db3p-55, -0x1.7088530fa459fp-2, 0x1.44b19e0864c5dp-56},
    {-0x1.d906bcf328d46p-1, -0x1.457e610231ac2p-56, -0x1.87de2a6aea963p-2, 0x1.72cedd3d5a610p-57},
    {-0x1.d4134d14dc93ap-1, 0x1.4ef5295d25af2p-55, -0x1.9ef7943a8ed8ap-2, -0x1.6da81290bdbabp-57},
    {-0x1.ced7af43cc773p-1, 0x1.e7b6bb5ab58aep-58, -0x1.b5d1009e15cc0p-2, -0x1.5b362cb974183p-57},
    {-0x1.c954b213411f5p-1, 0x1.2fb761e946603p-58, -0x1.cc66e9931c45ep-2, -0x1.6850e59c37f8fp-58},
    {-0x1.c38b2f180bdb1p-1, 0x1.6e0b1757c8d07p-56, -0x1.e2b5d3806f63bp-2, -0x1.e0d891d3c6841p-58},
    {-0x1.bd7c0ac6f952ap-1, 0x1.825a732ac700ap-55, -0x1.f8ba4dbf89abap-2, 0x1.2ec1fc1b776b8p-60},
    {-0x1.b728345196e3ep-1, 0x1.bc69f324e6d61p-55, -0x1.073879922ffeep-1, 0x1.a5a014347406cp-55},
    {-0x1.b090a58150200p-1, 0x1.926da300ffccep-55, -0x1.11eb3541b4b23p-1, 0x1.ef23b69abe4f1p-55},
    {-0x1.a9b66290ea1a3p-1, -0x1.9f630e8b6dac8p-60, -0x1.1c73b39ae68c8p-1, -0x1.b25dd267f6600p-55},
    {-0x1.a29a7a0462782p-1, 0x1.128bb015df175p-56, -0x1.26d054cdd12dfp-1, 0x1.5da743ef3770cp-55},
    {-0x1.9b3e047f38741p-1, 0x1.30ee286712474p-55, -0x1.30ff7fce17035p-1, 0x1.efcc626f74a6fp-57},
    {-0x1.93a22499263fbp-1, -0x1.3d419a920df0bp-55, -0x1.3affa292050b9p-1, -0x1.e3e25e3954964p-56},
    {-0x1.8bc806b151741p-1, 0x1.2c5e12ed1336dp-55, -0x1.44cf325091dd6p-1, -0x1.8076a2cfdc6b3p-57},
    {-0x1.83b0e0bff976ep-1, 0x1.6f420f8ea3475p-56, -0x1.4e6cabbe3e5e9p-1, -0x1.3c293edceb327p-57},
    {-0x1.7b5df226aafafp-1, 0x1.0f537acdf0ad7p-56, -0x1.57d69348ceca0p-1, 0x1.75720992bfbb2p-55},
    {-0x1.72d0837efff96p-1, -0x1.0d4ef0f1d915cp-55, -0x1.610b7551d2cdfp-1, 0x1.251b352ff2a37p-56},
    {-0x1.6a09e667f3bcdp-1, 0x1.bdd3413b26456p-55, -0x1.6a09e667f3bcdp-1, 0x1.bdd3413b26456p-55},
    {-0x1.610b7551d2cdfp-1, 0x1.251b352ff2a37p-56, -0x1.72d0837efff96p-1, -0x1.0d4ef0f1d915cp-55},
    {-0x1.57d69348ceca0p-1, 0x1.75720992bfbb2p-55, -0x1.7b5df226aafafp-1, 0x1.0f537acdf0ad7p-56},
    {-0x1.4e6cabbe3e5e9p-1, -0x1.3c293edceb327p-57, -0x1.83b0e0bff976ep-1, 0x1.6f420f8ea3475p-56},
    {-0x1.44cf325091dd6p-1, -0x1.8076a2cfdc6b3p-57, -0x1.8bc806b151741p-1, 0x1.2c5e12ed1336dp-55},
    {-0x1.3affa292050b9p-1, -0x1.e3e25e3954964p-56, -0x1.93a22499263fbp-1, -0x1.3d419a920df0bp-55},
    {-0x1.30ff7fce17035p-1, 0x1.efcc626f74a6fp-57, -0x1.9b3e047f38741p-1, 0x1.30ee286712474p-55},
    {-0x1.26d054cdd12dfp-1, 0x1.5da743ef3770cp-55, -0x1.a29a7a0462782p-1, 0x1.128bb015df175p-56},
    {-0x1.1c73b39ae68c8p-1, -0x1.b25dd267f6600p-55, -0x1.a9b66290ea1a3p-1, -0x1.9f630e8b6dac8p-60},
    {-0x1.11eb3541b4b23p-1, 0x1.ef23b69abe4f1p-55, -0x1.b090a58150200p-1, 0x1.926da300ffccep-55},
    {-0x1.073879922ffeep-1, 0x1.a5a014347406cp-55, -0x1.b728345196e3ep-1, 0x1.bc69f324e6d61p-55},
    {-0x1.f8ba4dbf89abap-2, 0x1.2ec1fc1b776b8p-60, -0x1.bd7c0ac6f952ap-1, 0x1.825a732ac700ap-55},
    {-0x1.e2b5d3806f63bp-2, -0x1.e0d891d3c6841p-58, -0x1.c38b2f180bdb1p-1, 0x1.6e0b1757c8d07p-56},
    {-0x1.cc66e9931c45ep-2, -0x1.6850e59c37f8fp-58, -0x1.c954b213411f5p-1, 0x1.2fb761e946603p-58},
    {-0x1.b5d1009e15cc0p-2, -0x1.5b362cb974183p-57, -0x1.ced7af43cc773p-1, 0x1.e7b6bb5ab58aep-58},
    {-0x1.9ef7943a8ed8ap-2, -0x1.6da81290bdbabp-57, -0x1.d4134d14dc93ap-1, 0x1.4ef5295d25af2p-55},
    {-0x1.87de2a6aea963p-2, 0x1.72cedd3d5a610p-57, -0x1.d906bcf328d46p-1, -0x1.457e610231ac2p-56},
    {-0x1.7088530fa459fp-2, 0x1.44b19e0864c5dp-56, -0x1.ddb13b6ccc23cp-1, -0x1.83c37c6107db3p-55},
    {-0x1.58f9a75ab1fddp-2, 0x1.efdc0d58cf620p-62, -0x1.e212104f686e5p-1, 0x1.014c76c126527p-55},
    {-0x1.4135c94176601p-2, -0x1.0c97c4afa2518p-56, -0x1.e6288ec48e112p-1, 0x1.16b56f2847754p-57},
    {-0x1.294062ed59f06p-2, 0x1.5d28da2c4612dp-56, -0x1.e9f4156c62ddap-1, -0x1.760b1e2e3f81ep-55},
    {-0x1.111d262b1f677p-2, -0x1.824c20ab7aa9ap-56, -0x1.ed740e7684963p-1, -0x1.e82c791f59cc2p-56},
    {-0x1.f19f97b215f1bp-3, 0x1.42deef11da2c4p-57, -0x1.f0a7efb9230d7p-1, -0x1.52c7adc6b4989p-56},
    {-0x1.c0b826a7e4f63p-3, 0x1.af1439e521935p-62, -0x1.f38f3ac64e589p-1, 0x1.d7bafb51f72e6p-56},
    {-0x1.8f8b83c69a60bp-3, 0x1.26d19b9ff8d82p-57, -0x1.f6297cff75cb0p-1, -0x1.562172a361fd3p-56},
    {-0x1.5e214448b3fc6p-3, -0x1.531ff779ddac6p-57, -0x1.f8764fa714ba9p-1, -0x1.ab256778ffcb6p-56},
    {-0x1.2c8106e8e613ap-3, -0x1.13000a89a11e0p-58, -0x1.fa7557f08a517p-1, 0x1.7a0a8ca13571fp-55},
    {-0x1.f564e56a9730ep-4, -0x1.a2704729ae56dp-59, -0x1.fc26470e19fd3p-1, -0x1.1ec8668ecaceep-55},
    {-0x1.917a6bc29b42cp-4, 0x1.e2718d26ed688p-60, -0x1.fd88da3d12526p-1, 0x1.87df6378811c7p-55},
    {-0x1.2d52092ce19f6p-4, 0x1.9a088a8bf6b2cp-59, -0x1.fe9cdad01883ap-1, -0x1.521ecd0c67e35p-57},
    {-0x1.91f65f10dd814p-5, 0x1.912bd0d569a90p-61, -0x1.ff621e3796d7ep-1, 0x1.c57bc2e24aa15p-57},
    {-0x1.92155f7a3667ep-6, 0x1.b1d63091a0130p-64, -0x1.ffd886084cd0dp-1, 0x1.1354d4556e4cbp-55},
    {0x0.0p+0, 0x0.0p+0, -0x1.0000000000000p+0, 0x0.0p+0},
    {0x1.92155f7a3667ep-6, -0x1.b1d63091a0130p-64, -0x1.ffd886084cd0dp-1, 0x1.1354d4556e4cbp-55},
    {0x1.91f65f10dd814p-5, -0x1.912bd0d569a90p-61, -0x1.ff621e3796d7ep-1, 0x1.c57bc2e24aa15p-57},
    {0x1.2d52092ce19f6p-4, -0x1.9a088a8bf6b2cp-59, -0x1.fe9cdad01883ap-1, -0x1.521ecd0c67e35p-57},
    {0x1.917a6bc29b42cp-4, -0x1.e2718d26ed688p-60, -0x1.fd88da3d12526p-1, 0x1.87df6378811c7p-55},
    {0x1.f564e56a9730ep-4, 0x1.a2704729ae56dp-59, -0x1.fc26470e19fd3p-1, -0x1.1ec8668ecaceep-55},
    {0x1.2c8106e8e613ap-3, 0x1.13000a89a11e0p-58, -0x1.fa7557f08a517p-1, 0x1.7a0a8ca13571fp-55},
    {0x1.5e214448b3fc6p-3, 0x1.531ff779ddac6p-57, -0x1.f8764fa714ba9p-1, -0x1.ab256778ffcb6p-56},
    {0x1.8f8b83c69a60bp-3, -0x1.26d19b9ff8d82p-57, -0x1.f6297cff75cb0p-1, -0x1.562172a361fd3p-56},
    {0x1.c0b826a7e4f63p-3, -0x1.af1439e521935p-62, -0x1.f38f3ac64e589p-1, 0x1.d7bafb51f72e6p-56},
    {0x1.f19f97b215f1bp-3, -0x1.42deef11da2c4p-57, -0x1.f0a7efb9230d7p-1, -0x1.52c7adc6b4989p-56},
    {0x1.111d262b1f677p-2, 0x1.824c20ab7aa9ap-56, -0x1.ed740e7684963p-1, -0x1.e82c791f59cc2p-56},
    {0x1.294062ed59f06p-2, -0x1.5d28da2c4612dp-56, -0x1.e9f4156c62ddap-1, -0x1.760b1e2e3f81ep-55},
    {0x1.4135c94176601p-2, 0x1.0c97c4afa2518p-56, -0x1.e6288ec48e112p-1, 0x1.16b56f2847754p-57},
    {0x1.58f9a75ab1fddp-2, -0x1.efdc0d58cf620p-62, -0x1.e212104f686e5p-1, 0x1.014c76c126527p-55},
    {0x1.7088530fa459fp-2, -0x1.44b19e0864c5dp-56, -0x1.ddb13b6ccc23cp-1, -0x1.83c37c6107db3p-55},
    {0x1.87de2a6aea963p-2, -0x1.72cedd3d5a610p-57, -0x1.d906bcf328d46p-1, -0x1.457e610231ac2p-56},
    {0x1.9ef7943a8ed8ap-2, 0x1.6da81290bdbabp-57, -0x1.d4134d14dc93ap-1, 0x1.4ef5295d25af2p-55},
    {0x1.b5d1009e15cc0p-2, 0x1.5b362cb974183p-57, -0x1.ced7af43cc773p-1, 0x1.e7b6bb5ab58aep-58},
    {0x1.cc66e9931c45ep-2, 0x1.6850e59c37f8fp-58, -0x1.c954b213411f5p-1, 0x1.2fb761e946603p-58},
    {0x1.e2b5d3806f63bp-2, 0x1.e0d891d3c6841p-58, -0x1.c38b2f180bdb1p-1, 0x1.6e0b1757c8d07p-56},
    {0x1.f8ba4dbf89abap-2, -0x1.2ec1fc1b776b8p-60, -0x1.bd7c0ac6f952ap-1, 0x1.825a732ac700ap-55},
    {0x1.073879922ffeep-1, -0x1.a5a014347406cp-55, -0x1.b728345196e3ep-1, 0x1.bc69f324e6d61p-55},
    {0x1.11eb3541b4b23p-1, -0x1.ef23b69abe4f1p-55, -0x1.b090a58150200p-1, 0x1.926da300ffccep-55},
    {0x1.1c73b39ae68c8p-1, 0x1.b25dd267f6600p-55, -0x1.a9b66290ea1a3p-1, -0x1.9f630e8b6dac8p-60},
    {0x1.26d054cdd12dfp-1, -0x1.5da743ef3770cp-55, -0x1.a29a7a0462782p-1, 0x1.128bb015df175p-56},
    {0x1.30ff7fce17035p-1, -0x1.efcc626f74a6fp-57, -0x1.9b3e047f38741p-1, 0x1.30ee286712474p-55},
    {0x1.3affa292050b9p-1, 0x1.e3e25e3954964p-56, -0x1.93a22499263fbp-1, -0x1.3d419a920df0bp-55},
    {0x1.44cf325091dd6p-1, 0x1.8076a2cfdc6b3p-57, -0x1.8bc806b151741p-1, 0x1.2c5e12ed1336dp-55},
    {0x1.4e6cabbe3e5e9p-1, 0x1.3c293edceb327p-57, -0x1.83b0e0bff976ep-1, 0x1.6f420f8ea3475p-56},
    {0x1.57d69348ceca0p-1, -0x1.75720992bfbb2p-55, -0x1.7b5df226aafafp-1, 0x1.0f537acdf0ad7p-56},
    {0x1.610b7551d2cdfp-1, -0x1.251b352ff2a37p-56, -0x1.72d0837efff96p-1, -0x1.0d4ef0f1d915cp-55},
    {0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55, -0x1.6a09e667f3bcdp-1, 0x1.bdd3413b26456p-55},
    {0x1.72d0837efff96p-1, 0x1.0d4ef0f1d915cp-55, -0x1.610b7551d2cdfp-1, 0x1.251b352ff2a37p-56},
    {0x1.7b5df226aafafp-1, -0x1.0f537acdf0ad7p-56, -0x1.57d69348ceca0p-1, 0x1.75720992bfbb2p-55},
    {0x1.83b0e0bff976ep-1, -0x1.6f420f8ea3475p-56, -0x1.4e6cabbe3e5e9p-1, -0x1.3c293edceb327p-57},
    {0x1.8bc806b151741p-1, -0x1.2c5e12ed1336dp-55, -0x1.44cf325091dd6p-1, -0x1.8076a2cfdc6b3p-57},
    {0x1.93a22499263fbp-1, 0x1.3d419a920df0bp-55, -0x1.3affa292050b9p-1, -0x1.e3e25e3954964p-56},
    {0x1.9b3e047f38741p-1, -0x1.30ee286712474p-55, -0x1.30ff7fce17035p-1, 0x1.efcc626f74a6fp-57},
    {0x1.a29a7a0462782p-1, -0x1.128bb015df175p-56, -0x1.26d054cdd12dfp-1, 0x1.5da743ef3770cp-55},
    {0x1.a9b66290ea1a3p-1, 0x1.9f630e8b6dac8p-60, -0x1.1c73b39ae68c8p-1, -0x1.b25dd267f6600p-55},
    {0x1.b090a58150200p-1, -0x1.926da300ffccep-55, -0x1.11eb3541b4b23p-1, 0x1.ef23b69abe4f1p-55},
    {0x1.b728345196e3ep-1, -0x1.bc69f324e6d61p-55, -0x1.073879922ffeep-1, 0x1.a5a014347406cp-55},
    {0x1.bd7c0ac6f952ap-1, -0x1.825a732ac700ap-55, -0x1.f8ba4dbf89abap-2, 0x1.2ec1fc1b776b8p-60},
    {0x1.c38b2f180bdb1p-1, -0x1.6e0b1757c8d07p-56, -0x1.e2b5d3806f63bp-2, -0x1.e0d891d3c6841p-58},
    {0x1.c954b213411f5p-1, -0x1.2fb761e946603p-58, -0x1.cc66e9931c45ep-2, -0x1.6850e59c37f8fp-58},
    {0x1.ced7af43cc773p-1, -0x1.e7b6bb5ab58aep-58, -0x1.b5d1009e15cc0p-2, -0x1.5b362cb974183p-57},
    {0x1.d4134d14dc93ap-1, -0x1.4ef5295d25af2p-55, -0x1.9ef7943a8ed8ap-2, -0x1.6da81290bdbabp-57},
    {0x1.d906bcf328d46p-1, 0x1.457e610231ac2p-56, -0x1.87de2a6aea963p-2, 0x1.72cedd3d5a610p-57},
    {0x1.ddb13b6ccc23cp-1, 0x1.83c37c6107db3p-55, -0x1.7088530fa459fp-2, 0x1.44b19e0864c5dp-56},
    {0x1.e212104f686e5p-1, -0x1.014c76c126527p-55, -0x1.58f9a75ab1fddp-2, 0x1.efdc0d58cf620p-62},
    {0x1.e6288ec48e112p-1, -0x1.16b56f2847754p-57, -0x1.4135c94176601p-2, -0x1.0c97c4afa2518p-56},
    {0x1.e9f4156c62ddap-1, 0x1.760b1e2e3f81ep-55, -0x1.294062ed59f06p-2, 0x1.5d28da2c4612dp-56},
    {0x1.ed740e7684963p-1, 0x1.e82c791f59cc2p-56, -0x1.111d262b1f677p-2, -0x1.824c20ab7aa9ap-56},
    {0x1.f0a7efb9230d7p-1, 0x1.52c7adc6b4989p-56, -0x1.f19f97b215f1bp-3, 0x1.42deef11da2c4p-57},
    {0x1.f38f3ac64e589p-1, -0x1.d7bafb51f72e6p-56, -0x1.c0b826a7e4f63p-3, 0x1.af1439e521935p-62},
    {0x1.f6297cff75cb0p-1, 0x1.562172a361fd3p-56, -0x1.8f8b83c69a60bp-3, 0x1.26d19b9ff8d82p-57},
    {0x1.f8764fa714ba9p-1, 0x1.ab256778ffcb6p-56, -0x1.5e214448b3fc6p-3, -0x1.531ff779ddac6p-57},
    {0x1.fa7557f08a517p-1, -0x1.7a0a8ca13571fp-55, -0x1.2c8106e8e613ap-3, -0x1.13000a89a11e0p-58},
    {0x1.fc26470e19fd3p-1, 0x1.1ec8668ecaceep-55, -0x1.f564e56a9730ep-4, -0x1.a2704729ae56dp-59},
    {0x1.fd88da3d12526p-1, -0x1.87df6378811c7p-55, -0x1.917a6bc29b42cp-4, 0x1.e2718d26ed688p-60},
    {0x1.fe9cdad01883ap-1, 0x1.521ecd0c67e35p-57, -0x1.2d52092ce19f6p-4, 0x1.9a088a8bf6b2cp-59},
    {0x1.ff621e3796d7ep-1, -0x1.c57bc2e24aa15p-57, -0x1.91f65f10dd814p-5, 0x1.912bd0d569a90p-61},
    {0x1.ffd886084cd0dp-1, -0x1.1354d4556e4cbp-55, -0x1.92155f7a3667ep-6, 0x1.b1d63091a0130p-64},
};
/* 1/(2*pi) = sum(sinpe__inv_2pi_chunks) + t, |t| < 2^-228; chunk j is on the grid
 * 2^-25(j+1), so a 27-bit head times it is exact (turns.h). */
static const double sinpe__inv_2pi_chunks[9] = {
    0x1.45f3080000000p-3,
    -0x1.2363780000000p-27,
    0x1.529fc00000000p-54,
    0x1.3abe900000000p-77,
    -0x1.5964480000000p-103,
    0x1.b6c5200000000p-131,
    0x1.664f100000000p-152,
    0x1.c821000000000p-177,
    -0x1.ae9c540000000p-202,
};
/* END GENERATED */

/* ------------------------------------------------------------------------ */
/* Scalar stages                                                             */
/* ------------------------------------------------------------------------ */

/* Step 2: p (c0 + c1 + c2) mod 1 as t_hi + t_lo, |t_lo| <= ulp(t_hi)/2. */
static inline sinpe__dd sinpe__fast_turns(double p, sinpe__dd ps, const double *table,
                                          ptrdiff_t n_w, ptrdiff_t i)
{
    const sinpe__dd c0s = {table[SINPE_ROW_C0_HI * n_w + i], table[SINPE_ROW_C0_LO * n_w + i]};
    const sinpe__dd c1s = {table[SINPE_ROW_C1_HI * n_w + i], table[SINPE_ROW_C1_LO * n_w + i]};
    sinpe__dd h0 = sinpe__two_prod(p, ps, table[SINPE_ROW_C0 * n_w + i], c0s);
    sinpe__dd h1 = sinpe__two_prod(p, ps, table[SINPE_ROW_C1 * n_w + i], c1s);
    double m2 = p * table[SINPE_ROW_C2 * n_w + i];
    double f0 = sinpe__frac(h0.hi);              /* h0.hi may be huge: keep its fraction */
    sinpe__dd s1 = sinpe__two_sum(h0.lo, h1.hi); /* both <= 2^29: integer parts meet here */
    double f1 = sinpe__frac(s1.hi);
    sinpe__dd u = sinpe__two_sum(f0, f1);
    double tail = ((u.lo + s1.lo) + h1.lo) + m2; /* partials < 2^-21: errors <= 2^-75 */
    return sinpe__two_sum(u.hi, tail);
}

/* Step 3: turns to x = x.hi + x.lo radians (|x| < 2^-6.34) past the table
 * row *row = round(256 t) mod 256. */
static inline sinpe__dd sinpe__turns_to_radians(double t_hi, double t_lo, unsigned *row)
{
    const sinpe__dd two_pi_split = {SINPE__TWO_PI_HI_HI, SINPE__TWO_PI_HI_LO};
    double kd = t_hi * 256.0 + SINPE__ROUND_MAGIC;
    double r0 = t_hi - (kd - SINPE__ROUND_MAGIC) * (1.0 / 256.0); /* exact, |r0| <= 2^-9 */
    sinpe__dd r = sinpe__fast_two_sum(r0, t_lo); /* r0 is 0 or >= ulp(t_hi) > |t_lo| */
    sinpe__dd x0 = sinpe__two_prod(r.hi, sinpe__split(r.hi), SINPE__TWO_PI_HI, two_pi_split);
    uint64_t kbits;
    memcpy(&kbits, &kd, sizeof kbits);
    *row = (unsigned)(kbits & 255); /* k mod 256, two's complement */
    return sinpe__fast_two_sum(x0.hi, x0.lo + (r.hi * SINPE__TWO_PI_LO + r.lo * SINPE__TWO_PI_HI));
}

/* Steps 4-5: cos and sin of 2 pi row / 256 + x. */
static inline void sinpe__radians_cos_sin(sinpe__dd x, unsigned row, double *cos_out,
                                          double *sin_out)
{
    const double *entry = sinpe__turn_table[row];
    double ca_hi = entry[0], ca_lo = entry[1], sa_hi = entry[2], sa_lo = entry[3];
    sinpe__dd xs = sinpe__split(x.hi);
    sinpe__dd z = sinpe__two_prod(x.hi, xs, x.hi, xs);
    double xx = x.hi * x.lo;
    double q = z.lo + (xx + xx); /* x^2 = z.hi + q (to 2^-116) */
    /* m = cos(x) - 1 and sigma = sin(x) - x.hi; the large -z/2 comes last. */
    double m = ((z.hi * z.hi) * (SINPE__COS_C4 + z.hi * (SINPE__COS_C6 + z.hi * SINPE__COS_C8)) -
                0.5 * q) -
               0.5 * z.hi;
    double sigma =
        x.lo + (x.hi * z.hi) * (SINPE__SIN_C3 + z.hi * (SINPE__SIN_C5 + z.hi * SINPE__SIN_C7));
    double cx = 1.0 + m;     /* cos(x); only multiplies the 2^-54-sized lo parts */
    double sx = x.hi + sigma; /* sin(x); likewise */
    sinpe__dd sp = sinpe__two_prod(sa_hi, sinpe__split(sa_hi), x.hi, xs);
    sinpe__dd cp = sinpe__two_prod(ca_hi, sinpe__split(ca_hi), x.hi, xs);
    /* cos(a+x) = ca cos(x) - sa sin(x), sin(a+x) = sa cos(x) + ca sin(x).  A table
     * value is 0 or above sin(2 pi / 256) > |x| >= |sp|: fast_two_sum is exact. */
    sinpe__dd cs = sinpe__fast_two_sum(ca_hi, -sp.hi);
    sinpe__dd ss = sinpe__fast_two_sum(sa_hi, cp.hi);
    *cos_out =
        cs.hi + (((((cs.lo - sp.lo) + ca_lo * cx) - sa_lo * sx) - sa_hi * sigma) + ca_hi * m);
    *sin_out =
        ss.hi + (((((ss.lo + cp.lo) + sa_lo * cx) + ca_lo * sx) + ca_hi * sigma) + sa_hi * m);
}

/* ------------------------------------------------------------------------ */
/* Plain C batch kernels                                                     */
/* ------------------------------------------------------------------------ */

/* Columns first <= i < last of sinpe_exact_cos_sin_plain.  Each row goes in
 * blocks of SINPE__BLOCK columns, one loop per stage: an element is a
 * ~200-cycle dependency chain, and short loop bodies let the out-of-order
 * core overlap several elements. */
static inline void sinpe__plain_columns(const double *p, ptrdiff_t n_p, const double *table,
                                        ptrdiff_t n_w, ptrdiff_t first, ptrdiff_t last,
                                        double *out)
{
    sinpe__dd x[SINPE__BLOCK];
    unsigned row[SINPE__BLOCK];
    ptrdiff_t r, start, b;
    for (r = 0; r < n_p; r++) {
        double *out_cos = out + r * 2 * n_w;
        double *out_sin = out_cos + n_w;
        sinpe__dd ps = sinpe__split(p[r]);
        for (start = first; start < last; start += SINPE__BLOCK) {
            ptrdiff_t n_blk = last - start < SINPE__BLOCK ? last - start : SINPE__BLOCK;
            for (b = 0; b < n_blk; b++)
                x[b] = sinpe__fast_turns(p[r], ps, table, n_w, start + b);
            for (b = 0; b < n_blk; b++)
                x[b] = sinpe__turns_to_radians(x[b].hi, x[b].lo, &row[b]);
            for (b = 0; b < n_blk; b++) {
                ptrdiff_t i = start + b;
                double w = table[SINPE_ROW_W * n_w + i];
                double pw = p[r] * w;
                int tiny = fabs(pw) < SINPE_TINY_ARGUMENT;
                double c, s;
                if (!(fabs(w) < SINPE_FAST_W_LIMIT))
                    continue;
                sinpe__radians_cos_sin(x[b], row[b], &c, &s);
                out_cos[i] = tiny ? 1.0 : c;
                out_sin[i] = tiny ? pw : s;
            }
        }
    }
}

/* cos and sin of p[r] w[i] for the columns with |w| < SINPE_FAST_W_LIMIT of
 * table (SINPE_TABLE_ROWS x n_w).  out: shape (n_p, 2, n_w), out[r*2*n_w + i]
 * = cos, out[r*2*n_w + n_w + i] = sin; other columns are left untouched. */
static inline void sinpe_exact_cos_sin_plain(const double *p, ptrdiff_t n_p, const double *table,
                                             ptrdiff_t n_w, double *out)
{
    sinpe__plain_columns(p, n_p, table, n_w, 0, n_w, out);
}

/* The vector forms (exact_simd.h, once per instruction set) and the dispatcher
   sinpe_exact_cos_sin are in fill.h, after the instruction sets' helpers. */

#endif /* SINPE_EXACT_H */
