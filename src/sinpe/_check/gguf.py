"""``sinpe check model.gguf config.json``: the GGUF adapter. A GGUF file holds parameters, not
a table: its keys and factor tensors are read as llama.cpp reads them (``llama_cpp.read_rope``)
into what llama.cpp will use -- each rotated pair's inverse frequency, the cos/sin magnitude,
the rotary width, the softmax scale -- for each kind of layer (full and sliding-window) at
each context size where the config's values change with the length (``layers.lengths``), and
handed to the verdict core (``judge.judge_parameters``), which compares them with the config's
exact RoPE as transformers reads it. Where they differ, the reasons come from what llama.cpp
reads in the file (a scaling tensor or type missing, a factor, original length or YaRN key
llama.cpp does not read, LongRoPE's factors swapped or one set missing, an attention factor
reset); the words are the core's. A split GGUF is read as a set (``gguf_file.read``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._files import gguf as gguf_file
from .._rope.config import rope_config
from .._rope.rope_types import ROPE_TYPES
from .._verdict.judge import (
    MAX_POSITION,
    PARAMETER_TOLERANCE,
    Held,
    attention_finding,
    bounded,
    judge_parameters,
    parameters_verdict,
    relative,
    title,
)
from .._verdict.layers import lengths
from .._verdict.verdict import (
    Finding,
    Judged,
    Verdict,
    evidence,
    finding,
    for_layer,
    note,
    number,
    strict,
)
from .llama_cpp import FACTOR_TENSORS, LLAMA_CPP, Reading, read_rope
from .llama_cpp_types import ARCH_RULES, SCALING_TYPES

__all__ = ["GGUFPart", "GGUFReport", "check_gguf"]

_TURNS = {"NORM": "pairs", "NEOX": "halves", "MROPE": "halves", "IMROPE": "halves"}
_SLIDING = ("sliding_attention", "chunked_attention")


class GGUFPart(NamedTuple):
    """One kind of layer at one context size: llama.cpp's reading, the config's values,
    the largest relative frequency difference (``None``: not compared) and the findings."""

    layer_type: str | None
    context: int
    reading: Reading
    rotary_dim: int
    attention_factor: float
    softmax_scale: float
    largest: float | None
    findings: tuple

    @property
    def reasons(self) -> tuple:
        return tuple(f.text for f in self.findings)


class _GGUFReportFields(NamedTuple):
    """The fields of ``GGUFReport``."""

    path: str
    arch: str
    judgment: Verdict
    parts: tuple
    notes: tuple
    llama_cpp: str = LLAMA_CPP
    shards: tuple = ()


class GGUFReport(_GGUFReportFields, Judged):
    """The verdict on a GGUF file: the core's ``Verdict`` (``match``: read as the config,
    within 16 float32 ulps; ``mismatch``, with every reason once), the parts judged, the
    notes, and the shards read (a split set)."""

    __slots__ = ()

    def as_dict(self) -> dict:
        """The report as strict JSON-ready data."""
        return strict(
            {
                "file": self.path,
                "shards": list(self.shards),
                "architecture": self.arch,
                "llama_cpp": self.llama_cpp,
                **self.judgment.as_json(),
                "notes": list(self.notes),
                "parts": [_part_dict(part) for part in self.parts],
            }
        )


def _part_dict(part: GGUFPart) -> dict:
    """One part as JSON-ready data: llama.cpp's reading beside the config's values."""
    reading = {k: v for k, v in part.reading._asdict().items() if k not in ("inv_freq", "arch")}
    reading["ignored"] = list(reading["ignored"])
    reading["factor"] = reading.pop("factor") or None
    reading.pop("freq_scale")
    config = dict(rotary_dim=part.rotary_dim, attention_factor=part.attention_factor)
    config["softmax_scale"] = part.softmax_scale
    return dict(
        layer_type=part.layer_type, llama_cpp=reading, config=config,
        largest_frequency_difference=part.largest,
        reasons=[f.as_json() for f in part.findings],
    )  # fmt: skip


def check_gguf(path, config, *, n_ctx: int | None = None) -> GGUFReport:
    """Whether llama.cpp reads the RoPE of the GGUF file at ``path`` (any shard of a split
    set) as ``config`` (a config.json path or mapping, as :func:`sinpe.rope_config` takes)
    gives it, at the context size ``n_ctx`` (default: the file's trained length, llama.cpp's
    default, and the original length where the config's values change with the length)."""
    if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 1):
        raise ValueError(f"n_ctx must be an integer >= 1, got {n_ctx!r}")
    if n_ctx is not None:
        bounded("n_ctx", n_ctx, MAX_POSITION, 1)
    spec = rope_config(config)
    gguf = gguf_file.read(path, tensors=FACTOR_TENSORS)
    first = read_rope(gguf)
    layer_types = spec.layer_types or (None,)
    last = spec if spec.layer_types is None else spec.layer(layer_types[-1])
    parts = []
    for context in lengths(last, first.context, n_ctx):
        for layer_type in layer_types:
            one = spec if layer_type is None else spec.layer(layer_type)
            swa = layer_type in _SLIDING
            parts.append(_judge(gguf, one, layer_type, read_rope(gguf, context=context, swa=swa)))
    found = [f for part in parts for f in part.findings]
    if gguf.byteorder == ">":  # gguf-py writes them; ggml's loader refuses them
        found.insert(0, finding("big_endian"))
    unique = tuple({f.text: f for f in found}.values())
    judgment = parameters_verdict(unique)
    notes = _notes(first, spec, layer_types)
    return GGUFReport(str(path), first.arch, judgment, tuple(parts), notes, shards=gguf.shards)


