"""The NumPy fillers: the same schemes as ``_kernel.pyx`` (read its header), written with
broadcasting, rounding every operation in the same order so both backends agree bit for bit."""

from __future__ import annotations

import numpy as np

from ._angles import evaluate

__all__ = ["fill_exact", "fill_table"]


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
    values = np.empty((positions.shape[0], 2, table.shape[1]))
    evaluate(positions, table, values, threads)
    out[:, sin_col : sin_col + step * n_sin : step] = values[:, 1, :n_sin]
    if n_cos:
        out[:, cos_col : cos_col + step * n_cos : step] = values[:, 0, :n_cos]
    if pad_col >= 0:
        out[:, pad_col] = 0
