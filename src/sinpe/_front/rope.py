"""The public RoPE functions: rotary cos/sin tables for a model's rope scaling, in each engine's
layout. Validation here, scaling rules in ``rope_scaling``, the rows by the one filler
(``plan``): a RoPE layout is a two-plane ``Layout`` whose values carry the attention factor."""

from __future__ import annotations

import math

import numpy as np

from ..rope_scaling import RopeScaling, inverse_frequencies, parse
from . import cache
from . import checks as check
from .backends import get as get_backend
from .checks import F64
from .plan import Layout, Place, Segment, fill_at, fill_run, make_filler
from .tables import MAX_FREQUENCY

__all__ = [
    "rope",
    "rope_at",
    "rope_cache",
    "rope_frequencies",
    "LAYOUTS",
    "CACHE_FORMATS",
    "rope_layout",
]

LAYOUTS = ("half", "interleaved", "compact")
CACHE_FORMATS = ("vllm", "complex", "pairs")
_DEFAULT_BASE = 10000.0
# The widest rotary dimension taken. Real models rotate 32 to 512 columns; a frequency rule
# costs up to a few microseconds per frequency (llama3's exact band test), so 2**16 keeps
# any scaling's frequencies well under a second and a few MiB.
MAX_HEAD_DIM = 2**16


def _arguments(head_dim, base, scaling, max_position_embeddings=None):
    """Checked ``head_dim``, the base (``base``, else the mapping's ``rope_theta``, else
    10000) and the parsed scaling."""
    head_dim = check.integer("head_dim", head_dim, 2)
    if head_dim > MAX_HEAD_DIM:
        shown = head_dim if head_dim < 10**30 else f"a {len(str(head_dim))}-digit number"
        raise ValueError(
            f"head_dim={shown} is too large: the rotary dimension is at most 2**16 = "
            f"{MAX_HEAD_DIM} (real models rotate 32 to 512 columns)"
        )
    if head_dim % 2:
        raise ValueError(
            f"head_dim must be even (the rotary dimension: pairs of columns), got {head_dim}"
        )
    spec = parse(scaling, max_position_embeddings, head_dim)
    partial = spec.get("partial_rotary_factor")
    if partial is not None and spec.rope_type != "proportional":
        width = int(head_dim * partial)
        raise ValueError(
            f"scaling carries partial_rotary_factor={partial!r}, but head_dim here is the rotary "
            f"width: for a model whose head_dim is {head_dim}, pass head_dim="
            f"{width - width % 2} (int({head_dim} * {partial!r})) and leave the factor out of the "
            "mapping, or read the model's config with sinpe.rope_config(), which applies it"
        )
    sections = spec.get("mrope_section")
    if sections is not None and sum(sections) != head_dim // 2:
        raise ValueError(
            f"scaling['mrope_section'] {list(sections)} must sum to head_dim // 2 = "
            f"{head_dim // 2} (one section of frequencies per position axis), got {sum(sections)}"
        )
    if base is None:
        base = spec.theta if spec.theta is not None else _DEFAULT_BASE
    else:
        base = check.base(base)
        if spec.theta is not None and spec.theta != base:
            raise ValueError(
                f"base={base!r} disagrees with the scaling mapping's rope_theta={spec.theta!r}: "
                "pass one of them, or the same value"
            )
    return head_dim, check.base(base), spec


def _choice(name: str, value, allowed: tuple) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _length_key(spec: RopeScaling, length):
    """What of the current length changes the frequencies: dynamic's effective length,
    longrope's long/short choice, else nothing (so one cache entry serves every length)."""
    if spec.rope_type == "dynamic":
        limit = spec.get("max_position_embeddings")
        return limit if length is None else max(length, limit)
    if spec.rope_type == "longrope":
        original = spec.get("original_max_position_embeddings")
        return original + 1 if length and length > original else None
    return None


# --------------------------------------------------------------------------- layouts


