"""``sinpe check``: how far another engine's cos/sin cache is from the exact table, and what
that means.

The cache's arrays (``cache_files.load``) are read as each layout their shapes allow; the
layout kept is the one the values and the config explain (a single ``(n, rot)`` array is
vLLM's ``[cos | sin]`` or a cos without its sin: row values tell them apart, and a cos alone
is refused, never guessed into a verdict). The comparison runs a block of rows at a time
against the exact float64 table. The verdict, with ``ulp`` the spacing of the cache's dtype
just below the table's largest value (the attention factor ``A``):

- **match**: every row within ``8 ulp``: the exact table at the dtype's rounding;
- **drift**: every row within ``8 ulp + 2**-21 * A * p * max(w)`` (an angle ``p * w`` formed in
  float32, as transformers' and vLLM's own computations form it, errs by up to about
  ``2**-23 * p * w``; ``2**-21`` leaves 4x), and some row beyond ``8 ulp``;
- **mismatch**: anything else (a wrong config, layout, offset, base, width or scaling), with
  the explanation from a finite set (layout, offset 0 or 1, base, rotary width, scaling)
  that fits best, and the error it leaves.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, NamedTuple

import numpy as np

from .._rope import rotary as rot
from .._rope.rope_types import is_plain, parse
from .._tables.checks import F64
from .files import NARROW, Stored

__all__ = [
    "LAYOUTS",
    "Report",
    "compare",
    "explanation_text",
    "judge_rows",
    "number",
    "VERDICTS",
    "verdict_text",
    "layer_json",
    "layer_line",
    "views",
]

LAYOUTS = rot.format_names("check")
MATCH_ULPS = 8
DRIFT_RATE = 2.0**-21  # the float32-angle envelope, per unit of A * p * max(w)
BASES = (1e4, 5e5, 1e6)  # the bases an engine most often puts in by default
BLOCK_ENTRIES = 1 << 20  # float64 entries per array per block: 8 MiB
_EPS = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float8_e4m3fn": 2.0**-3,
    "float8_e5m2": 2.0**-2,
}


_COS_ALONE = "cos alone"  # the layout of a cos without its sin: refused, never a verdict


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


class Explanation(NamedTuple):
    layout: str
    offset: int
    base: float
    width: int
    scaling: str  # "config" or "none"; or "rounded to <dtype>": values of a narrower dtype
    error: float


class Report(NamedTuple):
    layout: str
    rows: int
    dtype: str
    rounding: float  # the dtype's rounding bound on the table's values
    ulp: float
    decades: list  # (first position, last position, largest error)
    largest: float
    verdict: str  # "match", "drift" or "mismatch"
    drift: str | None  # "float32" or "float64" angles, for a drift
    worst: tuple  # (position, error, allowed) of the row furthest outside the match bound
    explanation: Explanation | None
    errors: np.ndarray  # the largest error of each row
    note: str  # a word on how the layout was found


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
    if kind not in _EPS:
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


# --------------------------------------------------------------------------- exact tables


def _exact(rotary, positions: np.ndarray, kind: str, length: int):
    if rotary.n_axes > 1:  # a text run: every axis at the same position
        positions = np.broadcast_to(positions, (rotary.n_axes, positions.shape[0]))
    return rot.table_at(rotary, positions, kind, F64, None, "auto", length)


def _row_errors(view: View, rotary, positions: np.ndarray, rows: np.ndarray, length: int):
    """The largest |cache - exact| of each of ``rows`` (positions ``positions``)."""
    out = np.empty(rows.shape[0])
    step = max(1, BLOCK_ENTRIES // max(view.width, 1))
    for k in range(0, rows.shape[0], step):
        chunk = rows[k : k + step]
        contiguous = chunk[-1] - chunk[0] + 1 == chunk.shape[0]
        if contiguous:
            cos, sin = view.read(int(chunk[0]), int(chunk[-1]) + 1)
        else:
            parts = [view.read(int(r), int(r) + 1) for r in chunk]
            cos = np.concatenate([p[0] for p in parts])
            sin = None if parts[0][1] is None else np.concatenate([p[1] for p in parts])
        want_cos, want_sin = _exact(rotary, positions[k : k + step], view.kind, length)
        error = _largest(cos, want_cos)
        if sin is not None:
            np.maximum(error, _largest(sin, want_sin), out=error)
        if not np.isfinite(error).all():  # NaN and inf propagate into the row's error
            bad = int(chunk[np.nonzero(~np.isfinite(error))[0][0]])
            raise ValueError(
                f"the cache holds NaN or inf (first in row {bad}): not a table to check"
            )
        out[k : k + step] = error
    return out


def _largest(values: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Each row's largest |values - exact| (``values`` is a block copy: overwritten)."""
    if not values.flags.writeable or not values.flags.owndata:
        values = values.copy()
    np.subtract(values, exact, out=values)
    np.abs(values, out=values)
    return values.max(axis=1, initial=0.0) if values.shape[1] else np.zeros(values.shape[0])


