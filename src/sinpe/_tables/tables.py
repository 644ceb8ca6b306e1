"""The public table functions: validate, resolve a convention into frequencies and a
layout, allocate (or check) the output, and hand both to the one filler (``plan``)."""

from __future__ import annotations

import numpy as np

from .._exactmath.constants import FREQUENCY_BLOCK, GRID_SPAN
from ..conventions import ColumnMap, Convention
from ..conventions import get as get_convention
from . import cache
from . import checks as check
from .backends import BACKEND, DEFAULT
from .backends import get as get_backend
from .checks import F64, MAX_POSITION
from .frequencies import frequency_block, frequency_vector
from .plan import Layout, Place, Segment, exact_values, fill_at, fill_run, make_filler, prepare
from .threads import PARALLEL_MIN_ELEMENTS
from .types import DTypeLike, Positions

__all__ = [
    "sinusoidal_positional_encoding",
    "frequencies",
    "encode",
    "shift_matrix",
    "clear_cache",
    "cache_info",
    "set_cache_limit",
    "BACKEND",
]

# Every frequency must be below this (position * frequency < 2**953): the range the exact
# evaluator's big-integer path is tested on (``_twin.turns.slow_turns``).
MAX_FREQUENCY = 2.0**900
_TABLE_SIZES = ("seq_len", "d_model")  # what sets each dimension of a table, for errors
_INFINITY = float("inf")
# The common call's (dtype, backend, convention) arguments, as passed (a str backend and
# convention), once every check of them has passed: -> (the new table's dtype, the backend
# object, the Convention). A later call passing equal arguments skips resolving them again.
_RESOLVED: dict = {}
_MAX_RESOLVED = 64


def frequency_key(
    convention: Convention, d_model: int, base: float, w: np.ndarray | None = None
) -> tuple:
    """The (cached) frequency vector's key, once its frequencies are known to be usable
    (from ``w``, the vector itself, when the caller has it: one call fewer)."""
    key = convention.frequency_key(d_model, base)
    count, rule = key[0], key[1:]
    if w is None:
        # |scale| * base**(-n i / d) is monotone in i: the largest is the first or the last
        ends = [frequency_block(i, i + 1, *rule)[0] for i in {0, count - 1} if count]
    else:
        ends = [w[i] for i in {0, count - 1} if count]
    largest = max((abs(float(v)) for v in ends), default=0.0)
    if not largest <= MAX_FREQUENCY:
        raise ValueError(
            f"base={base!r} gives frequencies up to {largest:.3g} for d_model={d_model} "
            f"(convention {convention.name}); every frequency must be below 2**900 so that "
            "position * frequency stays exact: use a larger base"
        )
    return key


def table_layout(columns: ColumnMap, width: int) -> Layout:
    """A convention's column map as a one-plane layout: frequency i's sine in column
    ``sin_col + i * step`` (i < n_sin), its cosine in ``cos_col + i * step`` (i < n_cos)."""
    h = columns.frequencies
    segment = Segment(
        0,
        h,
        0,
        Place(0, columns.cos_col, columns.step, 0, columns.n_cos),
        Place(0, columns.sin_col, columns.step, 0, columns.n_sin),
    )
    return Layout(width, 1, (segment,) if h else (), columns.pad_col)


def _table_filler(backend, convention: Convention, d_model: int, base: float):
    """The cached ``Filler`` of a convention's table at this width and base."""
    key = ("table", backend.NAME, convention._token, d_model, base)  # type: ignore[attr-defined]
    return cache.lookup(key, _make_table_filler, (backend, convention, d_model, base, key))


def _make_table_filler(backend, convention, d_model, base, key):
    count, *rule = convention.frequency_key(d_model, base)
    layout = table_layout(convention.column_map(d_model), d_model)
    if count > FREQUENCY_BLOCK:  # planned a block at a time: never the whole vector
        frequency_key(convention, d_model, base)
        return make_filler(
            backend, lambda f0, f1: frequency_block(f0, f1, *rule), 1.0, layout, key, count
        )
    w = frequency_vector(count, *rule)
    frequency_key(convention, d_model, base, w)
    return make_filler(backend, w, 1.0, layout, key)


def _remember(passed: tuple, resolved: tuple) -> None:
    """Keep what checked arguments resolved to, for ``_RESOLVED`` (at most ``_MAX_RESOLVED``)."""
    try:
        if passed not in _RESOLVED and len(_RESOLVED) >= _MAX_RESOLVED:
            _RESOLVED.clear()
        _RESOLVED[passed] = resolved
    except TypeError:  # an unhashable dtype argument
        pass


def clear_cache() -> None:
    """Free every array sinpe keeps between calls (frequencies, rotation tables), and the
    table of distinct conventions seen."""
    cache.clear()
    _RESOLVED.clear()
    from .. import conventions

    conventions.clear_tokens()


def cache_info() -> cache.CacheInfo:
    """What sinpe's cache holds: ``(nbytes, limit, entries, hits, misses)``."""
    return cache.cache_info()


