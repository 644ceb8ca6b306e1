"""Turns per unit position: the NumPy twin of ``turns.h`` (the exact evaluator's
per-frequency constants), and the exact reductions with Python integers that both backends
share.

``prepare_frequency_table`` gives, per frequency ``w``, ``c = w / (2 pi)`` as a triple-double
(each part the nearest double to what the previous ones leave) and Veltkamp splits: the table
both backends' evaluators read (``exact.h``, ``exact.exact_cos_sin``). The rare columns it
cannot certify go to ``exact_columns`` (big integers); ``slow_turns`` reduces
``p w / (2 pi) mod 1`` with Python integers for ``|w| >= FAST_W_LIMIT``. Neither of those two
has a compiled twin: both backends call them.
"""

from __future__ import annotations

import math

import numpy as np

# Frequencies with |w| >= FAST_W_LIMIT use the slow exact path: below it the triple-double
# w/(2*pi) carries enough bits for every |p| < 2**53.
from .._exactmath.constants import FAST_W_LIMIT, FAST_W_MIN
from .._exactmath.dd import SPLITTER, split
from .._exactmath.exact_constants import INV_2PI, INV_2PI_BITS, INV_2PI_CHUNKS

# Rows of the frequency table returned by prepare_frequency_table (SINPE_ROW_* in _exact.h).
ROW_W, ROW_C0, ROW_C1, ROW_C2, ROW_C0_HI, ROW_C0_LO, ROW_C1_HI, ROW_C1_LO = range(8)
TABLE_ROWS = 8

_SLOW_TURN_BITS = 192  # bits of the turn fraction the slow exact path keeps


def _mantissa_exponent(x: float) -> tuple[int, int]:
    """x = m * 2**e exactly with m an integer (|m| < 2**53)."""
    f, e = math.frexp(x)
    return int(f * 2.0**53), e - 53


def _to_double(num: int, s: int) -> float:
    """Nearest double to num / 2**s (int true division is correctly rounded)."""
    return num / (1 << s) if s >= 0 else float(num << -s)


def _minus_double(num: int, s: int, x: float) -> tuple[int, int]:
    """(num', s') with num' / 2**s' == num / 2**s - x exactly."""
    a, d = x.as_integer_ratio()
    b = d.bit_length() - 1  # d is a power of two
    common = max(s, b)
    return (num << (common - s)) - (a << (common - b)), common


def _turns_per_radian(w: float) -> tuple[float, float, float]:
    """w/(2*pi) as c0 + c1 + c2, each the nearest double to what remains.

    The big-integer 1/(2*pi) is truncated at 2**-1344, a relative error
    below 2**-1340, far under the 2**-159 of the triple-double itself.
    """
    m, e = _mantissa_exponent(w)
    num, s = m * INV_2PI, INV_2PI_BITS - e
    c0 = _to_double(num, s)
    num, s = _minus_double(num, s, c0)
    c1 = _to_double(num, s)
    num, s = _minus_double(num, s, c1)
    return c0, c1, _to_double(num, s)


