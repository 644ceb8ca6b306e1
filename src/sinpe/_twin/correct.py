"""Narrow values correctly rounded: the NumPy twin of ``correct.h`` and of the filler's test
for the values that need it (``fill.h``, "Narrow types").

``unsure`` is the filler's test, the same operations as every instruction set's. The
recomputation is by big integers instead of double-doubles: ``p w / (2 pi)`` reduced with
the 1344-bit ``floor(2**1344 / (2 pi))`` both backends hold, cos and sin of the rest by
their Taylor series in fixed point, the result rounded from the exact rational bracket
around it; where the bracket straddles a halfway point the work is redone with twice the
bits (Ziv), up to 1024. Both backends are correct, so they give the same bits, though their
operations differ. Cost: some tens of microseconds per recomputed value, for about 2**-21
of float32 values (fewer in the half types).
"""

from __future__ import annotations

import math
from collections import deque
from fractions import Fraction

import numpy as np

from .._exactmath.correct_constants import (
    GUARD_DROP_BF16,
    GUARD_DROP_F16,
    GUARD_DROP_F32,
    GUARD_ERROR,
    GUARD_F16_SHIFT,
    GUARD_MARGIN,
    GUARD_ZERO_MARGIN,
)
from .._exactmath.exact_constants import INV_2PI, INV_2PI_BITS
from .half import _FORMATS as _HALF_FORMATS

__all__ = ["correctly_rounded", "guard", "undecided", "undecided_log", "unsure"]

CHECKED = True  # the kernel's: narrow values correctly rounded; _set_checked(False): not

# (fraction bits, smallest normal exponent, largest exponent) by dtype name
_FORMATS = {"float32": (23, -126, 127), **_HALF_FORMATS}
_MAX_BITS = 1024
# the bits a float64 mantissa has beyond each type's (fill.h's D; generated, as the guard's)
_DROP_BITS = {"float32": GUARD_DROP_F32, "float16": GUARD_DROP_F16, "bfloat16": GUARD_DROP_BF16}
_undecided = 0
# the inputs of the last undecided values, most recent last (the kernel's ring, fill.h)
_UNDECIDED_RING = 64
_undecided_log: deque[dict[str, float | str]] = deque(maxlen=_UNDECIDED_RING)


def guard(dtype_name: str, factor: float) -> tuple[int, int, float, float, float]:
    """``sinpe__set_guard`` (fill.h): (keep mask, halfway bits, bound, kappa, float16 shift)."""
    d = _DROP_BITS[dtype_name]
    g = GUARD_ERROR * max(abs(factor), 1.0)
    bound = math.ldexp(1.0, math.frexp(GUARD_MARGIN * g)[1])
    f16 = dtype_name == "float16"
    kappa = bound / (GUARD_ZERO_MARGIN * g) if f16 else 0.0
    shift = GUARD_F16_SHIFT if f16 else 0.0
    return ~((1 << d) - 1) & (2**64 - 1), 1 << (d - 1), bound, kappa, shift


def _distance(v: np.ndarray, keep: int, half: int, shift: float) -> np.ndarray:
    if shift:
        v = np.abs(v)
        v = np.where(v < shift, v + shift, v)
    h = ((v.view(np.uint64) & np.uint64(keep)) | np.uint64(half)).view(np.float64)
    return np.abs(v - h)


def unsure(cos: np.ndarray, sin: np.ndarray, dtype_name: str, factor: float) -> np.ndarray:
    """Where ``(cos, sin)`` (float64 values of the filler) may round the wrong way to the
    narrow type: the filler's test (``sinpe__near`` within the bound), lane by lane."""
    keep, half, bound, kappa, shift = guard(dtype_name, factor)
    near = np.minimum(_distance(cos, keep, half, shift), _distance(sin, keep, half, shift))
    if shift:
        near = np.minimum(near, np.minimum(np.abs(cos), np.abs(sin)) * kappa)
    return near <= bound


def _round(q: Fraction, dtype_name: str) -> float:
    """The rational ``q`` rounded to nearest-even in the format, as a float (``+-inf``
    beyond it); a zero keeps the sign it is given through ``copysign`` by the caller."""
    fraction_bits, min_exponent, max_exponent = _FORMATS[dtype_name]
    if q == 0:
        return 0.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, min_exponent)
    scaled = a / Fraction(2) ** (e - fraction_bits)
    n, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and n & 1):
        n += 1
    value = (
        math.ldexp(n, e - fraction_bits) if e - fraction_bits + n.bit_length() <= 1024 else math.inf
    )
    if value >= 2.0 ** (max_exponent + 1):
        value = math.inf
    return value if q > 0 else -value


