"""One RoPE, resolved once: a ``Rotary`` (width, base, parsed scaling or given frequencies,
which position axis each frequency reads, the attention factor) and what is made from it,
cached: its frequencies at a length, its ``Filler`` in a table format, and its tables
(``table_run``, ``table_at``). The public RoPE functions (``rope.py``), ``RopeSpec``
(``spec.py``), ``sinpe check`` and ``sinpe.torch`` all go through here.

The output formats are one table (``FORMATS``); a format is a two-plane (or one-plane)
``Layout`` of the one filler whose values carry the attention factor; compact column ``j``
always holds frequency ``j`` at position axis ``axes[j]`` (M-RoPE's sections and the vision
towers' axial splits are data here, never a loop of their own).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._tables import cache
from .._tables import checks as check
from .._tables.backends import get as get_backend
from .._tables.plan import Layout, Place, Segment, fill_at, fill_run, make_filler
from .._tables.plan import fills_whole as _fills_whole
from .._tables.tables import MAX_FREQUENCY
from .rope_types import (
    DEFAULT,
    ROPE_TYPES,
    RopeScaling,
    frequency_count,
    inverse_frequencies,
    is_plain,
    length_key,
    parse,
    powers,
)

__all__ = [
    "FORMATS",
    "Format",
    "MAX_HEAD_DIM",
    "Rotary",
    "check_factor",
    "filler",
    "format_names",
    "frequencies",
    "from_scaling",
    "powers",
    "resolve",
    "rope_layout",
    "table_at",
    "table_run",
]

# The widest rotary dimension taken. Real models rotate 32 to 512 columns; a frequency rule
# costs up to a few microseconds per frequency (llama3's exact band test), so 2**16 keeps
# any scaling's frequencies well under a second and a few MiB.
MAX_HEAD_DIM = 2**16
DEFAULT_BASE = 10000.0
_MROPE_KEYS = ("mrope_section", "mrope_interleaved", "mrope_paired")


# --------------------------------------------------------------------------- formats
# Output formats as one table: how a RoPE's cos and sin are laid out in what a function,
# a module or a cache returns. Every tuple of layout names sinpe accepts is derived from it.
# A format says what comes back (columns, one or two planes, where each frequency's cos and
# sin go); it does not say which query/key elements a model rotates together (NeoX's halves
# or GPT-J's pairs), which is the model's, not the table's.


class Format(NamedTuple):
    """One format: ``columns`` per frequency (2 or 1), ``planes`` (2: a cos and a sin table;
    1: one table), the cos and the sin of frequency 0 as ``(plane, first column, columns
    from one frequency to the next, offset of a second copy)`` with ``"h"`` standing for the
    number of frequencies, and where it is offered: ``rope`` (``sinpe.rope``/``rope_at``
    layouts), ``spec`` (``RopeSpec`` outputs), ``torch`` (``RotaryEmbedding``), ``cache``
    (``rope_cache`` formats) and ``check`` (caches ``sinpe check`` reads)."""

    columns: int
    planes: int
    cos: tuple
    sin: tuple
    offered: frozenset


_ALL = frozenset({"rope", "spec", "torch", "check"})
FORMATS: dict[str, Format] = {
    # [f0 .. f(h-1), f0 .. f(h-1)] in a cos table and a sin table
    "half": Format(2, 2, (0, 0, 1, "h"), (1, 0, 1, "h"), _ALL),
    # [f0, f0, f1, f1, ...]
    "interleaved": Format(2, 2, (0, 0, 2, 1), (1, 0, 2, 1), _ALL),
    # [f0 .. f(h-1)]
    "compact": Format(1, 2, (0, 0, 1, 0), (1, 0, 1, 0), _ALL),
    # vLLM's cos_sin_cache: one table, [cos f0 .. f(h-1) | sin f0 .. f(h-1)]
    "vllm": Format(2, 1, (0, 0, 1, 0), (0, "h", 1, 0), frozenset({"check", "cache"})),
    # one table, (cos, sin) of each frequency side by side (a complex tensor's real view)
    "complex": Format(2, 1, (0, 0, 2, 0), (0, 1, 2, 0), _ALL - {"rope"} | {"cache"}),
    # the same values as real pairs
    "pairs": Format(2, 1, (0, 0, 2, 0), (0, 1, 2, 0), frozenset({"check", "cache"})),
    # GPT-J's and CodeGen's embed_positions: one table, [sin f0 .. f(h-1) | cos f0 .. f(h-1)]
    "sincos": Format(2, 1, (0, "h", 1, 0), (0, 0, 1, 0), frozenset({"cache"})),
}


def format_names(where: str) -> tuple:
    """The format names offered ``where``, in the table's order."""
    return tuple(name for name, f in FORMATS.items() if where in f.offered)