# Fast columns: _FAST_W_MIN <= |w| < FAST_W_LIMIT.  From here up, every nonzero
# intermediate is a multiple of 2**-252 * 2**E >= 2**-952, so none can be
# subnormal (not even under flush-to-zero modes).
_FAST_W_MIN = FAST_W_MIN
# Exponent field of a double.  w_bits & mask, read as a double, is 2**E with
# 2**E <= |w| < 2**(E+1): 0 for 0 or subnormal w, inf for inf or NaN.
_EXPONENT_MASK = np.array(0x7FF0000000000000, dtype=np.uint64)
# 2**E is in [_FAST_W_MIN, FAST_W_LIMIT) iff its bits minus those of
# _FAST_W_MIN, wrapping around as uint64, are below _FAST_SPAN.
_FAST_LOW_BITS = np.array(np.float64(_FAST_W_MIN).view(np.uint64))
_FAST_SPAN = int(np.float64(FAST_W_LIMIT).view(np.uint64)) - int(_FAST_LOW_BITS)
# Scalar constants are 0-d arrays: NumPy combines those with an array as fast as
# two arrays, while a Python float costs about 0.5 us more per call here.
# Veltkamp splitters: 2**26 + 1 splits w into 27 + 26 bits (its head and tail).
# SPLITTER = 2**27 + 1 is the table's split, 26 + 27 bits, the same as dd.split.
_HEAD_SPLITTER = np.array(2.0**26 + 1.0)
_TABLE_SPLITTER = np.array(SPLITTER)
# The product _MATRIX @ [head; tail; 2**E] gives 16 rows:
#   rows  0..8   g_j = (head*K_j + tail*K_{j-1}) (K_{-1} = 0) for j = 0, 2, 4, 6, 8,
#                1, 3, 5, 7.  Even rows come first so that both groups are
#                contiguous.
#   rows  9..12  carry constants for the odd rows j = 1, 3, 5, 7:
#                1.5*2**52*u_j*2**E, where u_j = 2**-(27+25j) is the grid of
#                row j-1.  So (g_j + it) - it rounds g_j to that grid.
#   rows 13..15  the certificate margins D_k*2**E, D = (2**-98, 2**-151, 2**-201).
# Every entry is an exact sum of exact products (see _turn_expansion), so any
# evaluation order gives the same bits.  It is formed as three broadcast
# multiply-adds rather than by np.dot: the first BLAS call of a process costs
# 100-150 us (OpenBLAS starting up), a third of a first table's constants.
_G_ROWS = (0, 2, 4, 6, 8, 1, 3, 5, 7)
_MATRIX = np.array(
    [[INV_2PI_CHUNKS[j], INV_2PI_CHUNKS[j - 1] if j else 0.0, 0.0] for j in _G_ROWS]
    + [[0.0, 0.0, 1.5 * 2.0 ** (25 - 25 * j)] for j in (1, 3, 5, 7)]
    + [[0.0, 0.0, d] for d in (2.0**-98, 2.0**-151, 2.0**-201)]
)
_HEAD_K = np.ascontiguousarray(_MATRIX[:9, 0, None])  # rows 0..8 use head and tail only,
_TAIL_K = np.ascontiguousarray(_MATRIX[:9, 1, None])  # rows 9..15 only 2**E
_SCALE_K = np.ascontiguousarray(_MATRIX[9:, 2, None])


