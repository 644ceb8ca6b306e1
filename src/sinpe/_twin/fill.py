"""The one filler in NumPy: the twin of ``fill.h`` and ``rotate.h`` (read ``fill.h`` for the
scheme and its bound), the same names and arguments as the kernel's ``Plan`` and ``fill``,
every operation rounded in the same order, so both backends give the same bits."""

from __future__ import annotations

import numpy as np

from .._exactmath.constants import (
    GRID_FINE,
    GRID_FINE_BITS,
    GRID_MID,
    GRID_SPAN,
    GRID_SPAN_BITS,
    SEG_AXIS,
    SEG_COS_PLANE,
    SEG_COUNT,
    SEG_FIRST,
    SEG_SIN_PLANE,
)
from . import correct
from .correct import correctly_rounded, unsure
from .exact import exact_cos_sin
from .half import round_into

__all__ = ["Plan", "fill", "rotate"]

_ELEMENTS = 1 << 16  # elements per step: bounds the temporaries whatever the table's size


class Plan:
    """What a fill keeps between calls (the kernel's ``Plan``, same arguments): the grid
    table ``(80, 2, h)`` (mid rows, then fine rows), the evaluator's constants ``(8, h)``,
    the layout's segments ``(n, 13)`` int64, the row width, the number of output planes, a
    zero column (or -1) and the factor every value is multiplied by."""

    def __init__(self, grid, table, segments, width, planes, pad_col, factor):
        self.grid, self.table, self.segments = grid, table, segments
        self.width, self.planes, self.pad_col = int(width), int(planes), int(pad_col)
        self.factor = float(factor)
        self.axes = int(segments[:, SEG_AXIS].max()) + 1 if segments.shape[0] else 0


def rotate(a_cos, a_sin, f_cos, f_sin):
    """``(cos, sin)`` of the sum of two angles from their unit vectors: four products and two
    sums, in the order of ``rotate.h``."""
    return a_cos * f_cos - a_sin * f_sin, a_sin * f_cos + a_cos * f_sin


def _write(plane: np.ndarray, values: np.ndarray, col: int, step: int, dup: int) -> None:
    """``values`` (rows, n) into columns ``col + i * step`` (and ``+ dup``), rounded once."""
    n = values.shape[1]
    if not n:
        return
    round_into(plane[:, col : col + step * (n - 1) + 1 : step], values)
    if dup:
        round_into(plane[:, col + dup : col + dup + step * (n - 1) + 1 : step], values)


def _correct(cos, sin, positions, w, factor, dtype_name) -> None:
    """The entries of ``(cos, sin)`` (rows at ``positions``, lanes of frequencies ``w``)
    that may round the wrong way to the narrow type, replaced by their correctly rounded
    values (exact in the type, so its rounding keeps them); position 0 is exact already."""
    rows, lanes = np.nonzero(unsure(cos, sin, dtype_name, factor))
    for r, lane in zip(rows.tolist(), lanes.tolist()):
        p, f = float(positions[r]), float(w[lane])
        if p == 0.0 or f == 0.0:
            continue
        cos[r, lane], sin[r, lane], _ = correctly_rounded(p, f, factor, dtype_name)


def fill(plan, out0, out1, anchors, values, codes, start, origin, threads, whole=False) -> None:
    """The twin of the kernel's ``fill``: ``out0`` (and ``out1``) from ``anchors`` (or, when
    None, the evaluator at the anchor positions ``values``, or for a run at ``origin + 1024
    n``) and the rows' ``codes`` (None: a run, row r's code is ``start + r``, its position
    ``origin + start + r``; codes come with ``values``, each row's anchor position).
    ``threads`` is accepted for signature parity; ``whole`` is refused: the twin's steps are
    Python, and a signal's handler may raise between any two of them."""
    if whole:
        raise ValueError("the NumPy twin cannot fill whole: a signal may stop it between steps")
    planes = (out0, out1)
    n_rows = out0.shape[0]
    grid = plan.grid
    factor = plan.factor
    clamp = out0.dtype.itemsize == 8 or factor != 1.0  # see fill.h: the same bits either way
    rows = max(GRID_FINE, _ELEMENTS // max(plan.width, 1))
    for r0 in range(0, n_rows, rows):
        r1 = min(r0 + rows, n_rows)
        for seg in plan.segments.tolist():
            first, count = seg[SEG_FIRST], seg[SEG_COUNT]
            lanes = slice(first, first + count)
            if codes is None:
                code = np.arange(start + r0, start + r1, dtype=np.int64)
            else:
                code = codes[seg[SEG_AXIS], r0:r1]
            u = code & (GRID_SPAN - 1)
            j, k = u >> GRID_FINE_BITS, u & (GRID_FINE - 1)
            if anchors is None:  # the evaluator at each row's anchor position
                if values is None:
                    at = origin + (code >> GRID_SPAN_BITS).astype(np.float64) * GRID_SPAN
                else:
                    at = values[seg[SEG_AXIS], r0:r1]
                a = np.empty((r1 - r0, 2, plan.table.shape[1]))
                exact_cos_sin(np.ascontiguousarray(at), plan.table, a, 1)
                a = a[:, :, lanes]
            else:
                a = anchors[:, :, lanes][code >> GRID_SPAN_BITS]
            m = grid[:, :, lanes][j]
            f = grid[:, :, lanes][GRID_MID + k]
            a_cos, a_sin = rotate(a[:, 0], a[:, 1], m[:, 0], m[:, 1])
            anchor_itself = (j == 0)[:, None]  # mid[0] = (1, +-0): fill.h skips it
            a_cos = np.where(anchor_itself, a[:, 0], a_cos)
            a_sin = np.where(anchor_itself, a[:, 1], a_sin)
            cos, sin = rotate(a_cos, a_sin, f[:, 0], f[:, 1])
            if clamp:
                np.clip(cos, -1.0, 1.0, out=cos)
                np.clip(sin, -1.0, 1.0, out=sin)
            if factor != 1.0:
                cos *= factor
                sin *= factor
            if out0.dtype.itemsize < 8 and correct.CHECKED:  # fill.h, "Narrow types"
                if codes is None:
                    at = origin + code.astype(np.float64)
                else:
                    at = values[seg[SEG_AXIS], r0:r1] + u.astype(np.float64)
                _correct(cos, sin, at, plan.table[0, lanes], factor, out0.dtype.name)
            for kind, place in ((cos, SEG_COS_PLANE), (sin, SEG_SIN_PLANE)):
                plane, col, step, dup, n = seg[place : place + 5]
                _write(planes[plane][r0:r1], kind[:, :n], col, step, dup)
        if plan.pad_col >= 0:
            out0[r0:r1, plan.pad_col] = 0
