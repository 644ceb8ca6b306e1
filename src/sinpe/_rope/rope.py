"""The public RoPE functions: rotary cos/sin tables for a model's rope scaling (or any given
frequencies), in each engine's layout. The arguments become one ``Rotary`` (``rotary.py``:
validation, frequencies, layouts); the rows come from the one filler (``plan``)."""

from __future__ import annotations

import numpy as np

from .._tables import cache
from .._tables import checks as check
from .._tables.backends import get as get_backend
from .._tables.checks import F64
from .._tables.plan import fill_at, make_filler
from .._tables.types import ArrayLike, DTypeLike, Positions, Scaling
from . import rotary as rot
from .rotary import MAX_HEAD_DIM, check_factor, rope_layout, table_at, table_run

__all__ = [
    "rope",
    "rope_at",
    "rope_cache",
    "rope_frequencies",
    "rope_blocks",
    "LAYOUTS",
    "CACHE_FORMATS",
    "MAX_HEAD_DIM",
    "check_factor",
    "rope_layout",
]

LAYOUTS = rot.format_names("rope")
CACHE_FORMATS = rot.format_names("cache")


def cache_table(table: np.ndarray, name: str, complex_dtype=None) -> np.ndarray:
    """An engine cache's one plane in its format's shape and dtype."""
    if name == "complex":
        return table.view(complex_dtype)
    if name == "pairs":
        return table.reshape(table.shape[0], -1, 2)
    return table


def cache_dtypes(name: str, dtype):
    """``(plane dtype, complex dtype or None)`` of an engine cache format."""
    if name == "complex":
        complex_dtype = np.dtype(np.complex128) if dtype is None else _complex_dtype(dtype)
        return np.dtype(np.float64 if complex_dtype.itemsize == 16 else np.float32), complex_dtype
    return check.dtype(dtype) or F64, None


# --------------------------------------------------------------------------- public