def _same(a: float, b: float) -> bool:
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _cos_sin_fixed(p: float, w: float, bits: int) -> tuple[Fraction, Fraction, Fraction]:
    """(cos, sin) of the exact p w as rationals within the returned error."""
    mp, dp = abs(p).as_integer_ratio()  # denominators are powers of two
    mw, dw = abs(w).as_integer_ratio()
    m, d_bits = mp * mw, (dp * dw).bit_length() - 1  # |p w| = m / 2**d_bits
    sign = -1 if (p < 0) != (w < 0) else 1
    if m.bit_length() - d_bits <= -40:  # tiny: Taylor series of the exact rational
        y = Fraction(m, 1 << d_bits)
        y2 = y * y
        return (
            1 - y2 / 2 + y2 * y2 / 24,
            sign * (y - y * y2 / 6 + y * y2 * y2 / 120),
            y * y2 * y2 * y2 / 5040 + y2 * y2 * y2 / 720,
        )
    # turns = m * INV_2PI / 2**(INV_2PI_BITS + d_bits) mod 1, kept to `bits` fraction bits
    point = INV_2PI_BITS + d_bits
    num = m * INV_2PI
    frac = num & ((1 << point) - 1) if point > 0 else 0
    t = frac >> (point - bits) if point > bits else frac << (bits - point)
    q, r = t >> (bits - 2), t & ((1 << (bits - 2)) - 1)  # 4 turns = q + r / 2**(bits-2)
    if r >> (bits - 3):
        r -= 1 << (bits - 2)
        q += 1
    one = 1 << bits
    pio2 = (1 << (INV_2PI_BITS + bits)) // (4 * INV_2PI)  # pi/2 to about 2**-bits
    x = (r * pio2) >> (bits - 2)  # x_red * 2**bits
    x2 = (x * x) >> bits
    c_sum, s_sum, term, k = one, x, one, 1
    s_term = x
    while term or s_term:
        term = -(term * x2 >> bits) // ((2 * k - 1) * (2 * k))
        s_term = -(s_term * x2 >> bits) // ((2 * k) * (2 * k + 1))
        c_sum += term
        s_sum += s_term
        k += 1
    cf, sf = Fraction(c_sum, one), Fraction(s_sum, one)
    cf, sf = ((cf, sf), (-sf, cf), (-cf, -sf), (sf, -cf))[q & 3]
    # reduction: INV_2PI truncated, turns truncated, pi/2 and the series' truncations
    error = Fraction(m, 1 << (INV_2PI_BITS + d_bits)) * 7 + Fraction(4 * k + 16, one)
    return cf, sign * sf, error


def correctly_rounded(p: float, w: float, factor: float, dtype: str) -> tuple[float, float, bool]:
    """``(factor cos(p w), factor sin(p w))`` correctly rounded to the narrow type, as
    floats, and whether both were decided: the kernel's function."""
    global _undecided
    if p == 0.0 or w == 0.0:  # exact: the factor and a zero of the sign of p w factor
        zero = _round(Fraction(0), dtype)
        return _round(Fraction(factor), dtype), math.copysign(zero, p * w * factor), True
    f = Fraction(factor)
    bits = 128
    while True:
        c, s, error = _cos_sin_fixed(p, w, bits)
        error *= abs(f)
        out = [(_round(v - error, dtype), _round(v + error, dtype)) for v in (c * f, s * f)]
        if all(_same(lo, hi) for lo, hi in out) or bits >= _MAX_BITS:
            decided = all(_same(lo, hi) for lo, hi in out)
            if not decided:
                _undecided += 1
                _undecided_log.append(
                    {"p": p, "w": w, "factor": factor, "dtype": dtype, "isa": "numpy"}
                )
            return out[0][0], out[1][0], decided
        bits *= 2


def undecided() -> int:
    """How many narrow values this process rounded without deciding them (none expected)."""
    return _undecided


def undecided_log() -> list[dict[str, float | str]]:
    """The inputs of the last (up to 64) values ``undecided`` counts, most recent last: one
    dict per value, ``p``, ``w``, ``factor``, ``dtype`` and ``isa`` ("numpy"): the kernel's."""
    return list(_undecided_log)


def _set_checked(checked: bool) -> bool:
    """Benchmarks and tests only (the kernel's): ``False`` writes each narrow value as its
    float64 value rounded once; returns the previous setting."""
    global CHECKED
    before, CHECKED = CHECKED, bool(checked)
    return before
