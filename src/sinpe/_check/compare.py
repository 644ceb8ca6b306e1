"""``sinpe check`` on a cos/sin cache file: the adapter that reads the cache's layout and
hands its rows to the verdict core (``judge.py``: the bounds, and what match, drift and
mismatch mean).

The cache's arrays (``files.load``) are read as each layout their shapes allow; the layout
kept is the one the values and the config explain (a single ``(n, rot)`` array is vLLM's
``[cos | sin]`` or a cos without its sin: row values tell them apart, and a cos alone is
refused, never guessed into a verdict). Every row is judged, a block at a time. A mismatch's
explanation comes from a finite set: values of a narrower dtype (where every value is one),
another layout, offset 0 or 1, the width without ``partial_rotary_factor`` (each ranked on
the core's preview rows), then what the table's own angles and row 0 show (base, scaling,
attention factor: ``judge.fit``).
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, NamedTuple, NoReturn

import numpy as np

from .._files.caches import NARROW, Stored
from .._rope import rotary as rot
from .._verdict.judge import fit, judge_parameters, judge_table, preview, ulp
from .._verdict.verdict import (
    DRIFT,
    MISMATCH,
    Judged,
    Verdict,
    explained,
    explanation,
    finding,
    mismatch,
    note,
)

__all__ = ["LAYOUTS", "Report", "compare", "views"]

LAYOUTS = rot.format_names("check")
_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


_COS_ALONE = "cos_alone"  # the layout of a cos without its sin: refused, never a verdict
_OWN = ("not_a_number", "shifted", "attention_factor")  # the core's own explanations


class View(NamedTuple):
    """One reading of the cache: its layout name, rows, the rotary width it implies, the
    exact layout it compares with, a reader of float64 ``(cos, sin)`` row blocks (``sin`` is
    ``None`` for a cos without its sin), and how the layout is read (``""``: the one way)."""

    layout: str
    rows: int
    width: int
    kind: str
    read: Callable
    reading: str = ""

    @property
    def label(self) -> str:
        """The layout as reports name it: ``"pairs (half)"``, ``"half (stacked)"``, ``"vllm"``."""
        return f"{self.layout} ({self.reading})" if self.reading else self.layout

    @property
    def alone(self) -> bool:
        """Whether this reads a cos without its sin."""
        return self.layout == _COS_ALONE


# --------------------------------------------------------------------------- values


def _decode(block: np.ndarray, dtype: str) -> np.ndarray:
    """Float64 values of a block of stored values (bit patterns for the narrow dtypes)."""
    if dtype not in NARROW:
        return np.asarray(block, dtype=np.complex128 if dtype == "complex" else np.float64)
    if dtype == "bfloat16":
        return (np.asarray(block, np.uint32) << 16).view(np.float32).astype(np.float64)
    return _FLOAT8[dtype][np.asarray(block, np.uint8)]


def _float8_table(exponent_bits: int, bias: int, ieee: bool) -> np.ndarray:
    table = np.empty(256)
    mantissa_bits = 7 - exponent_bits
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> mantissa_bits) & ((1 << exponent_bits) - 1)
        m = b & ((1 << mantissa_bits) - 1)
        top = (1 << exponent_bits) - 1
        if ieee and e == top:
            value = math.inf if m == 0 else math.nan
        elif not ieee and e == top and m == (1 << mantissa_bits) - 1:
            value = math.nan
        elif e == 0:
            value = m / (1 << mantissa_bits) * 2.0 ** (1 - bias)
        else:
            value = (1 + m / (1 << mantissa_bits)) * 2.0 ** (e - bias)
        table[b] = sign * value
    return table


_FLOAT8 = {
    "float8_e4m3fn": _float8_table(4, 7, ieee=False),
    "float8_e5m2": _float8_table(5, 15, ieee=True),
}


def _real_dtype(stored: Stored) -> str:
    kind = stored.dtype
    if kind in ("complex64", "complex128"):
        return "float32" if kind == "complex64" else "float64"
    if kind not in _DTYPES:
        what = "integers" if stored.values.dtype.kind in "iub" else f"dtype {kind}"
        raise ValueError(
            f"the cache's {stored.name} holds {what}, not a table of floats (sinpe rope writes "
            "bfloat16 as bit patterns with a 'dtype' record, which check reads)"
        )
    return kind


def _squeeze(stored: Stored) -> Stored:
    values = stored.values
    while values.ndim > 2 and values.shape[0] == 1:  # (1, n, d): a batch of one
        values = values[0]
    return stored._replace(values=values)


def _reader(arrays, dtype: str, split: Callable):
    def read(lo: int, hi: int):
        return split(*(_decode(a[lo:hi], dtype) for a in arrays))

    return read


def views(arrays: list) -> tuple[list, str]:
    """Every reading the arrays' shapes allow, and their dtype name."""
    arrays = [_squeeze(a) for a in arrays]
    complex_ = [a.dtype.startswith("complex") for a in arrays]
    if len(arrays) == 2 and any(complex_):
        raise ValueError("a complex array comes with a real one: give freqs_cis alone")
    dtypes = {_real_dtype(a) for a in arrays}
    if len(dtypes) != 1:
        raise ValueError(f"cos and sin have different dtypes: {', '.join(a.dtype for a in arrays)}")
    (dtype,) = dtypes
    if len(arrays) == 2:
        return _pair_views(arrays[0].values, arrays[1].values, dtype, ""), dtype
    (one,) = arrays
    values = one.values
    if complex_[0]:
        if values.ndim != 2:
            raise ValueError(f"a complex cache must be (n, rot/2), got {values.shape}")
        read = _reader([values], "complex", lambda c: (c.real.copy(), c.imag.copy()))
        return [View("complex", values.shape[0], 2 * values.shape[1], "compact", read)], dtype
    found = []
    if values.ndim == 3 and values.shape[0] == 2:  # np.stack([cos, sin])
        found += _pair_views(values[0], values[1], dtype, "stacked")
    if values.ndim == 3 and values.shape[-1] == 2:  # (n, d, 2): cos, sin pairs
        n, c, _ = values.shape
        read = _reader([values], dtype, lambda a: (a[..., 0].copy(), a[..., 1].copy()))
        found.append(View("pairs", n, 2 * c, "compact", read))
        found += [View("pairs", n, c, k, read, reading=k) for k in ("half", "interleaved")]
    if values.ndim == 2:
        n, c = values.shape
        if c % 2 == 0:
            h = c // 2
            read = _reader([values], dtype, lambda a: (a[:, :h].copy(), a[:, h:].copy()))
            found.append(View("vllm", n, c, "compact", read))
        alone = _reader([values], dtype, lambda a: (a, None))
        found += [View(_COS_ALONE, n, c, k, alone, reading=k) for k in ("half", "interleaved")]
        found.append(View(_COS_ALONE, n, 2 * c, "compact", alone, reading="compact"))
    if not found:
        raise ValueError(
            f"the cache's array {values.shape} is none of the forms read: (n, rot) vllm, "
            "(2, n, d) stacked cos and sin, (n, d, 2) pairs, complex (n, rot/2)"
        )
    return found, dtype


