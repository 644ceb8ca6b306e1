"""The NumPy twin of ``tally.h``: one block of a table an engine holds against its exact
rows, the quantities the verdict core reads off its errors, one array operation at a time
(the same operations in the same order as the compiled pass: the same bits; the header has
the definitions)."""

from __future__ import annotations

import math

import numpy as np


def _errors(cos, sin, want_cos, want_sin, cols) -> np.ndarray:
    """Each entry's larger error of cos and sin (NaN where either is not a number)."""
    if not (cols.shape[0] == want_cos.shape[1] and (cols == np.arange(cols.shape[0])).all()):
        want_cos, want_sin = want_cos[:, cols], want_sin[:, cols]
    with np.errstate(invalid="ignore"):
        error = np.subtract(cos, want_cos)
        np.abs(error, out=error)
        if sin is not None:
            other = np.subtract(sin, want_sin)
            np.maximum(error, np.abs(other, out=other), out=error)
        if math.isfinite(error.max(initial=0.0)):  # every entry a number: nothing to mark
            return error
        if sin is not None:
            error[~np.isfinite(sin)] = np.nan
        error[~np.isfinite(cos)] = np.nan
    return error


def _squares(cos, sin, number) -> tuple:
    """The least and largest cos^2 + sin^2 of the entries that are numbers."""
    with np.errstate(invalid="ignore", over="ignore"):
        square = cos * cos
        square += sin * sin
    if number is not None:
        square = square[number]
    if not square.size:
        return math.inf, -math.inf
    return float(square.min()), float(square.max())


def tally_block(cos, sin, want_cos, want_sin, cols, positions, rates, match, row_max) -> tuple:
    """As ``sinpe._c._kernel.tally_block``: each row's largest error into ``row_max``, and
    ``(top, bad, worst, worst_at, worst_error, other, square_min, square_max)``."""
    # float64 and contiguous (the kernel widens float32 rows itself, and reads rows in place)
    cos = np.ascontiguousarray(cos, np.float64)
    sin = None if sin is None else np.ascontiguousarray(sin, np.float64)
    error = _errors(cos, sin, want_cos, want_sin, cols)
    row_max[:] = error.max(axis=1, initial=0.0)
    top = float(error.max(initial=0.0))
    if math.isfinite(top):
        excess, number, bad = np.subtract(error, match), None, -1
    else:
        number = np.isfinite(error)
        bad = int(np.flatnonzero(~number.ravel())[0])
        excess = np.where(number, error, np.inf) - match
    p = positions.astype(np.float64)[:, None]
    pasts = []
    for rate in rates:
        past = np.multiply(p, rate[None, :])  # the allowed drift, then how far past it
        pasts.append(np.subtract(excess, past, out=past))
    worst, worst_at, worst_error = -math.inf, -1, 0.0
    if error.size:
        worst_at = int(np.argmax(pasts[0]))
        worst = float(pasts[0].flat[worst_at])
        worst_error = float(error.flat[worst_at])
    other = float(pasts[1].max()) if len(pasts) > 1 and error.size else -math.inf
    squares = (math.inf, -math.inf) if sin is None else _squares(cos, sin, number)
    return (top, bad, worst, worst_at, worst_error, other, *squares)
