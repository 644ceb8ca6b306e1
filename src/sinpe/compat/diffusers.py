"""diffusers' ``models/embeddings.py`` sinusoidal functions, exact.

Same names, arguments, defaults, shapes, dtypes and layouts as diffusers (0.32 and later:
``output_type`` and ``device`` included). What differs is only the values: diffusers forms grid
positions in float32 and timestep angles ``t * freq`` in float32 (0.098 off the exact values
with ``scale=1000``); here positions are formed in float64
(``arange(n) / (n / base_size) / interpolation_scale``) and every value is within 1e-15
(float64) of the exact sine or cosine at that position.

``output_type="np"`` (the default, as in diffusers) returns NumPy; ``"pt"`` returns a torch
tensor that shares the table's memory (moved to ``device`` when one is given). torch is
imported only then, or when a tensor is passed in.
"""

from __future__ import annotations

import numpy as np

from .. import conventions
from .._front import checks as check
from .._front.grid import encode_grid
from .._front.tables import encode
from ._common import as_array, hand_over, import_torch, is_tensor, truth
from ._common import embed_dim as _embed_dim
from ._common import output_type as _output_type
from ._points import GRID_CONVENTION, point_blocks

__all__ = [
    "get_timestep_embedding",
    "get_1d_sincos_pos_embed_from_grid",
    "get_2d_sincos_pos_embed",
    "get_2d_sincos_pos_embed_from_grid",
    "get_3d_sincos_pos_embed",
]

_FLIPPED = conventions.Convention("hf-marian, cos first", layout="cos_sin", count="ceil")


def get_timestep_embedding(
    timesteps,
    embedding_dim: int,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1,
    scale: float = 1,
    max_period: int = 10000,
):
    """``(N, embedding_dim)`` float32 for ``N`` timesteps (1-D, may be fractional):
    ``[sin | cos]`` (``[cos | sin]`` with ``flip_sin_to_cos``) of ``t * w_i``,
    ``w_i = scale * exp(-ln(max_period) * i / (embedding_dim//2 - downscale_freq_shift))``, a
    zero column appended for an odd width. A torch tensor in gives a float32 tensor out, on
    the same device; anything else gives NumPy."""
    tensor = timesteps if is_tensor(timesteps) else None
    values = as_array(timesteps, "timesteps")
    if values.ndim != 1:
        raise ValueError(f"timesteps should be a 1d-array, got shape {values.shape}")
    embedding_dim = check.integer("embedding_dim", embedding_dim, 0)
    convention = conventions.diffusers(flip_sin_to_cos, downscale_freq_shift, scale, max_period)
    positions = _positions("timesteps", values)
    table = check.allocate(
        (values.shape[0], embedding_dim), np.dtype(np.float32), ("timesteps", "embedding_dim")
    )
    if embedding_dim:
        encode(positions, embedding_dim, convention=convention, out=table)
    if tensor is None:
        return table
    return import_torch("a tensor").from_numpy(table).to(tensor.device)


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos, output_type="np", flip_sin_to_cos=False):
    """``(pos.size, embed_dim)`` float64: ``[sin | cos]`` (``[cos | sin]`` with
    ``flip_sin_to_cos``) of every position, flattened, times ``10000**(-i/(embed_dim/2))``.
    With ``output_type="pt"`` the tensor is on ``pos``'s device when ``pos`` is a tensor."""
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 2)
    convention = _FLIPPED if _flag("flip_sin_to_cos", flip_sin_to_cos) else GRID_CONVENTION
    table = point_blocks([(pos, None)], [embed_dim], "pos", convention=convention)
    return hand_over(table, output_type, _device_of(pos))


def get_2d_sincos_pos_embed_from_grid(embed_dim, grid, output_type="np"):
    """``(M, embed_dim)`` float64 for ``grid`` of shape ``(2, ...)`` with ``M`` points each:
    ``[encoding of grid[0] | encoding of grid[1]]``, each half ``[sin | cos]``."""
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    half = embed_dim // 2
    table = point_blocks([(grid, 0), (grid, 1)], [half, half], "grid")
    return hand_over(table, output_type, _device_of(grid))


