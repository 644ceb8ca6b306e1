"""diffusers' ``models/embeddings.py`` positional functions, exact: the sinusoidal ones and the
rotary helpers (``get_1d_rotary_pos_embed``, what ``FluxPosEmbed`` builds per axis,
``get_2d_rotary_pos_embed``, ``get_3d_rotary_pos_embed``).

Same names, arguments, defaults, shapes, dtypes, layouts and return types as diffusers 0.42:
the sinusoidal functions return a torch tensor by default (``output_type="pt"``, which
diffusers 0.42 always does); ``output_type="np"`` returns NumPy instead, sinpe's own addition
(diffusers 0.41 and later ignore the argument). What differs is only the values: diffusers
forms grid positions and timestep angles ``t * freq`` in float32 (0.098 off the exact values
with ``scale=1000``); here positions are formed in float64 with diffusers' operations
(``arange(n) / (n / base_size) / interpolation_scale``, ``linspace``) and every value is the
exact sine or cosine at that position, within 1e-15 before it is rounded once to the
output's dtype.

torch is imported only inside the functions that return tensors, with an ``ImportError``
naming ``pip install torch`` where it is absent; ``import sinpe`` never imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import conventions
from .._rope.rope import rope_blocks
from .._tables import checks as check
from .._tables.grid import encode_grid
from .._tables.tables import encode
from .._tables.types import ArrayLike, Tensor, TensorOrArray, TorchDType
from ._common import as_array, hand_over, import_torch, is_tensor, truth
from ._common import embed_dim as _embed_dim
from ._common import output_type as _output_type
from ._points import GRID_CONVENTION, point_blocks

__all__ = [
    "FLOAT32",
    "get_timestep_embedding",
    "get_1d_sincos_pos_embed_from_grid",
    "get_2d_sincos_pos_embed",
    "get_2d_sincos_pos_embed_from_grid",
    "get_3d_sincos_pos_embed",
    "get_1d_rotary_pos_embed",
    "get_2d_rotary_pos_embed",
    "get_3d_rotary_pos_embed",
]


class _Float32:
    """``torch.float32``, named without importing torch: the default of
    ``get_1d_rotary_pos_embed``'s ``freqs_dtype``."""

    def __repr__(self) -> str:
        return "torch.float32"


FLOAT32 = _Float32()

_FLIPPED = conventions.Convention("hf-marian, cos first", layout="cos_sin", count="ceil")


def get_timestep_embedding(
    timesteps: Tensor | ArrayLike,
    embedding_dim: int,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1,
    scale: float = 1,
    max_period: int = 10000,
) -> TensorOrArray:
    """``(N, embedding_dim)`` float32 for ``N`` timesteps (1-D, may be fractional):
    ``[sin | cos]`` (``[cos | sin]`` with ``flip_sin_to_cos``) of ``t * w_i``,
    ``w_i = scale * exp(-ln(max_period) * i / (embedding_dim//2 - downscale_freq_shift))``, a
    zero column appended for an odd width. A torch tensor in gives a float32 tensor out, on
    the same device; anything else gives NumPy."""
    tensor: Any = timesteps if is_tensor(timesteps) else None
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


def get_1d_sincos_pos_embed_from_grid(
    embed_dim: int,
    pos: Tensor | ArrayLike,
    output_type: str = "pt",
    flip_sin_to_cos: bool = False,
    dtype: TorchDType | None = None,
) -> TensorOrArray:
    """``(pos.size, embed_dim)``: ``[sin | cos]`` (``[cos | sin]`` with ``flip_sin_to_cos``)
    of every position, flattened, times ``10000**(-i/(embed_dim/2))``; float64, or float32
    where ``dtype`` is ``torch.float32`` and ``pos`` is not float64 (diffusers' type
    promotion). The tensor is on ``pos``'s device when ``pos`` is a tensor."""
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 2)
    convention = _FLIPPED if _flag("flip_sin_to_cos", flip_sin_to_cos) else GRID_CONVENTION
    narrow = _float_dtype("dtype", dtype, None) == "float32" and _dtype_name(pos) != "float64"
    table = point_blocks(
        [(pos, None)],
        [embed_dim],
        "pos",
        convention=convention,
        dtype=np.dtype(np.float32 if narrow else np.float64),
    )
    return hand_over(table, output_type, _device_of(pos))


def get_2d_sincos_pos_embed_from_grid(
    embed_dim: int, grid: Tensor | ArrayLike, output_type: str = "pt"
) -> TensorOrArray:
    """``(M, embed_dim)`` float64 for ``grid`` of shape ``(2, ...)`` with ``M`` points each:
    ``[encoding of grid[0] | encoding of grid[1]]``, each half ``[sin | cos]``."""
    output_type = _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    half = embed_dim // 2
    table = point_blocks([(grid, 0), (grid, 1)], [half, half], "grid")
    return hand_over(table, output_type, _device_of(grid))


