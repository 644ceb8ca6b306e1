"""The verdict core, part one: the verdicts, every reason's words and JSON field, and strict
JSON. One finding reads the same whichever engine it comes from (a cache file, a GGUF file as
llama.cpp reads it, a vLLM layer, an MLX module): an adapter names a reason by its code and
hands over the values; the words are made here, from ``words.py``'s, and only here.

The bounds each verdict claims are made in ``judge.py`` (the other part of the core), which
also says how they are derived; ``layers.py`` says which layer's spec applies and at which
lengths LongRoPE is judged.
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple, Protocol

import numpy as np

from .words import _EVIDENCE, _TEXTS, NOTES, REASONS

__all__ = [
    "DRIFT",
    "MATCH",
    "MISMATCH",
    "REFUSED",
    "REASONS",
    "UNCHECKED",
    "VERDICTS",
    "Finding",
    "Judged",
    "Verdict",
    "dumps",
    "evidence",
    "explained",
    "explanation",
    "finding",
    "for_layer",
    "layer_json",
    "layer_line",
    "note",
    "number",
    "overall",
    "refusal",
    "strict",
    "worst_text",
]

MATCH, DRIFT, MISMATCH, UNCHECKED, REFUSED = "match", "drift", "mismatch", "unchecked", "refused"
VERDICTS = (MATCH, DRIFT, MISMATCH, UNCHECKED, REFUSED)

# --------------------------------------------------------------------------- the words
# (words.py: every reason's, every note's)


class Finding(NamedTuple):
    """One reason a verdict gives: its code (the JSON field), its words (the same from every
    engine), the values on each side (``None`` where a value does not exist or is not a
    number), and what this engine's adapter knows of its cause (``evidence``)."""

    code: str
    words: str
    engine: object = None
    config: object = None
    evidence: str = ""

    @property
    def text(self) -> str:
        """The words, and the evidence in parentheses."""
        return f"{self.words} ({self.evidence})" if self.evidence else self.words

    def as_json(self) -> dict:
        return strict({**self._asdict(), "text": self.text})


def _fill(template: str, fields: dict) -> str:
    return template.format(**fields)


def finding(code: str, *, evidence: tuple = (), **fields) -> Finding:
    """The ``Finding`` of reason ``code`` (a key of ``REASONS``) with its fields; ``evidence``:
    ``(code, fields)`` pairs of ``_EVIDENCE`` said after it in parentheses."""
    fields.setdefault("title", "")
    fields.setdefault("detail", "")
    words = _fill(REASONS[code], fields)
    causes = "; ".join(_fill(_EVIDENCE[kind], {"title": "", **extra}) for kind, extra in evidence)
    return Finding(code, words, _value(fields.get("engine")), _value(fields.get("config")), causes)


def explanation(error: float, layout=None, offset=None, given=0, width=None, config_width=None):
    """A cache's best explanation: the layout, offset and width that read it as the config
    (each ``None`` where the given one does), and the error that leaves."""
    changes = []
    if layout is not None:
        changes.append(f"layout {layout}")
    if offset is not None:
        changes.append(f"offset {offset} (given {given})")
    if width is not None:
        changes.append(f"rotary width {width} (the config's is {config_width})")
    return finding("explanation", engine=", ".join(changes), error=error)


def for_layer(found: Finding, layer_type: str | None) -> Finding:
    """A finding said of one kind of layer (``sliding_attention layers: ...``)."""
    return found._replace(words=f"{layer_type} layers: {found.words}") if layer_type else found


def evidence(code: str, **fields) -> str:
    """The words of one ``_EVIDENCE`` entry (a detail said inside a reason)."""
    fields.setdefault("title", "")
    return _fill(_EVIDENCE[code], fields)


def note(code: str, **fields) -> str:
    """A note's words (a key of ``NOTES``): what is true and worth saying, not a reason."""
    return _fill(NOTES[code], fields)


def _value(value):
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return str(value)


