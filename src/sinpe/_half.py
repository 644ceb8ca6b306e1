"""Half-precision tables: float16 and bfloat16 (ml_dtypes, optional), each value rounded once
from float64. The NumPy twin of ``_half.h`` (read its header for why this is one rounding):
the same float64 operations, so the same bits."""

from __future__ import annotations

import numpy as np

__all__ = ["BFLOAT16_HINT", "bfloat16", "is_half", "round_into", "rounded"]

BFLOAT16_HINT = (
    "dtype bfloat16 needs the ml_dtypes package: pip install 'sinpe[bfloat16]' "
    "(or pip install ml_dtypes)"
)
F16 = np.dtype(np.float16)
# (explicit mantissa bits, smallest normal exponent, largest exponent) of each format
_FORMATS = {"float16": (10, -14, 15), "bfloat16": (7, -126, 127)}
_SIGN = np.uint64(1 << 63)


def bfloat16() -> np.dtype | None:
    """ml_dtypes' bfloat16 dtype, or None when ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def is_half(dtype: np.dtype) -> bool:
    return dtype.itemsize == 2


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


def round_into(out: np.ndarray, values: np.ndarray) -> None:
    """``out[...] = values`` (float64) rounded once to ``out``'s dtype: a plain cast for float32
    and float64 (one rounding), the exact encoding of ``rounded`` for float16 and bfloat16."""
    if not is_half(out.dtype):
        out[...] = values
        return
    r = rounded(values, out.dtype)
    with np.errstate(over="ignore"):  # beyond the format: infinity, as rounding requires
        if out.dtype == F16:
            out[...] = r.astype(np.float16)  # exact: r is a float16 value (or overflows)
        else:  # exact in float32, whose upper 16 bits are the bfloat16
            upper = (r.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
            out.view(np.uint16)[...] = upper