# --------------------------------------------------------------------------- a Rotary


class Rotary(NamedTuple):
    """A RoPE resolved from its arguments (hashable: the cache key of what is made from it).

    ``scaling`` is the parsed mapping (for given frequencies, only M-RoPE's keys);
    ``given`` the ``inv_freq=`` vector's float64 bytes and ``given_factor`` its attention
    factor; ``axes`` the position axis of each frequency (``None``: one axis) and ``n_axes``
    how many a position holds; ``axes_last``: positions of shape ``(..., n_axes)`` (a vision
    grid) rather than ``(n_axes, ...)`` (M-RoPE)."""

    head_dim: int
    base: float | None
    scaling: RopeScaling
    given: bytes | None = None
    given_factor: float = 1.0
    axes: tuple | None = None
    n_axes: int = 1
    axes_last: bool = False

    @property
    def h(self) -> int:
        return frequency_count(self.head_dim)


def _width(head_dim) -> int:
    head_dim = check.integer("head_dim", head_dim, 2)
    if head_dim > MAX_HEAD_DIM:
        shown = head_dim if head_dim < 10**30 else f"a {len(str(head_dim))}-digit number"
        raise ValueError(
            f"head_dim={shown} is too large: the rotary dimension is at most 2**16 = "
            f"{MAX_HEAD_DIM} (real models rotate 32 to 512 columns)"
        )
    return head_dim


def _check_odd(head_dim: int, spec: RopeScaling | None) -> None:
    """An odd width rotates ``(head_dim + 1) // 2`` frequencies where transformers' rule
    does (``arange(0, dim, 2)``: the default powers, taken one by one); refused elsewhere
    (given frequencies, whose count is the width's half; YaRN's ramp; factor lists)."""
    if head_dim % 2 and (spec is None or not ROPE_TYPES[spec.rope_type].odd_width):
        why = "with inv_freq" if spec is None else f"for rope_type {spec.rope_type!r}"
        allowed = ", ".join(repr(t.name) for t in ROPE_TYPES.values() if t.odd_width)
        raise ValueError(
            f"head_dim must be even {why} (the rotary dimension: pairs of columns), got "
            f"{head_dim}; an odd width is read as transformers' modules read it only for "
            f"rope_type {allowed}"
        )


def mrope_axes(sections, interleaved: bool, h: int, paired: bool = False) -> tuple:
    """The position axis of each frequency under M-RoPE: Qwen2-VL's contiguous sections
    ``T | H | W``, Qwen3-VL's interleaved ``T, H, W, T, H, W, ...`` (then the rest T), or
    ERNIE-4.5-VL's paired ``H, W, H, W, ...`` over its first two sections, then ``T``."""
    if paired:
        return tuple([1, 2] * sections[0] + [0] * (h - 2 * sections[0]))
    if interleaved:
        axes = np.zeros(h, dtype=np.intp)
        for axis in (1, 2):
            axes[axis : 3 * sections[axis] : 3] = axis
        return tuple(axes.tolist())
    return tuple(np.repeat(np.arange(3), sections).tolist())


def mrope_buffer_order(scaling, h: int):
    """Where the module keeps each frequency in its ``inv_freq`` buffer, as indices into
    sinpe's (rising-exponent) frequencies, or ``None`` for the same order: ERNIE-4.5-VL
    pre-permutes its buffer (the even frequencies of the paired sections, then the odd ones,
    then the rest) so that its forward reads each section's block off the buffer."""
    if not scaling.get("mrope_paired"):
        return None
    n = 2 * scaling["mrope_section"][0]
    return np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2), np.arange(n, h)])


