"""float16 and bfloat16 values, each rounded once from float64: the NumPy twin of ``half.h``
(read its header for why this is one rounding): the same float64 operations, so the same
bits as every converter of the compiled filler."""

from __future__ import annotations

import numpy as np

from .._exactmath.constants import (
    BF16_MANTISSA,
    BF16_MAX_EXPONENT,
    BF16_MIN_EXPONENT,
    F16_MANTISSA,
    F16_MAX_EXPONENT,
    F16_MIN_EXPONENT,
)

__all__ = ["round_half", "round_into", "rounded"]

F16 = np.dtype(np.float16)
# (explicit mantissa bits, smallest normal exponent, largest exponent) of each format
_FORMATS = {
    "float16": (F16_MANTISSA, F16_MIN_EXPONENT, F16_MAX_EXPONENT),
    "bfloat16": (BF16_MANTISSA, BF16_MIN_EXPONENT, BF16_MAX_EXPONENT),
}
_SIGN = np.uint64(1 << 63)


def rounded(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded once to nearest-even in ``dtype``'s format, still float64
    (exactly representable in it, or +-2**(E_max+1) where the result is infinite)."""
    mantissa_bits, min_exponent, max_exponent = _FORMATS[dtype.name]
    x = np.asarray(values, dtype=np.float64)
    bits = x.view(np.uint64)
    exponent = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    np.clip(exponent, min_exponent, max_exponent + 1, out=exponent)
    c = (((exponent + (52 + 1023 - mantissa_bits)) << 52) | (1 << 51)).view(np.float64)
    r = (x + c) - c
    return (r.view(np.uint64) | (bits & _SIGN)).view(np.float64)


def round_half(values: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = values`` (float64) rounded once to ``out``'s dtype, float16 or bfloat16:
    the twin of the kernel's ``round_half``."""
    r = rounded(values, out.dtype)
    with np.errstate(over="ignore"):  # beyond the format: infinity, as rounding requires
        if out.dtype == F16:
            out[...] = r.astype(np.float16)  # exact: r is a float16 value (or overflows)
        else:  # exact in float32, whose upper 16 bits are the bfloat16
            upper = (r.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
            out.view(np.uint16)[...] = upper


def round_into(out: np.ndarray, values: np.ndarray) -> None:
    """``out[...] = values`` (float64) rounded once to ``out``'s dtype: a plain cast for
    float32 and float64 (one rounding), ``round_half`` for float16 and bfloat16."""
    if out.dtype.itemsize == 2:
        round_half(values, out)
    else:
        out[...] = values
