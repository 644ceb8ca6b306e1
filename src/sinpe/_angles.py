"""Exact sines and cosines of ``position * frequency``, and the cached rotation tables.

Both fillers only ever *rotate*: every value they write is ``anchor (x) step`` products of
correctly rounded unit vectors. This module is the one place that evaluates sin/cos, and it does
so carefully:

1. ``position * w`` is split into ``hi + lo`` exactly (Dekker's two-product; ``position`` and
   ``w`` are float64, so the product has at most 106 bits and ``hi + lo`` is exact);
2. ``sin(hi + lo) = sin(hi) cos(lo) + cos(hi) sin(lo)`` (and the cosine twin) is evaluated in
   extended precision (``numpy.longdouble``, 64-bit mantissa on x86-64), with full range
   reduction inside ``sinl``/``cosl``; ``lo`` can be as large as 0.5 near 2**53, so its sine and
   cosine are taken in full, not to first order;
3. the result is rounded once to float64: error <= 0.5 ulp + ~4 * 2**-64.

The tables are position-independent (multiples of the block sizes), so they are cached by
their inputs and returned read-only: repeated calls pay only for the rotation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exact_cos_sin", "rotation_tables", "EXTENDED_PRECISION"]

# True where numpy.longdouble carries at least 64 mantissa bits (x86-64 and aarch64 Linux).
# Elsewhere (MSVC, Apple silicon) long double is float64 and the bound degrades to a few ulp.
EXTENDED_PRECISION = np.finfo(np.longdouble).nmant >= 63

# Where the cached tables start: 512 bytes past a 4096-byte boundary. 64-byte alignment keeps
# every 32-byte AVX2 load inside one cache line (a table 16 bytes off alignment filled ~20%
# slower), and the offset keeps the kernel's loads clear of the stores to a fresh NumPy array
# (which starts 16 bytes past a page): a store a few hundred bytes behind a load, modulo 4096,
# makes the CPU wait on a false dependence (measured 10-40% slower on this machine).
TABLE_PLACEMENT = 512

_SPLITTER = 134217729.0  # 2**27 + 1, Dekker's split constant for float64
_SMALL_LO = 2.0**-10  # below this, a short Taylor series gives sin/cos(lo) to ~2**-70


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * a
    high = t - (t - a)
    return high, a - high


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Error-free product: ``a * b == hi + lo`` exactly.

    No overflow for ``|a| < 2**53`` and ``|b| <= 2**900`` (``_api`` refuses larger frequencies).
    """
    hi = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


def _sin_cos_small(lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of a long-double array, by Taylor series where |lo| is small, else sinl/cosl."""
    x2 = lo * lo
    sin_lo = lo * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42)))
    cos_lo = 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56)))
    big = np.abs(lo) >= _SMALL_LO
    if big.any():
        sin_lo[big] = np.sin(lo[big])
        cos_lo[big] = np.cos(lo[big])
    return sin_lo, cos_lo


def _placed_empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised float64 array whose data starts ``TABLE_PLACEMENT`` bytes past a
    4096-byte boundary."""
    nbytes = 8 * int(np.prod(shape, dtype=np.int64))
    raw = np.empty(nbytes + 4096 + TABLE_PLACEMENT, dtype=np.uint8)
    start = (TABLE_PLACEMENT - raw.ctypes.data) % 4096
    return raw[start : start + nbytes].view(np.float64).reshape(shape)


def exact_cos_sin(positions: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    """Return ``t`` of shape ``(len(positions), 2, len(freqs))``: ``t[:, 0]`` cosines, ``t[:, 1]``
    sines of ``positions[:, None] * freqs[None, :]``, each within 0.5 ulp (+2**-60) of the exact
    value of the real product. ``positions`` and ``freqs`` are float64, ``|positions| < 2**53``.
    """
    p = np.asarray(positions, dtype=np.float64)[:, None]
    w = np.asarray(freqs, dtype=np.float64)[None, :]
    hi, lo = _two_product(p, w)
    hi_ld = hi.astype(np.longdouble)
    sin_hi, cos_hi = np.sin(hi_ld), np.cos(hi_ld)
    sin_lo, cos_lo = _sin_cos_small(lo.astype(np.longdouble))
    table = np.empty((p.shape[0], 2, w.shape[1]), dtype=np.float64)
    table[:, 0] = cos_hi * cos_lo - sin_hi * sin_lo
    table[:, 1] = sin_hi * cos_lo + cos_hi * sin_lo
    return table


def rotation_tables(
    freqs_key: tuple, fine: int, mid: int, coarse: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(coarse, mid, fine)`` tables for offset 0, each ``(rows, 2, h)`` read-only:

    ``fine[k]   = e^{i k w}``             for k < fine,
    ``mid[j]    = e^{i j fine w}``        for j < mid,
    ``coarse[q] = e^{i q fine mid w}``    for q < coarse.

    ``freqs_key`` is the argument tuple of ``frequency_vector`` (cached); ``_api`` keeps the
    tables in its bounded cache, with the plan they belong to.
    """
    from ._frequencies import frequency_vector

    w = frequency_vector(*freqs_key)
    tables = []
    for rows, stride in ((coarse, fine * mid), (mid, fine), (fine, 1)):
        t = _placed_empty((rows, 2, w.shape[0]))
        t[...] = exact_cos_sin(np.arange(rows, dtype=np.float64) * stride, w)
        base = t
        while isinstance(base, np.ndarray):  # the view and the buffer under it: no way back
            base.flags.writeable = False
            base = base.base
        tables.append(t)
    return tuple(tables)