def _sample(n: int) -> np.ndarray:
    """Rows a layout or an explanation is judged on: the first 64 and 64 spread to the end."""
    far = np.geomspace(64, max(n - 1, 64), 64).astype(np.int64) if n > 64 else np.zeros(0)
    return np.unique(np.concatenate([np.arange(min(n, 64)), far, [n - 1]])).astype(np.int64)


# --------------------------------------------------------------------------- the verdict


def _ulp(dtype: str, factor: float) -> float:
    """The spacing of ``dtype`` just below ``factor`` (the table's largest value)."""
    exponent = math.floor(math.log2(factor))
    if 2.0**exponent == factor:
        exponent -= 1
    return _EPS[dtype] * 2.0**exponent


def _variants(rotary, full_width: int | None, given_offset: int):
    """``(offset, base, width, scaling, rotary)`` for each explanation tried."""
    offsets = sorted({given_offset, 0, 1})
    bases = [rotary.base] + [b for b in BASES if b != rotary.base]
    widths = [rotary.head_dim] + ([full_width] if full_width not in (None, rotary.head_dim) else [])
    for offset, base, width, scaled in itertools.product(offsets, bases, widths, (True, False)):
        if not scaled and is_plain(rotary.scaling.rope_type):
            continue
        try:
            scaling = rotary.scaling if scaled else parse(None, None, width)
            variant = rot.from_scaling(width, base, scaling)
        except (TypeError, ValueError):
            continue
        yield offset, base, width, "config" if scaled else "none", variant


def _decades(positions: np.ndarray, errors: np.ndarray) -> list:
    decades, lo = [], 0
    last = int(positions[-1]) if positions.size else 0
    while lo <= last:
        hi = 10 if lo == 0 else lo * 10
        mask = (positions >= lo) & (positions < hi)
        if mask.any():
            decades.append(
                (int(positions[mask][0]), int(positions[mask][-1]), float(errors[mask].max()))
            )
        lo = hi
    return decades


def compare(
    spec,
    arrays: list,
    offset: int = 0,
    layout: str | None = None,
    full_width=None,
    sampled: bool = False,
):
    """The cache's ``Report`` against ``spec``'s exact table at positions ``offset ..``:
    every row, or (``sampled``) the first 64 and 64 spread to the end, as an engine's audit
    takes them (never a multi-million-row exact table for a check)."""
    rotary = spec._one()
    found, dtype = views(arrays)
    n = found[0].rows
    if n == 0:
        raise ValueError("the cache has no rows: nothing to check")
    length = offset + n
    inv_freq, factor = rot.frequencies(rotary, length)
    ulp = _ulp(dtype, factor)
    found = _of_layout(found, layout)
    fitting = [v for v in found if v.width == rotary.head_dim]
    wider = [v for v in found if full_width is not None and v.width == full_width]
    if not fitting and wider:  # the width without partial_rotary_factor: a mismatch, named
        found_width = _explain(spec, arrays, layout, offset, full_width, _sample(n), dtype, n)
        return _width_report(wider[0], n, dtype, ulp, offset, found_width)
    if not fitting:
        raise _unfitting(arrays, layout, rotary.head_dim)
    rows = _sample(n)
    best, tie = _choose(fitting, arrays, rotary, offset + rows, rows, length, ulp)
    all_rows = rows if sampled else np.arange(n, dtype=np.int64)
    errors = _row_errors(best, rotary, offset + all_rows, all_rows, length)
    all_positions = offset + all_rows
    match_bound = MATCH_ULPS * ulp
    verdict, drift, worst, envelope = _verdict(
        errors, all_positions, match_bound, factor, float(inv_freq.max())
    )
    explanation: Explanation | None = None
    if verdict == "mismatch":
        explanation = _narrower(dtype, errors, envelope - match_bound, factor) or _explain(
            spec, arrays, layout, offset, full_width, rows, dtype, n
        )
    return _report(
        best.label,
        n,
        dtype,
        ulp,
        decades=_decades(all_positions, errors),
        largest=float(errors.max()),
        verdict=verdict,
        drift=drift,
        worst=worst,
        explanation=explanation,
        errors=errors,
        note=_tie_note(tie, verdict),
    )