def set_cache_limit(nbytes: int) -> int:
    """Bound the bytes sinpe keeps between calls (default 64 MiB); return the previous bound.

    Least recently used arrays go first; an array larger than the bound is computed and not
    kept, and ``0`` keeps nothing. Every result is the same whatever the bound: only repeated
    calls get slower.
    """
    return cache.set_limit(check.integer("nbytes", nbytes, 0))


# --------------------------------------------------------------------------- public


def sinusoidal_positional_encoding(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    dtype: DTypeLike = None,
    out: np.ndarray | None = None,
    backend: str = "auto",
    threads: int | None = None,
    convention: str | Convention = "vaswani",
) -> np.ndarray:
    """Sinusoidal positional encoding table, exact to 1e-15 at every position.

    Parameters
    ----------
    seq_len : int
        Number of rows (positions), ``>= 0``.
    d_model : int
        Number of columns, ``>= 1``.
    base : float, default 10000.0
        Frequency base, finite and ``> 0``: ``w_i = base**(-2i/d_model)``.
    offset : int, default 0
        Position of the first row; every position ``offset + r`` must be below ``2**53``.
    dtype : float64, float32, float16, bfloat16 or None, default None
        ``None``: the dtype of ``out`` when given, else float64. Narrower tables are computed
        in float64 and each value rounded once (bfloat16: ``ml_dtypes``, the ``[bfloat16]``
        extra).
    out : numpy.ndarray, optional
        Writable, C-contiguous array of shape ``(seq_len, d_model)`` of one of those dtypes (and
        ``dtype`` when given); it is filled and returned. A rejected ``out`` is left untouched.
    backend : {"auto", "cython", "numpy"}, default "auto"
        ``"auto"`` is ``sinpe.BACKEND``.
    threads : int, optional
        At most this many threads (the compiled kernel's pool), and never more than
        :func:`sinpe.thread_limit` allows. ``None``: that limit for tables big enough to
        gain, else 1. Results are identical for any thread count.
    convention : str or Convention, default "vaswani"
        Layout and frequency rule; see :mod:`sinpe.conventions`.

    Returns
    -------
    numpy.ndarray
        ``(seq_len, d_model)``, C-contiguous; row ``r`` is position ``offset + r``:
        column ``2i`` is ``sin(p w_i)``, column ``2i+1`` is ``cos(p w_i)`` (``"vaswani"``).

    Raises
    ------
    TypeError
        An argument of the wrong type (float, str, None or bool for an integer, bad dtype).
    ValueError
        A value out of range, an unknown backend or convention, an unusable ``out``.

    Examples
    --------
    >>> import sinpe
    >>> sinpe.sinusoidal_positional_encoding(2, 4)
    array([[0.        , 1.        , 0.        , 1.        ],
           [0.84147098, 0.54030231, 0.00999983, 0.99995   ]])
    """
    if (  # the common call: plain ints and float, no out, one thread, arguments seen before
        type(seq_len) is type(d_model) is type(offset) is int
        and type(base) is float
        and out is None
        and (threads is None or (type(threads) is int and threads == 1))
    ):
        try:
            resolved = _RESOLVED[dtype, backend, convention]
        except (KeyError, TypeError):  # not seen yet, or unhashable
            resolved = None
        if (  # every check of the general path, for rows within the first anchor's span
            resolved is not None
            and 0 <= offset < offset + seq_len <= GRID_SPAN
            and 0 < seq_len * d_model < PARALLEL_MIN_ELEMENTS  # one thread, no memory check
            and 0.0 < base < _INFINITY
        ):
            table_dtype, module, preset = resolved
            filler = _table_filler(module, preset, d_model, base)
            if filler.origin is not None:  # planned whole: rows offset .. from anchor 0
                table = np.empty((seq_len, d_model), table_dtype)
                module.fill(filler.plan, table, None, filler.origin, None, None, offset, 0.0, 1)
                return table
    return _general_table(seq_len, d_model, base, offset, dtype, out, backend, threads, convention)


def _general_table(seq_len, d_model, base, offset, dtype, out, backend, threads, convention):
    """``sinusoidal_positional_encoding`` of any arguments: each checked, in the documented
    order, then the table; what the arguments resolved to kept for the common call."""
    passed = (dtype, backend, convention)
    seq_len, d_model, offset = check.table_size(seq_len, d_model, offset)
    check.last_position(offset, seq_len)
    if type(base) is not float or base != 10000.0:  # check the type before comparing values
        base = check.base(base)
    dtype = check.dtype(dtype)
    backend = get_backend(backend)
    convention = get_convention(convention)
    if type(passed[1]) is str and type(passed[2]) is str:
        _remember(passed, (F64 if dtype is None else dtype, backend, convention))
    if threads is not None:
        threads = check.integer("threads", threads, 1)
    if out is None and seq_len == 0:  # answered at once, whatever d_model is
        return check.allocate((0, d_model), F64 if dtype is None else dtype, _TABLE_SIZES)
    table = check.output(out, (seq_len, d_model), dtype, _TABLE_SIZES)
    if seq_len == 0:
        return table
    fill_run(
        _table_filler(backend, convention, d_model, base), (table, None), offset, seq_len, threads
    )
    return table


