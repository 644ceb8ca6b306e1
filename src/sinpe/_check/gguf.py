"""``sinpe check model.gguf config.json``: does llama.cpp read the file's RoPE as the config?

A GGUF file holds parameters, not a table: its keys and factor tensors are read as llama.cpp
reads them (``llama_cpp.read_rope``) into the inverse frequency of each rotated pair, the
cos/sin magnitude, the rotary width and the softmax scale, and those are compared with the
config's exact RoPE as transformers reads it (``rope_config``), for each kind of layer (full
and sliding-window) and at each context size where the config's values change with the length
(LongRoPE: at the original length and at the file's). The file's numbers are float32, so
"reads as the config" allows 16 float32 ulps (``TOLERANCE``, relative); every real misreading
is orders of magnitude past that. A difference comes with its reason, from a finite set of
the misreadings conversions have shipped: a scaling tensor or type missing, a factor, base,
width or original length changed, LongRoPE's factors swapped or one set missing, an
attention factor reset, a YaRN key llama.cpp does not read.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._rope.config import rope_config
from .._rope.rope_types import ROPE_TYPES
from . import gguf_file
from .compare import number
from .llama_cpp import FACTOR_TENSORS, LLAMA_CPP, Reading, read_rope
from .llama_cpp_types import ARCH_RULES, SCALING_TYPES

__all__ = ["GGUFPart", "GGUFReport", "check_gguf", "gguf_part_text"]

TOLERANCE = 2.0**-19  # 16 float32 ulps, relative: the file's numbers are float32
_LAYOUTS = {"NORM": "pairs", "NEOX": "halves", "MROPE": "halves", "IMROPE": "halves"}
_SLIDING = ("sliding_attention", "chunked_attention")


class GGUFPart(NamedTuple):
    """One kind of layer at one context size: llama.cpp's reading, the config's values,
    the largest relative frequency difference and the reasons it does not read as the
    config (empty: it does)."""

    layer_type: str | None
    context: int
    reading: Reading
    rotary_dim: int
    attention_factor: float
    softmax_scale: float
    largest: float
    reasons: tuple


class GGUFReport(NamedTuple):
    """The verdict on a GGUF file: ``"reads as the config"`` or ``"does not"``, the reasons
    (each once), the parts judged and the notes (keys written in vain, the rotation)."""

    path: str
    arch: str
    verdict: str
    reasons: tuple
    parts: tuple
    notes: tuple
    llama_cpp: str = LLAMA_CPP

    def as_dict(self) -> dict:
        """The report as JSON-ready data."""
        return {
            "file": self.path,
            "architecture": self.arch,
            "llama_cpp": self.llama_cpp,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "parts": [_part_dict(part) for part in self.parts],
        }


def _part_dict(part: GGUFPart) -> dict:
    """One part as JSON-ready data: llama.cpp's reading beside the config's values."""
    reading = {k: v for k, v in part.reading._asdict().items() if k not in ("inv_freq", "arch")}
    reading["ignored"] = list(reading["ignored"])
    reading["factor"] = 1.0 / reading.pop("freq_scale")
    config = dict(rotary_dim=part.rotary_dim, attention_factor=part.attention_factor)
    config["softmax_scale"] = part.softmax_scale
    return dict(
        layer_type=part.layer_type, llama_cpp=reading, config=config,
        largest_frequency_difference=part.largest, reasons=list(part.reasons),
    )  # fmt: skip


def gguf_part_text(part: GGUFPart) -> str:
    """One part of a report as a line: what llama.cpp uses, and how far it is."""
    reading = part.reading
    layers = f"{part.layer_type} layers" if part.layer_type else "layers"
    scaling = f"{reading.scaling} x{number(1 / reading.freq_scale)}"
    if reading.freq_scale == 1 and reading.scaling != SCALING_TYPES["YARN"]:
        scaling = "none"  # llama.cpp's default type, linear, with no factor
    factors = f", factors {reading.factors}" if reading.factors else ""
    if math.isinf(part.largest):
        far = "not compared (the widths differ)"
    elif part.largest > TOLERANCE:
        far = f"off the config's by up to {part.largest:.2g} (relative)"
    else:
        far = f"within {part.largest:.2g} of the config's (relative)"
    return (
        f"{layers} at context {part.context:,}: {reading.rope_type}, rotary dim {reading.n_rot}, "
        f"base {number(reading.base)}, scaling {scaling}{factors}, attention factor "
        f"{number(reading.attention_factor)}; frequencies {far}"
    )


def _relative(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / np.abs(want), initial=0.0))


def _f32(value) -> float:
    return float(np.float32(value))


def _contexts(spec, trained: int, n_ctx: int | None) -> list:
    """The context sizes to judge: ``n_ctx`` if given; else the file's trained length, and
    the config's original length where its values change with the length."""
    if n_ctx is not None:
        return [n_ctx]
    found = {trained}
    original = spec.scaling.get("original_max_position_embeddings")
    if spec.length_dependent() and isinstance(original, int) and original < trained:
        found.add(original)
    return sorted(found)


