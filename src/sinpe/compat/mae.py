"""MAE's ``util/pos_embed.py`` (also ViT, DiT and their copies), exact.

Same names, arguments, shapes and float64 output as the original; the frequencies
``1 / 10000**(i / (D/2))`` are exact instead of rounded, and so is every sine and cosine.
Where the original asserts, these raise ``ValueError``.
"""

from __future__ import annotations

import numpy as np

from .._tables import checks as check
from .._tables.grid import encode_grid
from .._tables.types import ArrayLike
from ._common import embed_dim as _embed_dim
from ._common import truth
from ._points import point_blocks

__all__ = [
    "get_2d_sincos_pos_embed",
    "get_2d_sincos_pos_embed_from_grid",
    "get_1d_sincos_pos_embed_from_grid",
]


def get_2d_sincos_pos_embed(embed_dim: int, grid_size: int, cls_token: bool = False) -> np.ndarray:
    """``(grid_size**2, embed_dim)`` float64 (one zero row first with ``cls_token``): row
    ``y * grid_size + x`` is ``[x block | y block]``, each ``[sin | cos]`` at width
    ``embed_dim/2``. ``embed_dim`` must be a multiple of 4 (the original asserts it)."""
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    grid_size = check.integer("grid_size", grid_size, 0)
    extra = 1 if truth("cls_token", cls_token) else 0
    table = check.allocate(
        (extra + grid_size * grid_size, embed_dim),
        check.F64,
        ("cls_token + grid_size**2", "embed_dim"),
    )
    table[:extra] = 0.0
    axis = np.arange(grid_size, dtype=np.float64)
    half = embed_dim // 2
    encode_grid([axis, axis], [half, half], order=[1, 0], out=table[extra:])
    return table


def get_2d_sincos_pos_embed_from_grid(embed_dim: int, grid: ArrayLike) -> np.ndarray:
    """``(M, embed_dim)`` float64 for ``grid`` of shape ``(2, ...)`` with ``M`` points:
    ``[encoding of grid[0] | encoding of grid[1]]``, each half ``[sin | cos]``."""
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    half = embed_dim // 2
    return point_blocks([(grid, 0), (grid, 1)], [half, half], "grid")


def get_1d_sincos_pos_embed_from_grid(embed_dim: int, pos: ArrayLike) -> np.ndarray:
    """``(pos.size, embed_dim)`` float64: ``[sin | cos]`` of every position (flattened) times
    ``1 / 10000**(i / (embed_dim/2))``. ``embed_dim`` must be even (the original asserts it)."""
    embed_dim = _embed_dim("embed_dim", embed_dim, 2)
    return point_blocks([(pos, None)], [embed_dim], "pos")