def number(value: float) -> str:
    """A parameter as people write it: ``500000.0``, ``1.0``, else 6 significant digits
    (``nan``, ``inf`` as Python writes them)."""
    value = float(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{value:.1f}"
    return f"{value:.6g}"


# --------------------------------------------------------------------------- a verdict


class Verdict(NamedTuple):
    """What the core concludes about one thing an engine holds.

    ``verdict`` is one of ``VERDICTS``; ``bound`` the bound it claims (``kind`` says of what:
    ``"table"``, an absolute error of cos/sin entries; ``"parameters"``, a relative error of
    frequencies and factors); ``findings`` the reasons (empty for a match or a drift);
    ``largest`` the largest error seen (``None`` where nothing was compared); ``decades``
    ``(first, last, largest error)`` by position decade; ``worst`` ``(position, error,
    allowed)``; ``drift`` ``"float32"`` or ``"float64"`` (the angles a drift comes from);
    ``dtype`` the table's."""

    verdict: str
    findings: tuple = ()
    bound: float | None = None
    kind: str = "table"
    largest: float | None = None
    decades: tuple = ()
    worst: tuple | None = None
    drift: str | None = None
    dtype: str | None = None
    compared: int | None = None
    held: int | None = None

    @property
    def scope(self) -> str:
        """What the bound was checked on: every entry held, or the entries compared."""
        if self.compared is None:
            return "each entry"
        if self.held is not None and self.compared == self.held:
            return "every entry"
        if self.held is not None:
            return f"{self.compared:,} of the {self.held:,} entries held"
        return f"each of the {self.compared:,} entries computed at the positions probed"

    @property
    def text(self) -> str:
        """The verdict in words, with the bound it claims."""
        if self.verdict == MATCH and self.kind == "parameters":
            return (
                "reads as the config: frequencies and factors within "
                f"{self.bound:.2g} (relative: 16 float32 ulps)"
            )
        if self.verdict == MATCH and self.kind == "logprobs":
            return (
                f"runs the config's model: log-probabilities within {self.bound:.2g} of the exact "
                "float64 twin's at every p (float32 arithmetic)"
            )
        if self.verdict == DRIFT and self.kind == "logprobs":
            return (
                "runs the config's model, drifting with the position: log-probabilities within "
                "what float32 angles move them by at each p"
            )
        if self.verdict == MATCH:
            return (
                f"matches the exact table at {self.dtype} rounding ({self.scope} within "
                f"{self.bound:.3g}: 8 ulps)"
            )
        if self.verdict == DRIFT:
            return (
                f"drifts with the position: {self.drift} angles ({self.scope} within 8 ulps plus "
                f"what a {self.drift} angle p * w errs by at its position and frequency; the "
                "exact table's error stays at the dtype's rounding)"
            )
        if self.verdict in (UNCHECKED, REFUSED):
            return f"{self.verdict}: {self.reason}"
        return _TEXTS[MISMATCH if self.kind != "parameters" else "misread"]

    @property
    def reason(self) -> str:
        """The reasons' words, joined."""
        return "; ".join(self.reasons)

    @property
    def reasons(self) -> tuple:
        """Each reason's words."""
        return tuple(f.text for f in self.findings)

    def as_json(self) -> dict:
        """Strict JSON-ready data: the verdict, its words, its bound, the reasons."""
        return strict(
            {
                "verdict": self.verdict,
                "verdict_text": self.text,
                "bound": None if self.bound is None else {"value": self.bound, "of": self.kind},
                "reasons": [f.as_json() for f in self.findings],
                "largest_error": self.largest,
                "decades": [{"first": a, "last": b, "error": e} for a, b, e in self.decades],
                "worst": None
                if self.worst is None
                else dict(zip(("position", "error", "allowed"), self.worst)),
                "drift": self.drift,
                "dtype": self.dtype,
                "entries": None
                if self.compared is None
                else {"compared": self.compared, "held": self.held},
            }
        )


class _HasJudgment(Protocol):
    @property
    def judgment(self) -> Verdict: ...


class Judged:
    """What every adapter's report says of its ``judgment`` (the core's ``Verdict``), read
    from it, never copied: a report class is its fields (a ``NamedTuple``) and this."""

    __slots__ = ()

    @property
    def verdict(self: _HasJudgment) -> str:
        return self.judgment.verdict

    @property
    def text(self: _HasJudgment) -> str:
        return self.judgment.text

    @property
    def reason(self: _HasJudgment) -> str:
        return self.judgment.reason

    @property
    def reasons(self: _HasJudgment) -> tuple:
        return self.judgment.reasons

    @property
    def largest(self: _HasJudgment) -> float | None:
        return self.judgment.largest

    @property
    def decades(self: _HasJudgment) -> tuple:
        return self.judgment.decades

    @property
    def drift(self: _HasJudgment) -> str | None:
        return self.judgment.drift

    @property
    def worst(self: _HasJudgment) -> tuple | None:
        return self.judgment.worst


def explained(judgment: Verdict, reasons) -> Verdict:
    """A table's mismatch with its reasons in place of the generic one (where its worst
    entry is; ``worst_text`` still says it), when an adapter found any."""
    reasons = tuple(reasons)
    return judgment._replace(findings=reasons) if reasons else judgment


def worst_text(judgment: Verdict) -> str:
    """Where a table is furthest from what its verdict allows, in words."""
    if judgment.worst is None:
        return ""
    position, error, allowed = judgment.worst
    return finding("table", position=position, engine=error, config=allowed).text


def mismatch(findings, **fields) -> Verdict:
    """A mismatch for ``findings`` (at least one)."""
    findings = tuple(findings)
    assert findings, "a mismatch has a reason"
    return Verdict(MISMATCH, findings, **fields)


def overall(verdicts) -> Verdict:
    """The verdict of everything found (a census: each cache, part or layer's verdict): a
    mismatch with every reason; else, where something found was not judged, not judged with
    its reasons (never a match while anything is unjudged); else the worst drift, else the
    match of the largest error."""
    verdicts = list(verdicts)
    assert verdicts, "a census has something in it"
    for kind in (MISMATCH, UNCHECKED):
        found = [v for v in verdicts if v.verdict == kind]
        if found:
            reasons = {f.text: f for v in found for f in v.findings}
            return Verdict(
                kind, tuple(reasons.values()), kind="none" if kind == UNCHECKED else "table"
            )
    for kind in (DRIFT, MATCH):
        found = [v for v in verdicts if v.verdict == kind]
        if found:
            return max(found, key=lambda v: v.largest or 0.0)
    return verdicts[0]


def unchecked(code: str, **fields) -> Verdict:
    """Not judged, for the reason ``code``."""
    return not_judged(finding(code, **fields))


def not_judged(found: Finding) -> Verdict:
    """Not judged, for the reason ``found`` (a finding made elsewhere: a refusal's)."""
    return Verdict(UNCHECKED, (found,), kind="none")


def refusal(reason: str) -> dict:
    """The one JSON object of a refused input or a usage error (``--json``): every outcome
    of a command asked for JSON is one object, a refusal included."""
    return {"verdict": REFUSED, "reason": " ".join(str(reason).split()), "exit_code": 2}


# --------------------------------------------------------------------------- a layer


def layer_line(names, what, judgment: Verdict, notes=(), outcome: str = "") -> str:
    """An engine layer's report as its log line: the layers it covers (the first and how
    many more), ``what`` was compared (words, joined), the verdict's words, its reasons and
    notes, and what mode exact did (``outcome``)."""
    names = list(names)
    what = what if isinstance(what, str) else " ".join(str(w) for w in what if w)
    extra = f" [exact: {outcome}]" if outcome else ""
    shown = names[0] + (f" (+{len(names) - 1} more)" if len(names) > 1 else "")
    reason = judgment.reason
    words = judgment.text if judgment.verdict != UNCHECKED else UNCHECKED
    said = f": {reason}" if reason else ""
    notes = "; ".join(n for n in notes if n)
    return f"{shown} {what}: {words}{said}{f' ({notes})' if notes else ''}{extra}"


def layer_json(names, cls: str, judgment: Verdict, held: dict, after: dict | None = None):
    """An engine layer's report as strict JSON: the layers it covers, its class, what the
    engine ``held`` (its width, ...), the verdict's fields, then ``after`` (notes, ...). A
    field both give is the verdict's where it has one (a table's dtype), else what was held
    (a cache's dtype where no table was judged)."""
    verdict = judgment.as_json()
    kept = {key: value for key, value in verdict.items() if value is not None or key not in held}
    return strict({"names": list(names), "cls": cls, **held, **kept, **(after or {})})


# --------------------------------------------------------------------------- strict JSON


def strict(data):
    """``data`` with every number that does not exist (NaN, an infinity) as ``None``, tuples
    as lists and NumPy scalars as Python's: what ``json.dumps(allow_nan=False)`` takes."""
    if isinstance(data, dict):
        return {str(k): strict(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict(v) for v in data]
    if isinstance(data, np.ndarray):
        return [strict(v) for v in data.tolist()]
    if isinstance(data, (bool, np.bool_)):
        return bool(data)
    if isinstance(data, (int, np.integer)):
        return int(data)
    if isinstance(data, (float, np.floating)):
        return float(data) if math.isfinite(data) else None
    return data


def dumps(data, **kwargs) -> str:
    """Strict JSON text: never a bare ``NaN`` or ``Infinity``."""
    return json.dumps(strict(data), allow_nan=False, **kwargs)