def check_gguf(path, config, *, n_ctx: int | None = None) -> GGUFReport:
    """Whether llama.cpp reads the RoPE of the GGUF file at ``path`` as ``config`` (a
    config.json path or mapping, as :func:`sinpe.rope_config` takes) gives it, at the
    context size ``n_ctx`` (default: the file's trained length, llama.cpp's default, and the
    original length where the config's values change with the length)."""
    if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 1):
        raise ValueError(f"n_ctx must be an integer >= 1, got {n_ctx!r}")
    spec = rope_config(config)
    gguf = gguf_file.read(path, tensors=FACTOR_TENSORS)
    first = read_rope(gguf)
    layer_types = spec.layer_types or (None,)
    parts = []
    for context in _contexts(
        spec if spec.layer_types is None else spec.layer(layer_types[-1]), first.context, n_ctx
    ):
        for layer_type in layer_types:
            one = spec if layer_type is None else spec.layer(layer_type)
            swa = layer_type in _SLIDING
            parts.append(_judge(gguf, one, layer_type, read_rope(gguf, context=context, swa=swa)))
    found = [r for part in parts for r in part.reasons]
    if gguf.byteorder == ">":  # gguf-py writes them; ggml's loader refuses them
        found.insert(0, "a big-endian file: llama.cpp reads little-endian GGUF only")
    reasons = tuple(dict.fromkeys(found))
    verdict = "does not" if reasons else "reads as the config"
    return GGUFReport(
        str(path), first.arch, verdict, reasons, tuple(parts), _notes(first, spec, layer_types)
    )


def _judge(gguf, spec, layer_type, reading: Reading) -> GGUFPart:
    inv_freq, factor = spec.frequencies(reading.context)
    reasons = list(_arch_reasons(reading))
    largest = math.inf
    if reading.n_rot != spec.head_dim:
        reasons.append(f"rotary width {reading.n_rot} where the config gives {spec.head_dim}")
    else:
        largest = _relative(reading.inv_freq, inv_freq)
        if largest > TOLERANCE:
            reasons.extend(_frequency_reasons(gguf, spec, reading, inv_freq, largest))
    if _relative(reading.attention_factor, factor) > TOLERANCE:
        reasons.append(_factor_reason(gguf, spec, reading, factor))
    if _relative(reading.softmax_scale, spec.softmax_scale) > TOLERANCE:
        reasons.append(
            f"softmax scale x{number(reading.softmax_scale)} where the config gives "
            f"x{number(spec.softmax_scale)} (yarn mscale_all_dim)"
        )
    where = f"{layer_type} layers: " if layer_type else ""
    reasons = [where + reason for reason in reasons]
    return GGUFPart(
        layer_type, reading.context, reading, spec.head_dim, factor, spec.softmax_scale,
        largest, tuple(reasons),
    )  # fmt: skip


def _arch_reasons(reading: Reading):
    if reading.rope_type == "unknown":
        yield f"llama.cpp {LLAMA_CPP} does not know the architecture {reading.arch!r}"
    elif reading.rope_type == "NONE":
        yield f"llama.cpp runs {reading.arch!r} without RoPE"


def _frequency_reasons(gguf, spec, reading: Reading, inv_freq, largest: float) -> list:
    """Why the frequencies differ: every explanation that holds, else the size of it."""
    scaling = spec.scaling
    record = ROPE_TYPES[scaling["rope_type"]]
    found = []
    if spec.base is not None and _f32(spec.base) != _f32(reading.base) and record.gguf != "base":
        found.append(f"base {number(reading.base)} where the config gives {number(spec.base)}")
    explain = _EXPLAIN.get(record.gguf or "", _explain_plain)
    found.extend(explain(gguf, scaling, reading, record.title or record.name))
    if not found:
        pair = int(np.argmax(np.abs(reading.inv_freq - inv_freq) / inv_freq))
        found.append(
            f"frequencies differ from the config's by up to {largest:.3g} (relative, pair {pair})"
        )
    return found


def _explain_plain(gguf, scaling, reading: Reading, title: str) -> list:
    """A config without scaling, or with a type GGUF has no form for."""
    record = ROPE_TYPES[scaling["rope_type"]]
    found = []
    if reading.factors is not None:
        found.append(f"a {reading.factors} tensor where the config has no such scaling")
    if reading.freq_scale != 1 and record.plain:
        factor = number(1 / reading.freq_scale)
        found.append(f"{reading.scaling} scaling x{factor} where the config has none")
    if record.gguf is None:
        found.append(f"llama.cpp has no {title} scaling")
    return found


def _explain_scale(gguf, scaling, reading: Reading, title: str) -> list:
    if _f32(1 / reading.freq_scale) != _f32(scaling["factor"]):
        got, want = number(1 / reading.freq_scale), number(scaling["factor"])
        return [f"{title} factor {got} where the config gives {want}"]
    return _explain_plain(gguf, scaling, reading, title)