def _held(gguf, spec, reading: Reading) -> Held:
    """What llama.cpp holds for one kind of layer, for the core."""
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    values = []
    if reading.factor and reading.scaling != SCALING_TYPES["NONE"]:  # else never read
        values.append((f"{title(spec)}factor".strip(), reading.factor))
    if reading.factors is not None:
        stored = gguf.data[reading.factors][: reading.n_rot // 2]
        bad = stored[~(np.isfinite(stored) & (stored > 0))]
        if bad.size:
            values.append((reading.factors, float(bad[0])))
    return Held(
        width=reading.n_rot,
        inv_freq=reading.inv_freq,
        attention_factor=reading.attention_factor,
        softmax_scale=reading.softmax_scale,
        base=None if record.gguf == "base" else reading.base,
        values=tuple(values),
    )


def _judge(gguf, spec, layer_type, reading: Reading) -> GGUFPart:
    _, factor = spec.frequencies(reading.context)
    findings = list(_arch_reasons(reading))

    def explained(inv_freq):
        return _frequency_reasons(gguf, spec, reading, inv_freq)

    found, largest = judge_parameters(spec, _held(gguf, spec, reading), reading.context, explained)
    for one in found:  # the attention factor, with what llama.cpp read it from
        findings.append(_with_causes(gguf, spec, reading, factor) if _is_factor(one) else one)
    findings = [for_layer(f, layer_type) for f in findings]
    return GGUFPart(
        layer_type, reading.context, reading, spec.head_dim, factor, spec.softmax_scale,
        largest, tuple(findings),
    )  # fmt: skip


def _is_factor(one: Finding) -> bool:
    return one.code == "attention_factor"


def _arch_reasons(reading: Reading):
    if reading.rope_type == "unknown":
        yield finding("unknown_architecture", engine=reading.arch, commit=LLAMA_CPP)
    elif reading.rope_type == "NONE":
        yield finding("no_rope", engine=reading.arch)


def _frequency_reasons(gguf, spec, reading: Reading, inv_freq) -> list:
    """Why llama.cpp's frequencies differ from the config's: the base, where the config's
    base alone would make them the config's; else what the file's scaling shows."""
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    found = []
    if spec.base is not None and np.float32(spec.base) != np.float32(reading.base):
        if record.gguf != "base":
            found.append(finding("base", engine=number(reading.base), config=number(spec.base)))
            fixed = _reread(gguf, reading, {"rope.freq_base": float(spec.base)})
            if relative(fixed.inv_freq, inv_freq) <= PARAMETER_TOLERANCE:
                return found
    explain = _EXPLAIN.get(record.gguf or "", _explain_plain)
    return found + explain(gguf, spec, reading)


def _reread(gguf, reading: Reading, keys: dict) -> Reading:
    """llama.cpp's reading of the file with ``keys`` (arch prefix omitted) set otherwise."""
    kv, types = dict(gguf.kv), dict(gguf.types)
    for name, value in keys.items():
        kv[f"{reading.arch}.{name}"] = value
        types[f"{reading.arch}.{name}"] = "FLOAT32"
    return read_rope(gguf._replace(kv=kv, types=types), context=reading.context)


def _factor(reading: Reading) -> float:
    """The factor llama.cpp scales the frequencies by (1: none)."""
    scale = reading.freq_scale
    return 1.0 / scale if np.isfinite(scale) and scale > 0 else reading.factor


def _explain_plain(gguf, spec, reading: Reading) -> list:
    """A config without scaling, or with a type GGUF has no form for."""
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    found = []
    if reading.factors is not None:
        found.append(finding("unexpected_tensor", engine=reading.factors))
    if reading.freq_scale != 1 and record.plain:
        factor = number(_factor(reading))
        found.append(finding("unexpected_scaling", engine=reading.scaling, factor=factor))
    if record.gguf is None:
        found.append(finding("no_such_scaling", title=title(spec)))
    return found


def _explain_scale(gguf, spec, reading: Reading) -> list:
    factor = spec.scaling["factor"]
    if np.float32(_factor(reading)) != np.float32(factor):
        got = number(_factor(reading))
        return [finding("factor", title=title(spec), engine=got, config=number(factor))]
    return _explain_plain(gguf, spec, reading)


def _explain_freq_factors(gguf, spec, reading: Reading) -> list:
    if reading.factors is None:
        cause = ("no_factor_tensor", {"engine": "rope_freqs"})
        return [finding("scaling_missing", title=title(spec), engine=_evidence(*cause))]
    if reading.factors != "rope_freqs.weight":
        return [finding("factors_elsewhere", title=title(spec), engine=reading.factors)]
    return [finding("factors_differ", engine="rope_freqs", config=f"{title(spec)}factors")]


def _evidence(code: str, fields: dict) -> str:
    return evidence(code, **fields)


def _explain_ramp(gguf, spec, reading: Reading) -> list:
    scaling, name = spec.scaling, title(spec)
    factor = scaling["factor"]
    if reading.scaling != SCALING_TYPES["YARN"]:
        key = f"{reading.arch}.rope.scaling.type"
        fields = {"engine": reading.scaling, "title": name, "config": number(factor)}
        cause = _evidence("scaling_type" if key in gguf.kv else "no_scaling_type", fields)
        return [finding("scaling_missing", title=name, engine=cause)]
    found = []
    if np.float32(_factor(reading)) != np.float32(factor):
        got = number(_factor(reading))
        found.append(finding("factor", title=name, engine=got, config=number(factor)))
    original = gguf.kv.get(f"{reading.arch}.rope.scaling.original_context_length")
    want = scaling.get("original_max_position_embeddings")
    if want is not None and original is not None and original != want:
        found.append(finding("original_length", title=name, engine=original, config=want))
    reads = ARCH_RULES.get(reading.arch, {}).get("reads", ())
    for key, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
        if scaling.get(key, default) != default and f"rope.scaling.yarn_{key}" not in reads:
            value = number(scaling[key])
            found.append(
                finding("key_not_read", title=name, key=key, config=value, arch=reading.arch)
            )
    if scaling.get("truncate") is False:
        found.append(finding("truncate", title=name))
    return found


def _explain_factor_sets(gguf, spec, reading: Reading) -> list:
    scaling, name = spec.scaling, title(spec)
    long = "rope_factors_long.weight" in gguf.data
    short = "rope_factors_short.weight" in gguf.data
    if not long and not short:
        return [finding("factors_missing", title=name)]
    original = scaling.get("original_max_position_embeddings") or reading.context
    want = "long" if reading.context > original else "short"
    if want == "long" and not long:
        return [finding("short_factors_only", title=name)]
    used = f"rope_factors_{want}.weight"
    if reading.factors != used:  # llama.cpp chose by the file's original length
        file_original = gguf.kv.get(f"{reading.arch}.rope.scaling.original_context_length")
        return [
            finding(
                "factors_chosen",
                title=name,
                engine=reading.factors,
                config=want,
                context=reading.context,
                original=original,
                file=file_original,
            )
        ]
    other = "short" if want == "long" else "long"
    stored = gguf.data.get(used)
    config_other = np.asarray(scaling[f"{other}_factor"], np.float64)
    if stored is not None and stored.size == config_other.size and config_other.size:
        if relative(stored, config_other) <= PARAMETER_TOLERANCE:
            return [finding("factors_swapped", title=name, engine=want, config=other)]
    return [finding("factors_differ", engine=f"rope_factors_{want}", config=f"{want}_factor")]


_EXPLAIN = {  # by the rope type record's ``gguf``: how a GGUF file carries the type
    "scale": _explain_scale,
    "freq_factors": _explain_freq_factors,
    "ramp": _explain_ramp,
    "factor_sets": _explain_factor_sets,
    "factor_sets_mscale": _explain_factor_sets,
}


def _with_causes(gguf, spec, reading: Reading, factor: float) -> Finding:
    """The attention factor reason, with what llama.cpp read it from."""
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    causes: list = []
    key = f"{reading.arch}.rope.scaling.attn_factor"
    if key in gguf.kv:
        causes.append(("attn_factor_key", {"engine": number(gguf.kv[key])}))
    if f"{reading.arch}.rope.scaling.yarn_attn_factor" in reading.ignored:
        causes.append(("attn_factor_unread", {"engine": reading.arch}))
    if record.gguf == "factor_sets_mscale":
        causes.append(("no_mscale_keys", {}))
    return attention_finding(spec, reading.attention_factor, factor, tuple(causes))


def _notes(reading: Reading, spec, layer_types) -> tuple:
    notes = [note("written_in_vain", arch=reading.arch, engine=key) for key in reading.ignored]
    one = spec if layer_types == (None,) else spec.layer(layer_types[0])
    turns = _TURNS.get(reading.rope_type)
    if turns is not None and one.rotation is not None:
        fields = dict(arch=reading.arch, engine=reading.rope_type, turns=turns)
        if turns == one.rotation:
            notes.append(note("rotation_as_expected", **fields))
        else:
            notes.append(note("rotation_permuted", config=one.rotation, **fields))
    notes.append(note("parameters_only"))
    return tuple(notes)
