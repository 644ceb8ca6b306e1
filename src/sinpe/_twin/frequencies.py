"""Frequencies w_i = scale * base**(-numerator*i/denominator), rounded once, in float64 only.

Only IEEE float64 operations that are exact or correctly rounded (+, -, *, /, rint, ldexp,
frexp, table look-ups) are used, so the result is the same bits on every platform: no long
double, no libm transcendental (log/exp differ between platforms), no FMA. Products and
sums that must not lose bits use double-double arithmetic ("dd": an unevaluated sum hi + lo)
with Dekker/Veltkamp splitting and Knuth's two-sum.

Method, for exact real arguments (base, denominator, scale are the exact binary values):

1. L = log(base) as dd: base = m * 2**e with m in [sqrt(1/2), sqrt(2)), log(m) = 2*atanh(s),
   s = (m - 1)/(m + 1) in dd (|s| <= 0.1716), atanh(s)/s = sum s**(2k)/(2k+1) to 21 terms
   (truncation < 2**-112) by Horner in dd, the terms k >= 11 (< 2**-55) in float64; e*ln2
   with ln2 split in three (two 42-bit parts, so e*part is exact).  Relative error < 2**-101
   (measured < 2**-103.5).  The bound is relative, not absolute, which matters for bases near
   1: there L is small but x_i = i*c can still be large.
2. Step c = -numerator * L / denominator as dd (exact two-product, division with the exact
   remainder, the denominator's power of two applied exactly): relative error < 2**-100.  If
   |c| >= 2**11, every x_i with i >= 1 saturates (see 4), so c is replaced by +-2**11.
3. x_i = i * c as dd, in blocks of 2**13 indices: i = start + o, x_i = start*c + o*c.  o*c is
   computed once per call from two exact products (the head of c is split so that o * head is
   exact for o < 2**13); start*c is one scalar dd product; the two are added in dd.  Relative
   error < 2**-100 (that of c plus < 2**-103).
4. exp with the scale: |x| is clamped to 1600 (results are then already 0 or inf for any
   finite non-zero scale), k = rint(x * 2**16/ln2), r = x - k*ln2/2**16 with ln2/2**16 split in
   three parts (two 25-bit parts, so k*part is exact for |k| < 2**28), |r| < 5.3e-6.
   2**(k/2**16) = 2**(k >> 16) * 2**(j1/2**8) * 2**(j2/2**16) with two 256-entry dd tables; the
   mantissa of scale (in [0.5, 1)) is folded into the coarse table once per call.
   exp(r) = 1 + p, p = r + r**2/2 + r**3/6 + r**4/24 + r**5/120: r + r**2/2 in dd with an exact
   square, the rest (< 2**-55) in float64; truncation < 2**-113.
   The mantissa M = (scale mantissa * T1) * T2 * (1 + p) is formed in dd.  Relative error of
   this kernel for an exact dd x: < 2**-100 for |x| <= 32, < 2**-94 for |x| <= 1600 (the
   float64 tail of r grows with k and with x_lo); measured 2**-101.2 and 2**-95.6.
5. Rounding: w = ldexp(fl(Mh + Ml), (k >> 16) + scale exponent).  fl(Mh + Ml) is the only
   rounding to 53 bits; the scaling is exact for normal results and gives inf exactly when the
   rounded magnitude reaches 2**1024.  Results that come out subnormal or zero are redone with
   exact operations: Mh + Ml is scaled (exactly) to units of 2**-1074 and rounded once with
   rint; at an exact midpoint of the 53-bit value the sign of the dd residual decides, and a
   residual below 2**-80 (far under the error bound) means the exact value is the midpoint
   itself, which does occur (base 2, scale 1000, i = 539 with numerator 2, denominator 1:
   125 * 2**-1075), so it is rounded to even.

Error bound.  Before the final rounding the relative error is eps <= |x|*2**-100 + kernel
error, i.e. eps < 2**-89 for every finite non-zero result (|x| < 1455 there) and eps < 2**-94
when |x| <= 32 (all usual positional encodings: base 10000 gives |x| <= 18.5); measured max
2**-94.4.  Hence |w - exact| <= 0.5 ulp + eps*|exact| < (0.5 + 2**-36) ulp for normal results
and < (0.5 + 2**-27) ulp for subnormal ones, i.e. within 1 ulp always, and w is the correctly
rounded value unless the exact value lies within eps of a rounding midpoint (probability at most
2**-36 per value; none found in the 1.5 million values checked).
"""

from __future__ import annotations

import math

import numpy as np

