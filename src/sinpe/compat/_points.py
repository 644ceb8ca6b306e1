"""Encodings of arbitrary point sets, blocks side by side: the ``*_from_grid`` functions,
whose points need not form a product grid (``sinpe.encode_grid`` covers those)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._tables import checks as check
from .._tables.tables import encode
from ..conventions import Convention
from ._common import as_array

# The grid layout of MAE and diffusers: [sin | cos], w_i = 10000**(-2i/width).
GRID_CONVENTION = "hf-marian"


def point_blocks(
    sources: Sequence[tuple[Any, int | None]],
    widths: Sequence[int],
    name: str,
    convention: str | Convention = GRID_CONVENTION,
    dtype: np.dtype = check.F64,
) -> np.ndarray:
    """``(M, sum(widths))``: block ``k`` encodes the positions ``sources[k]`` at width
    ``widths[k]``. A source is ``(array, index)``: ``array[index]`` flattened, or the whole
    array for index None; every block must have the same number ``M`` of points."""
    blocks = []
    for array, index in sources:
        if index is not None and isinstance(array, (list, tuple)) and len(array) > index:
            array, index = array[index], None  # rows of a sequence may differ in length
        values = as_array(array, name)
        if index is not None:
            if values.ndim == 0 or values.shape[0] <= index:
                raise ValueError(
                    f"{name} must have at least {index + 1} rows along its first axis, "
                    f"got shape {values.shape}"
                )
            values = values[index]
        blocks.append(check.positions(values).reshape(-1))
    points = blocks[0].shape[0]
    if any(block.shape[0] != points for block in blocks):
        counts = " and ".join(str(block.shape[0]) for block in blocks)
        raise ValueError(
            f"{name}'s blocks have {counts} points: every block must have the same number"
        )
    table = check.allocate((points, sum(widths)), dtype, ("points", "embed_dim"))
    column = 0
    for positions, width in zip(blocks, widths):
        if width:
            table[:, column : column + width] = encode(
                positions, width, convention=convention, dtype=dtype
            )
        column += width
    return table