def _pair_views(cos, sin, dtype: str, reading: str) -> list:
    """The half, interleaved and compact readings of two equal ``(n, d)`` tables."""
    if cos.shape != sin.shape or cos.ndim != 2:
        raise ValueError(
            f"cos {cos.shape} and sin {sin.shape} must be two equal (n, d) tables (a leading "
            "batch of one is taken)"
        )
    n, c = cos.shape
    read = _reader([cos, sin], dtype, lambda a, b: (a, b))
    return [
        View(k, n, w, k, read, reading=reading)
        for k, w in (("half", c), ("interleaved", c), ("compact", 2 * c))
    ]


# --------------------------------------------------------------------------- the verdict


class _ReportFields(NamedTuple):
    """The fields of ``Report``."""

    layout: str
    rows: int
    dtype: str
    rounding: float
    ulp: float
    judgment: Verdict
    errors: np.ndarray
    note: str


class Report(_ReportFields, Judged):
    """A cache file judged: the layout read, its rows and dtype, the dtype's rounding bound
    and ulp at the attention factor, the core's ``Verdict`` (``judgment``), each row's
    largest error, and a note on layouts that fit as well."""

    __slots__ = ()


_PAIRS = {  # the pair each column of a table of kind k holds, for h pairs
    "half": lambda h: np.arange(2 * h) % h,
    "interleaved": lambda h: np.arange(2 * h) // 2,
    "compact": lambda h: np.arange(h),
}


def _read_rows(view: View, offset: int) -> Callable:
    """``read(positions)`` of a view: its rows at ``positions`` (rows from ``offset``)."""

    def read(positions: np.ndarray):
        rows = positions - offset
        if rows.size and rows[-1] - rows[0] + 1 == rows.size:
            return view.read(int(rows[0]), int(rows[-1]) + 1)
        parts = [view.read(int(r), int(r) + 1) for r in rows]
        cos = np.concatenate([p[0] for p in parts])
        return cos, None if parts[0][1] is None else np.concatenate([p[1] for p in parts])

    return read