from .._exactmath.dd import (
    dd_add,
    dd_mul,
    fast_two_sum,
    product_error,
    split,
    two_prod_split,
    two_sum,
)
from .._exactmath.frequency_constants import (
    _ATANH_HI,
    _ATANH_LO,
    _ATANH_TAIL,
    _COARSE_HI,
    _COARSE_LO,
    _FINE_HI,
    _FINE_LO,
    _INV_STEP,
    _LN2_1,
    _LN2_2,
    _LN2_3,
    _STEP_1,
    _STEP_2,
    _STEP_3,
)

__all__ = ["log_dd", "power_vector"]

_COARSE_HI_ARRAY = np.array(_COARSE_HI)
_COARSE_LO_ARRAY = np.array(_COARSE_LO)
_FINE_HI_ARRAY = np.array(_FINE_HI)
_FINE_LO_ARRAY = np.array(_FINE_LO)

_TABLE_BITS = 8  # both exp2 tables have 2**8 entries: 2**(k/2**16) = 2**m * coarse * fine
_TABLE_MASK = (1 << _TABLE_BITS) - 1
_BLOCK_BITS = 13  # indices are processed in blocks of 2**13 (cache-sized work arrays)
_BLOCK = 1 << _BLOCK_BITS
# Splits the step c so that its head has 53 - 13 = 40 bits: o * head is exact for o < 2**13.
_BLOCK_SPLIT = 2.0**_BLOCK_BITS + 1.0
_X_SATURATE = 1600.0  # e**1600 * 2**-1074 > 2**1024 and e**-1600 * 2**1024 < 2**-1075
_STEP_SATURATE_EXP = 11  # |c| >= 2**11 > _X_SATURATE: every x_i with i >= 1 saturates
_SQRT_HALF = 0.7071067811865476
# Taylor coefficients of exp beyond r**2/2 (correctly rounded divisions).
_EXP_C3 = 1.0 / 6.0
_EXP_C4 = 1.0 / 24.0
_EXP_C5 = 1.0 / 120.0
_MIN_NORMAL = 2.0**-1022
_SUBNORMAL_EXPONENT = 1074  # subnormals are the integer multiples of 2**-1074
# A rounding residual smaller than this (relative) is far below the method's error bound
# (2**-89): the exact value is then taken to be the midpoint itself.
_TIE_NOISE = 2.0**-80
MAX_INDEX = 1 << 62  # frequency indices stay below this (the kernel's bound: no overflow)


_FINE_HEAD, _FINE_TAIL = split(_FINE_HI_ARRAY)  # the fine table is multiplied in every call
_COARSE_HEAD, _COARSE_TAIL = split(_COARSE_HI_ARRAY)


def _scaled_coarse_table(mantissa):
    """dd table mantissa * 2**(j/256), with the Veltkamp halves of its high parts."""
    product = mantissa * _COARSE_HI_ARRAY
    error = product_error(product, *split(mantissa), _COARSE_HEAD, _COARSE_TAIL)
    hi, lo = fast_two_sum(product, error + mantissa * _COARSE_LO_ARRAY)
    return (hi, lo, *split(hi))


def _exp_parts(x_hi, x_lo, table):
    """mantissa * exp(x_hi + x_lo) == (m_hi + m_lo) * 2**shift, relative error < 2**-94.

    `table` is _scaled_coarse_table(mantissa); |m_hi + m_lo| is in [0.49, 2.01];
    shift is an int64 array.
    """
    coarse_hi, coarse_lo, coarse_head, coarse_tail = table
    # Beyond +-1600 the result is 0 or inf whatever the scale; clamping bounds |k| < 2**28.
    x_hi = np.clip(x_hi, -_X_SATURATE, _X_SATURATE)
    k = np.rint(x_hi * _INV_STEP)
    # r = x - k*ln2/2**16 in dd. k*_STEP_1 and k*_STEP_2 are exact (28 + 25 bits), and so is
    # x_hi - k*_STEP_1: it is a multiple of min(ulp(x_hi), 2**-41 = ulp(_STEP_1)), below 2**-16,
    # and for k != 0 not above |x_hi| (|x_hi| >= ln2/2**17 there): 53 bits of that unit suffice.
    reduced = x_hi - k * _STEP_1
    r_sum, r_err = two_sum(reduced, -(k * _STEP_2))
    r_hi, r_lo = two_sum(r_sum, r_err + (x_lo - k * _STEP_3))

    k_int = k.astype(np.int64)
    shift = k_int >> (2 * _TABLE_BITS)  # floor division: k = shift*2**16 + j1*2**8 + j2
    j1 = (k_int >> _TABLE_BITS) & _TABLE_MASK
    j2 = k_int & _TABLE_MASK

    # T = coarse[j1] * fine[j2] in dd.
    c_hi = np.take(coarse_hi, j1)
    f_hi = np.take(_FINE_HI_ARRAY, j2)
    t_hi = c_hi * f_hi
    t_lo = product_error(
        t_hi,
        np.take(coarse_head, j1),
        np.take(coarse_tail, j1),
        np.take(_FINE_HEAD, j2),
        np.take(_FINE_TAIL, j2),
    ) + (c_hi * np.take(_FINE_LO_ARRAY, j2) + np.take(coarse_lo, j1) * f_hi)

    # p = exp(r) - 1 in dd. r_hi**2 is exact (two-product); r**3/6 + r**4/24 + r**5/120 is
    # below 2**-55, so float64 from r_hi alone is accurate to 2**-108.
    square, square_err = two_prod_split(r_hi, r_hi)
    cubic = square * r_hi * (_EXP_C3 + r_hi * (_EXP_C4 + r_hi * _EXP_C5))
    p_hi, p_err = fast_two_sum(r_hi, 0.5 * square)  # |r_hi| < 2**-17: r_hi**2/2 < |r_hi|
    p_lo = p_err + (r_lo + (0.5 * square_err + r_hi * r_lo + cubic))

    # M = T * (1 + p) = T + T*p; T_hi * p_hi exactly, the other cross terms are < 2**-52.
    tp_hi = t_hi * p_hi
    tp_err = product_error(tp_hi, *split(t_hi), *split(p_hi))
    m_hi, m_err = fast_two_sum(t_hi, tp_hi)  # |T| >= 0.5 > |T*p|
    m_lo = m_err + (tp_err + (t_lo + (t_hi * p_lo + t_lo * p_hi)))
    return m_hi, m_lo, shift


