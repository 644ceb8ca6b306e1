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
from .checks import F64, MAX_POSITION
from .plan import Layout, Place, Segment, fill_at, fill_run, make_filler
from .tables import MAX_FREQUENCY

__all__ = ["rope", "rope_at", "rope_frequencies", "LAYOUTS", "rope_layout"]

LAYOUTS = ("half", "interleaved", "compact")
_DEFAULT_BASE = 10000.0


def _arguments(head_dim, base, scaling) -> tuple[int, float, RopeScaling]:
    """Checked ``head_dim``, the base (``base``, else the mapping's ``rope_theta``, else
    10000) and the parsed scaling."""
    head_dim = check.integer("head_dim", head_dim, 2)
    if head_dim % 2:
        raise ValueError(
            f"head_dim must be even (the rotary dimension: pairs of columns), got {head_dim}"
        )
    spec = parse(scaling)
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


def _layout(layout) -> int:
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a str, one of {LAYOUTS}, got {type(layout).__name__}")
    try:
        return LAYOUTS.index(layout)
    except ValueError:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}") from None


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


def rope_layout(layout: int, h: int) -> Layout:
    """The two-plane layout (cos table, sin table) of ``LAYOUTS[layout]`` for ``h``
    frequencies: each value stored once per place of the layout."""
    if layout == 0:  # half: [f0 .. f(h-1), f0 .. f(h-1)]
        width, place = 2 * h, (0, 1, h)
    elif layout == 1:  # interleaved: [f0, f0, f1, f1, ...]
        width, place = 2 * h, (0, 2, 1)
    else:  # compact: [f0 .. f(h-1)]
        width, place = h, (0, 1, 0)
    segment = Segment(0, h, 0, Place(0, *place, h), Place(1, *place, h))
    return Layout(width, 2, (segment,) if h else ())


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
    inv_freq.flags.writeable = False
    return inv_freq, attention


def _frequencies(spec: RopeScaling, head_dim: int, base: float, length):
    """``(inv_freq, attention_factor)``, cached."""
    key = ("rope-frequencies", spec, head_dim, base, _length_key(spec, length))
    return cache.lookup(key, _make_frequencies, (spec, head_dim, base, length))


def _filler(backend, spec: RopeScaling, head_dim: int, base: float, length, layout: int):
    """The cached ``Filler`` of a rope scaling in a layout."""
    key = ("rope", backend.NAME, spec, head_dim, base, _length_key(spec, length), layout)
    return cache.lookup(key, _make_filler, (backend, spec, head_dim, base, length, layout, key))


def _make_filler(backend, spec, head_dim, base, length, layout, key):
    inv_freq, attention = _frequencies(spec, head_dim, base, length)
    return make_filler(backend, inv_freq, attention, rope_layout(layout, inv_freq.shape[0]), key)


def _tables(filler, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    names = ("positions", "head_dim")
    shape = (n, filler.layout.width)
    return check.allocate(shape, dtype, names), check.allocate(shape, dtype, names)


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
) -> tuple[np.ndarray, np.ndarray]:
    """Rotary position embedding tables ``cos, sin`` for positions ``offset .. offset +
    seq_len - 1``, exact to 1e-15 (times the attention factor).

    Parameters
    ----------
    seq_len : int
        Number of rows (positions), ``>= 0``.
    head_dim : int
        The rotary dimension, even and ``>= 2`` (a model with ``partial_rotary_factor`` passes
        ``int(head_dim * partial_rotary_factor)``).
    base : float, optional
        The model's ``rope_theta``. Default: the mapping's ``rope_theta`` if it has one, else
        10000. A ``base`` that disagrees with the mapping's ``rope_theta`` is an error.
    scaling : mapping, optional
        ``None`` (plain RoPE) or a model config's ``rope_scaling`` / ``rope_parameters``:
        ``rope_type`` (or the legacy ``type``) one of ``default``, ``linear``, ``dynamic``,
        ``yarn``, ``longrope``, ``llama3``, ``proportional``, with that type's keys, as in
        transformers' ``modeling_rope_utils.py``.
    offset : int, default 0
        Position of the first row; every position must be below ``2**53``.
    layout : {"half", "interleaved", "compact"}, default "half"
        ``"half"``: ``(n, head_dim)``, columns ``[f0..f(h-1), f0..f(h-1)]`` (transformers'
        ``rotate_half``, GPT-NeoX); ``"interleaved"``: ``(n, head_dim)``, columns
        ``[f0, f0, f1, f1, ...]`` (GPT-J, Meta's ``freqs_cis``); ``"compact"``: ``(n,
        head_dim/2)`` (flash-attn; vLLM's ``cos_sin_cache`` is ``concatenate([cos, sin], -1)``).
    dtype : float64, float32, float16 or bfloat16, default float64
        Narrower values are rounded once from float64 (bfloat16: ``ml_dtypes``).
    threads : int, optional
        As for :func:`sinpe.sinusoidal_positional_encoding`.
    backend : {"auto", "cython", "numpy"}, default "auto"

    Returns
    -------
    cos, sin : numpy.ndarray
        Each ``(seq_len, width)``, C-contiguous: ``attention_factor * cos(p * inv_freq[i])``
        (sin likewise) in the layout's columns; :func:`rope_frequencies` gives both factors.
        ``rope(n, d, offset=k)`` equals ``rope_at(arange(k, k + n), d)`` bit for bit.

    Examples
    --------
    >>> import sinpe
    >>> cos, sin = sinpe.rope(3, 4)
    >>> cos
    array([[1.        , 1.        , 1.        , 1.        ],
           [0.54030231, 0.99995   , 0.54030231, 0.99995   ],
           [-0.41614684, 0.99980001, -0.41614684, 0.99980001]])
    """
    seq_len = check.integer("seq_len", seq_len, 0)
    head_dim, base, spec = _arguments(head_dim, base, scaling)
    offset = check.integer("offset", offset, 0)
    if offset + max(seq_len, 1) > MAX_POSITION:
        raise ValueError(
            f"positions must be below 2**53: offset + seq_len - 1 = {offset + seq_len - 1}"
        )
    layout = _layout(layout)
    dtype = check.dtype(dtype) or F64
    backend = get_backend(backend)
    if threads is not None:
        threads = check.integer("threads", threads, 1)
    filler = _filler(backend, spec, head_dim, base, offset + seq_len, layout)
    cos, sin = _tables(filler, seq_len, dtype)
    fill_run(filler, (cos, sin), offset, seq_len, threads)
    return cos, sin


