"""``sinpe check model.onnx [config.json]``: the ONNX adapter. An ONNX model holds its RoPE in
the file: cos/sin caches (initializers, or ``Constant`` nodes in an ``If`` choosing
LongRoPE's short or long factors by the sequence length, or one concatenated cache) fed to
ONNX Runtime's rotary ops (``com.microsoft`` ``GroupQueryAttention`` with ``do_rotary``,
``RotaryEmbedding``, ``MRotaryEmbedding``); or, in a model traced from transformers
(optimum's exports), an ``inv_freq`` constant multiplied with the position ids. The caches
are found by how the graph uses them, not by name; every row of each is judged by the
verdict core (``judge.judge_table``, a block at a time through ``onnx_file.tensor_rows``),
at the length its rows stand for, against the spec of the layers that use it; a cache no
layer of which the config places is named as not judged, and the model is then never a
match; an ``inv_freq`` is judged as parameters. A mismatch is explained from what the cache
shows (``judge.fit``) and from the misreadings ONNX Runtime GenAI's builder ships (YaRN's
ramp unrounded; LongRoPE's factors of one regime at every length), in the core's words.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

import numpy as np

from .._files import onnx as onnx_file
from .._files import reading
from .._rope.config import load_config, rope_config
from .._tables.checks import bfloat16
from .._verdict.judge import (
    BLOCK_ENTRIES,
    FIT_TOLERANCE,
    MAX_POSITION,
    Held,
    bounded,
    fit,
    judge_parameters,
    judge_table,
    parameters_verdict,
    relative,
    title,
)
from .._verdict.layers import LayerUnknown, layer_index, layer_spec
from .._verdict.verdict import (
    MISMATCH,
    Judged,
    Verdict,
    explained,
    finding,
    mismatch,
    not_judged,
    note,
    overall,
    strict,
)

__all__ = ["OnnxPart", "OnnxReport", "check_onnx", "find_caches"]

# (domain, op) -> (cos input, sin input, the attribute that says pairs)
ROTARY_OPS = {
    ("com.microsoft", "GroupQueryAttention"): (7, 8, "rotary_interleaved"),
    ("com.microsoft", "RotaryEmbedding"): (2, 3, "interleaved"),
    ("com.microsoft", "MRotaryEmbedding"): (2, 3, "interleaved"),
}
_PASSING = ("Cast", "Identity")
_FLOATS = (
    "float32",
    "float16",
    "float64",
    "bfloat16",
)  # ops a cache passes through on its way to the rotary op


class Cache(NamedTuple):
    """One cos/sin pair the graph feeds to rotary ops: the tensors, the nodes that use them,
    the rotation they ask for, and how the pair is held (``initializer``, ``branch``: one
    branch of an ``If``)."""

    cos: onnx_file.Tensor
    sin: onnx_file.Tensor
    users: tuple
    rotation: str
    held: str


class OnnxPart(NamedTuple):
    """One cache (or one part of a concatenated one, or an ``inv_freq``) judged: its name,
    the layer type whose spec judged it, its rows and dtype, the core's ``Verdict``, notes."""

    name: str
    layer_type: str | None
    rows: int
    dtype: str
    judgment: Verdict
    notes: tuple = ()


class _OnnxReportFields(NamedTuple):
    """The fields of ``OnnxReport``."""

    path: str
    judgment: Verdict
    parts: tuple
    notes: tuple
    context_length: int | None = None


class OnnxReport(_OnnxReportFields, Judged):
    """The verdict on an ONNX model: the worst of its parts' (the core's verdicts), every
    part, the notes, and what ``genai_config.json`` says where there is one."""

    __slots__ = ()

    def as_dict(self) -> dict:
        return strict(
            {
                "file": self.path,
                "context_length": self.context_length,
                **self.judgment.as_json(),
                "notes": list(self.notes),
                "parts": [
                    {
                        "name": p.name,
                        "layer_type": p.layer_type,
                        "rows": p.rows,
                        **p.judgment.as_json(),
                        "dtype": p.dtype,  # the cache's, also where no table was judged
                        "notes": list(p.notes),
                    }
                    for p in self.parts
                ],
            }
        )


# --------------------------------------------------------------------------- finding caches