def _round_scaled(m_hi, m_lo, exponent):
    """(m_hi + m_lo) * 2**exponent rounded once to float64 (ties to even)."""
    # The one rounding to 53 bits; scaling it is exact when the result is normal, and gives
    # inf exactly when the rounded magnitude reaches 2**1024.
    w = np.ldexp(m_hi + m_lo, exponent)
    tiny = np.flatnonzero(np.abs(w) <= _MIN_NORMAL)
    if tiny.size:
        # Subnormal or zero: there ldexp would round a second time (and libm versions may do
        # it differently), so round once, in units of the smallest subnormal, with exact ops.
        y, y_err = fast_two_sum(m_hi[tiny], m_lo[tiny])  # |m_hi| > 0.49 >> |m_lo|
        # Exact, except far below 0.5 where the result is +-0 anyway.
        units = np.ldexp(y, exponent[tiny] + _SUBNORMAL_EXPONENT)
        nearest = np.rint(units)  # ties to even
        # At an exact midpoint of y, y_err decides; one below the noise level means the exact
        # value is the midpoint itself.
        half = units - nearest  # exact: |half| <= 0.5
        past = (np.abs(half) == 0.5) & (half * y_err > 0) & (np.abs(y_err) > _TIE_NOISE * np.abs(y))
        nearest[past] += 2.0 * half[past]
        w[tiny] = np.ldexp(nearest, -_SUBNORMAL_EXPONENT)  # exact: an integer below 2**53
    return w


def log_dd(base):
    """log(base) as a normalized dd of Python floats (step 1 of the module docstring): the
    twin of ``sinpe_log_dd``; a base that is not finite and > 0 is refused."""
    if not 0.0 < base < math.inf:
        raise ValueError(f"log_dd needs a finite base > 0, got {base!r}")
    mantissa, exponent = math.frexp(base)
    m, e = (2.0 * mantissa, exponent - 1) if mantissa < _SQRT_HALF else (mantissa, exponent)
    # log(m) = 2*atanh(s), s = (m - 1)/(m + 1) in dd; m - 1 is exact (Sterbenz).
    f = m - 1.0
    den_hi, den_lo = two_sum(2.0, f)
    s_hi = f / den_hi
    back, back_err = two_prod_split(s_hi, den_hi)
    # f - s_hi*den exactly (f - back is exact by Sterbenz), divided by den.
    s_lo = (((f - back) - back_err) - s_hi * den_lo) / den_hi
    s_hi, s_lo = fast_two_sum(s_hi, s_lo)
    z_hi, z_lo = dd_mul(s_hi, s_lo, s_hi, s_lo)
    # atanh(s)/s = sum z**k/(2k+1): terms k >= 11 are below 2**-55, so float64 Horner.
    series_hi, series_lo = 0.0, 0.0
    for coeff in reversed(_ATANH_TAIL):
        series_hi = series_hi * z_hi + coeff
    for coeff_hi, coeff_lo in zip(reversed(_ATANH_HI), reversed(_ATANH_LO)):
        series_hi, series_lo = dd_add(*dd_mul(series_hi, series_lo, z_hi, z_lo), coeff_hi, coeff_lo)
    log_m_hi, log_m_lo = dd_mul(2.0 * s_hi, 2.0 * s_lo, series_hi, series_lo)
    # e*ln2 with e*_LN2_1 and e*_LN2_2 exact; |log m| <= ln2/2, so log m + e*ln2 cancels at
    # most by a factor of 2.
    ln2_hi, ln2_err = two_sum(e * _LN2_1, e * _LN2_2)
    return dd_add(ln2_hi, ln2_err + e * _LN2_3, log_m_hi, log_m_lo)


