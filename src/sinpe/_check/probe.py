"""The probe adapter: a RoPE module known only by its call. MLX's modules (and any engine's
whose rotary module can be called on an input) are called as ``call(x, offset)`` with ``x``
shaped ``(1, 1, L, width + 4)`` float32 and return the rotated ``x``; a probe input gives
the table back: for a module rotating halves, ``x = [1]*h + [0]*h`` returns
``[A cos | A sin]``; for pairs, ``x = [1, 0, 1, 0, ...]`` returns ``A cos`` at even and
``A sin`` at odd elements (``A``: the attention factor it applies). The rows go to the
verdict core (``judge.judge_computed``) at the core's probe positions up to the model's length; a
mismatch is explained from what the module's own angles show (``judge.fit``). No engine is
imported here: the adapter of each engine turns its module into ``call``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._verdict.judge import MAX_WIDTH, Held, bounded, fit, judge_computed, judge_parameters, title
from .._verdict.layers import lengths
from .._verdict.verdict import (
    DRIFT,
    MATCH,
    MISMATCH,
    Verdict,
    explained,
    finding,
    mismatch,
    unchecked,
)

__all__ = [
    "PROBE_EXTRA",
    "PastWidth",
    "judge_module",
    "judge_rows",
    "measure",
    "rotation_of",
]

PROBE_EXTRA = 4  # columns past the rotary width: they must come back untouched


def rotation_of(call: Callable, dims: int) -> str | None:
    """``"halves"`` or ``"pairs"``: where element 0 sends its sine at position 1 (``None``:
    neither)."""
    x = np.zeros((1, 1, 1, dims), np.float32)
    x[..., 0] = 1.0
    y = call(x, 1)[0, 0, 0]
    if abs(y[1]) > 1e-3 and abs(y[dims // 2]) <= 1e-3:
        return "pairs"
    if abs(y[dims // 2]) > 1e-3 and abs(y[1]) <= 1e-3:
        return "halves"
    return None


class PastWidth(ValueError):
    """The module changes elements past its rotary width."""


def measure(call: Callable, dims: int, rotation: str, offset: int, length: int) -> tuple:
    """``(cos, sin)``, each ``(length, dims/2)`` float64 of the module's values at positions
    ``offset .. offset + length - 1`` (its attention factor in them); ``PastWidth`` where it
    changes elements past its width."""
    x = np.zeros((1, 1, length, dims + PROBE_EXTRA), np.float32)
    if rotation == "halves":
        x[..., : dims // 2] = 1.0
    else:
        x[..., 0:dims:2] = 1.0
    x[..., dims:] = 1.0
    y = np.asarray(call(x, offset), np.float64)[0, 0]
    if not np.all(y[:, dims:] == 1.0):
        raise PastWidth()
    if rotation == "halves":
        return y[:, : dims // 2], y[:, dims // 2 : dims]
    return y[:, 0:dims:2], y[:, 1:dims:2]


def _reader(call: Callable, dims: int, rotation: str) -> Callable:
    """``read(positions)`` for the core: the module called on each run of consecutive
    positions."""

    def read(positions: np.ndarray):
        positions = np.asarray(positions, np.int64)
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        parts = [
            measure(call, dims, rotation, int(run[0]), len(run))
            for run in np.split(positions, breaks)
            if run.size
        ]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    return read


def judge_module(spec, call: Callable, dims: int, trained: int | None = None) -> tuple:
    """``(Verdict, rotation)`` of a module against ``spec``: its width and rotation, then its
    table at the core's probe positions at each length the spec is judged at (LongRoPE: the
    original length and the trained one), a mismatch explained by what its angles show."""
    dims = bounded("the module's rotary width", dims, MAX_WIDTH, 2)
    rotation = rotation_of(call, dims)
    if rotation is None:
        return unchecked("rotation_unknown"), None
    structural, _ = judge_parameters(spec, Held(width=dims, rotation=rotation), None)
    if any(f.code == "rotary_width" for f in structural):
        return mismatch(structural), rotation
    try:
        judgment = judge_rows(spec, lambda _: _reader(call, dims, rotation), dims, trained)
    except PastWidth:
        return mismatch([finding("past_width")]), rotation
    if structural:
        judgment = _with_structural(judgment, structural)
    return judgment, rotation


def judge_rows(spec, read_at: Callable, dims: int, trained: int | None = None) -> Verdict:
    """The ``Verdict`` of an engine known by its rows: ``read_at(length)`` gives the
    ``read(positions)`` of a sequence of that length (``(cos, sin)``, each ``(rows, dims/2)``
    float64, pair ``j`` in column ``j``), judged at the core's probe positions at each length
    the spec is judged at (LongRoPE: the original length and the trained one), a mismatch
    explained by what its angles show."""
    trained = int(trained or spec.max_position_embeddings or 4096)
    pairs = np.arange(dims // 2)
    judged, reads = [], {}
    for length in lengths(spec, trained):
        reads[length] = read = read_at(length)
        table = judge_computed(spec._one(), read, pairs, "float32", length)
        judged.append((length, table.verdict))
    return _combine(spec, judged, reads)


def _combine(spec, judged: list, reads: dict) -> Verdict:
    """One verdict of the lengths judged: the worst, a regime that fails where the other
    reads as the config said as such."""
    failed = [(length, v) for length, v in judged if v.verdict == MISMATCH]
    worst = failed[0][1] if failed else _worst(v for _, v in judged)
    decades: dict = {}
    for _, verdict in judged:
        for first, last, error in verdict.decades:
            decades[(first, last)] = max(decades.get((first, last), 0.0), error)
    merged = tuple(sorted((a, b, e) for (a, b), e in decades.items()))
    largest = max((v.largest for _, v in judged if v.largest is not None), default=None)
    worst = worst._replace(decades=merged, largest=largest)
    if failed and len(failed) < len(judged):
        passed = next(length for length, v in judged if v.verdict != MISMATCH)
        worst = explained(worst, [_regime(spec, passed)])
    elif failed and worst.findings[0].code != "not_a_number":
        held = fit(reads[failed[0][0]], None)
        if held is not None:
            worst = explained(worst, judge_parameters(spec, held, failed[0][0])[0])
    return worst


def _with_structural(judgment: Verdict, structural: list) -> Verdict:
    """Structural findings (the width, the rotation) first, then the table's reasons."""
    reasons = structural + [f for f in judgment.findings if judgment.verdict == MISMATCH]
    return mismatch(reasons)._replace(
        decades=judgment.decades, largest=judgment.largest, dtype=judgment.dtype
    )


def _worst(verdicts) -> Verdict:
    verdicts = list(verdicts)
    drifts = [v for v in verdicts if v.verdict == DRIFT]
    if drifts:
        return max(drifts, key=lambda v: v.largest or 0.0)
    return next(v for v in verdicts if v.verdict == MATCH)


def _regime(spec, passed: int):
    """LongRoPE's factors of one regime used at every length."""
    original = spec.scaling.get("original_max_position_embeddings")
    regime = "long" if passed > original else "short"
    other = "short" if regime == "long" else "long"
    op = "<=" if other == "short" else ">"
    return finding(
        "length_regime", title=title(spec), engine=regime, config=other, op=op, original=original
    )