def _sources(graph, name: str, producers: dict, depth: int = 0) -> list:
    """``[(tensor, held)]`` a value named ``name`` comes from: an initializer, a Constant,
    through casts, or each branch of an If."""
    if name in graph.initializers:
        return [(graph.initializers[name], "initializer")]
    node = producers.get(name)
    if node is None or depth > 8:
        return []
    if node.op_type == "Constant" and isinstance(node.attributes.get("value"), onnx_file.Tensor):
        value = node.attributes["value"]  # named by what it outputs (its tensor may be unnamed)
        return [(value._replace(name=value.name or name), "constant")]
    if node.op_type in _PASSING and node.inputs:
        return _sources(graph, node.inputs[0], producers, depth + 1)
    if node.op_type == "If":
        index = node.outputs.index(name)
        found = []
        for branch in ("then_branch", "else_branch"):
            sub = node.attributes.get(branch)
            if isinstance(sub, onnx_file.Graph) and index < len(sub.outputs):
                inner = {out: n for n in sub.nodes for out in n.outputs}
                found += [(t, "branch") for t, _ in _sources(sub, sub.outputs[index], inner)]
        return found
    return []


def find_caches(model) -> list:
    """Every cos/sin pair the graph feeds to ONNX Runtime's rotary ops."""
    graph = model.graph
    producers = {out: node for node in graph.nodes for out in node.outputs}
    found: dict = {}
    for node in graph.nodes:
        spot = ROTARY_OPS.get((node.domain, node.op_type))
        if spot is None or len(node.inputs) <= spot[1]:
            continue
        if node.op_type == "GroupQueryAttention" and not node.attributes.get("do_rotary"):
            continue
        cos_name, sin_name = node.inputs[spot[0]], node.inputs[spot[1]]
        if not cos_name or not sin_name:
            continue
        rotation = "pairs" if node.attributes.get(spot[2]) else "halves"
        pairs = zip(_sources(graph, cos_name, producers), _sources(graph, sin_name, producers))
        for (cos, held), (sin, _) in pairs:
            key = (cos.name, sin.name, cos.dims, rotation)
            users = found[key].users if key in found else ()
            found[key] = Cache(cos, sin, users + (node.name,), rotation, held)
    return list(found.values())


# --------------------------------------------------------------------------- judging


def _config(path: str, config):
    """The config mapping: given, else the model folder's config.json (ORT GenAI's output
    has none: a refusal saying so)."""
    if config is None:
        config = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
        if not os.path.isfile(config):
            raise ValueError(
                f"{path}: no config.json beside the model (ONNX Runtime GenAI's builder writes "
                "none): pass the model's own config.json, sinpe check model.onnx config.json"
            )
    return load_config(config)