def rope(
    seq_len: int,
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Scaling = None,
    offset: int = 0,
    layout: str = "half",
    dtype: DTypeLike = np.float64,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
    inv_freq: ArrayLike | None = None,
    attention_factor: float | None = None,
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
        the model's config). An odd ``d`` is read as transformers reads it for the types
        whose rule takes the powers one by one (default, linear, dynamic, llama3): ``(d +
        1) // 2`` frequencies ``base**(-2i/d)``, tables ``d + 1`` wide.
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
    inv_freq : array_like, optional
        Any RoPE's frequencies, ``head_dim // 2`` finite values ``>= 0`` taken as exact
        float64, in place of ``base`` and ``scaling`` (passing either with it is refused,
        except a ``scaling`` of only ``mrope_section`` and ``mrope_interleaved``): LTX-Video's
        ``theta**linspace * pi/2``, timm's ``pixel`` bands (docs/rope.md). Column ``i`` holds
        ``attention_factor * cos(p * inv_freq[i])`` rounded once.
    attention_factor : float, optional
        With ``inv_freq``: what every value is multiplied by (default 1).

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
    array([[ 1.        ,  1.        ,  1.        ,  1.        ],
           [ 0.54030231,  0.99995   ,  0.54030231,  0.99995   ],
           [-0.41614684,  0.99980001, -0.41614684,  0.99980001]])
    """
    name = check.choice("layout", layout, LAYOUTS)
    dtype = check.dtype(dtype) or F64
    rotary = rot.resolve(
        head_dim, base, scaling, max_position_embeddings, inv_freq, attention_factor
    )
    cos, sin = table_run(rotary, seq_len, offset, name, dtype, threads, backend, "sinpe.rope")
    return cos, sin


def rope_cache(
    seq_len: int,
    head_dim: int,
    *,
    format: str = "vllm",
    base: float | None = None,
    scaling: Scaling = None,
    offset: int = 0,
    dtype: DTypeLike = None,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
    inv_freq: ArrayLike | None = None,
    attention_factor: float | None = None,
) -> np.ndarray:
    """An engine's cos/sin cache for positions ``offset .. offset + seq_len - 1``, as one
    array, each value exact as in :func:`rope` (the same bits).

    Parameters
    ----------
    seq_len, head_dim, base, scaling, offset, threads, backend, max_position_embeddings
    inv_freq, attention_factor
        As for :func:`rope` (``head_dim`` is the rotary dimension ``rot``).
    format : {"vllm", "complex", "pairs", "sincos"}, default "vllm"
        ``"vllm"``: ``(n, rot)``, ``[cos | sin]`` (vLLM's ``cos_sin_cache``);
        ``"sincos"``: ``(n, rot)``, ``[sin | cos]`` (GPT-J's and CodeGen's
        ``embed_positions``);
        ``"complex"``: ``(n, rot/2)`` complex, ``cos + i sin`` (Meta's Llama ``freqs_cis``,
        Llama 4, Wan); ``"pairs"``: ``(n, rot/2, 2)``, ``[..., 0]`` cos and ``[..., 1]`` sin
        (torchtune's cache, TensorRT-LLM's float2).
    dtype : optional
        float64 (default), float32, float16 or bfloat16 for the real formats;
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
           [0.5403, 1.    , 0.8415, 0.01  ]])
    >>> sinpe.rope_cache(2, 4, format="complex").shape
    (2, 2)
    """
    name = check.choice("format", format, CACHE_FORMATS)
    dtype, complex_dtype = cache_dtypes(name, dtype)
    rotary = rot.resolve(
        head_dim, base, scaling, max_position_embeddings, inv_freq, attention_factor
    )
    (table,) = table_run(rotary, seq_len, offset, name, dtype, threads, backend, "sinpe.rope_cache")
    return cache_table(table, name, complex_dtype)


def _complex_dtype(value) -> np.dtype:
    try:
        result = np.dtype(check.torch_dtype_name(value) or value)
    except Exception:
        result = None
    if result not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        raise TypeError(
            "dtype for format 'complex' must be complex64 or complex128 (or None), "
            f"got {value!r:.60}"
        )
    return result


def rope_at(
    positions: Positions,
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Scaling = None,
    layout: str = "half",
    dtype: DTypeLike = np.float64,
    threads: int | None = None,
    backend: str = "auto",
    max_position_embeddings: int | None = None,
    inv_freq: ArrayLike | None = None,
    attention_factor: float | None = None,
    seq_len: int | None = None,
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
    inv_freq, attention_factor
        As for :func:`rope`.
    seq_len : int, optional
        The current length for ``dynamic`` and ``longrope`` (transformers'
        ``dynamic_rope_update`` keeps one between calls); default ``max(positions) + 1``.

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
    rotary = rot.resolve(
        head_dim, base, scaling, max_position_embeddings, inv_freq, attention_factor
    )
    name = check.choice("layout", layout, LAYOUTS)
    dtype = check.dtype(dtype) or F64
    return table_at(rotary, positions, name, dtype, threads, backend, seq_len)


def rope_frequencies(
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Scaling = None,
    seq_len: int | None = None,
    max_position_embeddings: int | None = None,
    inv_freq: ArrayLike | None = None,
    attention_factor: float | None = None,
) -> tuple[np.ndarray, float]:
    """The inverse frequencies and attention factor of a rope scaling.

    Parameters
    ----------
    head_dim, base, scaling, max_position_embeddings, inv_freq, attention_factor
        As for :func:`rope` (with ``inv_freq``, a copy of those frequencies).
    seq_len : int, optional
        The current length, for ``dynamic`` and ``longrope``; ``None``: within the trained
        length (``dynamic`` keeps ``base``, ``longrope`` takes ``short_factor``).

    Returns
    -------
    inv_freq : numpy.ndarray
        ``head_dim // 2`` float64 values in transformers' order (``axial``: the even powers,
        then the odd ones), each within 4 ulp of the real-number value of transformers'
        formula for the given parameters; a new array each call.
    attention_factor : float
        What every cos/sin is multiplied by (transformers' ``attention_scaling``).

    Examples
    --------
    >>> import sinpe
    >>> inv_freq, factor = sinpe.rope_frequencies(8, base=10000.0)
    >>> inv_freq, factor
    (array([1.   , 0.1  , 0.01 , 0.001]), 1.0)
    """
    rotary = rot.resolve(
        head_dim, base, scaling, max_position_embeddings, inv_freq, attention_factor
    )
    if seq_len is not None:
        seq_len = check.integer("seq_len", seq_len, 0)
    inv_freq, attention_factor = rot.frequencies(rotary, seq_len)
    return inv_freq.copy(), attention_factor  # the cached vector stays read-only


# --------------------------------------------------------------------------- axis blocks


def _make_block_filler(backend, dims, base, linear_factor, given, name, key):
    if given is not None:
        w = np.frombuffer(given, dtype=np.float64)
    else:
        w = np.concatenate([rot.powers(d, base) for d in dims]) / linear_factor
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
    dtype: DTypeLike = np.float64,
    backend="auto",
    inv_freq: ArrayLike | None = None,
):
    """RoPE of several position axes side by side, each block its own width (diffusers'
    2-D and 3-D rotary embeddings, Flux's axes): ``positions`` ``(n_axes, n)`` float64
    (checked), block ``a`` rotates ``positions[a]`` by ``base**(-2i/dims[a]) /
    linear_factor`` (or, given ``inv_freq``, ``sum(dims) // 2`` frequencies: the blocks'
    own, in order), in the layout's columns. ``(cos, sin)``, each ``(n, width)``."""
    backend = get_backend(backend)
    name = check.choice("layout", layout, LAYOUTS)
    if sum(dims) > MAX_HEAD_DIM:
        raise ValueError(
            f"the rotary widths {list(dims)} sum to {sum(dims)}: at most 2**16 = {MAX_HEAD_DIM} "
            "columns in all (real models rotate a few hundred)"
        )
    given = None
    if inv_freq is not None:
        given = rot.resolve(sum(d // 2 for d in dims) * 2, inv_freq=inv_freq).given
    key: tuple = (
        "rope-blocks",
        backend.NAME,
        tuple(dims),
        float(base),
        float(linear_factor),
        given,
    )
    key += (name,)
    filler = cache.lookup(
        key, _make_block_filler, (backend, dims, base, linear_factor, given, name, key)
    )
    cos, sin = rot.tables(filler, positions.shape[1], dtype)
    fill_at(filler, (cos, sin), positions, None)
    return cos, sin
