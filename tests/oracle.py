"""The one exact reference of the tests: sin and cos of the exact real product of a position
and a frequency (both taken as the exact binary numbers they are), by mpmath, correctly
rounded to float64; and the tables the package must hold, built from those values.

320 bits hold every product exactly (|p| < 2**53 times a double: 106 bits), and mpmath
reduces large arguments with the extra precision they need (checked against 1400 bits at
p * w ~ 2**953, the package's limit).
"""

import math

import mpmath
import numpy as np

import sinpe

CTX = mpmath.MPContext()
CTX.prec = 320


def mpf(value):
    """An exact mpmath number: Python ints stay integers, floats are their binary value."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return CTX.mpf(int(value))
    return CTX.mpf(float(value))


def cos_sin(positions, w, factor=1, dtype=None):
    """``(len(positions), 2, len(w))`` float64: ``[cos, sin]`` of each exact ``p * w``,
    times ``factor`` (exact), correctly rounded to float64, or to the narrow ``dtype``
    (float32, float16, bfloat16: exact in it, see ``narrow``)."""
    out = np.empty((len(positions), 2, len(w)))
    factor = mpf(factor)
    rounded = float if dtype is None else (lambda x: narrow(x, dtype))
    for r, p in enumerate(positions):
        p = mpf(p)
        for i, wi in enumerate(w):
            x = p * mpf(wi)
            out[r, 0, i] = rounded(factor * CTX.cos(x))
            out[r, 1, i] = rounded(factor * CTX.sin(x))
    return out


def encoding(positions, width, convention="vaswani", base=10000.0):
    """The exact rows of a convention's table at ``positions`` for the package's own
    frequencies at ``width``, placed by the convention's column map."""
    w = sinpe.frequencies(width, base=base, convention=convention)
    cs = cos_sin(list(positions), w)
    c = sinpe.conventions.get(convention).column_map(width)
    table = np.zeros((len(positions), width))
    for i in range(c.n_sin):
        table[:, c.sin_col + i * c.step] = cs[:, 1, i]
    for i in range(c.n_cos):
        table[:, c.cos_col + i * c.step] = cs[:, 0, i]
    return table


def rope(positions, inv_freq, attention=1):
    """Exact ``attention * cos`` and ``attention * sin`` of each position times each inverse
    frequency: two ``(len(positions), len(inv_freq))`` arrays (the compact layout)."""
    cs = cos_sin(positions, inv_freq, attention)
    return cs[:, 0], cs[:, 1]


def frequency(i, d_model, base=10000.0):
    """The exact paper frequency ``base**(-2i/d_model)`` (an mpf)."""
    return CTX.power(mpf(base), -CTX.mpf(2 * i) / d_model)


def power_rule(base, numerator, i, denominator, scale=1.0):
    """The exact ``scale * base**(-numerator * i / denominator)`` (an mpf)."""
    return mpf(scale) * CTX.power(mpf(base), -CTX.mpf(numerator * i) / mpf(denominator))


# (explicit mantissa bits, smallest normal exponent, largest exponent) of the narrow types
NARROW = {"float32": (23, -126, 127), "float16": (10, -14, 15), "bfloat16": (7, -126, 127)}


def narrow(x, dtype) -> float:
    """The mpf ``x`` (exact to 320 bits) rounded once to nearest-even in ``dtype``'s format
    (float32, float16, bfloat16), as a float: the correctly rounded value, signed zeros and
    infinities included. Not through float64: that would round twice."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name  # no ml_dtypes needed
    mantissa_bits, min_exponent, max_exponent = NARROW[name]
    if x == 0:
        return 0.0
    _, e = CTX.frexp(x)  # |x| in [2^(e-1), 2^e)
    spacing = CTX.ldexp(CTX.mpf(1), max(e - 1, min_exponent) - mantissa_bits)
    value = float(CTX.nint(abs(x) / spacing) * spacing)  # nint: ties to even
    if value >= 2.0 ** (max_exponent + 1):  # rounded past the largest finite value
        value = math.inf
    return value if x > 0 else -value


def cos_sin_narrow(positions, w, dtype, factor=1):
    """``cos_sin`` correctly rounded to the narrow ``dtype``."""
    return cos_sin(positions, w, factor, dtype)