def _explain_freq_factors(gguf, scaling, reading: Reading, title: str) -> list:
    if reading.factors is None:
        return [f"{title} scaling missing: no rope_freqs tensor"]
    if reading.factors != "rope_freqs.weight":
        return [f"{title} scaling read from {reading.factors}, not rope_freqs"]
    return [f"rope_freqs differ from the config's {title} factors"]


def _explain_ramp(gguf, scaling, reading: Reading, title: str) -> list:
    factor = scaling["factor"]
    if reading.scaling != SCALING_TYPES["YARN"]:
        key = f"{reading.arch}.rope.scaling.type"
        given = f"rope.scaling.type is {reading.scaling!r}" if key in gguf.kv else (
            "no rope.scaling.type"
        )  # fmt: skip
        return [
            f"{title} scaling missing: {given} where the config gives {title} x{number(factor)}"
        ]
    found = []
    if _f32(1 / reading.freq_scale) != _f32(factor):
        got = number(1 / reading.freq_scale)
        found.append(f"{title} factor {got} where the config gives {number(factor)}")
    arch = reading.arch
    original = gguf.kv.get(f"{arch}.rope.scaling.original_context_length")
    want = scaling.get("original_max_position_embeddings")
    if want is not None and original is not None and original != want:
        found.append(f"{title} original context {original} where the config gives {want}")
    reads = ARCH_RULES.get(arch, {}).get("reads", ())
    for key, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
        if scaling.get(key, default) != default and f"rope.scaling.yarn_{key}" not in reads:
            found.append(
                f"{title} {key} {number(scaling[key])} in the config: llama.cpp reads none for "
                f"{arch!r} (rope.scaling.yarn_{key} is not read)"
            )
    if scaling.get("truncate") is False:
        found.append(f"{title} truncate false in the config: llama.cpp always rounds the ramp")
    return found


def _explain_factor_sets(gguf, scaling, reading: Reading, title: str) -> list:
    long = "rope_factors_long.weight" in gguf.data
    short = "rope_factors_short.weight" in gguf.data
    if not long and not short:
        return [f"{title} factors missing: no rope_factors_long or rope_factors_short tensor"]
    wants_long = reading.context > (
        scaling.get("original_max_position_embeddings") or reading.context
    )
    want = "long" if wants_long else "short"
    if want == "long" and not long:
        return [f"{title} short factors only: no rope_factors_long tensor"]
    other = "short" if want == "long" else "long"
    stored = gguf.data.get(f"rope_factors_{want}.weight")
    config_other = np.asarray(scaling[f"{other}_factor"], np.float64)
    if stored is not None and stored.size == config_other.size:
        if _relative(stored, config_other) <= TOLERANCE and config_other.size:
            return [f"{title} factors swapped: rope_factors_{want} holds the config's {other} ones"]
    return [f"rope_factors_{want} differ from the config's {want}_factor"]


_EXPLAIN = {  # by the rope type record's ``gguf``: how a GGUF file carries the type
    "scale": _explain_scale,
    "freq_factors": _explain_freq_factors,
    "ramp": _explain_ramp,
    "factor_sets": _explain_factor_sets,
    "factor_sets_mscale": _explain_factor_sets,
}


def _factor_reason(gguf, spec, reading: Reading, factor: float) -> str:
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    label = "" if record.plain else f"{record.title or record.name} "
    got, want = number(reading.attention_factor), number(factor)
    text = f"{label}attention factor {got} where the config gives {want}"
    key = f"{reading.arch}.rope.scaling.attn_factor"
    causes = []
    if key in gguf.kv:
        causes.append(f"rope.scaling.attn_factor {number(gguf.kv[key])}")
    ignored = f"{reading.arch}.rope.scaling.yarn_attn_factor"
    if ignored in reading.ignored:
        causes.append(f"llama.cpp does not read rope.scaling.yarn_attn_factor for {reading.arch!r}")
    if record.gguf == "factor_sets_mscale":
        causes.append("GGUF has no key for the config's short_mscale and long_mscale")
    return text + (f" ({'; '.join(causes)})" if causes else "")


def _notes(reading: Reading, spec, layer_types) -> tuple:
    notes = [
        f"written but never read by llama.cpp for {reading.arch!r}: {key}"
        for key in reading.ignored
    ]
    one = spec if layer_types == (None,) else spec.layer(layer_types[0])
    turns = _LAYOUTS.get(reading.rope_type)
    if turns is not None and one.rotation is not None:
        notes.append(
            f"llama.cpp rotates {reading.arch!r} as {reading.rope_type} ({turns}); the config's "
            f"attention rotates {one.rotation} (not in the file: the converter permutes the "
            "Q/K weights where the two differ)"
        )
    return tuple(notes)