def rope_at(
    positions,
    head_dim: int,
    *,
    base: float | None = None,
    scaling=None,
    layout: str = "half",
    dtype=np.float64,
    backend: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """RoPE ``cos, sin`` at arbitrary positions (a transformers ``position_ids`` array, say).

    Parameters
    ----------
    positions : array_like
        A number or an array of any shape, integers or floats, finite, ``|p| < 2**53``.
    head_dim, base, scaling, layout, dtype, backend
        As for :func:`rope`. The current length of ``dynamic`` and ``longrope`` is
        ``max(positions) + 1``.

    Returns
    -------
    cos, sin : numpy.ndarray
        Each ``positions.shape + (width,)``; the same bits as :func:`rope` at the same
        integer positions.

    Examples
    --------
    >>> import sinpe
    >>> cos, sin = sinpe.rope_at([[0, 5], [2, 3]], 8, layout="compact")
    >>> cos.shape
    (2, 2, 4)
    """
    positions = check.positions(positions)
    head_dim, base, spec = _arguments(head_dim, base, scaling)
    layout = _layout(layout)
    dtype = check.dtype(dtype) or F64
    backend = get_backend(backend)
    flat = positions.reshape(1, -1)
    length = float(flat.max()) + 1.0 if flat.size else None
    filler = _filler(backend, spec, head_dim, base, length, layout)
    cos, sin = _tables(filler, flat.shape[1], dtype)
    fill_at(filler, (cos, sin), flat, None)
    shape = positions.shape + (cos.shape[1],)
    return cos.reshape(shape), sin.reshape(shape)


def rope_frequencies(
    head_dim: int, *, base: float | None = None, scaling=None, seq_len: int | None = None
) -> tuple[np.ndarray, float]:
    """The inverse frequencies and attention factor of a rope scaling.

    Parameters
    ----------
    head_dim, base, scaling
        As for :func:`rope`.
    seq_len : int, optional
        The current length, for ``dynamic`` and ``longrope``; ``None``: within the trained
        length (``dynamic`` keeps ``base``, ``longrope`` takes ``short_factor``).

    Returns
    -------
    inv_freq : numpy.ndarray
        ``head_dim // 2`` float64 values, each within 4 ulp of the real-number value of
        transformers' formula for the given parameters; read-only.
    attention_factor : float
        What every cos/sin is multiplied by (transformers' ``attention_scaling``).

    Examples
    --------
    >>> import sinpe
    >>> inv_freq, factor = sinpe.rope_frequencies(8, base=10000.0)
    >>> inv_freq, factor
    (array([1.   , 0.1  , 0.01 , 0.001]), 1.0)
    """
    head_dim, base, spec = _arguments(head_dim, base, scaling)
    if seq_len is not None:
        seq_len = check.integer("seq_len", seq_len, 0)
    return _frequencies(spec, head_dim, base, seq_len)
