"""Exact sines and cosines of ``position * frequency``: the NumPy twin of ``exact.h``.

Every value a filler writes is a product of unit vectors that come from one evaluator of
``cos(p w)``, ``sin(p w)`` for float64 ``p`` (``|p| < 2**53``) and ``w``, written twice: in C
(``exact.h``, AVX2 + FMA where the CPU has them) and here, with the same float64 operations in
the same order, so both return the same bits. The method and its error bound are derived at
the top of ``exact.h``; in short:

1. per frequency, ``c = w / (2 pi)`` as a triple-double (``turns.prepare_frequency_table``);
2. ``t = p c mod 1`` with exact products (Dekker's split here, FMA in C: the same residuals);
3. ``t`` split into ``j/256 + r``, ``x = 2 pi r`` in double-double, ``|x| <= 2 pi / 512``;
4. cos/sin of ``x`` by short Taylor polynomials with double-double leading terms, recombined
   with a 256-entry double-double table of ``cos/sin(2 pi j / 256)``, rounded once.

Each result is within 0.5 ulp + 2**-65.3 of the exact value for the exact product, with float64
arithmetic only (no long double, no libm sin/cos), so a table has the same bits on every
platform. Frequencies ``|w| >= 2**32`` take a slower exact path (``slow_columns``: Python
integers, no compiled twin, used by both backends) through the same final stage;
``|p w| < 2**-40`` gives ``cos = 1``, ``sin = p w`` rounded once.
"""

from __future__ import annotations

import numpy as np

from .._exactmath.constants import TINY_ARGUMENT
from .._exactmath.dd import fast_two_sum, frac, split, two_prod, two_sum
from .._exactmath.exact_constants import (
    TURN_TABLE_HEX,
    TWO_PI_HI,
    TWO_PI_HI_HI,
    TWO_PI_HI_LO,
    TWO_PI_LO,
)
from .turns import (
    FAST_W_LIMIT,
    ROW_C0,
    ROW_C0_HI,
    ROW_C0_LO,
    ROW_C1,
    ROW_C1_HI,
    ROW_C1_LO,
    ROW_C2,
    ROW_W,
    slow_turns,
)

__all__ = ["TINY_ARGUMENT", "cos_sin_from_turns", "exact_cos_sin", "slow_columns"]


# Adding 1.5 * 2**52 rounds any |v| <= 2**51 to an integer held in the low mantissa bits.
_ROUND_MAGIC = 1.5 * 2.0**52
_TABLE_SIZE = 256

# Taylor coefficients, each the nearest double to the rational.
_SIN_C3 = -1.0 / 6.0
_SIN_C5 = 1.0 / 120.0
_SIN_C7 = -1.0 / 5040.0
_COS_C4 = 1.0 / 24.0
_COS_C6 = -1.0 / 720.0
_COS_C8 = 1.0 / 40320.0

# Elements per NumPy block: enough to amortise ~200 ufunc calls, few enough for L2.
_BLOCK_ELEMENTS = 1 << 14

_TURN_TABLE = np.array(
    [[float.fromhex(v) for v in line.split()] for line in TURN_TABLE_HEX.split("\n") if line]
).T.copy()  # (4, 256): cos_hi, cos_lo, sin_hi, sin_lo


def _fast_turns(p, p_hi, p_lo, table):
    """p*c mod 1 as a normalised double-double (t_hi, t_lo), |t_hi| <= 1 + 2**-21."""
    p_split = (p_hi, p_lo)
    h0, l0 = two_prod(p, p_split, table[ROW_C0], (table[ROW_C0_HI], table[ROW_C0_LO]))
    h1, l1 = two_prod(p, p_split, table[ROW_C1], (table[ROW_C1_HI], table[ROW_C1_LO]))
    m2 = p * table[ROW_C2]
    f0 = frac(h0)  # h0 may be huge: keep only its fraction, exactly
    s1, e1 = two_sum(l0, h1)  # |l0|, |h1| <= 2**29: integer parts meet in s1
    f1 = frac(s1)
    u, eu = two_sum(f0, f1)
    tail = ((eu + e1) + l1) + m2  # all below 2**-21: rounding errors <= 2**-75 each
    return two_sum(u, tail)


def _turns_to_radians(t_hi, t_lo):
    """Turns to x = x_hi + x_lo radians (|x| < 2**-6.34) past table row round(256 t) mod 256."""
    kd = t_hi * 256.0 + _ROUND_MAGIC  # nearest integer k to 256*t_hi, in the low bits
    r0 = t_hi - (kd - _ROUND_MAGIC) * (1.0 / 256.0)  # exact, |r0| <= 2**-9
    r_hi, r_lo = fast_two_sum(r0, t_lo)  # r0 is 0 or >= ulp(t_hi) > |t_lo|
    x0, e0 = two_prod(r_hi, split(r_hi), TWO_PI_HI, (TWO_PI_HI_HI, TWO_PI_HI_LO))
    row = kd.view(np.int64) & (_TABLE_SIZE - 1)  # k mod 256 (two's complement)
    x_hi, x_lo = fast_two_sum(x0, e0 + (r_hi * TWO_PI_LO + r_lo * TWO_PI_HI))
    return x_hi, x_lo, row