def _judge_view(view: View, rotary, offset: int, dtype: str, length: int):
    """The core's judgment of every row of a view, the first standing for ``offset``."""
    pairs = _PAIRS[view.kind](rotary.h)
    return judge_table(rotary, _read_rows(view, offset), view.rows, pairs, dtype, length, offset)


def _preview(view: View, rotary, offset: int, dtype: str, length: int) -> tuple:
    """``(verdict word, largest error)`` of the core's preview rows of a view: to rank
    readings, never a verdict."""
    pairs = _PAIRS[view.kind](rotary.h)
    return preview(rotary, _read_rows(view, offset), view.rows, pairs, dtype, length, offset)


def compare(spec, arrays: list, offset: int = 0, layout: str | None = None, full_width=None):
    """The cache's ``Report`` against ``spec``'s exact table at positions ``offset ..``."""
    rotary = spec._one()
    found, dtype = views(arrays)
    n = found[0].rows
    if n == 0:
        raise ValueError("the cache has no rows: nothing to check")
    length = offset + n
    _, factor = rot.frequencies(rotary, length)
    step = ulp(dtype, factor)
    found = _of_layout(found, layout)
    fitting = [v for v in found if v.width == rotary.head_dim]
    wider = [v for v in found if full_width is not None and v.width == full_width]
    if not fitting and wider:  # the width without partial_rotary_factor: a mismatch, named
        wrong = finding("rotary_width", engine=full_width, config=rotary.head_dim)
        judgment = mismatch([wrong], dtype=dtype)
        return Report(wider[0].label, n, dtype, step / 2, step, judgment, np.full(n, np.nan), "")
    if not fitting:
        _unfitting(arrays, layout, rotary.head_dim)
    best, tie = _choose(fitting, arrays, rotary, offset, dtype, length)
    table = _judge_view(best, rotary, offset, dtype, length)
    judgment = table.verdict
    if judgment.verdict == MISMATCH and judgment.findings[0].code not in _OWN:
        reasons = _explain(spec, found, best, offset, full_width, dtype, n)
        if judgment.findings[0].code != "radius" or reasons[0].code != "unexplained":
            judgment = explained(judgment, reasons)
    return Report(
        best.label, n, dtype, step / 2, step, judgment, table.errors, _tie_note(tie, judgment)
    )


def _of_layout(found: list, layout: str | None) -> list:
    """The views of layout ``layout`` (every view for None), however each is read."""
    return found if layout is None else [v for v in found if v.layout == layout]


def _unfitting(arrays: list, layout: str | None, width: int) -> NoReturn:
    """Refuse a cache no view of which has the rotary width ``width``."""
    shapes = ", ".join(str(a.shape) for a in arrays)
    raise ValueError(
        f"the cache's arrays {shapes} do not fit "
        + (f"layout {layout!r}" if layout else f"any layout ({', '.join(LAYOUTS)})")
        + f" of rotary dim {width}"
    )


def _largest(view: View, rotary, offset: int, dtype: str, length: int) -> float:
    """The largest error of a view's preview rows (``inf`` where one is not a number)."""
    return _preview(view, rotary, offset, dtype, length)[1]


def _choose(fitting: list, arrays: list, rotary, offset, dtype, length: int):
    """The view whose values the exact table explains best, and the views as near; a cache
    that reads better as a cos without its sin than as vLLM's ``[cos | sin]`` is refused."""

    def judged(group):
        return sorted(
            (_largest(v, rotary, offset, dtype, length), k, v) for k, v in enumerate(group)
        )

    alone = judged([v for v in fitting if v.alone])
    others = judged([v for v in fitting if not v.alone])
    if alone and (not others or alone[0][0] < 0.5 * others[0][0]):
        raise ValueError(
            f"the cache's one array {arrays[0].shape} reads as a cos table without its sin "
            "(its values fit that better than vLLM's [cos | sin]): pass its sin with --sin "
            "FILE, or --layout vllm if it is [cos | sin]"
        )
    best_error, _, best = others[0]
    _, factor = rot.frequencies(rotary, length)
    near = best_error * 1.01 + 8 * ulp(dtype, factor)
    return best, [v for e, _, v in others[1:] if e <= near]


