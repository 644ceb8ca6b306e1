"""The public RoPE functions: rotary cos/sin tables for a model's rope scaling, in each engine's
layout. Validation here, scaling rules in ``rope_scaling``, rows in the backends' RoPE filler
(``_rope.h`` and its NumPy twin)."""

from __future__ import annotations

import math

import numpy as np

from . import _cache
from . import _checks as check
from ._angles import exact_cos_sin, rotation_tables
from ._backends import EVALUATORS, ROPE_FILLERS
from ._backends import resolve as _backend
from ._checks import F64, MAX_POSITION
from ._numpy import ROPE_BLOCK, ROPE_FINE, ROPE_MID
from ._threads import threads_for
from ._turns import FAST_W_LIMIT, prepare_frequency_table
from .rope_scaling import RopeScaling, inverse_frequencies, parse

__all__ = ["rope", "rope_at", "rope_frequencies", "LAYOUTS"]

LAYOUTS = ("half", "interleaved", "compact")
_DEFAULT_BASE = 10000.0
_EMPTY = np.empty(0)
# An exact sin/cos pair costs about as much as writing this many elements (see _api).
_PAIR_COST = 24
ROPE_SPAN = int(ROPE_BLOCK)  # anchors every 1024 positions: a power of two
ROPE_SPAN_BITS = ROPE_SPAN.bit_length() - 1


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


def _make_rope_plan(backend, spec, head_dim, base, length):
    inv_freq, attention = inverse_frequencies(spec, head_dim, base, length)
    largest = float(np.abs(inv_freq).max())
    if not largest < FAST_W_LIMIT:
        raise ValueError(
            f"base={base!r} with scaling {spec.rope_type!r} gives inverse frequencies up to "
            f"{largest:.3g}; RoPE tables need every inverse frequency finite and below 2**32"
        )
    if not (math.isfinite(attention) and attention > 0):
        raise ValueError(f"scaling gives attention factor {attention!r}; it must be finite and > 0")
    inv_freq.flags.writeable = False
    table = prepare_frequency_table(inv_freq)
    table.flags.writeable = False
    frequency = (table, np.empty(0, dtype=np.intp))  # no slow columns: all below 2**32
    _, mid, fine = rotation_tables(EVALUATORS[backend], frequency, ROPE_FINE, ROPE_MID, 1)
    return inv_freq, attention, frequency, mid, fine


def _plan(backend: str, spec: RopeScaling, head_dim: int, base: float, length):
    """``(inv_freq, attention_factor, frequency_table, mid, fine)``, cached."""
    key = (_make_rope_plan, backend, spec, head_dim, base, _length_key(spec, length))
    return _cache.lookup(key, _make_rope_plan, key[1:])


def _fill(backend, plan, positions, layout, dtype, threads, run=False):
    """Allocate and fill the two tables for the 1-D float64 ``positions`` (``run``: they are
    consecutive integers)."""
    inv_freq, attention, frequency, mid, fine = plan
    h = inv_freq.shape[0]
    n = positions.shape[0]
    width = h if layout == 2 else 2 * h
    names = ("positions", "head_dim")
    cos = check.allocate((n, width), dtype, names)
    sin = check.allocate((n, width), dtype, names)
    if n == 0:
        return cos, sin
    # Integer positions start from the anchor at floor(p / 1024) * 1024 (one exact row per
    # distinct anchor); the others are marked -1 and evaluated exactly.
    if run:  # anchors every 1024 from the first row's: integer arithmetic on the offsets
        integer_rows = n
        start = int(positions[0])
        first = start - start % ROPE_SPAN
        index = (np.arange(start - first, start - first + n, dtype=np.intp)) >> ROPE_SPAN_BITS
        anchor_positions = np.arange(int(index[-1]) + 1, dtype=np.float64) * ROPE_BLOCK + first
    else:
        blocks = np.floor(positions / ROPE_BLOCK) * ROPE_BLOCK  # exact
        integer = positions == np.floor(positions)
        integer_rows = int(np.count_nonzero(integer))
        anchor_positions, inverse = np.unique(blocks[integer], return_inverse=True)
        index = np.full(n, -1, dtype=np.intp)
        index[integer] = inverse.reshape(-1)
    work = anchor_positions.shape[0] * h * _PAIR_COST
    anchors = exact_cos_sin(
        EVALUATORS[backend], anchor_positions, frequency, threads=threads_for(None, work)
    )
    work = 2 * n * width + (n - integer_rows) * h * _PAIR_COST
    ROPE_FILLERS[backend](
        cos,
        sin,
        np.ascontiguousarray(positions),
        np.ascontiguousarray(index),
        anchors,
        mid,
        fine,
        frequency[0],
        layout,
        attention,
        threads_for(threads, work),
    )
    return cos, sin


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
    backend = _backend(backend)
    if threads is not None:
        threads = check.integer("threads", threads, 1)
    plan = _plan(backend, spec, head_dim, base, offset + seq_len)
    start = float(offset)
    positions = np.arange(start, start + seq_len) if seq_len else _EMPTY
    return _fill(backend, plan, positions, layout, dtype, threads, run=True)


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
    backend = _backend(backend)
    flat = positions.reshape(-1)
    length = float(flat.max()) + 1.0 if flat.size else None
    plan = _plan(backend, spec, head_dim, base, length)
    cos, sin = _fill(backend, plan, flat, layout, dtype, None)
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
    inv_freq, attention, *_ = _plan(_backend("auto"), spec, head_dim, base, seq_len)
    return inv_freq, attention