def frequencies(
    d_model: int, *, base: float = 10000.0, convention: str | Convention = "vaswani"
) -> np.ndarray:
    """The frequencies a convention's table of width ``d_model`` uses, in column order.

    For ``"vaswani"``, ``w_i = base**(-2i/d_model)``, ``i < ceil(d_model/2)``. Each is within
    1 ulp of the exact real value. The vector is computed once and cached; each call returns a
    copy of it (writable: a write changes no later call).

    Parameters
    ----------
    d_model : int
        Width of the table, ``>= 1``.
    base : float, default 10000.0
        Finite and ``> 0`` (a convention with its own base, diffusers' ``max_period``,
        ignores it).
    convention : str or Convention, default "vaswani"

    Returns
    -------
    numpy.ndarray
        float64, one per frequency the table uses (``ceil(d_model/2)`` or ``d_model//2``),
        a new array each call.
    """
    d_model = check.integer("d_model", d_model, 1)
    base = check.base(base)
    check.reserve(8 * (d_model // 2 + 1), f"the frequencies of d_model={d_model}")
    key = frequency_key(get_convention(convention), d_model, base)
    try:  # a copy: the cached vector stays read-only, and torch.from_numpy takes a copy quietly
        return frequency_vector(*key).copy()
    except ValueError as exc:  # more frequencies than an array can index
        raise ValueError(f"d_model={d_model} is too large ({exc})") from None


# --------------------------------------------------------------------------- encodings


def encode(
    positions: Positions,
    d_model: int,
    *,
    base: float = 10000.0,
    convention: str | Convention = "vaswani",
    dtype: DTypeLike = None,
    out: np.ndarray | None = None,
    backend: str = "auto",
) -> np.ndarray:
    """Encodings of arbitrary positions (integers or fractions, any sign), one row each.

    Parameters
    ----------
    positions : array_like
        A number or an array of any shape, integers or floats, finite, ``|p| < 2**53``; float
        positions are taken as exact.
    d_model : int
        Width, ``>= 1``.
    base, convention, dtype, out, backend
        As for :func:`sinusoidal_positional_encoding`; ``out`` has shape
        ``positions.shape + (d_model,)``.

    Returns
    -------
    numpy.ndarray
        ``positions.shape + (d_model,)``; within 1e-15 (float64) of the exact values for the
        package's own frequencies.

    Examples
    --------
    >>> import sinpe
    >>> sinpe.encode(1, 4)
    array([0.84147098, 0.54030231, 0.00999983, 0.99995   ])
    >>> sinpe.encode([[0, 1], [2, 3]], 6).shape
    (2, 2, 6)
    """
    positions = check.positions(positions)
    d_model = check.integer("d_model", d_model, 1)
    base = check.base(base)
    dtype = check.dtype(dtype)
    backend = get_backend(backend)
    convention = get_convention(convention)
    shape = positions.shape + (d_model,)
    names = tuple(f"positions.shape[{k}]" for k in range(positions.ndim)) + ("d_model",)
    table = check.output(out, shape, dtype, names)
    if positions.size == 0:
        return table
    filler = _table_filler(backend, convention, d_model, base)
    fill_at(filler, (table.reshape(-1, d_model), None), positions.reshape(1, -1), None)
    return table


def shift_matrix(k: int, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The rotation ``S`` with ``PE[p + k] == S @ PE[p]`` for the default convention.

    Block diagonal: for frequency ``i`` the 2x2 block ``[[cos kw, sin kw], [-sin kw, cos kw]]``
    acting on ``(sin pw, cos pw)``. Exact entries, so the identity holds to ~1e-15 for any ``p``.

    Parameters
    ----------
    k : int
        Shift, any sign, ``|k| < 2**53``.
    d_model : int
        Even width (an odd width's last sine has no cosine partner: no linear map exists).
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray
        ``(d_model, d_model)`` float64.
    """
    k = check.integer("k", k, 1 - MAX_POSITION)
    if k >= MAX_POSITION:
        raise ValueError(f"k must satisfy |k| < 2**53, got {k}")
    d_model = check.integer("d_model", d_model, 1)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for shift_matrix, got {d_model}: the last sine column of an "
            "odd width has no cosine partner, so no matrix maps PE[p] to PE[p + k]"
        )
    matrix = check.allocate((d_model, d_model), F64, ("d_model", "d_model"), zeros=True)
    w = frequency_vector(*frequency_key(get_convention("vaswani"), d_model, check.base(base)))
    cos_k, sin_k = exact_values(DEFAULT, np.array([float(k)]), prepare(w))[0]
    i = np.arange(d_model // 2)
    matrix[2 * i, 2 * i] = cos_k
    matrix[2 * i, 2 * i + 1] = sin_k
    matrix[2 * i + 1, 2 * i] = -sin_k
    matrix[2 * i + 1, 2 * i + 1] = cos_k
    return matrix