def get_2d_sincos_pos_embed(
    embed_dim: int,
    grid_size: int | tuple[int, int],
    cls_token: bool = False,
    extra_tokens: int = 0,
    interpolation_scale: float = 1.0,
    base_size: float = 16,
    device: Any = None,
    output_type: str = "pt",
) -> TensorOrArray:
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
    embed_dim: int,
    spatial_size: int | tuple[int, int],
    temporal_size: int,
    spatial_interpolation_scale: float = 1.0,
    temporal_interpolation_scale: float = 1.0,
    device: Any = None,
    output_type: str = "pt",
) -> TensorOrArray:
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


# --------------------------------------------------------------------------- rotary


def get_1d_rotary_pos_embed(
    dim: int,
    pos: Tensor | ArrayLike | int,
    theta: float = 10000.0,
    use_real: bool = False,
    linear_factor: float = 1.0,
    ntk_factor: float = 1.0,
    repeat_interleave_real: bool = True,
    freqs_dtype: TorchDType = FLOAT32,
) -> Tensor | tuple[Tensor, Tensor]:
    """RoPE of ``pos`` (an int ``S``: positions ``0 .. S-1``; or a 1-D array or tensor) with
    inverse frequencies ``(theta * ntk_factor)**(-2i/dim) / linear_factor``, as torch tensors.

    ``use_real``: ``(cos, sin)``, float32 ``(S, dim)``, each value repeated in place
    (``[c0, c0, c1, c1, ...]``, ``repeat_interleave_real``) or the half table repeated
    (``[c0 .. c(h-1), c0 .. c(h-1)]``); else ``freqs_cis``, ``(S, dim/2)`` complex: complex64
    where diffusers' angle is float32 (integer or float32 ``pos`` with ``freqs_dtype``
    float32), complex128 where it is float64. ``freqs_dtype`` is ``torch.float32`` (the
    default, ``FLOAT32`` here) or ``torch.float64``; it changes the values only through the
    output's dtype. On ``pos``'s device when ``pos`` is a tensor."""
    torch = import_torch("get_1d_rotary_pos_embed")
    dim = _embed_dim("dim", dim, 2)
    if isinstance(pos, (int, np.integer)) and not isinstance(pos, bool):
        values = np.arange(check.integer("pos", pos, 0), dtype=np.float64)
        pos_dtype = "int64"
    else:
        pos_dtype = _dtype_name(pos)
        values = as_array(pos, "pos")
        if values.ndim != 1:
            raise ValueError(
                f"pos must be an int or a 1-D array of positions, got shape {values.shape}"
            )
    freqs = _float_dtype("freqs_dtype", freqs_dtype, "float32")
    wide = freqs == "float64" or pos_dtype == "float64"
    base = _positive("theta", theta) * _positive("ntk_factor", ntk_factor)
    linear_factor = _positive("linear_factor", linear_factor)
    positions = _positions("pos", values).reshape(1, -1)
    real = truth("use_real", use_real)
    layout = (
        "interleaved"
        if real and truth("repeat_interleave_real", repeat_interleave_real)
        else ("half" if real else "compact")
    )
    table_dtype = np.float32 if real or not wide else np.float64
    cos, sin = rope_blocks(
        positions, [dim], base=base, linear_factor=linear_factor, layout=layout, dtype=table_dtype
    )
    return _rotary_output(torch, cos, sin, real, _device_of(pos))


def get_2d_rotary_pos_embed(
    embed_dim: int,
    crops_coords: tuple[tuple[float, float], tuple[float, float]],
    grid_size: tuple[int, int],
    use_real: bool = True,
    device: Any = None,
    output_type: str = "pt",
) -> Tensor | tuple[Tensor, Tensor]:
    """RoPE of an image's ``grid_size = (h, w)`` tokens (row ``i * w + j``), as diffusers
    0.42: positions ``linspace(start, stop * (n-1)/n, n)`` per axis from ``crops_coords =
    (start, stop)``; columns ``[the column coordinate | the row coordinate]``, each
    ``get_1d_rotary_pos_embed(embed_dim // 2, ...)``. ``use_real``: ``(cos, sin)`` float32
    ``(h*w, embed_dim)``; else complex64 ``(h*w, embed_dim/2)``."""
    torch = import_torch("get_2d_rotary_pos_embed")
    _output_type(output_type)
    embed_dim = _embed_dim("embed_dim", embed_dim, 4)
    (h0, w0), (h1, w1) = _pair_of_pairs("crops_coords", crops_coords)
    height, width = _size("grid_size", grid_size)
    grid_h = _linspace("crops_coords", h0, h1, height)
    grid_w = _linspace("crops_coords", w0, w1, width)
    positions = np.stack([np.tile(grid_w, height), np.repeat(grid_h, width)])
    real = truth("use_real", use_real)
    half = embed_dim // 2
    cos, sin = rope_blocks(
        positions, [half, half], layout="interleaved" if real else "compact", dtype=np.float32
    )
    return _rotary_output(torch, cos, sin, real, device)


