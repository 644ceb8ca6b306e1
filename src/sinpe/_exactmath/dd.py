"""Error-free transformations and double-double arithmetic: the NumPy twin of ``dd.h``, the
same formulas under the same names (``two_sum`` is ``sinpe__two_sum``). Each works on floats
and on arrays alike; a split pair is ``(hi, lo)``."""

from __future__ import annotations

import numpy as np

__all__ = [
    "SPLITTER",
    "dd_add",
    "dd_mul",
    "fast_two_sum",
    "frac",
    "product_error",
    "split",
    "two_prod",
    "two_prod_split",
    "two_sum",
]

SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp split into two 26-bit halves
_TWO52 = 2.0**52


def split(a, factor=SPLITTER):
    """Veltkamp: a = hi + lo exactly; for factor 2**s + 1 the head has 53 - s significant
    bits and the tail fits in s - 1 bits (plus sign): 26 + 26 for the default."""
    g = a * factor
    hi = g - (g - a)
    return hi, a - hi


def product_error(p, a_hi, a_lo, b_hi, b_lo):
    """Dekker: a*b - p exactly, for p = fl(a*b) and the Veltkamp halves of a and b."""
    return (((a_hi * b_hi - p) + a_hi * b_lo) + a_lo * b_hi) + a_lo * b_lo


def two_prod(a, a_split, b, b_split):
    """Dekker: a*b = p + e exactly (no under/overflow), given the splits of a and b."""
    p = a * b
    return p, product_error(p, *a_split, *b_split)


def two_prod_split(a, b):
    """``two_prod`` splitting both factors."""
    return two_prod(a, split(a), b, split(b))


def two_sum(a, b):
    """Knuth: a + b = s + e exactly, any magnitudes."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a, b):
    """Dekker: a + b = s + e exactly when a == 0 or exponent(a) >= exponent(b)."""
    s = a + b
    return s, b - (s - a)


def frac(v):
    """v minus its nearest integer, exactly; 0 for |v| >= 2**52 (an integer)."""
    s = np.copysign(_TWO52, v)
    f = v - ((v + s) - s)  # v + s lands in [2**52, 2**53): rounds v to an integer
    return np.where(np.abs(v) < _TWO52, f, 0.0)


def dd_mul(a_hi, a_lo, b_hi, b_lo):
    """(a_hi + a_lo) * (b_hi + b_lo) as a normalized dd; relative error < 2**-104."""
    product, err = two_prod_split(a_hi, b_hi)
    return fast_two_sum(product, err + (a_hi * b_lo + a_lo * b_hi))


def dd_add(a_hi, a_lo, b_hi, b_lo):
    """(a_hi + a_lo) + (b_hi + b_lo) as a normalized dd; relative error < 2**-104 unless the
    sum cancels."""
    total, err = two_sum(a_hi, b_hi)
    return fast_two_sum(total, err + (a_lo + b_lo))
