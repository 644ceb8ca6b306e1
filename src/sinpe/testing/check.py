"""``check_rope`` and ``assert_rope``: a candidate RoPE judged against the exact RoPE of a
config by the verdict core (``sinpe._verdict``: its bounds, its words). The kit reads the
candidate into rows or parameters and chooses nothing the core chooses: a table given is
judged whole, a RoPE computed on demand at the core's probe positions, at each length the
config's RoPE is judged at."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from .._check.probe import _regime
from .._rope.config import load_config, rope_config
from .._rope.rope import rope_frequencies
from .._rope.rope_types import ROPE_TYPES
from .._verdict.judge import (
    MAX_POSITION,
    Held,
    bounded,
    fit,
    judge_computed,
    judge_parameters,
    judge_table,
    parameters_verdict,
)
from .._verdict.judge import title as judge_title
from .._verdict.layers import lengths as core_lengths
from .._verdict.verdict import (
    DRIFT,
    MATCH,
    MISMATCH,
    Judged,
    Verdict,
    explained,
    finding,
    mismatch,
    number,
    strict,
)
from .candidates import (
    InvFreq,
    Rotates,
    WidthError,
    as_array,
    call_table,
    complex_pair,
    dtype_name,
    pair_columns,
)
from .corpus import CorpusConfig, kit_refusal

__all__ = ["Report", "assert_rope", "check_rope", "judged_lengths"]

_OK = (MATCH, DRIFT)


class _ReportFields(NamedTuple):
    """A report's fields: the verdict, the config's name, the lengths judged, the notes."""

    judgment: Verdict
    config: str
    lengths: tuple
    notes: tuple = ()


class Report(_ReportFields, Judged):
    """What ``check_rope`` found: the core's ``Verdict`` (``judgment``) and what it was
    judged on. ``verdict`` is ``"match"``, ``"drift"`` (float32 angles' error, growing with
    the position as the core's bound allows) or ``"mismatch"``; ``explanation`` says why in
    the core's words (and the notes: what was not judged, and why); ``ok``: a match or a
    drift."""

    __slots__ = ()

    @property
    def ok(self) -> bool:
        """Whether the candidate is the config's RoPE: a match, or a float32 drift."""
        return self.judgment.verdict in _OK

    @property
    def explanation(self) -> str:
        """The verdict in words: its reasons for a mismatch, else what it claims; the notes
        (what was not judged, and why) after it."""
        judgment = self.judgment
        words = judgment.reason or judgment.text if judgment.verdict == MISMATCH else judgment.text
        return "; ".join([words, *self.notes])

    def as_json(self) -> dict:
        """Strict JSON-ready data: the config, the lengths judged, the verdict's fields."""
        return strict(
            {
                "config": self.config,
                "lengths": list(self.lengths),
                "explanation": self.explanation,
                **self.judgment.as_json(),
                "notes": list(self.notes),
            }
        )


# --------------------------------------------------------------------------- the config


def _resolve(config, layer_type):
    """``(name, spec)`` of the config argument, one layer type's where it has several."""
    if isinstance(config, CorpusConfig):
        if config.refused is not None:
            raise ValueError(f"config {config.name} is not judged: {config.refused}")
        name, data = config.name, config.config
        layer_type = config.layer_type if layer_type is None else layer_type
    elif isinstance(config, (str, os.PathLike)):
        name, data = os.path.basename(os.fspath(config)), load_config(config)
    elif isinstance(config, Mapping):
        data = dict(config)
        name = str(data.get("_name_or_path") or data.get("model_type") or "config")
    else:
        raise TypeError(
            "config must be a dict, a path to a config.json or a sinpe.testing.CorpusConfig, "
            f"got {type(config).__name__}"
        )
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be a str or None, got {type(layer_type).__name__}")
    try:
        spec = rope_config(data)
    except ValueError as exc:
        raise ValueError(f"config {name}: sinpe refuses it: {exc}") from None
    if (refused := kit_refusal(spec)) is not None:
        raise ValueError(f"config {name}: {refused}")
    if spec.layer_types is not None:
        if layer_type is None:
            raise ValueError(
                f"config {name} has a RoPE per layer type ({', '.join(spec.layer_types)}): "
                "pass layer_type="
            )
        return f"{name}:{layer_type}", spec.layer(layer_type)
    if layer_type is not None:
        raise ValueError(f"layer_type: config {name} has one RoPE for every layer")
    return name, spec


def _pair_count(spec) -> int:
    """How many frequencies the RoPE has (an odd rotary width ``d``: ``(d + 1) // 2``)."""
    return int(spec.frequencies()[0].shape[0])


def _trained(spec) -> int:
    return int(spec.max_position_embeddings or 4096)


def _switch(spec, top: int) -> int | None:
    """The last length before a length-dependent RoPE's values first change (LongRoPE's
    original length, dynamic NTK's trained one), found from the spec's own length key."""
    if not spec.length_dependent():
        return None
    first = spec.length_key(1)
    if spec.length_key(top) == first:
        return None
    lo, hi = 1, top  # key(lo) == first, key(hi) != first
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if spec.length_key(mid) == first else (lo, mid)
    return lo


def judged_lengths(spec) -> list:
    """The current lengths a RoPE computed on demand is judged at: the core's (the trained
    length; LongRoPE's original one too), twice the trained length (past it), and both
    sides of a switch (the last length before a length-dependent RoPE changes, the first
    after)."""
    trained = _trained(spec)
    found = set(core_lengths(spec, trained)) | {min(2 * trained, MAX_POSITION)}
    switch = _switch(spec, 2 * trained)
    if switch is not None:
        found |= {switch, switch + 1}
    return sorted(found)


# --------------------------------------------------------------------------- judging


def _merged(judged: list, spec, explain) -> Verdict:
    """One verdict of the lengths judged: a mismatch said as LongRoPE's regime where another
    length reads as the config, else explained by ``explain(length)`` at the longest failing
    length that explains it (else the first mismatch's own reason); else the drift or match
    with the largest error."""
    failed = [(length, v) for length, v in judged if v.verdict == MISMATCH]
    if not failed:
        drifts = [v for _, v in judged if v.verdict == DRIFT] or [v for _, v in judged]
        return max(drifts, key=lambda v: v.largest or 0.0)
    length, verdict = failed[0]
    original = spec.scaling.get("original_max_position_embeddings")
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    regime = record.length_state == "switches" and isinstance(original, int)
    if regime and len(failed) < len(judged):
        passed = next(n for n, v in judged if v.verdict != MISMATCH)
        return explained(verdict, [_regime(spec, passed)])
    if verdict.findings and verdict.findings[0].code == "not_a_number":
        return verdict
    for length, failing in reversed(failed):  # the longest tells a length's effect best
        reasons = explain(length)
        if reasons:
            return explained(failing, reasons)
    return verdict


_TRIED = {  # a scaling key a port hard-codes or misreads: the values tried, in order
    "factor": (2.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0),
    "original_max_position_embeddings": (2048, 4096, 8192, 16384, 32768, 65536),
}
_KEY_REASON = {"factor": "factor", "original_max_position_embeddings": "original_length"}


def _misread_key(spec, got, length: int) -> list:
    """The reason where ``got`` (a candidate's inverse frequencies) is the config's scaling
    with one key changed (a factor hard-coded, another original length), within float32
    parameters' tolerance; else nothing."""
    scaling = dict(spec.scaling)
    got = np.asarray(got, np.float64)
    for key, values in _TRIED.items():
        if key not in scaling:
            continue
        for value in values:
            if value == scaling[key]:
                continue
            try:
                want, _ = rope_frequencies(
                    spec.head_dim,
                    base=spec.base,
                    scaling={**scaling, key: value},
                    seq_len=length,
                    max_position_embeddings=spec.max_position_embeddings,
                )
            except (TypeError, ValueError):
                continue
            if want.shape == got.shape and np.allclose(got, want, rtol=1e-5, atol=0.0):
                title = judge_title(spec)
                said: tuple = (number(value), number(scaling[key]))
                if key != "factor":
                    said = (int(value), int(scaling[key]))
                engine, config = said
                return [finding(_KEY_REASON[key], title=title, engine=engine, config=config)]
    return []


def _with_key(found: list, spec, got, length: int) -> list:
    """``found`` with a generic frequencies reason replaced by a misread key's, where one
    explains the frequencies."""
    if got is None or not any(f.code in ("frequencies", "uniform_factor") for f in found):
        return found
    key = _misread_key(spec, got, length)
    if not key:
        return found
    return [f for f in found if f.code not in ("frequencies", "uniform_factor")] + key


def _inv_freq(candidate: InvFreq, spec) -> tuple:
    inv_freq, _ = as_array(candidate.inv_freq, "InvFreq.inv_freq")
    if inv_freq.ndim != 1:
        raise ValueError(f"InvFreq.inv_freq must be 1-D (one per pair), got shape {inv_freq.shape}")
    factor = candidate.attention_factor
    if isinstance(factor, bool) or not isinstance(factor, (int, float, np.floating, np.integer)):
        raise TypeError(f"InvFreq.attention_factor must be a number, got {type(factor).__name__}")
    held = Held(width=2 * inv_freq.shape[0], inv_freq=inv_freq, attention_factor=float(factor))
    judged, found_at = [], {}
    for length in judged_lengths(spec):
        found, _ = judge_parameters(spec, held, length)
        found_at[length] = _with_key(found, spec, inv_freq, length)
        judged.append((length, parameters_verdict(found)))
    verdict = _merged(judged, spec, lambda length: found_at[length])
    return verdict, tuple(n for n, _ in judged)


def _squeeze(array: np.ndarray, name: str) -> np.ndarray:
    while array.ndim > 2 and array.shape[0] == 1:  # (1, n, d), (1, 1, n, d): a batch of one
        array = array[0]
    if array.ndim != 2:
        raise ValueError(f"{name} must be (positions, columns), got shape {array.shape}")
    return array


def _start(positions, rows: int | None) -> tuple[int, int | None]:
    """``(first position, rows)`` of ``positions``: ``None`` (from 0), an int (the first
    position), or consecutive integers (``range``, a 1-D array)."""
    if positions is None:
        return 0, rows
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        return bounded("positions", positions, MAX_POSITION), rows
    try:
        found = np.asarray(positions)
    except Exception:
        found = None
    if found is None or found.ndim != 1 or found.size == 0 or found.dtype.kind not in "iu":
        raise TypeError("positions must be None, an int (the first position) or consecutive ints")
    if not (np.diff(found) == 1).all():
        raise ValueError(
            "positions must be consecutive (each row of a table stands for the next position): "
            "every entry given is judged, so give the rows of the positions you hold"
        )
    if rows is not None and found.size != rows:
        raise ValueError(f"positions has {found.size} entries where the table has {rows} rows")
    return bounded("positions[0]", int(found[0]), MAX_POSITION), int(found.size)


def _explain_rows(spec, read_pairs, end: int | None):
    """``explain(length)``: what the candidate's own angles show (base, scaling, factor)."""

    def explain(length: int):
        held = fit(read_pairs, end)
        if held is None:
            return []
        return _with_key(judge_parameters(spec, held, length)[0], spec, held.inv_freq, length)

    return explain


def _arrays(candidate, spec, positions, layout, seq_len) -> tuple:
    cos, cos_dtype = as_array(candidate[0], "cos")
    sin, sin_dtype = as_array(candidate[1], "sin")
    cos, sin = _squeeze(cos, "cos"), _squeeze(sin, "sin")
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin differ in shape: {cos.shape} and {sin.shape}")
    h = _pair_count(spec)
    pairs = pair_columns(cos.shape[1], h, layout, "cos")
    rows = bounded("the table's rows", cos.shape[0], MAX_POSITION, 1)
    start, _ = _start(positions, rows)
    length = seq_len or max(_trained(spec), start + rows)
    first = pairs[:h] if layout != "interleaved" or pairs.shape[0] == h else np.arange(0, 2 * h, 2)
    columns = np.flatnonzero(np.isin(np.arange(pairs.shape[0]), first))

    def read(chunk):
        index = chunk - start
        return cos[index], sin[index]

    def read_pairs(chunk):
        index = chunk - start
        return cos[index][:, columns], sin[index][:, columns]

    dtype = dtype_name((cos_dtype, sin_dtype))
    table = judge_table(spec._one(), read, rows, pairs, dtype, length, start)
    verdict = table.verdict
    if verdict.verdict == MISMATCH and verdict.findings[0].code != "not_a_number" and start == 0:
        verdict = explained(verdict, _explain_rows(spec, read_pairs, rows)(length))
    return verdict, (length,)


def _rotation_reader(candidate: Rotates, spec):
    """A callable ``positions -> (cos, sin)`` of a query rotation: unit queries rotated (its
    stated layout's), and the rotation it shows at position 1."""
    if not callable(candidate.fn):
        raise TypeError(f"Rotates.fn must be callable, got {type(candidate.fn).__name__}")
    if candidate.layout not in ("half", "interleaved"):
        raise ValueError(
            f"Rotates.layout must be 'half' or 'interleaved', got {candidate.layout!r}"
        )
    width = spec.head_dim
    if width % 2:
        raise ValueError(
            f"Rotates: the config's rotary width {width} is odd; give the candidate's cos and "
            "sin instead (one column per frequency)"
        )
    h = width // 2

    def rotate(q, positions):
        out, dtype = as_array(candidate.fn(q, positions), "what Rotates.fn returned")
        if out.shape != q.shape:
            raise ValueError(f"Rotates.fn returned shape {out.shape} for a query of {q.shape}")
        return out, dtype

    def table(positions, seq_len=None):
        positions = np.asarray(positions, np.int64)
        q = np.zeros((positions.shape[0], width), np.float32)
        if candidate.layout == "half":
            q[:, :h] = 1.0
        else:
            q[:, 0::2] = 1.0
        out, dtype = rotate(q, positions)
        if candidate.layout == "half":
            return out[:, :h].astype(dtype), out[:, h:].astype(dtype)
        return out[:, 0::2].astype(dtype), out[:, 1::2].astype(dtype)

    e0 = np.zeros((1, width), np.float32)
    e0[0, 0] = 1.0
    y, _ = rotate(e0, np.array([1], np.int64))
    if abs(y[0, 1]) > 1e-3 and abs(y[0, h]) <= 1e-3:
        shown = "pairs"
    elif abs(y[0, h]) > 1e-3 and abs(y[0, 1]) <= 1e-3:
        shown = "halves"
    else:
        shown = None
    return table, shown


class _PastTrained(Exception):
    """The candidate failed at a length past the config's trained one."""


def _computed(fn, spec, layout, name: str) -> tuple:
    """A callable ``positions -> (cos, sin)``, judged at the core's probe positions at each
    length of ``judged_lengths``: ``(verdict, lengths judged, notes)``; a length past the
    trained one where the candidate raises (a cache sized to the trained length) is noted
    and left out."""
    h = _pair_count(spec)
    probe = call_table(fn, np.arange(2, dtype=np.int64), _trained(spec), name)
    pairs = pair_columns(probe[0].shape[1] if probe[0].ndim == 2 else -1, h, layout, name)
    dtype = probe[2]
    columns = (
        np.arange(h) if layout != "interleaved" or pairs.shape[0] == h else np.arange(0, 2 * h, 2)
    )

    trained = _trained(spec)

    def reader(length: int, only_pairs: bool = False):
        def read(chunk):
            try:
                cos, sin, _ = call_table(fn, np.asarray(chunk, np.int64), length, name)
            except (IndexError, ValueError, RuntimeError) as exc:
                if length <= trained:
                    raise
                raise _PastTrained(f"{type(exc).__name__}: {exc}") from exc
            cos, sin = (
                _squeeze(cos, f"the cos {name} returned"),
                _squeeze(sin, f"the sin {name} returned"),
            )
            return (cos[:, columns], sin[:, columns]) if only_pairs else (cos, sin)

        return read

    judged, notes = [], []
    for length in judged_lengths(spec):
        try:
            table = judge_computed(spec._one(), reader(length), pairs, dtype, length)
        except _PastTrained as exc:  # a cache of the trained length: said, not a crash
            text = " ".join(str(exc).split())[:200]
            notes.append(f"not judged at length {length:,} (past the trained {trained:,}): {text}")
            continue
        judged.append((length, table.verdict))

    def explain(length: int):
        return _explain_rows(spec, reader(length, True), length)(length)

    return _merged(judged, spec, explain), tuple(n for n, _ in judged), tuple(notes)


def _held_callable(fn, spec, positions, layout, seq_len, name: str) -> tuple:
    """A callable asked for given positions: its rows judged as a table held (every one)."""
    start, rows = _start(positions, None)
    if rows is None:
        raise ValueError("positions must be a run of consecutive ints for a callable candidate")
    h = _pair_count(spec)
    first = call_table(
        fn, np.arange(start, start + min(rows, 2), dtype=np.int64), seq_len or 1, name
    )
    pairs = pair_columns(first[0].shape[1], h, layout, name)
    length = seq_len or max(_trained(spec), start + rows)

    def read(chunk):
        cos, sin, _ = call_table(fn, np.asarray(chunk, np.int64), length, name)
        return cos, sin

    table = judge_table(spec._one(), read, rows, pairs, first[2], length, start)
    return table.verdict, (length,)


def check_rope(candidate, config, *, positions=None, layout=None, layer_type=None, seq_len=None):
    """A candidate RoPE judged against the exact RoPE of ``config``.

    Parameters
    ----------
    candidate
        One of: a ``(cos, sin)`` pair of arrays (NumPy, torch, MLX, JAX), each
        ``(positions, rotary_dim / 2)`` or ``(positions, rotary_dim)`` (each pair twice:
        ``layout``), leading dimensions of 1 dropped; a complex table (``freqs_cis``: its
        real and imaginary parts); :class:`InvFreq` (``inv_freq`` and
        its attention factor); a callable ``positions -> (cos, sin)`` (given int64
        positions, and ``seq_len=`` where it takes one); :class:`Rotates` (a function
        rotating queries, in a stated layout).
    config : dict, str, os.PathLike or CorpusConfig
        The model's ``config.json``, parsed or by path, or an entry of
        :func:`sinpe.testing.configs`.
    positions : int or sequence of consecutive ints, optional
        Which positions a table's rows stand for (an int: the first; default 0 on). For a
        callable, the positions to ask it for (every row judged); by default a callable is
        judged at the core's probe positions up to the config's trained length, twice that,
        and both sides of a length switch (LongRoPE, dynamic).
    layout : {"half", "interleaved"}, optional
        How a table of ``rotary_dim`` columns holds each pair twice (default ``"half"``:
        ``cat(freqs, freqs)``).
    layer_type : str, optional
        For a config with a RoPE per layer type (Gemma 3 and 4, ...): which one.
    seq_len : int, optional
        The current length a table was made for (dynamic, LongRoPE); default the trained
        length, or the table's end past it.

    Returns
    -------
    Report
        ``.verdict`` (``"match"``, ``"drift"``, ``"mismatch"``), ``.explanation``,
        ``.ok``, ``.judgment`` (the core's ``Verdict``) and ``.as_json()``.

    Raises
    ------
    TypeError, ValueError
        For a candidate or config that cannot be judged, naming the argument; a config
        sinpe refuses says why.
    """
    name, spec = _resolve(config, layer_type)
    if layout is not None and layout not in ("half", "interleaved"):
        raise ValueError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    if seq_len is not None:
        seq_len = bounded("seq_len", seq_len, MAX_POSITION, 1)
    try:
        verdict, judged, notes = _judge(candidate, spec, positions, layout, seq_len)
    except WidthError as error:  # another width rotated: the config's RoPE it is not
        verdict = mismatch([finding("cache_width", engine=error.columns, config=2 * error.h)])
        judged, notes = (), ()
    return Report(verdict, name, tuple(judged), notes)


def _judge(candidate, spec, positions, layout, seq_len) -> tuple:
    """check_rope's candidate judged by its kind: (verdict, lengths judged, notes)."""
    notes: tuple = ()
    if isinstance(candidate, InvFreq):
        verdict, judged = _inv_freq(candidate, spec)
    elif isinstance(candidate, Rotates):
        table, shown = _rotation_reader(candidate, spec)
        stated = "halves" if candidate.layout == "half" else "pairs"
        structural, _ = judge_parameters(spec, Held(rotation=shown or stated), None)
        said = []
        if shown is not None and shown != stated:
            said.append(f"Rotates states layout {candidate.layout!r} but rotates {shown}")
        if positions is None:
            verdict, judged, notes = _computed(table, spec, None, "Rotates.fn")
        else:
            verdict, judged = _held_callable(table, spec, positions, None, seq_len, "Rotates.fn")
        notes = tuple(said) + tuple(notes)
        if structural:
            verdict = verdict._replace(
                verdict=MISMATCH,
                findings=tuple(structural)
                + tuple(f for f in verdict.findings if verdict.verdict == MISMATCH),
                drift=None,
            )
    elif isinstance(candidate, (tuple, list)) and len(candidate) == 2:
        verdict, judged = _arrays(candidate, spec, positions, layout, seq_len)
    elif (parts := complex_pair(candidate)) is not None:
        verdict, judged = _arrays(parts, spec, positions, layout, seq_len)
    elif callable(candidate):
        if positions is None:
            verdict, judged, notes = _computed(candidate, spec, layout, "the candidate")
        else:
            verdict, judged = _held_callable(
                candidate, spec, positions, layout, seq_len, "the candidate"
            )
    else:
        raise TypeError(
            "candidate must be a (cos, sin) pair of arrays, sinpe.testing.InvFreq, a callable "
            f"positions -> (cos, sin) or sinpe.testing.Rotates, got {type(candidate).__name__}"
        )
    return verdict, judged, notes


def assert_rope(
    candidate,
    config,
    *,
    positions=None,
    layout=None,
    layer_type=None,
    seq_len=None,
    allow_drift=True,
):
    """:func:`check_rope`, raising ``AssertionError`` unless the candidate matches (or, with
    ``allow_drift``, drifts as float32 angles do); its message is the config's name and the
    verdict's explanation. Returns the ``Report``."""
    report = check_rope(
        candidate,
        config,
        positions=positions,
        layout=layout,
        layer_type=layer_type,
        seq_len=seq_len,
    )
    if report.verdict == MATCH or (allow_drift and report.verdict == DRIFT):
        return report
    raise AssertionError(f"{report.config}: {report.explanation}")