def _turn_expansion(w: np.ndarray, v: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Write w/(2*pi) as the expansion r[0] + r[1] + r[2] + r[3].

    Needs 2**-700 <= |w| < 2**32 with 2**E in v[2]; v[0], v[1] and r (4 rows,
    possibly views of the table) are outputs.  The rows of r are candidates
    for r[k] = RN(w/(2*pi) - r[0] - ... - r[k-1]), and ``_certificate``
    decides.  Returns the margins D_k * 2**E, a (3, n) work array for
    ``_certificate``.  Once the certificate passes, the sum is within
    2**-213.9 * 2**E of w/(2*pi) (docstring of prepare_frequency_table,
    step 2).
    """
    head, tail = v[0], v[1]
    big = w * _HEAD_SPLITTER  # Veltkamp: head has <= 27 bits, |tail| <= 2**-27 * 2**E
    np.subtract(big, big - w, out=head)
    np.subtract(w, head, out=tail)
    # g_j = head*K_j + tail*K_{j-1}.  Each product is exact (<= 27 + 25 bits),
    # and so is the sum: both lie on the grid 2**-(52+25j) * 2**E, and
    # |g_j| <= 1.125*2**-25j * 2**E, under 2**53 units of that grid.
    # tail*K_8 (< 2**-227 * 2**E) is dropped.
    g = np.empty((16, w.size))  # _MATRIX @ v, each product and each sum exact
    np.multiply(_HEAD_K, head, out=g[:9])
    g[:9] += _TAIL_K * tail
    np.multiply(_SCALE_K, v[2], out=g[9:])
    # Carry: the odd rows g_j overlap their neighbours.  Split each into hi, on
    # row j-1's grid u_j, and lo = g_j - hi with |lo| <= u_j/2.  All exact.
    odd, carry = g[5:9], g[9:13]
    hi = odd + carry
    hi -= carry
    lo = np.subtract(odd, hi, out=odd)
    # x = g[0:5] becomes d0, y0, y1, y2, y3:
    #   d0 = g_0 + hi_1  and  y_{k-1} = g_{2k} + lo_{2k-1} + hi_{2k+1}  (no hi_9).
    # Each is exact: d0 lies on the grid 2**-52 * 2**E and is below 0.32 * 2**E.
    # The terms of y_{k-1} share the grid 2**-(52+50k) * 2**E, where the sum is
    # at most 1.26*2**52 units.
    x = g[0:5]
    x[1:5] += lo
    x[0:4] += hi
    d0, y = x[0], x[1:5]
    # d0 + y0 + y1 + y2 + y3 == w*sum(K_j) - tail*K_8 exactly, with |y_k| <=
    # 1.26*2**-50(k+1) * 2**E.  Renormalise top-down with fast two-sums.  The
    # first is always valid.  The next two are valid whenever the certificate
    # passes: it forces |r[1]| >= 2**-98 * 2**E and |r[2]| >= 2**-148 * 2**E,
    # which puts e at or above the exponent of y1 and y2 (step 3).
    c = np.add(d0, y[0], out=r[0])  # exponent(d0) >= exponent(y0) + 46
    e = y[0] - (c - d0)  # exact: |e| <= ulp(r0)/2 <= 2**-55 * 2**E
    c = np.add(e, y[1], out=r[1])
    e = y[1] - (c - e)  # exact if the certificate passes: |e| <= 2**-108 * 2**E
    c = np.add(e, y[2], out=r[2])
    e = y[2] - (c - e)  # exact if the certificate passes: |e| <= 2**-161 * 2**E
    np.add(e, y[3], out=r[3])  # the one rounding: <= 2**-214 * 2**E
    return g[13:16]


def _certificate(r: np.ndarray, margins: np.ndarray) -> np.ndarray:
    """Shape (3, n).  Consumes margins (the D_k * 2**E rows from _turn_expansion).

    Entry [k, i] is True iff RN(r[k] + RN(r[k+1] + s D_k 2**E)) == r[k] in
    column i, with s the sign of r[k+1].  When a column's three entries are
    True, r[k] = RN(c - r[0] - ... - r[k-1]) for k = 0, 1, 2, where c is the
    big-integer value of w/(2*pi) (docstring of prepare_frequency_table,
    step 3).
    """
    a = np.copysign(margins, r[1:], out=margins)  # s D_k 2**E: away from 0, like r[k+1]
    a += r[1:]  # RN(r[k+1] + s D_k 2**E)
    a += r[:3]  # RN(r[k] + RN(r[k+1] + s D_k 2**E))
    return a == r[:3]


def _fast_columns(w: np.ndarray, v: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """Fill ``table`` for 2**-700 <= |w| < 2**32; v is (3, n) with 2**E in v[2].

    Returns the indices of the columns whose certificate failed (those columns
    hold garbage), or None if every column passed.
    """
    table[ROW_W] = w
    # r = rows c0, c1, c2, plus the c0_hi row as scratch for r[3].  Only the
    # certificate reads r[3], and the split below overwrites that row.
    r = table[ROW_C0 : ROW_C0_HI + 1]
    margins = _turn_expansion(w, v, r)
    ok = _certificate(r, margins)
    # count_nonzero is the cheapest full reduction; the per-column one runs only on failure.
    failed = None if np.count_nonzero(ok) == ok.size else np.flatnonzero(~ok.all(axis=0))
    # Veltkamp splits of c0 and c1: the operations of dd.split, two rows at once.
    c01 = table[ROW_C0 : ROW_C1 + 1]
    big = c01 * _TABLE_SPLITTER
    hi = np.subtract(big, big - c01, out=table[ROW_C0_HI : ROW_C1_LO + 1 : 2])
    np.subtract(c01, hi, out=table[ROW_C0_LO : ROW_C1_LO + 1 : 2])
    return failed


def exact_columns(table: np.ndarray, columns: np.ndarray) -> None:
    """Fill rows c0..c1_lo of the given columns with the big-integer path (both backends:
    the columns ``prepare_frequency_table`` returns)."""
    w = table[ROW_W]
    for i in columns.tolist():
        table[ROW_C0 : ROW_C2 + 1, i] = _turns_per_radian(float(w[i]))
    table[ROW_C0_HI, columns], table[ROW_C0_LO, columns] = split(table[ROW_C0, columns])
    table[ROW_C1_HI, columns], table[ROW_C1_LO, columns] = split(table[ROW_C1, columns])


def prepare_frequency_table(w: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """Fill ``table`` (8, n_w) with the per-frequency constants of ``w`` (n_w,), float64 and
    C-contiguous both; return the indices of the columns left to ``exact_columns``, or None.

    Rows (see ROW_*): w; c0, c1, c2; Veltkamp splits of c0 and c1.  Here
    c = w/(2*pi), c0 = RN(c), c1 = RN(c - c0) and c2 = RN(c - c0 - c1), so
    |c - c0 - c1 - c2| <= ulp(c2)/2 <= 2**-159 |c|.  Columns with
    |w| >= FAST_W_LIMIT keep only w and the rest is 0: the evaluators skip them
    and ``exact.slow_columns`` computes them.  Arguments are trusted (finite
    frequencies, ``_api`` checked them).

    Bits: the output equals, bit for bit, the big-integer definition
    (``_turns_per_radian``, which uses a 1344-bit 1/(2*pi) and so carries
    c_big, |c_big - c| < 2**-1340 |c|).  Notation: RN is rounding to nearest
    even, "on the grid g" means "a multiple of g", and w = m 2**E with
    |m| in [1, 2).  Everything below is the m-scale argument times 2**E.  That
    scaling is exact: for 2**-700 <= |w| < 2**32, every nonzero intermediate
    is a multiple of 2**-252 * 2**E >= 2**-952 and below 2**31.  So nothing
    underflows, overflows or becomes subnormal, and the bounds are
    exponent-free.

    1. Exact products (``_turn_expansion``).  1/(2*pi) = sum(K_j) + t, with
       j = 0..8 and |t| < 2**-228.  K_j lies on the grid 2**-25(j+1), and
       |K_j| <= 2**-(25j+1) for j >= 1.  Veltkamp splits w into head (27 bits,
       on 2**-26, |head| <= 2) and tail (on 2**-52, |tail| <= 2**-27).  So
       head*K_j and tail*K_{j-1} are exact, and so is their sum g_j: it lies
       on the grid 2**-(52+25j) and |g_j| <= 1.125*2**-25j < 2**53 units.  One
       parallel carry step rounds the odd rows onto the grid of the row
       above.  That leaves d0 and y0..y3, all exact, with |d0| < 0.32 and
       |y_k| <= 1.26*2**-50(k+1).  Their sum is m*sum(K) - tail*K_8.
    2. Expansion.  Three fast two-sums give r0 = RN(d0 + y0), then
       r1 = RN(e0 + y1), then r2 = RN(e1 + y2), and finally r3 = RN(e2 + y3).
       The first fast two-sum is exact because |d0| > 2**-3 > 2**46 |y0|.
       The other two are exact when |r1| >= 2**-98 and |r2| >= 2**-148 (both
       forced by step 3).  Then |e0| >= |r1| - |y1| - ulp(r1)/2 >= 2.7*2**-100,
       so exponent(e0) >= -99 >= exponent(y1) (at most -100).  Likewise
       |e1| >= 2.7*2**-150 gives exponent(e1) >= -149 >= exponent(y2) (at
       most -150).  So
           delta = |c_big(m) - (r0 + r1 + r2 + r3)|
                 <= 2**-214 (r3) + |m t| + |tail K_8| + 2**-1340 < 2**-213.9.
       Checked against rational arithmetic when this was written (the
       measured maximum of delta was 2**-216.2).
    3. Certificate (``_certificate``).  With D = (2**-98, 2**-151, 2**-201),
       s_k = sign(r_{k+1}) and a_k = RN(r_{k+1} + s_k D_k), require
       RN(r_k + a_k) == r_k for k = 0, 1, 2.  Let H+ and H- be r_k's half-gaps
       on the side of s_k and on the other side.  Adjacent gaps differ by at
       most a factor 2, so H- >= H+/2.  Passing implies the following, as
       plain facts about doubles:
         |r_{k+1}| <= |a_k| <= H+ <= ulp(r_k)/2, so |r1| <= 2**-55,
           |r2| <= 2**-108 and |r3| <= 2**-161;
         |a_k| >= D_k, so ulp(r_k) >= 2 D_k, so |r1| >= 2**-98 and
           |r2| >= 2**-148.  These are step 2's conditions, so delta holds.
       The remainder after r0..r_(k-1) is rho = r_k + r_(k+1) + eps_k, where
       |eps_k| <= delta_k: delta_2 = delta, delta_1 = 2**-161 + delta and
       delta_0 = 2**-108 + delta_1.  In every case D_k - ulp(|r_{k+1}| + D_k)/2
       exceeds 2 delta_k:
           2**-201 - 2**-214,  2**-151 - 2**-161,  2**-98 - 2**-108.
       On side s_k, |r_(k+1) + eps_k| < |a_k| <= H+.  On the other side,
       |r_(k+1) + eps_k| <= delta_k < |a_k|/2 <= H-.  Either way rho lies
       strictly inside r_k's rounding interval, so RN(rho) = r_k and no tie
       is possible.  By induction on k, (r0, r1, r2) is the big-integer
       triple.  A column fails only when a remainder comes within about D_k
       of a half-gap, or r2 is unusually small.  Measured with inflated margins
       and extrapolated, that rate is about 2**-30 per frequency.  Such a column
       goes to the big-integer path, which costs about 10 us.
    4. Range.  |c2| = |r2| 2**E >= 2**-848 is normal, so the triple of w is
       that of m, times 2**E.  Columns with |w| < 2**-700 take the
       big-integer path.  Columns with |w| >= 2**32 stay 0, as before.

    Cost: about 35 NumPy calls on 1 to 16 rows of n_w, with no Python loop; the compiled twin
    (``turns.h``, same bits) takes about 40 ns per frequency.
    """
    # v = [head; tail; 2**E], the right-hand side of the matrix product.  The
    # exponent bits of w, read as a double, are 2**E (sign and mantissa cleared).
    v = np.empty((3, w.size))
    scale_bits = np.bitwise_and(w.view(np.uint64), _EXPONENT_MASK, out=v[2].view(np.uint64))
    # One range test, which also covers validity: 0 and subnormal w give
    # 2**E = 0, and inf or NaN give inf.  Both fall outside the range.
    if w.size and int((scale_bits - _FAST_LOW_BITS).max()) < _FAST_SPAN:
        return _fast_columns(w, v, table)
    # General path: huge, tiny (zero and subnormal included) and fast columns are mixed.
    table[...] = 0.0
    table[ROW_W] = w
    scale = v[2]
    fast = np.flatnonzero((scale >= _FAST_W_MIN) & (scale < FAST_W_LIMIT))
    exact = [np.flatnonzero(scale < _FAST_W_MIN)]  # the tiny |w|
    if fast.size:
        sub = np.empty((TABLE_ROWS, fast.size))
        failed = _fast_columns(w[fast], v[:, fast], sub)
        table[:, fast] = sub
        if failed is not None:
            exact.append(fast[failed])
    columns = np.sort(np.concatenate(exact))
    return columns if columns.size else None


def slow_turns(p: np.ndarray, w: float) -> tuple[np.ndarray, np.ndarray]:
    """p*w/(2*pi) mod 1 as t_hi + t_lo, t_hi in [-1/2, 1/2], for any finite w.

    With p = mp * 2**ep and w = mw * 2**ew, the turn count is
    mp * mw * 2**(ep + ew) / (2*pi).  Multiplying by the 1344-bit 1/(2*pi)
    (error below 2**(106 + 971 - 1344) = 2**-267 turns) and keeping 192 bits
    below the binary point (error below 2**-192) gives the turns mod 1;
    t_hi is the nearest double to that and t_lo the nearest to the rest.
    """
    m_w, e_w = _mantissa_exponent(float(w))
    scaled_w = m_w * INV_2PI
    mod_mask = (1 << _SLOW_TURN_BITS) - 1
    t_hi = np.zeros(p.shape)
    t_lo = np.zeros(p.shape)
    for i, pk in enumerate(p.tolist()):
        m_p, d_p = pk.as_integer_ratio()  # p = m_p / d_p, d_p = 2**-e_p
        point = INV_2PI_BITS - e_w + d_p.bit_length() - 1  # binary point of m_p * scaled_w
        turns = (
            (m_p * scaled_w) >> (point - _SLOW_TURN_BITS)
        ) & mod_mask  # floor(2**192 t) mod 2**192
        if turns >> (_SLOW_TURN_BITS - 1):
            turns -= 1 << _SLOW_TURN_BITS  # centre on [-1/2, 1/2)
        head = float(turns)  # int to float conversion rounds to nearest
        t_hi[i] = math.ldexp(head, -_SLOW_TURN_BITS)
        t_lo[i] = math.ldexp(float(turns - int(head)), -_SLOW_TURN_BITS)
    return t_hi, t_lo