def judge_rows(spec, cos, sin, positions, length: int, dtype: str = "float32") -> Report:
    """A ``Report`` of rows an engine computed at any ``positions`` (an engine's module probed
    at sampled offsets, not a stored cache): ``cos`` and ``sin`` of shape ``(rows, rot/2)``
    (the ``compact`` layout, the attention factor in them) against the exact table at the
    current length ``length``; the verdict by the same bounds as :func:`compare`, without an
    explanation (the caller probes the module for one)."""
    rotary = spec._one()
    positions = np.asarray(positions, np.int64)
    inv_freq, factor = rot.frequencies(rotary, length)
    ulp = _ulp(dtype, factor)
    want_cos, want_sin = _exact(rotary, positions, "compact", length)
    cos, sin = np.array(cos, np.float64), np.array(sin, np.float64)
    errors = np.maximum(_largest(cos, want_cos), _largest(sin, want_sin))
    order = np.argsort(positions, kind="stable")
    positions, errors = positions[order], errors[order]
    verdict, drift, worst, _ = _verdict(
        errors, positions, MATCH_ULPS * ulp, factor, float(inv_freq.max())
    )
    return _report(
        "compact", len(positions), dtype, ulp, decades=_decades(positions, errors),
        largest=float(errors.max()), verdict=verdict, drift=drift, worst=worst,
        explanation=None, errors=errors, note="",
    )  # fmt: skip


def _report(layout: str, rows: int, dtype: str, ulp: float, **verdict) -> Report:
    """A ``Report`` of ``rows`` rows of a ``dtype`` cache read as ``layout``."""
    return Report(layout=layout, rows=rows, dtype=dtype, rounding=ulp / 2, ulp=ulp, **verdict)


def _of_layout(found: list, layout: str | None) -> list:
    """The views of layout ``layout`` (every view for None), however each is read."""
    return found if layout is None else [v for v in found if v.layout == layout]


def _unfitting(arrays: list, layout: str | None, width: int) -> ValueError:
    """The error for a cache no view of which has the rotary width ``width``."""
    shapes = ", ".join(str(a.shape) for a in arrays)
    allowed = f"layout {layout!r}" if layout else f"any layout ({', '.join(LAYOUTS)})"
    return ValueError(f"the cache's arrays {shapes} do not fit {allowed} of rotary dim {width}")


def _width_report(view: View, n: int, dtype: str, ulp: float, offset: int, explanation) -> Report:
    """The mismatch of a cache as wide as the config's width without partial_rotary_factor."""
    return _report(
        view.label,
        n,
        dtype,
        ulp,
        decades=[],
        largest=math.inf,
        verdict="mismatch",
        drift=None,
        worst=(offset, math.inf, MATCH_ULPS * ulp),
        explanation=explanation,
        errors=np.full(n, np.inf),
        note="",
    )


def _judge(group: list, rotary, positions: np.ndarray, rows: np.ndarray, length: int) -> list:
    """``(largest error on rows, index, view)`` of each view of ``group``, least error first."""
    return sorted(
        (float(_row_errors(v, rotary, positions, rows, length).max()), k, v)
        for k, v in enumerate(group)
    )


def _choose(fitting: list, arrays: list, rotary, positions, rows, length: int, ulp: float):
    """The view whose values the exact table explains best, and the views as near; a cache
    that reads better as a cos without its sin than as vLLM's ``[cos | sin]`` is refused."""
    alone = _judge([v for v in fitting if v.alone], rotary, positions, rows, length)
    judged = _judge([v for v in fitting if not v.alone], rotary, positions, rows, length)
    if alone and (not judged or alone[0][0] < 0.5 * judged[0][0]):
        raise ValueError(
            f"the cache's one array {arrays[0].shape} reads as a cos table without its sin "
            "(its values fit that better than vLLM's [cos | sin]): pass its sin with --sin "
            "FILE, or --layout vllm if it is [cos | sin]"
        )
    best_error, _, best = judged[0]
    tie = [v for e, _, v in judged[1:] if e <= best_error * 1.01 + MATCH_ULPS * ulp]
    return best, tie


def _verdict(errors, positions, match_bound: float, factor: float, w_max: float) -> tuple:
    """``(verdict, drift, worst, envelope)`` of each row's error at its position."""
    envelope = match_bound + DRIFT_RATE * factor * positions * w_max
    outside = errors - match_bound
    worst_row = int(np.argmax(outside))
    worst = (int(positions[worst_row]), float(errors[worst_row]), match_bound)
    if (errors <= match_bound).all():
        return "match", None, worst, envelope
    if (errors <= envelope).all():
        over = outside > 0
        rate = float((outside[over] / (factor * positions[over] * w_max)).max())
        return "drift", "float32" if rate > 2.0**-40 else "float64", worst, envelope
    worst_row = int(np.argmax(errors - envelope))
    worst = (int(positions[worst_row]), float(errors[worst_row]), float(envelope[worst_row]))
    return "mismatch", None, worst, envelope