def _axes(scaling: RopeScaling, h: int):
    """``(axes, n_axes, axes_last)`` a scaling's keys say."""
    sections = scaling.get("mrope_section")
    if sections is not None:
        interleaved, paired = (
            bool(scaling.get("mrope_interleaved")),
            bool(scaling.get("mrope_paired")),
        )
        return mrope_axes(sections, interleaved, h, paired), 3, False
    if ROPE_TYPES[scaling.rope_type].axes == 2:  # Pixtral: [even: height | odd: width]
        return tuple([0] * ((h + 1) // 2) + [1] * (h // 2)), 2, True
    return None, 1, False


def _given(inv_freq, head_dim: int, attention_factor) -> tuple[bytes, float]:
    if isinstance(inv_freq, (str, bytes)) or inv_freq is None:
        raise TypeError(f"inv_freq must be a 1-D array of numbers, got {type(inv_freq).__name__}")
    if type(inv_freq).__module__.startswith("torch"):
        inv_freq = inv_freq.detach().cpu().double().numpy()
    try:
        array = np.asarray(inv_freq)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"inv_freq must be a 1-D array of numbers: {exc}") from None
    if array.dtype.kind not in "iuf" or array.ndim != 1:
        raise TypeError(
            f"inv_freq must be a 1-D array of integers or floats (taken as exact float64), got "
            f"dtype {array.dtype} and {array.ndim} dimensions"
        )
    w = array.astype(np.float64)
    if w.shape[0] != head_dim // 2:
        raise ValueError(
            f"inv_freq has {w.shape[0]} frequencies, but head_dim={head_dim} rotates "
            f"head_dim // 2 = {head_dim // 2}"
        )
    if not (np.isfinite(w).all() and (w >= 0).all() and w.max(initial=0.0) <= MAX_FREQUENCY):
        raise ValueError(
            "inv_freq must hold finite frequencies >= 0 and below 2**900 (position * frequency "
            "stays exact)"
        )
    if attention_factor is None:
        factor = 1.0
    else:
        factor = check.real("attention_factor", attention_factor)
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"attention_factor must be finite and > 0, got {factor!r}")
    return np.ascontiguousarray(w).tobytes(), factor


