"""Grid encodings: one row per point of a grid, the columns a concatenation of per-axis
encodings (MAE and diffusers 2-D grids, diffusers' 3-D video grid, and any other).

One mechanism: each axis's positions are encoded once (``encode``: every value exact for its
own, possibly fractional, position), and each encoding is broadcast into its block of
columns, so the table is written once, at the speed of a strided copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..conventions import Convention
from ..conventions import get as get_convention
from . import checks as check
from .backends import get as get_backend
from .checks import F64, MAX_POSITION
from .tables import encode, frequency_key
from .types import DTypeLike

__all__ = ["encode_grid", "encode_2d"]


def _axes(axes) -> list[np.ndarray]:
    if isinstance(axes, (str, bytes, np.ndarray)) or not isinstance(axes, Sequence):
        raise TypeError(
            "axes must be a list or tuple of 1-D position arrays (one per grid axis), got "
            f"{type(axes).__name__}"
        )
    if not axes:
        raise ValueError("axes must name at least one grid axis")
    result = []
    for k, axis in enumerate(axes):
        try:
            positions = check.positions(axis)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"axes[{k}]: {exc}") from None
        if positions.ndim != 1:
            raise ValueError(f"axes[{k}] must be 1-D, got shape {positions.shape}")
        result.append(positions)
    return result


def _widths(widths, n_axes: int) -> list[int]:
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
        raise TypeError(f"widths must be a list or tuple of ints, got {type(widths).__name__}")
    if len(widths) != n_axes:
        raise ValueError(f"widths must give one width per axis ({n_axes}), got {len(widths)}")
    return [check.integer(f"widths[{k}]", w, 0) for k, w in enumerate(widths)]


def _order(order, n_axes: int) -> list[int]:
    if order is None:
        return list(range(n_axes))
    if isinstance(order, (str, bytes)) or not isinstance(order, Sequence):
        raise TypeError(
            f"order must be a list or tuple of axis numbers, got {type(order).__name__}"
        )
    result = [check.integer(f"order[{k}]", a, 0) for k, a in enumerate(order)]
    if sorted(result) != list(range(n_axes)):
        raise ValueError(
            f"order must list every axis 0..{n_axes - 1} exactly once, got {list(order)}"
        )
    return result


def encode_grid(
    axes: Sequence,
    widths: Sequence[int],
    *,
    order: Sequence[int] | None = None,
    base: float = 10000.0,
    convention: str | Convention = "hf-marian",
    dtype: DTypeLike = None,
    out: np.ndarray | None = None,
    backend: str = "auto",
) -> np.ndarray:
    """Encode every point of a grid: per-axis encodings side by side, one row per point.

    Parameters
    ----------
    axes : sequence of array_like
        One 1-D array of positions per grid axis (integers or fractions, finite,
        ``|p| < 2**53``; floats are taken as exact). Rows run over the grid in C order: the
        last axis varies fastest, so point ``(i_0, ..., i_k)`` is row
        ``numpy.ravel_multi_index((i_0, ..., i_k), lengths)``.
    widths : sequence of int
        Columns of each axis's encoding (``>= 0``), in the order of ``axes``.
    order : sequence of int, optional
        The axes' column blocks from left to right (a permutation of ``range(len(axes))``);
        default: the order of ``axes``. MAE and diffusers put ``x`` (the fast axis) first.
    base : float, default 10000.0
    convention : str or Convention, default "hf-marian"
        Each block's layout and frequency rule at its own width. The default is the grid
        layout of MAE and diffusers: ``[sin | cos]``, ``w_i = base**(-2i/width)``.
    dtype, out, backend
        As for :func:`sinpe.encode`; ``out`` has shape ``(prod(lengths), sum(widths))``.

    Returns
    -------
    numpy.ndarray
        ``(prod(len(a) for a in axes), sum(widths))``; every value within 1e-15 (float64) of
        the exact value at its axis position.

    Examples
    --------
    >>> import numpy as np, sinpe
    >>> ys, xs = np.arange(2), np.arange(3) / 2  # a 2 x 3 grid, x in half steps
    >>> table = sinpe.encode_grid([ys, xs], [4, 4], order=[1, 0])  # [x block | y block]
    >>> table.shape
    (6, 8)
    >>> bool((table[4] == np.concatenate([sinpe.encode(0.5, 4, convention="hf-marian"),
    ...                                   sinpe.encode(1, 4, convention="hf-marian")])).all())
    True
    """
    positions = _axes(axes)
    widths = _widths(widths, len(positions))
    order = _order(order, len(positions))
    base = check.base(base)
    dtype = check.dtype(dtype)
    chosen = get_backend(backend)
    convention = get_convention(convention)
    lengths = [p.shape[0] for p in positions]
    shape = (math.prod(lengths), sum(widths))
    table = check.output(out, shape, dtype, ("prod(lengths)", "sum(widths)"))
    for k, width in enumerate(widths):  # every refusal before anything is written
        if width:
            try:
                frequency_key(convention, width, base)
            except ValueError as exc:
                raise ValueError(f"widths[{k}]={width}: {exc}") from None
    if table.size == 0:
        return table
    grid = table.reshape((*lengths, shape[1]))
    column = 0
    for k in order:
        width = widths[k]
        if not width:
            continue
        values = encode(
            positions[k],
            width,
            base=base,
            convention=convention,
            dtype=table.dtype,
            backend=chosen.NAME,
        )
        along = [1] * len(lengths)
        along[k] = lengths[k]
        # one pass over the block: the axis's rows broadcast over every other axis
        np.copyto(grid[..., column : column + width], values.reshape((*along, width)))
        column += width
    return table


def encode_2d(
    height: int, width: int, d_model: int, *, base: float = 10000.0, dtype: DTypeLike = None
) -> np.ndarray:
    """MAE's 2-D grid encoding (``get_2d_sincos_pos_embed``, used by ViT/MAE/DiT).

    Row ``y * width + x``: the first ``d_model/2`` columns encode ``x``, the last ``d_model/2``
    encode ``y``, each half ``[sin | cos]`` with ``w_i = base**(-i / (d_model/4))``. The
    :func:`encode_grid` of ``[arange(height), arange(width)]``, widths ``d_model/2`` each,
    ``order=[1, 0]``.

    Parameters
    ----------
    height, width : int
        Grid size, ``>= 0``.
    d_model : int
        A positive multiple of 4.
    base : float, default 10000.0
    dtype : float64, float32, float16, bfloat16 or None, default None (float64)
        Each value the exact one correctly rounded.

    Returns
    -------
    numpy.ndarray
        ``(height * width, d_model)``.
    """
    height = check.integer("height", height, 0)
    width = check.integer("width", width, 0)
    d_model = check.integer("d_model", d_model, 1)
    if d_model % 4:
        raise ValueError(f"d_model must be a multiple of 4 for encode_2d, got {d_model}")
    for name, size in (("height", height), ("width", width)):
        if size > MAX_POSITION:
            raise ValueError(f"{name} must be <= 2**53 (positions below 2**53), got {size}")
    base = check.base(base)
    dtype = check.dtype(dtype) or F64
    table = check.allocate((height * width, d_model), dtype, ("height*width", "d_model"))
    if table.size == 0:  # no axis is made: a 2**40 x 0 grid costs nothing
        return table
    half = d_model // 2
    return encode_grid(
        [np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64)],
        [half, half],
        order=[1, 0],
        base=base,
        out=table,
    )