def _tie_note(tie: list, judgment: Verdict) -> str:
    """A word on the views as near as the one kept: the verdict holds for each, each named."""
    if not tie:
        return ""
    names = ", ".join(v.label for v in tie)
    if judgment.verdict == MISMATCH:
        return note("ties_mismatch", engine=names, config="neither" if len(tie) == 1 else "none")
    return note("ties", engine=names, s="s" if len(tie) == 1 else "")


# --------------------------------------------------------------------------- why not


def _explain(spec, found, best: View, offset, full_width, dtype, n) -> list:
    """The explanation of a mismatch: values of a narrower dtype (where every value is one);
    else another layout, offset or width (the one that leaves the least error on the
    preview rows); else what the table's angles and row 0 show."""
    rotary = spec._one()
    narrower = _narrower(rotary, best, offset, dtype, offset + n)
    if narrower:
        return narrower
    fits = sorted(_variants(rotary, found, offset, full_width, dtype, n))
    if fits:  # another layout, offset or width reads as the config: that is the reason
        error, _, view, start, width = fits[0]
        return [
            explanation(
                error,
                layout=view.label if view.label != best.label else None,
                offset=start if start != offset else None,
                given=offset,
                width=width if width != rotary.head_dim else None,
                config_width=rotary.head_dim,
            )
        ]
    return _from_angles(spec, best, offset, n, dtype) or [
        finding("unexplained", engine=_largest(best, rotary, offset, dtype, offset + n))
    ]


def _narrower(rotary, view: View, offset: int, dtype: str, length: int) -> list:
    """Values of a narrower dtype stored in this one (bfloat16 values as float32): every
    value is one of that dtype's, and they read as a match or drift at its rounding."""
    for narrow in ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        if _DTYPES.index(narrow) <= _DTYPES.index(dtype):
            continue
        if not _all_of(view, narrow):
            continue
        word, largest = _preview(view, rotary, offset, narrow, length)
        _, factor = rot.frequencies(rotary, length)
        step = ulp(narrow, factor)
        if word == MISMATCH or largest < step / 4:
            continue
        if word == DRIFT or largest <= step:
            return [finding("rounded", engine=narrow, config=dtype)]
    return []


def _all_of(view: View, narrow: str) -> bool:
    """Whether every value of the view is a value of the dtype ``narrow`` (a block at a time)."""
    step = max(1, (1 << 20) // max(view.width, 1))
    for lo in range(0, view.rows, step):
        for values in view.read(lo, min(view.rows, lo + step)):
            if values is not None and not _representable(np.asarray(values), narrow):
                return False
    return True


def _representable(values: np.ndarray, narrow: str) -> bool:
    values = values[np.isfinite(values)]
    if narrow == "float32":
        return bool((values.astype(np.float32) == values).all())
    if narrow == "float16":
        with np.errstate(over="ignore"):
            return bool((values.astype(np.float16) == values).all())
    if narrow == "bfloat16":
        single = values.astype(np.float32)
        return bool((single == values).all() and not (single.view(np.uint32) & 0xFFFF).any())
    return bool(np.isin(values, _FLOAT8[narrow]).all())


def _variants(rotary, found, offset: int, full_width, dtype: str, n: int):
    """``(error, index, view, offset, width)`` of each other reading that reads as the
    config (a match or a drift on the preview rows)."""
    widths = [rotary.head_dim] + ([full_width] if full_width not in (None, rotary.head_dim) else [])
    k = 0
    for start, width in itertools.product(sorted({offset, 0, 1}), widths):
        variant = rotary if width == rotary.head_dim else _wider(rotary, width)
        if variant is None:
            continue
        for view in found:
            if view.width != width or view.alone or (start, width) == (offset, rotary.head_dim):
                continue
            word, largest = _preview(view, variant, start, dtype, start + n)
            k += 1
            if word != MISMATCH:
                yield largest, k, view, start, width


def _wider(rotary, width: int):
    try:
        return rot.from_scaling(width, rotary.base, rotary.scaling)
    except (TypeError, ValueError):
        return None


def _from_angles(spec, view: View, offset: int, n: int, dtype: str) -> list:
    """The reasons the table's own angles and row 0 give (position 0 and 1 in the cache)."""
    if offset != 0 or view.kind not in _PAIRS:
        return []
    rotary = spec._one()
    columns = _PAIRS[view.kind](rotary.h)
    first = np.unique(columns, return_index=True)[1]  # one column per pair

    def read(positions):
        cos, sin = _read_rows(view, 0)(positions)
        return cos[:, first], None if sin is None else sin[:, first]

    held = fit(read, n, dtype)
    if held is None:
        return []
    found, _ = judge_parameters(spec, held, n)
    return found