def _radians_cos_sin_unrounded(x_hi, x_lo, row):
    """cos and sin of 2*pi*row/256 + x, each as head + tail before the last rounding."""
    ca_hi, ca_lo, sa_hi, sa_lo = _TURN_TABLE[:, row]
    x_split = split(x_hi)
    z, z_lo = two_prod(x_hi, x_split, x_hi, x_split)
    xx = x_hi * x_lo
    q = z_lo + (xx + xx)  # x**2 = z + q (to 2**-116)
    # m = cos(x) - 1 and sigma = sin(x) - x_hi; the large -z/2 comes last.
    m = ((z * z) * (_COS_C4 + z * (_COS_C6 + z * _COS_C8)) - 0.5 * q) - 0.5 * z
    sigma = x_lo + (x_hi * z) * (_SIN_C3 + z * (_SIN_C5 + z * _SIN_C7))
    cx = 1.0 + m  # cos(x); only multiplies the 2**-54-sized lo parts
    sx = x_hi + sigma  # sin(x); likewise
    sp, sp_lo = two_prod(sa_hi, split(sa_hi), x_hi, x_split)
    cp, cp_lo = two_prod(ca_hi, split(ca_hi), x_hi, x_split)
    # cos(a+x) = ca*cos(x) - sa*sin(x), sin(a+x) = sa*cos(x) + ca*sin(x).  A
    # table value is 0 or above sin(2*pi/256) > |x| >= |sp|: fast_two_sum is exact.
    cs, cs_lo = fast_two_sum(ca_hi, -sp)
    ss, ss_lo = fast_two_sum(sa_hi, cp)
    cos_tail = ((((cs_lo - sp_lo) + ca_lo * cx) - sa_lo * sx) - sa_hi * sigma) + ca_hi * m
    sin_tail = ((((ss_lo + cp_lo) + sa_lo * cx) + ca_lo * sx) + ca_hi * sigma) + sa_hi * m
    return cs, cos_tail, ss, sin_tail


def _radians_cos_sin(x_hi, x_lo, row):
    """cos and sin of 2*pi*row/256 + x, each rounded once at the end."""
    cs, cos_tail, ss, sin_tail = _radians_cos_sin_unrounded(x_hi, x_lo, row)
    return cs + cos_tail, ss + sin_tail


def cos_sin_from_turns(t_hi: np.ndarray, t_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2*pi*(t_hi + t_lo); |t_hi| <= 1 + 2**-21, |t_lo| <= ulp(t_hi)/2."""
    t_hi = np.asarray(t_hi, dtype=np.float64)
    t_lo = np.asarray(t_lo, dtype=np.float64)
    return _radians_cos_sin(*_turns_to_radians(t_hi, t_lo))


def _cos_sin_block(p, table, out):
    """Fast-path columns of out[:, :, :] for the positions p (shape (n, 1))."""
    p_hi, p_lo = split(p)
    t_hi, t_lo = _fast_turns(p, p_hi, p_lo, table)
    cos, sin = cos_sin_from_turns(t_hi, t_lo)
    pw = p * table[ROW_W]
    tiny = np.abs(pw) < TINY_ARGUMENT
    out[:, 0, :] = np.where(tiny, 1.0, cos)
    out[:, 1, :] = np.where(tiny, pw, sin)


def slow_columns(p: np.ndarray, table: np.ndarray, slow: np.ndarray, out: np.ndarray) -> None:
    """Write the columns ``slow`` (those with |w| >= 2**32) of ``out`` (n_p, 2, n_w): exact
    big-integer turns (``turns.slow_turns``), then the final stage above. Both backends use it
    (no compiled twin; the C final stage would give the same bits)."""
    w = table[ROW_W]
    with np.errstate(all="ignore"):
        for i in slow.tolist():
            pw = p * w[i]
            tiny = np.abs(pw) < TINY_ARGUMENT
            t_hi, t_lo = slow_turns(np.where(tiny, 0.0, p), w[i])
            cos, sin = cos_sin_from_turns(t_hi, t_lo)
            out[:, 0, i] = np.where(tiny, 1.0, cos)
            out[:, 1, i] = np.where(tiny, pw, sin)


def exact_cos_sin(positions: np.ndarray, table: np.ndarray, out: np.ndarray, threads: int) -> None:
    """``out[r, 0, i]``, ``out[r, 1, i]`` = cos, sin of ``positions[r] * w[i]`` for the columns
    with ``|w| < 2**32`` (the others are left untouched): the twin of the kernel's.

    ``positions`` 1-D float64, ``|p| < 2**53``; ``table`` from ``prepare_frequency_table``;
    ``out`` C-contiguous ``(n, 2, n_w)``. ``threads`` is accepted for signature parity.
    """
    n_w = table.shape[1]
    rows = max(1, _BLOCK_ELEMENTS // max(n_w, 1))
    fast = np.abs(table[ROW_W]) < FAST_W_LIMIT
    every = bool(fast.all())
    with np.errstate(all="ignore"):  # slow and tiny lanes compute values that are discarded
        for start in range(0, positions.shape[0], rows):
            block = positions[start : start + rows, None]
            if every:
                _cos_sin_block(block, table, out[start : start + rows])
            else:
                values = np.empty((block.shape[0], 2, n_w))
                _cos_sin_block(block, table, values)
                out[start : start + rows, :, fast] = values[:, :, fast]