def _exponent_step(log_hi, log_lo, numerator, denominator):
    """dd c (Python floats) with x_i = i*c = -numerator * i * (log_hi + log_lo) / denominator."""
    n = float(numerator)  # exact: numerator is a small integer
    num_hi, num_err = two_prod_split(n, log_hi)
    num_lo = num_err + n * log_lo
    # Divide by the mantissa of the denominator (in [0.5, 1)) so that nothing over- or
    # underflows; its power of two is applied exactly at the end.
    d_mantissa, d_exponent = math.frexp(denominator)
    q_hi = num_hi / d_mantissa
    back, back_err = two_prod_split(q_hi, d_mantissa)
    remainder = ((num_hi - back) - back_err) + num_lo  # num_hi - back is exact (Sterbenz)
    q_hi, q_lo = fast_two_sum(q_hi, remainder / d_mantissa)
    if q_hi == 0.0:
        return 0.0, 0.0
    if math.frexp(q_hi)[1] - d_exponent > _STEP_SATURATE_EXP:
        return -math.copysign(2.0**_STEP_SATURATE_EXP, q_hi), 0.0
    return -math.ldexp(q_hi, -d_exponent), -math.ldexp(q_lo, -d_exponent)


def _unrounded_blocks(first, size, log_base, numerator, denominator, scale):
    """Yield (start, stop, m_hi, m_lo, exponent) with the values for i in range(start, stop)
    equal to (m_hi + m_lo) * 2**exponent before the final rounding (steps 2 to 4), for the
    indices first .. first + size - 1 (blocks start at multiples of 2**13 whatever first is,
    so a range is bit for bit the slice of the whole vector); ``log_base`` is log(base) as a
    dd pair."""
    step_hi, step_lo = _exponent_step(*log_base, numerator, denominator)
    scale_mantissa, scale_exponent = math.frexp(scale)
    table = _scaled_coarse_table(scale_mantissa)
    # o*c for the offsets o inside a block, shared by all blocks.
    offsets = np.arange(min(first % _BLOCK + size, _BLOCK), dtype=np.float64)
    head, tail = split(step_hi, _BLOCK_SPLIT)
    off_hi, off_err = two_sum(offsets * head, offsets * tail)  # both products are exact
    off_lo = off_err + offsets * step_lo
    last = first + size
    for start in range(first - first % _BLOCK, last, _BLOCK):
        lo, stop = max(start, first), min(start + _BLOCK, last)
        x_hi, x_lo = off_hi[lo - start : stop - start], off_lo[lo - start : stop - start]
        if start:
            # x = start*c + o*c; the two terms have the same sign, so no cancellation.
            start_hi, start_err = two_prod_split(float(start), step_hi)
            x_hi, x_err = two_sum(start_hi, x_hi)
            x_lo = x_err + ((start_err + start * step_lo) + x_lo)
        m_hi, m_lo, shift = _exp_parts(x_hi, x_lo, table)
        yield lo, stop, m_hi, m_lo, (shift + scale_exponent).astype(np.intc)


def power_vector(
    out: np.ndarray,
    first: int,
    log_hi: float,
    log_lo: float,
    numerator: float,
    denominator: float,
    scale: float,
) -> None:
    """Fill ``out`` (1-D float64) with ``scale * exp(-numerator * i * (log_hi + log_lo) /
    denominator)`` for ``i = first .. first + out.size - 1``, each rounded once (steps 2 to
    5): the twin of ``sinpe_power_vector``. denominator > 0 and scale finite (trusted);
    overflow gives +-inf and underflow +-0 or a subnormal, without warnings."""
    first = int(first)
    if not 0 <= first <= MAX_INDEX - out.size:  # the kernel's bound, kept by its twin too
        raise ValueError(
            f"power_vector: indices {first} .. {first} + {out.size} must lie below 2**62"
        )
    log_base = (float(log_hi), float(log_lo))
    with np.errstate(over="ignore", under="ignore"):
        blocks = _unrounded_blocks(
            first, out.size, log_base, numerator, float(denominator), float(scale)
        )
        for start, stop, m_hi, m_lo, exponent in blocks:
            out[start - first : stop - first] = _round_scaled(m_hi, m_lo, exponent)