def _format(name: str, h: int):
    """A table format for ``h`` frequencies: row width, planes, and for cos and for sin the
    plane, the column of frequency 0, the columns from one frequency to the next, and the
    offset of a second copy (0: none)."""
    if name == "half":  # [f0 .. f(h-1), f0 .. f(h-1)] in a cos table and a sin table
        return 2 * h, 2, (0, 0, 1, h), (1, 0, 1, h)
    if name == "interleaved":  # [f0, f0, f1, f1, ...]
        return 2 * h, 2, (0, 0, 2, 1), (1, 0, 2, 1)
    if name == "compact":  # [f0 .. f(h-1)]
        return h, 2, (0, 0, 1, 0), (1, 0, 1, 0)
    if name == "vllm":  # one table, [cos f0 .. f(h-1) | sin f0 .. f(h-1)]
        return 2 * h, 1, (0, 0, 1, 0), (0, h, 1, 0)
    # "complex", "pairs": one table, (cos, sin) of each frequency side by side
    return 2 * h, 1, (0, 0, 2, 0), (0, 1, 2, 0)


def _runs(axes: np.ndarray):
    """The frequencies of each position axis as arithmetic runs ``(axis, first, step,
    count)`` (M-RoPE's interleaved sections are runs of step 3)."""
    runs = []
    for axis in np.unique(axes).tolist():
        index = np.flatnonzero(axes == axis).tolist()
        i = 0
        while i < len(index):
            step = index[i + 1] - index[i] if i + 1 < len(index) else 1
            j = i + 1
            while j < len(index) and index[j] - index[j - 1] == step:
                j += 1
            runs.append((axis, index[i], step, j - i))
            i = j
    return runs


def rope_layout(name: str, h: int, axes: np.ndarray | None = None):
    """The ``Layout`` of table format ``name`` for ``h`` frequencies, frequency i reading
    position axis ``axes[i]`` (``None``: all axis 0), and the order in which the filler takes
    the frequencies (``None``: as they are): each axis's runs of frequencies become one
    segment each, placed at their own columns."""
    width, planes, cos, sin = _format(name, h)
    runs = [(0, 0, 1, h)] if axes is None else _runs(axes)
    segments, order, first = [], [], 0
    for axis, i0, step, count in runs:
        if not count:
            continue
        places = [
            Place(plane, c0 + k * i0, k * step, dup, count) for plane, c0, k, dup in (cos, sin)
        ]
        segments.append(Segment(first, count, axis, *places))
        order += range(i0, i0 + step * count, step)
        first += count
    layout = Layout(width, planes, tuple(segments))
    return layout, (None if order == list(range(h)) else np.array(order, dtype=np.intp))