def resolve(
    head_dim,
    base=None,
    scaling=None,
    max_position_embeddings=None,
    inv_freq=None,
    attention_factor=None,
) -> Rotary:
    """The checked arguments of a public RoPE call as one ``Rotary``: ``head_dim``, the base
    (``base``, else the mapping's ``rope_theta``, else 10000) and the parsed scaling; or the
    given ``inv_freq`` (then ``base`` and every scaling key but M-RoPE's are refused)."""
    head_dim = _width(head_dim)
    if inv_freq is not None:
        _check_odd(head_dim, None)
        if base is not None:
            raise ValueError("pass inv_freq or base, not both: inv_freq are the frequencies")
        if scaling is not None:
            keys = set(scaling) if hasattr(scaling, "keys") else {"?"}
            extra = keys - {*_MROPE_KEYS, "rope_type"} or (
                set() if is_plain(dict(scaling).get("rope_type", DEFAULT)) else {"rope_type"}
            )
            if extra:
                raise ValueError(
                    "pass inv_freq or a scaling, not both: inv_freq are the frequencies (only "
                    "mrope_section, mrope_interleaved and mrope_paired may come with them), "
                    f"got {sorted(extra)}"
                )
        given, factor = _given(inv_freq, head_dim, attention_factor)
        spec = parse(
            {k: v for k, v in dict(scaling or {}).items() if k in _MROPE_KEYS}, None, head_dim
        )
        _check_sections(spec, head_dim)
        return Rotary(head_dim, None, spec, given, factor, *_axes(spec, head_dim // 2))
    if attention_factor is not None:
        raise ValueError(
            "attention_factor comes with inv_freq only: a scaling gives its own factor"
        )
    spec = parse(scaling, max_position_embeddings, head_dim)
    _check_odd(head_dim, spec)
    partial = spec.get("partial_rotary_factor")
    if partial is not None and "partial_rotary_factor" not in ROPE_TYPES[spec.rope_type].optional:
        width = int(head_dim * partial)
        raise ValueError(
            f"scaling carries partial_rotary_factor={partial!r}, but head_dim here is the rotary "
            f"width: for a model whose head_dim is {head_dim}, pass head_dim="
            f"{width - width % 2} (int({head_dim} * {partial!r})) and leave the factor out of the "
            "mapping, or read the model's config with sinpe.rope_config(), which applies it"
        )
    _check_sections(spec, head_dim)
    if base is None:
        base = spec.theta if spec.theta is not None else DEFAULT_BASE
    else:
        base = check.base(base)
        if spec.theta is not None and spec.theta != base:
            raise ValueError(
                f"base={base!r} disagrees with the scaling mapping's rope_theta={spec.theta!r}: "
                "pass one of them, or the same value"
            )
    return Rotary(
        head_dim, check.base(base), spec, None, 1.0, *_axes(spec, frequency_count(head_dim))
    )


def from_scaling(head_dim: int, base: float, scaling: RopeScaling) -> Rotary:
    """A ``Rotary`` of an already parsed scaling at a checked width (``rope_config``'s)."""
    head_dim = _width(head_dim)
    _check_odd(head_dim, scaling)
    _check_sections(scaling, head_dim)
    h = frequency_count(head_dim)
    return Rotary(head_dim, check.base(base), scaling, None, 1.0, *_axes(scaling, h))


def _check_sections(spec: RopeScaling, head_dim: int) -> None:
    """Contiguous sections must cover the frequencies exactly (transformers' split fails
    otherwise); interleaved ones are cut at the last frequency, as transformers' slices
    ``[axis : 3 * section : 3]`` are (the frequencies past them read the first axis);
    paired ones (ERNIE-4.5-VL) alternate two sections of one size and cover the rest with
    the third."""
    sections = spec.get("mrope_section")
    if sections is None:
        return
    h = frequency_count(head_dim)
    if spec.get("mrope_paired"):
        if sections[0] != sections[1] or sum(sections) != h:
            raise ValueError(
                f"scaling['mrope_section'] {list(sections)} cannot be paired (H, W, H, W, ..., "
                f"then T): the first two sections must be equal and all three sum to the {h} "
                "frequencies"
            )
    elif not spec.get("mrope_interleaved") and sum(sections) != h:
        raise ValueError(
            f"scaling['mrope_section'] {list(sections)} must sum to the {h} frequencies (one "
            f"section of frequencies per position axis), got {sum(sections)}"
        )


def length_of(rotary: Rotary, length):
    """What of the current length changes this RoPE's values (``None``: nothing)."""
    if rotary.given is not None:
        return None
    return length_key(rotary.scaling, length)


# --------------------------------------------------------------------------- made from it


def _make_frequencies(rotary: Rotary, length):
    if rotary.given is not None:
        return np.frombuffer(rotary.given, dtype=np.float64), rotary.given_factor
    scaling = rotary.scaling.without(*_MROPE_KEYS)
    base = float(rotary.base)  # type: ignore[arg-type]  # None only with given frequencies
    inv_freq, attention = inverse_frequencies(scaling, rotary.head_dim, base, length)
    largest = float(np.abs(inv_freq).max())
    if not largest <= MAX_FREQUENCY:
        raise ValueError(
            f"base={rotary.base!r} with scaling {scaling.rope_type!r} gives inverse frequencies "
            f"up to {largest:.3g}; every inverse frequency must be finite and below 2**900 so "
            "that position * frequency stays exact"
        )
    if not (math.isfinite(attention) and attention > 0):
        raise ValueError(f"scaling gives attention factor {attention!r}; it must be finite and > 0")
    return check.frozen(inv_freq), attention


def frequencies(rotary: Rotary, length) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_factor)`` at the current ``length``, read-only, cached."""
    key = ("rope-frequencies", rotary, length_of(rotary, length))
    return cache.lookup(key, _make_frequencies, (rotary, length))


def filler(backend, rotary: Rotary, length, name: str):
    """The cached ``Filler`` of a RoPE in table format ``name``."""
    key = ("rope", backend.NAME, rotary, length_of(rotary, length), name)
    return cache.lookup(key, _make_filler, (backend, rotary, length, name, key))


def _make_filler(backend, rotary, length, name, key):
    inv_freq, attention = frequencies(rotary, length)
    axes = None if rotary.axes is None else np.array(rotary.axes, dtype=np.intp)
    layout, order = rope_layout(name, inv_freq.shape[0], axes)
    w = inv_freq if order is None else inv_freq[order]
    return make_filler(backend, w, attention, layout, key)


def axis_positions(rotary: Rotary, positions: np.ndarray):
    """``(n_axes, n)`` positions for the filler, and the shape of the rows."""
    n_axes = rotary.n_axes
    if n_axes == 1:
        return positions.reshape(1, -1), positions.shape
    if rotary.axes_last:
        if positions.ndim < 1 or positions.shape[-1] != n_axes:
            raise ValueError(
                f"this RoPE takes positions of shape (..., {n_axes}): the (height, width) of "
                f"each patch, as Pixtral's position_ids; got shape {positions.shape}"
            )
        flat = np.moveaxis(positions, -1, 0).reshape(n_axes, -1)
        return np.ascontiguousarray(flat), positions.shape[:-1]
    if positions.ndim < 1 or positions.shape[0] != n_axes:
        raise ValueError(
            f"this RoPE (M-RoPE) takes positions of shape ({n_axes}, ...): temporal, height "
            "and width, as Qwen2-VL's position_ids (text only: the same positions on every "
            f"axis, numpy.broadcast_to(p, ({n_axes},) + p.shape)); got shape {positions.shape}"
        )
    return np.ascontiguousarray(positions.reshape(n_axes, -1)), positions.shape[1:]


# --------------------------------------------------------------------------- layouts


def table_format(name: str, h: int):
    """A table format for ``h`` frequencies, in the filler's own vocabulary: row width,
    planes, and the ``Place`` of the cos and of the sin of frequency 0 .. h - 1 (plane,
    column of frequency 0, columns from one frequency to the next, offset of a second copy):
    the row of ``FORMATS``."""
    f = FORMATS[name]

    def resolve(spot):
        return Place(*(h if v == "h" else v for v in spot), h)

    return f.columns * h, f.planes, resolve(f.cos), resolve(f.sin)


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
    width, planes, cos, sin = table_format(name, h)
    runs = [(0, 0, 1, h)] if axes is None else _runs(axes)
    segments: list = []
    order: list = []
    first = 0
    for axis, i0, step, count in runs:
        if not count:
            continue
        places = [  # frequencies i0, i0 + step, ... of this axis, at their own columns
            p._replace(col=p.col + p.step * i0, step=p.step * step, count=count) for p in (cos, sin)
        ]
        segments.append(Segment(first, count, axis, *places))
        order += range(i0, i0 + step * count, step)
        first += count
    layout = Layout(width, planes, tuple(segments))
    return layout, (None if order == list(range(h)) else np.array(order, dtype=np.intp))


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


def reserve(n: int, h: int, name: str, dtype) -> None:
    """Refuse, before the frequencies are made, tables the process could never hold."""
    width, planes = table_format(name, h)[:2]
    what = f"{'two tables' if planes == 2 else 'a table'} of shape {(n, width)} {dtype.name}"
    check.reserve(planes * n * width * dtype.itemsize + check.SCRATCH_BYTES, what)


def tables(filler_, n: int, dtype) -> tuple[np.ndarray, ...]:
    """The planes of ``n`` rows a filler writes, allocated."""
    check_factor(filler_.factor, dtype)
    names = ("positions", "head_dim")
    shape = (n, filler_.layout.width)
    return tuple(check.allocate(shape, dtype, names) for _ in range(filler_.layout.planes))


# --------------------------------------------------------------------------- tables of a Rotary


def _threads(threads):
    return None if threads is None else check.integer("threads", threads, 1)


def _planes(filler_, n: int, dtype, out):
    """The planes to fill: new ones, or ``out`` (one array per plane) checked first."""
    if out is None:
        return tables(filler_, n, dtype)
    check_factor(filler_.factor, dtype)
    shape = (n, filler_.layout.width)
    if len(out) != filler_.layout.planes:
        raise ValueError(f"out must hold {filler_.layout.planes} arrays, got {len(out)}")
    names = ("positions", "width")
    return tuple(check.output(o, shape, dtype, names) for o in out)


def fills_whole(rotary: Rotary, length, name: str) -> bool:
    """Whether ``table_run(..., whole=True)`` can fill this RoPE's table of the current
    length ``length`` in format ``name`` (see ``plan.fills_whole``)."""
    return _fills_whole(filler(get_backend("auto"), rotary, length, name))


def table_run(
    rotary: Rotary, seq_len, offset, name: str, dtype, threads, backend, what, out=None, whole=False
):
    """The planes of a table of positions ``offset .. offset + seq_len - 1`` (into ``out``,
    a tuple of arrays, when given; ``whole``: ``out`` ends either as it was, when this
    raises, or whole, however a signal arrives: ``fills_whole``)."""
    seq_len = check.integer("seq_len", seq_len, 0)
    offset = check.integer("offset", offset, 0)
    check.last_position(offset, seq_len)
    if rotary.n_axes > 1 and rotary.axes_last:
        raise ValueError(
            f"this RoPE reads (height, width) positions: {what} makes tables of consecutive "
            "positions; use sinpe.rope_at(positions of shape (..., 2))"
        )
    backend = get_backend(backend)
    threads = _threads(threads)
    reserve(seq_len, rotary.h, name, dtype)
    filler_ = filler(backend, rotary, offset + seq_len, name)
    planes = _planes(filler_, seq_len, dtype, out)
    fill_run(filler_, planes + (None,) * (2 - len(planes)), offset, seq_len, threads, whole)
    return planes


def table_block(
    rotary: Rotary, length: int, start: int, n: int, name: str, dtype, out: tuple | None = None
) -> tuple:
    """The planes of rows ``start .. start + n - 1`` of the table of a run of ``length``
    positions (the current length of a length-dependent RoPE): one block of a table made a
    block at a time, each value as the whole table has it; into ``out`` (the planes of an
    earlier block of at least ``n`` rows, reused: their first ``n`` rows) when given."""
    backend = get_backend("auto")
    filler_ = filler(backend, rotary, length, name)
    if (
        out is not None
        and all(
            plane.dtype == dtype
            and plane.shape[0] >= n
            and plane.shape[1:] == (filler_.layout.width,)
            for plane in out
        )
        and len(out) == filler_.layout.planes
    ):
        planes = tuple(plane[:n] for plane in out)
    else:
        reserve(n, rotary.h, name, dtype)
        planes = tables(filler_, n, dtype)
    fill_run(filler_, planes + (None,) * (2 - len(planes)), start, n, None)
    return planes


def table_at(rotary: Rotary, positions, name: str, dtype, threads, backend, seq_len=None, out=None):
    """``(cos, sin)`` at ``positions`` (checked here), each ``shape + (width,)`` (into
    ``out``, two arrays of that shape, when given)."""
    positions = check.positions(positions)
    backend = get_backend(backend)
    threads = _threads(threads)
    flat, shape = axis_positions(rotary, positions)
    reserve(flat.shape[1], rotary.h, name, dtype)
    if seq_len is not None:
        length: float | None = check.integer("seq_len", seq_len, 0)
    else:
        length = float(flat.max()) + 1.0 if flat.size else None
    filler_ = filler(backend, rotary, length, name)
    width = filler_.layout.width
    if out is not None:
        if len(out) != 2:
            raise ValueError(f"out must hold 2 arrays (cos, sin), got {len(out)}")
        names = tuple(f"positions.shape[{k}]" for k in range(len(shape))) + ("width",)
        out = tuple(check.output(o, shape + (width,), dtype, names) for o in out)
        check_factor(filler_.factor, dtype)
        planes = tuple(o.reshape(-1, width) for o in out)
    else:
        planes = tables(filler_, flat.shape[1], dtype)
    fill_at(filler_, planes, flat, threads)
    if out is not None:
        return out
    shape = shape + (width,)
    return planes[0].reshape(shape), planes[1].reshape(shape)