def _context_length(path: str) -> int | None:
    genai = os.path.join(os.path.dirname(os.path.abspath(path)), "genai_config.json")
    try:  # what it says is a note: an unreadable, hostile or foreign one says nothing
        found = reading.read_json(genai, what="genai_config.json", kind="a genai_config.json")
        length = found["model"]["context_length"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return bounded("genai_config.json's context_length", length, MAX_POSITION, 1)


def check_onnx(path, config=None) -> OnnxReport:
    """Whether the RoPE an ONNX model holds (cos/sin caches, an ``inv_freq``) is the one
    ``config`` gives (a config.json path or mapping; default: the model folder's)."""
    path = os.fspath(path)
    model = onnx_file.read(path)
    data = _config(path, config)
    spec = rope_config(data)
    parts: list = []
    for cache in find_caches(model):
        parts += _judge_cache(model, spec, data, cache)
    if not parts:
        parts += _traced(model, spec, data)
    if not parts:
        raise ValueError(
            f"{path}: no RoPE found (no cos/sin cache fed to a rotary op of ONNX Runtime, no "
            "inv_freq multiplied with the position ids)"
        )
    return OnnxReport(path, _overall(parts), tuple(parts), (), _context_length(path))


def _overall(parts: list) -> Verdict:
    """The model's verdict: the core's verdict of every part found (``verdict.overall``)."""
    return overall(p.judgment for p in parts)


def _specs(spec, data: dict, users) -> dict:
    """``{layer type: spec}`` of the layers that use a cache (``_unplaced``: the others; a
    user the config does not place takes the one RoPE its layer types share, if they do)."""
    if spec.layer_types is None:
        return {None: spec}
    found = {}
    for user in users:
        try:
            one = layer_spec(spec, data, layer_index(user))
        except LayerUnknown:
            if _unplaced(spec, data, [user]):
                continue
            one = spec.layer(spec.layer_types[0])
        found[one.layer_type] = one
    return found


def _unplaced(spec, data: dict, users) -> list:
    """The users of a cache whose layer the config does not place (a node whose name gives
    no layer index, or one past its layer_types), where its layer types' RoPEs differ."""
    if spec.layer_types is None or len({_signature(spec, t) for t in spec.layer_types}) == 1:
        return []
    found = []
    for user in users:
        try:
            layer_spec(spec, data, layer_index(user))
        except LayerUnknown:
            found.append(user)
    return found


def _judge_cache(model, spec, data: dict, cache: Cache) -> list:
    rows, half = cache.cos.dims if len(cache.cos.dims) == 2 else (0, 0)
    if cache.cos.dims != cache.sin.dims or len(cache.cos.dims) != 2:
        raise ValueError(
            f"{model.path}: cos {cache.cos.name!r} {cache.cos.dims} and sin {cache.sin.name!r} "
            f"{cache.sin.dims} are not two equal (rows, rotary/2) tables"
        )
    bounded(f"{cache.cos.name}'s rows", rows, MAX_POSITION, 1)
    for tensor in (cache.cos, cache.sin):
        kind = onnx_file.DTYPES.get(tensor.data_type, (f"type {tensor.data_type}",))[0]
        if kind not in _FLOATS:
            raise ValueError(f"{model.path}: the cache {tensor.name!r} holds {kind}, not floats")
    parts = []
    specs, unplaced = _specs(spec, data, cache.users), _unplaced(spec, data, cache.users)
    dtype = onnx_file.DTYPES.get(cache.cos.data_type, ("?",))[0]
    if unplaced:  # named, never dropped: the layers it feeds are not known, so neither is its RoPE
        reason = finding("layer_of", engine=", ".join(map(repr, unplaced[:4])))
        parts.append(OnnxPart(cache.cos.name, None, rows, dtype, not_judged(reason)))
    for layer_type, one in specs.items():
        for first, count, length in _regimes(one, rows):
            judgment, notes = _judge_rows(model, one, data, cache, first, count, length, half)
            name = cache.cos.name if count == rows else f"{cache.cos.name}[{first}:{first + count}]"
            parts.append(OnnxPart(name, layer_type, count, dtype, judgment, notes))
    return parts


def _signature(spec, layer_type: str) -> tuple:
    """What a layer type's RoPE is: its width, rotation, frequencies and factor."""
    try:
        one = spec.layer(layer_type)
    except ValueError:  # a layer type without RoPE
        return (layer_type,)
    inv_freq, factor = one.frequencies(None)
    return (one.head_dim, one.rotation, np.asarray(inv_freq).tobytes(), float(factor))


def _regimes(spec, rows: int) -> list:
    """``[(first row, rows, length)]``: the whole cache at its own length; a LongRoPE cache
    of the original length's rows then the trained length's (ONNX Runtime GenAI's one
    concatenated cache on DML and WebGPU) in two parts, each at its length."""
    original = spec.scaling.get("original_max_position_embeddings")
    trained = spec.max_position_embeddings
    if spec.length_dependent() and original and trained and rows == original + trained:
        return [(0, original, original), (original, trained, trained)]
    return [(0, rows, rows)]


def _judge_rows(model, spec, data, cache: Cache, first, count, length, half) -> tuple:
    """The core's verdict on rows ``first ..`` of a cache, and its notes."""
    structural, _ = judge_parameters(spec, Held(width=2 * half, rotation=cache.rotation), None)
    if any(f.code == "rotary_width" for f in structural):
        return mismatch(structural), ()
    dtype = onnx_file.DTYPES.get(cache.cos.data_type, ("?",))[0]

    def read(positions):
        rows = first + np.asarray(positions, np.int64)
        cos = onnx_file.tensor_rows(model, cache.cos, rows)
        return cos, onnx_file.tensor_rows(model, cache.sin, rows)

    table = judge_table(spec._one(), read, count, np.arange(half), dtype, length)
    judgment = table.verdict
    if structural:
        judgment = mismatch(structural + list(judgment.findings))
    elif judgment.verdict == MISMATCH and judgment.findings[0].code != "not_a_number":
        judgment = explained(judgment, _why(spec, data, read, count, length))
    notes = _rounding(spec, read, count, length, dtype) if judgment.verdict != MISMATCH else ()
    return judgment, notes


def _why(spec, data: dict, read, count: int, length: int) -> list:
    """A cache's mismatch explained by what its angles and row 0 show (``judge.fit``): its
    frequencies, where they are those of a misreading the builder ships (YaRN's ramp
    unrounded, LongRoPE's other factors), said as that; its attention factor."""
    held = fit(read, count)
    if held is None:
        return []
    got = np.asarray(held.inv_freq, np.float64)

    def explained(want):
        for misread, words in _misreadings(spec, data, length):
            if relative(got, misread) <= FIT_TOLERANCE:
                return [words]
        return []

    return judge_parameters(spec, held, length, explained)[0]


def _misreadings(spec, data: dict, length: int):
    """``(frequencies, finding)`` of each misreading that applies to the config."""
    if spec.scaling.get("truncate") is not False and "beta_fast" in spec.scaling:
        variant = _variant(data, truncate=False)
        if variant is not None:
            want, _ = spec.frequencies(length)
            got, _ = variant.frequencies(length)
            off = int((np.abs(got / want - 1) > 2.0**-30).sum())
            found = finding(
                "ramp_unrounded",
                title=title(spec),
                engine=off,
                config=len(want),
                error=relative(got, want),
            )
            yield got, found
    original = spec.scaling.get("original_max_position_embeddings")
    if spec.length_dependent() and original:
        longest = max(original + 1, spec.max_position_embeddings or 0)
        other = original if length > original else longest
        regime = "long" if other > original else "short"
        theirs = "short" if regime == "long" else "long"
        op = "<=" if theirs == "short" else ">"
        fields = dict(title=title(spec), engine=regime, config=theirs, op=op, original=original)
        yield spec.frequencies(other)[0], finding("length_regime", **fields)


def _variant(data: dict, **keys):
    """The config's spec with ``keys`` set in its rope mapping (or its text config's;
    ``None`` where it has none, or refuses them)."""
    changed = json.loads(json.dumps(data))  # a copy: the caller's config stays as it is
    for holder in (changed, changed.get("text_config")):
        if not isinstance(holder, dict):
            continue
        for key in ("rope_parameters", "rope_scaling"):
            if isinstance(holder.get(key), dict) and "full_attention" not in holder[key]:
                holder[key] = {**holder[key], **keys}
                try:
                    return rope_config(changed)
                except (TypeError, ValueError):
                    return None
    return None


def _rounding(spec, read, count: int, length: int, dtype: str) -> tuple:
    """A narrow cache whose values are not the exact ones rounded once (the float32 table
    rounded again to float16 or bfloat16): said as a note, with how many entries of all."""
    if dtype not in ("float16", "bfloat16"):
        return ()
    if dtype == "bfloat16" and bfloat16() is None:
        return ()
    differ = total = 0
    step = max(1, BLOCK_ENTRIES // max(2 * (spec.head_dim or 2), 1))
    for lo in range(0, count, step):
        positions = np.arange(lo, min(count, lo + step), dtype=np.int64)
        cos, sin = read(positions)
        # sinpe's narrow tables: each value the exact one correctly rounded, once
        want = spec.rope_at(positions, layout="compact", dtype=dtype, seq_len=length)
        half = cos.shape[1]
        differ += sum(
            int((got != w[:, :half].astype(np.float64)).sum()) for got, w in zip((cos, sin), want)
        )
        total += 2 * cos.size
    if not differ:
        return ()
    return (note("rounded_twice", engine=differ, config=total, dtype=dtype),)


# --------------------------------------------------------------------------- traced models


def _traced(model, spec, data: dict) -> list:
    """An ``inv_freq`` constant of a traced export, judged as parameters: each float
    constant of ``rotary/2`` values whose consumers reach a MatMul with the position ids."""
    graph = model.graph
    half = (spec.head_dim or 0) // 2
    consumers: dict = {}
    for node in graph.nodes:
        for name in node.inputs:
            consumers.setdefault(name, []).append(node)
    found = []
    for name, tensor in _constants(graph).items():
        if int(np.prod(tensor.dims)) != half or not _reaches(name, consumers, "MatMul"):
            continue
        values = onnx_file.tensor_values(model, tensor).reshape(-1)
        found.append((name, values))
    parts = []
    for name, values in found:
        judgment = _judge_inv_freq(spec, values, len(found))
        parts.append(OnnxPart(name, None, 0, "float32", judgment))
    return parts


def _constants(graph) -> dict:
    found = dict(graph.initializers)
    for node in graph.nodes:
        value = node.attributes.get("value") if node.op_type == "Constant" else None
        if isinstance(value, onnx_file.Tensor) and node.outputs:
            found[node.outputs[0]] = value
    return found


def _reaches(name: str, consumers: dict, op: str, depth: int = 0) -> bool:
    for node in consumers.get(name, ()):
        if node.op_type == op:
            return True
        if depth < 6 and any(_reaches(out, consumers, op, depth + 1) for out in node.outputs):
            return True
    return False


def _judge_inv_freq(spec, values, candidates: int) -> Verdict:
    """A traced ``inv_freq`` against the config's: for LongRoPE, one vector alone (no switch
    between two) is frozen to the factors it was traced with."""
    original = spec.scaling.get("original_max_position_embeddings")
    lengths = [None]
    if spec.length_dependent() and original:
        lengths = [original, max(original + 1, spec.max_position_embeddings or 0)]
    found = []
    for length in lengths:
        reasons, _ = judge_parameters(spec, Held(inv_freq=values), length)
        found.append((length, reasons))
    passed = [length for length, reasons in found if not reasons]
    if len(lengths) > 1 and candidates == 1 and passed:
        regime = "short" if passed[0] == original else "long"
        return mismatch([finding("frozen", title=title(spec), engine=regime, original=original)])
    return parameters_verdict(() if passed else found[-1][1])