def _axes(spec: RopeScaling, h: int):
    """How many position axes the scaling reads, and which one each frequency reads."""
    sections = spec.get("mrope_section")
    if sections is not None:
        if spec.get("mrope_interleaved"):  # Qwen3-VL: T, H, W, T, H, W, ... then the rest T
            axes = np.zeros(h, dtype=np.intp)
            for axis in (1, 2):
                axes[axis : 3 * sections[axis] : 3] = axis
            return 3, axes
        return 3, np.repeat(np.arange(3), sections)  # Qwen2-VL: contiguous T | H | W
    if spec.rope_type == "axial":  # Pixtral: [even powers: height | odd powers: width]
        return 2, np.repeat([0, 1], [(h + 1) // 2, h // 2])
    return 1, None


def _make_frequencies(spec, head_dim, base, length):
    inv_freq, attention = inverse_frequencies(spec, head_dim, base, length)
    largest = float(np.abs(inv_freq).max())
    if not largest <= MAX_FREQUENCY:
        raise ValueError(
            f"base={base!r} with scaling {spec.rope_type!r} gives inverse frequencies up to "
            f"{largest:.3g}; every inverse frequency must be finite and below 2**900 so that "
            "position * frequency stays exact"
        )
    if not (math.isfinite(attention) and attention > 0):
        raise ValueError(f"scaling gives attention factor {attention!r}; it must be finite and > 0")
    return check.frozen(inv_freq), attention


def _frequencies(spec: RopeScaling, head_dim: int, base: float, length):
    """``(inv_freq, attention_factor)``, cached."""
    key = ("rope-frequencies", spec, head_dim, base, _length_key(spec, length))
    return cache.lookup(key, _make_frequencies, (spec, head_dim, base, length))


def _filler(backend, spec: RopeScaling, head_dim: int, base: float, length, name: str):
    """The cached ``Filler`` of a rope scaling in table format ``name``."""
    key = ("rope", backend.NAME, spec, head_dim, base, _length_key(spec, length), name)
    return cache.lookup(key, _make_filler, (backend, spec, head_dim, base, length, name, key))


def _make_filler(backend, spec, head_dim, base, length, name, key):
    inv_freq, attention = _frequencies(spec, head_dim, base, length)
    h = inv_freq.shape[0]
    layout, order = rope_layout(name, h, _axes(spec, h)[1])
    w = inv_freq if order is None else inv_freq[order]
    return make_filler(backend, w, attention, layout, key)


_LARGEST = {
    "float64": 1.7976931348623157e308,
    "float32": 3.4028234663852886e38,
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}


def check_factor(factor: float, dtype) -> None:
    """Every value is at most ``factor``: refuse a factor the output dtype cannot hold."""
    largest = _LARGEST.get(np.dtype(dtype).name)
    if largest is not None and factor > largest:
        raise ValueError(
            f"the attention factor {factor:.6g} is larger than dtype {np.dtype(dtype).name} "
            f"holds ({largest:.6g}): its tables would be inf; pass a wider dtype"
        )


def _reserve(n: int, head_dim: int, name: str, dtype) -> None:
    """Refuse, before the frequencies are made, tables the process could never hold."""
    width, planes = _format(name, head_dim // 2)[:2]
    what = f"{'two tables' if planes == 2 else 'a table'} of shape {(n, width)} {dtype.name}"
    check.reserve(planes * n * width * dtype.itemsize + check.SCRATCH_BYTES, what)


def _tables(filler, n: int, dtype) -> tuple[np.ndarray, ...]:
    check_factor(filler.factor, dtype)
    names = ("positions", "head_dim")
    shape = (n, filler.layout.width)
    return tuple(check.allocate(shape, dtype, names) for _ in range(filler.layout.planes))


def _run(
    seq_len,
    offset,
    head_dim,
    base,
    scaling,
    max_position_embeddings,
    name,
    dtype,
    threads,
    backend,
    what,
):
    """The checked arguments of a table of consecutive positions, and its filled planes."""
    seq_len = check.integer("seq_len", seq_len, 0)
    head_dim, base, spec = _arguments(head_dim, base, scaling, max_position_embeddings)
    offset = check.integer("offset", offset, 0)
    check.last_position(offset, seq_len)
    if spec.rope_type == "axial":
        raise ValueError(
            f"rope_type 'axial' reads (height, width) positions: {what} makes tables of "
            "consecutive positions; use sinpe.rope_at(positions of shape (..., 2))"
        )
    backend = get_backend(backend)
    if threads is not None:
        threads = check.integer("threads", threads, 1)
    _reserve(seq_len, head_dim, name, dtype)
    filler = _filler(backend, spec, head_dim, base, offset + seq_len, name)
    planes = _tables(filler, seq_len, dtype)
    fill_run(filler, planes + (None,) * (2 - len(planes)), offset, seq_len, threads)
    return planes


def rope(
    seq_len: int,
    head_dim: int,
    *,
    base: float | None = None,
    scaling=None,
    offset: int = 0,
    layout: str = "half",
    dtype=np.float64,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rotary position embedding tables ``cos, sin`` for positions ``offset .. offset +
    seq_len - 1``, exact to 1e-15 (times the attention factor).

    Parameters
    ----------
    seq_len : int
        Number of rows (positions), ``>= 0``.
    head_dim : int
        The rotary dimension, even and ``>= 2`` (for a model with ``partial_rotary_factor``,
        ``int(head_dim * partial_rotary_factor)``; :func:`sinpe.rope_config` reads it from
        the model's config).
    base : float, optional
        The model's ``rope_theta``. Default: the mapping's ``rope_theta`` if it has one, else
        10000. A ``base`` that disagrees with the mapping's ``rope_theta`` is an error.
    scaling : mapping, optional
        ``None`` (plain RoPE) or a model config's ``rope_scaling`` / ``rope_parameters``:
        ``rope_type`` (or the legacy ``type``) one of ``default``, ``linear``, ``dynamic``,
        ``yarn``, ``longrope``, ``llama3``, ``proportional``, ``axial``, with that type's
        keys, as in transformers' ``modeling_rope_utils.py``; ``mrope_section`` (and
        ``mrope_interleaved``) for M-RoPE. A mapping with ``partial_rotary_factor`` is refused
        (``head_dim`` is already the rotary width), except for ``proportional``.
    offset : int, default 0
        Position of the first row; every position must be below ``2**53``.
    layout : {"half", "interleaved", "compact"}, default "half"
        ``"half"``: ``(n, head_dim)``, columns ``[f0..f(h-1), f0..f(h-1)]`` (transformers'
        ``rotate_half``, GPT-NeoX); ``"interleaved"``: ``(n, head_dim)``, columns
        ``[f0, f0, f1, f1, ...]`` (GPT-J, Meta's ``freqs_cis``); ``"compact"``: ``(n,
        head_dim/2)`` (flash-attn). :func:`rope_cache` writes engines' single-array caches.
    dtype : float64, float32, float16 or bfloat16, default float64
        Narrower values are rounded once from float64 (bfloat16: ``ml_dtypes``).
    threads : int, optional
        As for :func:`sinpe.sinusoidal_positional_encoding`.
    backend : {"auto", "cython", "numpy"}, default "auto"
    max_position_embeddings : int, optional
        The model config's ``max_position_embeddings``, which transformers reads beside the
        mapping (``dynamic``, and ``yarn``/``longrope`` without ``factor``): pass it with
        ``config.rope_parameters``. A mapping that says otherwise is an error.

    Returns
    -------
    cos, sin : numpy.ndarray
        Each ``(seq_len, width)``, C-contiguous: ``attention_factor * cos(p * inv_freq[i])``
        (sin likewise) in the layout's columns; :func:`rope_frequencies` gives both factors.
        ``rope(n, d, offset=k)`` equals ``rope_at(arange(k, k + n), d)`` bit for bit. With
        ``mrope_section``, the table of text positions (every axis at ``p``).

    Examples
    --------
    >>> import sinpe
    >>> cos, sin = sinpe.rope(3, 4)
    >>> cos
    array([[1.        , 1.        , 1.        , 1.        ],
           [0.54030231, 0.99995   , 0.54030231, 0.99995   ],
           [-0.41614684, 0.99980001, -0.41614684, 0.99980001]])
    """
    name = _choice("layout", layout, LAYOUTS)
    dtype = check.dtype(dtype) or F64
    cos, sin = _run(
        seq_len,
        offset,
        head_dim,
        base,
        scaling,
        max_position_embeddings,
        name,
        dtype,
        threads,
        backend,
        "sinpe.rope",
    )
    return cos, sin


def rope_cache(
    seq_len: int,
    head_dim: int,
    *,
    format: str = "vllm",
    base: float | None = None,
    scaling=None,
    offset: int = 0,
    dtype=None,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
) -> np.ndarray:
    """An engine's cos/sin cache for positions ``offset .. offset + seq_len - 1``, as one
    array, each value exact as in :func:`rope` (the same bits).

    Parameters
    ----------
    seq_len, head_dim, base, scaling, offset, threads, backend, max_position_embeddings
        As for :func:`rope` (``head_dim`` is the rotary dimension ``rot``).
    format : {"vllm", "complex", "pairs"}, default "vllm"
        ``"vllm"``: ``(n, rot)``, ``[cos | sin]`` (vLLM's ``cos_sin_cache``);
        ``"complex"``: ``(n, rot/2)`` complex, ``cos + i sin`` (Meta's Llama ``freqs_cis``,
        Llama 4, Wan); ``"pairs"``: ``(n, rot/2, 2)``, ``[..., 0]`` cos and ``[..., 1]`` sin
        (torchtune's cache, TensorRT-LLM's float2).
    dtype : optional
        float64 (default), float32, float16 or bfloat16 for ``"vllm"`` and ``"pairs"``;
        complex128 (default) or complex64 for ``"complex"``.

    Returns
    -------
    numpy.ndarray
        C-contiguous; the attention factor is in every value (as vLLM's yarn caches).

    Examples
    --------
    >>> import sinpe
    >>> sinpe.rope_cache(2, 4).round(4)
    array([[1.    , 1.    , 0.    , 0.    ],
           [0.5403, 0.9999, 0.8415, 0.01  ]])
    >>> sinpe.rope_cache(2, 4, format="complex").shape
    (2, 2)
    """
    name = _choice("format", format, CACHE_FORMATS)
    if name == "complex":
        complex_dtype = np.dtype(np.complex128) if dtype is None else _complex_dtype(dtype)
        dtype = np.dtype(np.float64 if complex_dtype.itemsize == 16 else np.float32)
    else:
        dtype = check.dtype(dtype) or F64
    (table,) = _run(
        seq_len,
        offset,
        head_dim,
        base,
        scaling,
        max_position_embeddings,
        name,
        dtype,
        threads,
        backend,
        "sinpe.rope_cache",
    )
    if name == "complex":
        return table.view(complex_dtype)
    if name == "pairs":
        return table.reshape(table.shape[0], -1, 2)
    return table


def _complex_dtype(value) -> np.dtype:
    try:
        result = np.dtype(value)
    except Exception:
        result = None
    if result not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        raise TypeError(
            "dtype for format 'complex' must be complex64 or complex128 (or None), "
            f"got {value!r:.60}"
        )
    return result


def _axis_positions(positions: np.ndarray, spec: RopeScaling, h: int):
    """``(n_axes, n)`` positions for the filler, and the shape of the rows."""
    n_axes = _axes(spec, h)[0]
    if n_axes == 1:
        return positions.reshape(1, -1), positions.shape
    if spec.rope_type == "axial":
        if positions.ndim < 1 or positions.shape[-1] != 2:
            raise ValueError(
                "rope_type 'axial' takes positions of shape (..., 2): the (height, width) of "
                f"each patch, as Pixtral's position_ids; got shape {positions.shape}"
            )
        return np.ascontiguousarray(np.moveaxis(positions, -1, 0).reshape(2, -1)), positions.shape[
            :-1
        ]
    if positions.ndim < 1 or positions.shape[0] != 3:
        raise ValueError(
            "a scaling with mrope_section takes positions of shape (3, ...): temporal, height "
            "and width, as Qwen2-VL's position_ids (text only: the same positions on the three "
            f"axes, numpy.broadcast_to(p, (3,) + p.shape)); got shape {positions.shape}"
        )
    return np.ascontiguousarray(positions.reshape(3, -1)), positions.shape[1:]


def rope_at(
    positions,
    head_dim: int,
    *,
    base: float | None = None,
    scaling=None,
    layout: str = "half",
    dtype=np.float64,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """RoPE ``cos, sin`` at arbitrary positions (a transformers ``position_ids`` array, say).

    Parameters
    ----------
    positions : array_like
        A number or an array of any shape, integers or floats, finite, ``|p| < 2**53``.
        With ``mrope_section`` in ``scaling``: shape ``(3, *shape)``, the temporal, height and
        width positions (Qwen2-VL's ``position_ids``); with ``rope_type`` ``"axial"``: shape
        ``(*shape, 2)``, each patch's (height, width) (Pixtral's).
    head_dim, base, scaling, layout, dtype, threads, backend, max_position_embeddings
        As for :func:`rope`. The current length of ``dynamic`` and ``longrope`` is
        ``max(positions) + 1``.

    Returns
    -------
    cos, sin : numpy.ndarray
        Each ``shape + (width,)``; the same bits as :func:`rope` at the same integer
        positions. M-RoPE: frequency i at the position of its section's axis, as transformers'
        ``Qwen2VLRotaryEmbedding`` (contiguous sections) or, with ``mrope_interleaved``,
        ``Qwen3VLTextRotaryEmbedding`` recomposes them; axial: as ``PixtralVisionRotaryEmbedding``.

    Examples
    --------
    >>> import sinpe
    >>> cos, sin = sinpe.rope_at([[0, 5], [2, 3]], 8, layout="compact")
    >>> cos.shape
    (2, 2, 4)
    """
    positions = check.positions(positions)
    head_dim, base, spec = _arguments(head_dim, base, scaling, max_position_embeddings)
    name = _choice("layout", layout, LAYOUTS)
    dtype = check.dtype(dtype) or F64
    backend = get_backend(backend)
    if threads is not None:
        threads = check.integer("threads", threads, 1)
    flat, shape = _axis_positions(positions, spec, head_dim // 2)
    _reserve(flat.shape[1], head_dim, name, dtype)
    length = float(flat.max()) + 1.0 if flat.size else None
    filler = _filler(backend, spec, head_dim, base, length, name)
    cos, sin = _tables(filler, flat.shape[1], dtype)
    fill_at(filler, (cos, sin), flat, threads)
    shape = shape + (cos.shape[1],)
    return cos.reshape(shape), sin.reshape(shape)


def rope_frequencies(
    head_dim: int,
    *,
    base: float | None = None,
    scaling=None,
    seq_len: int | None = None,
    max_position_embeddings: int | None = None,
) -> tuple[np.ndarray, float]:
    """The inverse frequencies and attention factor of a rope scaling.

    Parameters
    ----------
    head_dim, base, scaling, max_position_embeddings
        As for :func:`rope`.
    seq_len : int, optional
        The current length, for ``dynamic`` and ``longrope``; ``None``: within the trained
        length (``dynamic`` keeps ``base``, ``longrope`` takes ``short_factor``).

    Returns
    -------
    inv_freq : numpy.ndarray
        ``head_dim // 2`` float64 values in transformers' order (``axial``: the even powers,
        then the odd ones), each within 4 ulp of the real-number value of transformers'
        formula for the given parameters; read-only.
    attention_factor : float
        What every cos/sin is multiplied by (transformers' ``attention_scaling``).

    Examples
    --------
    >>> import sinpe
    >>> inv_freq, factor = sinpe.rope_frequencies(8, base=10000.0)
    >>> inv_freq, factor
    (array([1.   , 0.1  , 0.01 , 0.001]), 1.0)
    """
    head_dim, base, spec = _arguments(head_dim, base, scaling, max_position_embeddings)
    if seq_len is not None:
        seq_len = check.integer("seq_len", seq_len, 0)
    return _frequencies(spec, head_dim, base, seq_len)


# --------------------------------------------------------------------------- axis blocks


def _make_block_filler(backend, dims, base, linear_factor, name, key):
    from ..rope_scaling import _powers

    w = np.concatenate([_powers(d, base) for d in dims]) / linear_factor
    axes = np.repeat(np.arange(len(dims)), [d // 2 for d in dims])
    layout, order = rope_layout(name, w.shape[0], axes)
    return make_filler(backend, w if order is None else w[order], 1.0, layout, key)


def rope_blocks(
    positions,
    dims,
    *,
    base=10000.0,
    linear_factor=1.0,
    layout="interleaved",
    dtype=np.float64,
    backend="auto",
):
    """RoPE of several position axes side by side, each block its own width (diffusers'
    2-D and 3-D rotary embeddings, Flux's axes): ``positions`` ``(n_axes, n)`` float64
    (checked), block ``a`` rotates ``positions[a]`` by ``base**(-2i/dims[a]) /
    linear_factor``, in the layout's columns. ``(cos, sin)``, each ``(n, width)``."""
    backend = get_backend(backend)
    name = _choice("layout", layout, LAYOUTS)
    if sum(dims) > MAX_HEAD_DIM:
        raise ValueError(
            f"the rotary widths {list(dims)} sum to {sum(dims)}: at most 2**16 = {MAX_HEAD_DIM} "
            "columns in all (real models rotate a few hundred)"
        )
    key = ("rope-blocks", backend.NAME, tuple(dims), float(base), float(linear_factor), name)
    filler = cache.lookup(key, _make_block_filler, (backend, dims, base, linear_factor, name, key))
    cos, sin = _tables(filler, positions.shape[1], dtype)
    fill_at(filler, (cos, sin), positions, None)
    return cos, sin
