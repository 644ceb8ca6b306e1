"""tensor2tensor's ``common_attention.get_timing_signal_1d``, exact, in NumPy.

Same arguments and defaults, the same ``(1, length, channels)`` float32 result (a NumPy
array: ``tf.constant`` or ``torch.from_numpy`` of it is the tensor), with every value the
exact one rounded once to float32.
"""

from __future__ import annotations

import numpy as np

from .._tables import checks as check
from .._tables.tables import encode, sinusoidal_positional_encoding
from ..conventions import Convention

__all__ = ["get_timing_signal_1d"]


def get_timing_signal_1d(
    length: int,
    channels: int,
    min_timescale: float = 1.0,
    max_timescale: float = 1.0e4,
    start_index: int = 0,
) -> np.ndarray:
    """``(1, length, channels)`` float32: row ``r`` encodes position ``start_index + r`` as
    ``[sin | cos]`` of ``p * w_i``, ``w_i = min_timescale * (max_timescale /
    min_timescale)**(-i / max(channels//2 - 1, 1))`` (tensor2tensor's rule, ``min_timescale``
    multiplying as it does there), a zero column appended for an odd ``channels``."""
    length = check.integer("length", length, 0)
    channels = check.integer("channels", channels, 0)
    start_index = check.integer("start_index", start_index, 1 - check.MAX_POSITION)
    low = check.real("min_timescale", min_timescale)
    high = check.real("max_timescale", max_timescale)
    for name, value in (("min_timescale", low), ("max_timescale", high)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    ratio = high / low  # float64, as tensor2tensor's float(max) / float(min)
    if not (np.isfinite(ratio) and ratio > 0):
        raise ValueError(
            f"max_timescale / min_timescale must be finite and > 0, got {high!r} / {low!r}"
        )
    if start_index + length > check.MAX_POSITION:
        raise ValueError("positions must be below 2**53: start_index + length - 1 is too large")
    table = check.allocate(
        (1, length, channels), np.dtype(np.float32), ("1", "length", "channels"), zeros=True
    )
    if not (length and channels):
        return table
    convention = Convention(
        f"tensor2tensor(min_timescale={low}, max_timescale={high})",
        layout="sin_cos",
        count="floor",
        denominator="half_minus_one",
        scale=low,
        base=ratio,
    )
    if start_index >= 0:
        sinusoidal_positional_encoding(
            length, channels, offset=start_index, convention=convention, out=table[0]
        )
    else:  # negative positions: each row from the exact evaluator
        positions = np.arange(start_index, start_index + length, dtype=np.float64)
        encode(positions, channels, convention=convention, out=table[0])
    return table