def get_3d_rotary_pos_embed(
    embed_dim: int,
    crops_coords: tuple[tuple[float, float], tuple[float, float]],
    grid_size: tuple[int, int],
    temporal_size: int,
    theta: int = 10000,
    use_real: bool = True,
    grid_type: str = "linspace",
    max_size: tuple[int, int] | None = None,
    device: Any = None,
) -> tuple[Tensor, Tensor]:
    """RoPE of a video's ``temporal_size * h * w`` tokens (CogVideoX; frame slowest, column
    fastest), as diffusers 0.42: columns ``[t (embed_dim//4) | row (embed_dim//8*3) |
    column (embed_dim//8*3)]``, each interleaved at its own width with ``theta``. Positions:
    ``grid_type="linspace"``: ``linspace(start, stop * (n-1)/n, n)`` from ``crops_coords``
    and ``0 .. temporal_size - 1``; ``"slice"``: ``0 .. n-1`` (``max_size = (max_h, max_w)``
    bounds ``grid_size``). ``(cos, sin)``, float32 ``(temporal_size * h * w, width)``."""
    torch = import_torch("get_3d_rotary_pos_embed")
    if use_real is not True:
        raise ValueError(
            " `use_real = False` is not currently supported for get_3d_rotary_pos_embed"
        )
    embed_dim = check.integer("embed_dim", embed_dim, 0)
    height, width = _size("grid_size", grid_size)
    temporal_size = check.integer("temporal_size", temporal_size, 0)
    if grid_type == "linspace":
        (h0, w0), (h1, w1) = _pair_of_pairs("crops_coords", crops_coords)
        grid_h = _linspace("crops_coords", h0, h1, height)
        grid_w = _linspace("crops_coords", w0, w1, width)
    elif grid_type == "slice":
        if max_size is None:
            raise ValueError("grid_type='slice' needs max_size=(max_h, max_w)")
        max_h, max_w = _size("max_size", max_size)
        if height > max_h or width > max_w:
            raise ValueError(f"grid_size {(height, width)} must fit in max_size {(max_h, max_w)}")
        grid_h, grid_w = np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64)
    else:
        raise ValueError(f"grid_type must be 'linspace' or 'slice', got {grid_type!r:.60}")
    dims = [embed_dim // 4, embed_dim // 8 * 3, embed_dim // 8 * 3]
    for name, d in zip(("embed_dim // 4", "embed_dim // 8 * 3"), dims):
        if d % 2:
            raise ValueError(f"embed_dim={embed_dim}: {name} = {d} must be even (pairs of columns)")
    t, i, j = np.meshgrid(np.arange(temporal_size, dtype=np.float64), grid_h, grid_w, indexing="ij")
    positions = np.stack([t.reshape(-1), i.reshape(-1), j.reshape(-1)])
    cos, sin = rope_blocks(
        positions, dims, base=_positive("theta", theta), layout="interleaved", dtype=np.float32
    )
    return tuple(_tensor(torch, table, device) for table in (cos, sin))


def _rotary_output(torch, cos: np.ndarray, sin: np.ndarray, real: bool, device):
    """What diffusers' rotary functions return: ``(cos, sin)`` tensors for ``use_real``, else
    ``freqs_cis``, one complex tensor; on ``device``."""
    if real:
        return tuple(_tensor(torch, t, device) for t in (cos, sin))
    return _tensor(torch, _complex(cos, sin), device)


def _complex(cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    out = np.empty(cos.shape, dtype=np.complex64 if cos.dtype == np.float32 else np.complex128)
    out.real, out.imag = cos, sin
    return out


def _tensor(torch, table, device):
    tensor = torch.from_numpy(table)
    return tensor if device is None else tensor.to(device)


def _linspace(name: str, start, stop, n: int) -> np.ndarray:
    """diffusers' grid ``linspace(start, stop * (n - 1) / n, n)``, in float64."""
    start, stop = check.real(f"{name} start", start), check.real(f"{name} stop", stop)
    end = stop * (n - 1) / n if n else stop
    return _positions(name, np.linspace(start, end, n))


def _pair_of_pairs(name: str, value):
    try:
        (a, b), (c, d) = value
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be ((top, left), (bottom, right)), got {value!r:.60}"
        ) from None
    return (a, b), (c, d)


def _positive(name: str, value) -> float:
    result = check.real(name, value)
    if not (np.isfinite(result) and result > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r:.60}")
    return result


def _dtype_name(value) -> str:
    """The dtype name of an array or tensor of positions (``"float64"``, ``"int64"``, ...)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return np.asarray(value).dtype.name
    return str(dtype).replace("torch.", "")


def _float_dtype(name: str, value, default):
    """``torch.float32`` / ``torch.float64`` (or NumPy's, or ``FLOAT32``) as a name."""
    if value is None:
        return default
    if value is FLOAT32:
        return "float32"
    text = str(value).replace("torch.", "").replace("<class 'numpy.", "").rstrip("'>")
    if text in ("float32", "float64"):
        return text
    raise TypeError(f"{name} must be torch.float32 or torch.float64, got {value!r:.60}")


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
