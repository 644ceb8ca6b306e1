"""The NumPy fillers: the same schemes as ``_kernel.pyx`` (read its header), written with
broadcasting, rounding every operation in the same order so both backends agree bit for bit."""

from __future__ import annotations

import numpy as np

from . import _half
from ._angles import evaluate

__all__ = ["fill_exact", "fill_rope", "fill_table"]


def _unit(values: np.ndarray) -> np.ndarray:
    """Clamp to [-1, 1] in place: the exact value is inside, so clamping never adds error."""
    return np.clip(values, -1.0, 1.0, out=values)


def fill_table(
    out: np.ndarray,
    coarse: np.ndarray,
    mid: np.ndarray,
    fine: np.ndarray,
    sin_col: int,
    cos_col: int,
    step: int,
    n_sin: int,
    n_cos: int,
    pad_col: int,
    threads: int,
) -> None:
    """Fill ``out`` with ``coarse[q] * mid[j] * fine[k]`` rotations; same contract as the kernel.

    ``threads`` is accepted for signature parity and unused.
    """
    if _half.is_half(out.dtype):  # made in float64, rounded once (the kernel: a block at a time)
        values = np.empty(out.shape)
        fill_table(values, coarse, mid, fine, sin_col, cos_col, step, n_sin, n_cos, pad_col, 1)
        _half.round_into(out, values)
        return
    n_rows = out.shape[0]
    n_fine, n_mid = fine.shape[0], mid.shape[0]
    if n_rows == 0 or out.shape[1] == 0:
        return
    blocks = np.arange(-(-n_rows // n_fine))
    c_cos, c_sin = coarse[blocks // n_mid, 0], coarse[blocks // n_mid, 1]
    m_cos, m_sin = mid[blocks % n_mid, 0], mid[blocks % n_mid, 1]
    # anchor of each block of `n_fine` rows: coarse[q] * mid[j]
    a_sin = (c_sin * m_cos + c_cos * m_sin)[:, None, :]
    a_cos = (c_cos * m_cos - c_sin * m_sin)[:, None, :]
    f_cos, f_sin = fine[None, :, 0], fine[None, :, 1]
    sin_part = slice(sin_col, sin_col + step * n_sin, step)
    cos_part = slice(cos_col, cos_col + step * n_cos, step)
    # Full blocks are written through a (blocks, n_fine, columns) view, the short last block apart
    # (splitting the row axis of a C-contiguous array is always a view, never a copy).
    full = n_rows // n_fine
    parts = [(0, full, n_fine), (full, -(-n_rows // n_fine), n_rows - full * n_fine)]
    for first, stop, n_k in parts:
        if stop <= first or n_k == 0:
            continue
        view = out[first * n_fine : first * n_fine + (stop - first) * n_k].reshape(
            stop - first, n_k, out.shape[1]
        )
        fc, fs = f_cos[:, :n_k], f_sin[:, :n_k]
        bs, bc = a_sin[first:stop], a_cos[first:stop]
        view[..., sin_part] = _unit(
            bs[..., :n_sin] * fc[..., :n_sin] + bc[..., :n_sin] * fs[..., :n_sin]
        )
        if n_cos:
            view[..., cos_part] = _unit(
                bc[..., :n_cos] * fc[..., :n_cos] - bs[..., :n_cos] * fs[..., :n_cos]
            )
    if pad_col >= 0:
        out[:, pad_col] = 0


def fill_exact(
    out: np.ndarray,
    positions: np.ndarray,
    table: np.ndarray,
    sin_col: int,
    cos_col: int,
    step: int,
    n_sin: int,
    n_cos: int,
    pad_col: int,
    threads: int,
) -> None:
    """Row ``r`` of ``out`` = the exact cos/sin of ``positions[r] * w`` in the column map's
    places, rounded once to ``out``'s type; same contract as the kernel's ``fill_exact``."""
    if _half.is_half(out.dtype):
        values = np.empty(out.shape)
        fill_exact(values, positions, table, sin_col, cos_col, step, n_sin, n_cos, pad_col, 1)
        _half.round_into(out, values)
        return
    values = np.empty((positions.shape[0], 2, table.shape[1]))
    evaluate(positions, table, values, threads)
    out[:, sin_col : sin_col + step * n_sin : step] = values[:, 1, :n_sin]
    if n_cos:
        out[:, cos_col : cos_col + step * n_cos : step] = values[:, 0, :n_cos]
    if pad_col >= 0:
        out[:, pad_col] = 0


ROPE_FINE, ROPE_MID = 16, 64  # the grid of ``_rope.h``: anchors every 1024 positions
ROPE_BLOCK = float(ROPE_FINE * ROPE_MID)
_ROPE_ROWS = 2048  # rows per step: bounds the temporaries whatever the table's length


def _rope_layout(out: np.ndarray, values: np.ndarray, layout: int) -> None:
    """Write ``values`` (n, h) into ``out`` in the layout's places (see ``_rope.h``)."""
    h = values.shape[1]
    if layout == 0:  # half
        out[:, :h] = values
        out[:, h:] = values
    elif layout == 1:  # interleaved
        out[:, 0::2] = values
        out[:, 1::2] = values
    else:  # compact
        out[:] = values


def fill_rope(
    cos_out: np.ndarray,
    sin_out: np.ndarray,
    positions: np.ndarray,
    anchor_index: np.ndarray,
    anchors: np.ndarray,
    mid: np.ndarray,
    fine: np.ndarray,
    table: np.ndarray,
    layout: int,
    factor: float,
    threads: int,
) -> None:
    """The NumPy twin of the kernel's ``fill_rope``: same values, same bits (``_rope.h``)."""
    if _half.is_half(cos_out.dtype):
        cos, sin = np.empty(cos_out.shape), np.empty(sin_out.shape)
        fill_rope(cos, sin, positions, anchor_index, anchors, mid, fine, table, layout, factor, 1)
        _half.round_into(cos_out, cos)
        _half.round_into(sin_out, sin)
        return
    h = table.shape[1]
    if h == 0:
        return
    for start in range(0, positions.shape[0], _ROPE_ROWS):
        rows = slice(start, start + _ROPE_ROWS)
        p, q = positions[rows], anchor_index[rows]
        cos = np.empty((p.shape[0], h))
        sin = np.empty((p.shape[0], h))
        integer = q >= 0
        if integer.any():
            pi, qi = p[integer], q[integer]
            u = (pi - np.floor(pi / ROPE_BLOCK) * ROPE_BLOCK).astype(np.intp)
            j, k = u // ROPE_FINE, u % ROPE_FINE
            c_cos, c_sin, m_cos, m_sin = anchors[qi, 0], anchors[qi, 1], mid[j, 0], mid[j, 1]
            a_sin = c_sin * m_cos + c_cos * m_sin
            a_cos = c_cos * m_cos - c_sin * m_sin
            f_cos, f_sin = fine[k, 0], fine[k, 1]
            sin[integer] = factor * _unit(a_sin * f_cos + a_cos * f_sin)
            cos[integer] = factor * _unit(a_cos * f_cos - a_sin * f_sin)
        if not integer.all():
            other = ~integer
            values = np.empty((int(other.sum()), 2, h))
            evaluate(p[other], table, values, 1)
            cos[other] = factor * values[:, 0]
            sin[other] = factor * values[:, 1]
        _rope_layout(cos_out[rows], cos, layout)
        _rope_layout(sin_out[rows], sin, layout)