def _tie_note(tie: list, verdict: str) -> str:
    """A word on the views as near as the one kept: the verdict holds for each, each named."""
    if not tie:
        return ""
    names = ", ".join(v.label for v in tie)
    if verdict == "mismatch":
        return f"{names} as near: {'neither' if len(tie) == 1 else 'none'} matches"
    return f"{names} fit{'s' if len(tie) == 1 else ''} equally"


def _narrower(dtype: str, errors, drift, factor: float):
    """A cache whose values carry a narrower dtype's rounding (bfloat16 values stored as
    float32): the explanation is that dtype, at the layout and config found: the errors
    reach its rounding bound and stay within twice it (and the drift envelope)."""
    largest = float(errors.max())
    for narrow in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        rounding = _ulp(narrow, factor) / 2  # its errors reach its rounding, and stay there
        fits = (errors <= 2 * rounding + drift).all() and largest >= rounding / 2
        if _EPS[narrow] > _EPS[dtype] and fits:
            return Explanation("", 0, 0.0, 0, f"rounded to {narrow}", float(errors.max()))
    return None


def _explain(spec, arrays, layout, offset, full_width, rows, dtype, n) -> Explanation | None:
    """The explanation of a mismatch, from the finite set, that leaves the least error."""
    rotary = spec._one()
    found = _of_layout(views(arrays)[0], layout)
    best = None
    for start, base, width, scaling, variant in _variants(rotary, full_width, offset):
        for view in found:
            if view.width != width or view.alone:
                continue
            try:
                error = float(_row_errors(view, variant, start + rows, rows, start + n).max())
            except ValueError:
                continue
            if best is None or error < best[0]:
                best = (error, view, start, base, width, scaling, variant)
    if best is None:
        return None
    _, view, start, base, width, scaling, variant = best
    every = np.arange(n, dtype=np.int64)
    error = float(_row_errors(view, variant, start + every, every, start + n).max())
    return Explanation(view.label, start, base, width, scaling, error)


# --------------------------------------------------------------------------- in words


VERDICTS = {
    "match": "matches the exact table at {dtype} rounding",
    "drift": "drifts with the position: {drift} angles (an angle p * w formed in {drift} "
    "errs in proportion to the position; the exact table's error stays at the dtype's rounding)",
    "mismatch": "does not match this config",
}


def layer_line(report, what: str, extra: str = "") -> str:
    """An engine's layer report as its log line says it: the layers it covers (the first and
    how many more), ``what`` was compared, the verdict's words, its reason and note."""
    names = report.names[0] + (f" (+{len(report.names) - 1} more)" if len(report.names) > 1 else "")
    reason = f": {report.reason}" if report.reason else ""
    note = f" ({report.note})" if report.note else ""
    return f"{names} {what}: {report.text}{reason}{note}{extra}"


def layer_json(report) -> dict:
    """An engine's layer report as JSON-ready data."""
    data = report._asdict()
    data["names"] = list(report.names)
    data["decades"] = [{"first": a, "last": b, "error": e} for a, b, e in report.decades]
    return data


def number(value: float) -> str:
    """A parameter as people write it: ``500000.0``, ``1.0``, else 6 significant digits."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{value:.1f}"
    return f"{value:.6g}"


def verdict_text(report: Report) -> str:
    """The verdict in the words ``sinpe check`` prints."""
    return VERDICTS[report.verdict].format(dtype=report.dtype, drift=report.drift)


def explanation_text(report: Report, spec, offset: int) -> str:
    """A mismatch's likeliest reason, in the words ``sinpe check`` prints."""
    found = report.explanation
    if found is None:
        return "no explanation tried reads this cache"
    if found.scaling.startswith("rounded to"):
        return (
            f"best explanation: the values are {found.scaling} (stored as {report.dtype}), "
            "at this config and layout"
        )
    changes = []
    if found.layout != report.layout:
        changes.append(f"layout {found.layout}")
    if found.offset != offset:
        changes.append(f"offset {found.offset} (given {offset})")
    if found.base != spec.base:
        changes.append(f"base {found.base:g} (the config's is {spec.base:g})")
    if found.width != spec.head_dim:
        changes.append(f"rotary width {found.width} (the config's is {spec.head_dim})")
    if found.scaling == "none":
        changes.append(f"no scaling (the config's is {spec.scaling['rope_type']})")
    if not changes:
        return (
            "no explanation tried fits better (layouts, offsets 0 and 1, bases 1e4, 5e5, 1e6, "
            "the width without partial_rotary_factor, no scaling): the error stays "
            f"{found.error:.3g}"
        )
    return f"best explanation: {', '.join(changes)}: leaves an error of {found.error:.3g}"