def get_2d_sincos_pos_embed(
    embed_dim,
    grid_size,
    cls_token=False,
    extra_tokens=0,
    interpolation_scale=1.0,
    base_size=16,
    device=None,
    output_type="np",
):
    """``(extra + h*w, embed_dim)`` float64 for ``grid_size`` ``h`` (a square) or ``(h, w)``:
    ``extra_tokens`` zero rows first when ``cls_token`` (as diffusers: both are needed), then
    row ``y*w + x`` is ``[x block | y block]``, each ``[sin | cos]`` at width
    ``embed_dim/2``, of the positions ``x / (w / base_size) / interpolation_scale`` and
    ``y / (h / base_size) / interpolation_scale``."""
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    height, width = _size("grid_size", grid_size)
    extra_tokens = check.integer("extra_tokens", extra_tokens, 0)
    extra = extra_tokens if truth("cls_token", cls_token) else 0
    interpolation_scale = _nonzero("interpolation_scale", interpolation_scale)
    base_size = _nonzero("base_size", base_size)
    table = check.allocate(
        (extra + height * width, embed_dim),
        check.F64,
        ("extra_tokens + grid_size points", "embed_dim"),
    )
    table[:extra] = 0.0
    names = "base_size and interpolation_scale"
    ys = _scaled_axis(height, (height / base_size, interpolation_scale), names)
    xs = _scaled_axis(width, (width / base_size, interpolation_scale), names)
    half = embed_dim // 2
    encode_grid([ys, xs], [half, half], order=[1, 0], out=table[extra:])
    return hand_over(table, output_type, device)


def get_3d_sincos_pos_embed(
    embed_dim,
    spatial_size,
    temporal_size,
    spatial_interpolation_scale=1.0,
    temporal_interpolation_scale=1.0,
    device=None,
    output_type="np",
):
    """``(temporal_size, h*w, embed_dim)`` float64 (CogVideoX, Latte) for ``spatial_size``
    ``s`` (a square) or ``(w, h)`` (width first, as diffusers): columns
    ``[t block (embed_dim/4) | x block (3 embed_dim/8) | y block (3 embed_dim/8)]``, each
    ``[sin | cos]``, of ``t / temporal_interpolation_scale`` and ``x, y /
    spatial_interpolation_scale``; row ``y*w + x`` within frame ``t``.

    ``embed_dim`` must be divisible by 4 (diffusers' check) and, for the blocks to have even
    widths, by 16 (diffusers raises for the other multiples of 4 too, one call deeper).
    """
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    if embed_dim % 16:
        raise ValueError(
            f"embed_dim must be divisible by 16, got {embed_dim}: its temporal quarter and the "
            "two halves of its spatial three quarters must each have an even width"
        )
    width, height = _size("spatial_size", spatial_size)
    temporal_size = check.integer("temporal_size", temporal_size, 0)
    spatial_scale = _nonzero("spatial_interpolation_scale", spatial_interpolation_scale)
    temporal_scale = _nonzero("temporal_interpolation_scale", temporal_interpolation_scale)
    table = check.allocate(
        (temporal_size, height * width, embed_dim),
        check.F64,
        ("temporal_size", "spatial_size", "embed_dim"),
    )
    ts = _scaled_axis(temporal_size, (temporal_scale,), "temporal_interpolation_scale")
    ys = _scaled_axis(height, (spatial_scale,), "spatial_interpolation_scale")
    xs = _scaled_axis(width, (spatial_scale,), "spatial_interpolation_scale")
    quarter, spatial = embed_dim // 4, 3 * embed_dim // 8
    encode_grid(
        [ts, ys, xs],
        [quarter, spatial, spatial],
        order=[0, 2, 1],
        out=table.reshape(temporal_size * height * width, embed_dim),
    )
    return hand_over(table, output_type, device)


# --------------------------------------------------------------------------- arguments


def _device_of(positions):
    """Where diffusers' result would live: the device of a tensor of positions, else None."""
    return positions.device if is_tensor(positions) else None


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _size(name: str, value) -> tuple[int, int]:
    """An int (a square) or a pair of ints, as diffusers' ``grid_size`` / ``spatial_size``."""
    if isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {value!r:.60}")
        return check.integer(f"{name}[0]", value[0], 0), check.integer(f"{name}[1]", value[1], 0)
    size = check.integer(name, value, 0)
    return size, size


def _nonzero(name: str, value) -> float:
    result = check.real(name, value)
    if not (np.isfinite(result) and result != 0):
        raise ValueError(f"{name} must be finite and non-zero, got {value!r:.60}")
    return result


def _scaled_axis(n: int, divisors: tuple, names: str) -> np.ndarray:
    """diffusers' ``arange(n) / divisor / ...`` (say ``/ (n / base_size) /
    interpolation_scale``), in float64; positions past 2**53 are refused, naming the
    arguments that put them there."""
    axis = np.arange(n, dtype=np.float64)
    with np.errstate(over="ignore"):
        for divisor in divisors:
            axis /= divisor
    return _positions(names, axis)


def _positions(names: str, values) -> np.ndarray:
    try:
        return check.positions(values)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{names}: {exc}") from None
