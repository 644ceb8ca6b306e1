"""``sinpe check openvino_model.xml [config.json]``: the OpenVINO adapter. An IR exported by
optimum-intel (``optimum-cli export openvino``) holds no cos/sin tables: transformers'
rotary module is traced, so a float ``inv_freq`` constant (the config's scaling applied at
export) is multiplied with the position ids and fed to ``Sin`` and ``Cos`` at run time (the
CPU plugin fuses them into a ``RoPE`` node when it compiles the model; the IR on disk keeps
the traced ops). A YaRN or LongRoPE attention factor is a scalar constant multiplying the
``Sin`` and ``Cos`` outputs. An IR may also hold tables folded into constants (a ``RoPE``
op's cos/sin inputs, or a Const gathered by position): every such table is judged whole
(``judge.judge_table``).

What is found by how the graph uses it, never by name, and handed to the verdict core:

- each ``inv_freq`` (a float Const of ``rotary/2`` values behind a ``Sin``/``Cos``, through
  ``MatMul``/``Multiply``) with the attention factor that scales the result, judged as
  parameters (``judge.judge_parameters``);
- a rope type whose frequencies depend on the length (dynamic NTK, LongRoPE) is judged at
  each length it has a regime for: one ``inv_freq`` traced at export serves every length,
  so dynamic NTK is a match up to the original length and a mismatch past it ("scaling not
  applied": the IR keeps the unscaled frequencies transformers leaves only up to there), and
  a LongRoPE with one set of factors is "frozen"; two ``inv_freq`` constants chosen by a
  ``Select`` are each judged in the regime they match, and the switch's length is read.
"""

from __future__ import annotations

import itertools
import os
from typing import NamedTuple

import numpy as np

from .._files import openvino as ir_file
from .._files import reading
from .._rope.config import rope_config
from .._verdict.judge import (
    MAX_POSITION,
    Held,
    bounded,
    judge_parameters,
    judge_table,
    parameters_verdict,
    title,
)
from .._verdict.verdict import MISMATCH, finding, mismatch, not_judged, overall
from .onnx import OnnxPart, OnnxReport, _config, _signature

__all__ = ["check_openvino", "find_frequencies", "find_tables"]

MAX_WALK = 1024  # layers visited in one walk of the graph (a rotary module has ~10)
MAX_TRIG = 1 << 14  # Sin and Cos layers judged (a model has one pair per rotary module)
# ops a frequency constant passes through on its way to Sin/Cos (never ShapeOf: its output
# carries no value of its input, and behind it lies the whole model)
_BACK = {
    "Concat",
    "Transpose",
    "MatMul",
    "Multiply",
    "Convert",
    "Reshape",
    "Unsqueeze",
    "Squeeze",
    "Broadcast",
    "Divide",
    "Tile",
}
_TO_TABLE = {"Convert", "Gather", "Slice", "StridedSlice", "Reshape", "Unsqueeze", "Squeeze"}


class Frequencies(NamedTuple):
    """The frequencies a ``MatMul``/``Multiply`` applies to the position ids on the way to a
    set of ``Sin``/``Cos`` ops: ``vectors``, ``[(name, values)]``, one for each branch a
    ``Select`` on the way can take (LongRoPE's short and long factors) or the one constant;
    ``factors``, the scalars multiplying the ``Sin``/``Cos`` outputs (``None``: none);
    ``selected``, whether a ``Select`` chooses; ``limits``, integer scalars its condition
    compares with (LongRoPE's switch)."""

    vectors: tuple
    users: tuple
    factors: tuple
    selected: bool
    limits: tuple


def _float_const(layer) -> bool:
    return layer.type == "Const" and layer.data.get("element_type") in ir_file.FLOATS


def _count(ir, layer) -> int:
    return int(np.prod(ir_file.shape_of(ir.path, layer), dtype=np.int64))


def _inputs(ir, at: int) -> list:
    return [source for _, source in ir.inputs.get(at, ())]


def _products(ir, start: int, fed: dict) -> list:
    """The ``MatMul``/``Multiply`` layers behind a ``Sin``/``Cos`` through ``_BACK`` ops that
    multiply the position ids (a Parameter behind one input) with constants (the other)."""
    found, seen, todo = [], {start}, [start]
    while todo and len(seen) < MAX_WALK:
        at = todo.pop()
        for source in _inputs(ir, at):
            if source in seen or ir.layers[source].type not in _BACK:
                continue
            seen.add(source)
            sides = _inputs(ir, source)
            if ir.layers[source].type in ("MatMul", "Multiply") and len(sides) == 2:
                if any(side not in fed for side in sides):
                    fed.update({side: _fed_by_parameter(ir, side) for side in sides})
                flags = [fed[side] for side in sides]
                if flags.count(True) == 1:
                    found.append((source, sides[flags.index(False)]))
                    continue
            todo.append(source)
    return found


def _fed_by_parameter(ir, start: int) -> bool:
    """Whether a Parameter lies behind ``start`` (a ``Select``'s condition aside: it chooses
    which constant flows, it is not a value that flows)."""
    seen, todo = {start}, [start]
    while todo and len(seen) < MAX_WALK:
        at = todo.pop()
        layer = ir.layers[at]
        if layer.type in ("Parameter", "ReadValue"):
            return True
        for port, source in ir.inputs.get(at, ()):
            if (layer.type == "Select" and port == 0) or source in seen:
                continue
            seen.add(source)
            todo.append(source)
    return len(seen) >= MAX_WALK


_ARITHMETIC = {
    "Multiply": np.multiply,
    "Divide": np.divide,
    "Add": np.add,
    "Subtract": np.subtract,
    "Power": np.power,
}
_SHAPING = ("Convert", "Unsqueeze", "Squeeze", "Reshape", "Transpose")


def _evaluate(ir, at: int, choices: dict, memo: dict | None = None, depth: int = 0):
    """The flat float64 values of the constant expression at ``at`` (``choices``: the branch,
    1 or 2, each ``Select`` takes), or ``None`` where it is not one sinpe evaluates. Each
    layer is evaluated once (``memo``), at most ``MAX_WALK`` of them, 32 deep."""
    memo = {} if memo is None else memo
    if at in memo:
        return memo[at]
    if depth > 32 or len(memo) >= MAX_WALK:
        return None
    memo[at] = None  # a cycle evaluates to nothing
    layer = ir.layers[at]
    sources = _inputs(ir, at)
    found = None
    if _float_const(layer):
        found = ir_file.const_values(ir, layer, max_values=1 << 16).reshape(-1)
    elif layer.type in _SHAPING and sources:
        found = _evaluate(ir, sources[0], choices, memo, depth + 1)
    elif layer.type == "Select" and len(sources) == 3:
        found = _evaluate(ir, sources[choices.get(at, 1)], choices, memo, depth + 1)
    elif layer.type in _ARITHMETIC and len(sources) == 2:
        a, b = (_evaluate(ir, source, choices, memo, depth + 1) for source in sources)
        if a is not None and b is not None and (a.size == b.size or 1 in (a.size, b.size)):
            with np.errstate(all="ignore"):
                found = _ARITHMETIC[layer.type](a, b)
    memo[at] = found
    return found


def _selects(ir, start: int) -> list:
    """The ``Select`` layers behind ``start`` on the constant side (their values, not their
    conditions), at most a few."""
    found, seen, todo = [], {start}, [start]
    while todo and len(seen) < 256:
        at = todo.pop()
        if ir.layers[at].type == "Select":
            found.append(at)
        for port, source in ir.inputs.get(at, ()):
            if source not in seen and not (ir.layers[at].type == "Select" and port == 0):
                seen.add(source)
                todo.append(source)
    return sorted(found)[:3]


def _vectors(ir, side: int) -> tuple:
    """``(((name, values), ...), Select ids)`` of the constant side of a product."""
    selects = _selects(ir, side)
    vectors = []
    for combination in itertools.product((1, 2), repeat=len(selects)):
        choices = dict(zip(selects, combination))
        values = _evaluate(ir, side, choices)
        if values is None:
            continue
        names = [_branch_name(ir, s, b) for s, b in choices.items()]
        vectors.append((" ".join(names) or ir.layers[side].name, values))
    return tuple(vectors), selects


def _branch_name(ir, select: int, branch: int) -> str:
    """A Select's branch named by the first constant behind it."""
    at = _inputs(ir, select)[branch]
    while ir.layers[at].type in _SHAPING and _inputs(ir, at):
        at = _inputs(ir, at)[0]
    return ir.layers[at].name


def _limits(ir, selects) -> tuple:
    """Integer scalar constants the condition of each ``Select`` compares with."""
    found: set = set()
    for select in selects:
        todo: list = [_inputs(ir, select)[0]]
        seen: set = set()
        while todo and len(seen) < 64:
            at = todo.pop()
            if at in seen:
                continue
            seen.add(at)
            layer = ir.layers[at]
            kind = layer.data.get("element_type", "")
            if layer.type == "Const" and kind in ("i64", "i32") and _count(ir, layer) == 1:
                offset, size = int(layer.data["offset"]), int(layer.data["size"])
                data = reading.read_at(ir.bin_path, offset, size, what="a Const")
                found.add(int(np.frombuffer(data, "<i8" if kind == "i64" else "<i4")[0]))
            elif layer.type not in ("Parameter", "ShapeOf", "ReadValue"):
                todo += _inputs(ir, at)
    return tuple(sorted(found))


def _factor(ir, trig: int) -> float | None:
    """The scalar constant a ``Multiply`` applies to a ``Sin``/``Cos`` output, if any."""
    for user in ir.consumers.get(trig, ()):
        layer = ir.layers[user]
        if layer.type != "Multiply":
            continue
        for source in _inputs(ir, user):
            other = ir.layers[source]
            if source != trig and _float_const(other) and _count(ir, other) == 1:
                return float(ir_file.const_values(ir, other).reshape(-1)[0])
    return None


def find_frequencies(ir) -> list:
    """Every product of the position ids with constant frequencies feeding ``Sin``/``Cos``."""
    groups: dict = {}
    fed: dict = {}
    trig = [layer for layer in ir.layers.values() if layer.type in ("Sin", "Cos")]
    if len(trig) > MAX_TRIG:
        raise ValueError(f"{ir.path}: more than {MAX_TRIG} Sin and Cos layers: not judged")
    for layer in trig:
        for product, side in _products(ir, layer.id, fed):
            users, factors = groups.get((product, side), ((), ()))
            groups[(product, side)] = (users + (layer.name,), factors + (_factor(ir, layer.id),))
    found = []
    for (_, side), (users, factors) in groups.items():
        vectors, selects = _vectors(ir, side)
        if vectors:
            found.append(Frequencies(vectors, users, factors, bool(selects), _limits(ir, selects)))
    return found


def find_tables(ir, half: int) -> list:
    """``[(cos Const, sin Const)]``: float Consts of rows of ``half`` (or ``2 half``) values
    that reach a ``Multiply`` or a ``RoPE`` op through gathers and reshapes; cos and sin
    told apart by row 0 (sin's is 0), paired in the order found."""
    found = []
    for layer in ir.layers.values():
        if not _float_const(layer):
            continue
        shape = ir_file.shape_of(ir.path, layer)
        if len(shape) < 2 or shape[-1] not in (half, 2 * half) or shape[-2] < 2:
            continue
        if int(np.prod(shape[:-2], dtype=np.int64)) != 1 or not _reaches_rotation(ir, layer.id):
            continue
        found.append(layer)
    cos = [t for t in found if not _sin_like(ir, t)]
    sin = [t for t in found if _sin_like(ir, t)]
    return list(zip(cos, sin))


def _reaches_rotation(ir, start: int) -> bool:
    """Whether a Const reaches a ``Multiply`` or ``RoPE`` through ``_TO_TABLE`` ops (each
    layer visited once, 6 steps at most)."""
    seen, frontier = {start}, [start]
    for _ in range(6):
        ahead = []
        for at in frontier:
            for user in ir.consumers.get(at, ()):
                kind = ir.layers[user].type
                if kind in ("Multiply", "RoPE"):
                    return True
                if kind in _TO_TABLE and user not in seen:
                    seen.add(user)
                    ahead.append(user)
        frontier = ahead
    return False


def _rows(ir, layer, positions) -> np.ndarray:
    return ir_file.const_rows(ir, layer, positions)


def _sin_like(ir, layer) -> bool:
    return bool(np.all(_rows(ir, layer, [0]) == 0))


# --------------------------------------------------------------------------- judging


def check_openvino(path, config=None) -> OnnxReport:
    """Whether the RoPE an OpenVINO IR holds (traced ``inv_freq`` constants and their
    factors; cos/sin tables folded into constants) is the one ``config`` gives (a
    config.json path or mapping; default: the model folder's)."""
    path = os.fspath(path)
    ir = ir_file.read(path)
    data = _config(path, config)
    spec = rope_config(data)
    half = (spec.head_dim or 0) // 2
    parts: list = []
    served: set = set()
    for group in find_frequencies(ir):
        judged, layer_type = _judge_frequencies(ir, spec, group)
        parts += judged
        served.add(layer_type)
    if parts:
        parts += _unserved(spec, served)
    for cos, sin in find_tables(ir, half):
        parts.append(_judge_table(ir, spec, cos, sin, half))
    if not parts:
        raise ValueError(
            f"{path}: no RoPE found (no float constant feeding Sin/Cos, no cos/sin table "
            "folded into a constant)"
        )
    notes: tuple = ()
    if "optimum_intel_version" in ir.info:
        names = {"optimum_intel_version": "optimum-intel", "transformers_version": "transformers"}
        versions = ", ".join(f"{name} {ir.info[k]}" for k, name in names.items() if k in ir.info)
        notes = (f"exported by {versions}",)
    return OnnxReport(path, overall(p.judgment for p in parts), tuple(parts), notes, None)


def _layer_specs(spec) -> list:
    """The specs a traced module may serve: the config's, or one per distinct RoPE of its
    layer types (a layer type without RoPE left out)."""
    if spec.layer_types is None:
        return [spec]
    found: dict = {}
    for layer_type in dict.fromkeys(spec.layer_types):
        signature = _signature(spec, layer_type)
        if len(signature) > 1:  # a layer type with RoPE
            found.setdefault(signature, spec.layer(layer_type))
    return list(found.values())


def _judge_frequencies(ir, spec, group: Frequencies) -> tuple:
    """``(parts, layer type)``: a group judged against the config's one RoPE, or against
    each of its layer types' RoPEs, the one it matches kept (``None`` where none: the
    layers it serves are not known, and it is not judged)."""
    specs = _layer_specs(spec)
    for one in specs:
        parts = _judge_against(one, group)
        if len(specs) == 1 or all(p.judgment.verdict != MISMATCH for p in parts):
            return parts, one.layer_type
    reason = finding("layer_of", engine=", ".join(map(repr, group.users[:2])))
    return [
        OnnxPart(name, None, 0, "float32", not_judged(reason)) for name, _ in group.vectors
    ], None


def _unserved(spec, served: set) -> list:
    """A part for each of the config's layer types' RoPEs no group matched: not in the IR
    as sinpe reads it, so never a match."""
    parts = []
    for one in _layer_specs(spec) if spec.layer_types is not None else []:
        if one.layer_type not in served:
            what = f"RoPE for the {one.layer_type} layers"
            reason = finding("missing_attribute", engine="the IR", config=what)
            parts.append(
                OnnxPart(f"({one.layer_type})", one.layer_type, 0, "-", not_judged(reason))
            )
    return parts


def _judge_against(one, group: Frequencies) -> list:
    half = (one.head_dim or 0) // 2
    held_factor = _worst_factor(one, group.factors, _lengths(one)[-1][1])
    lengths = _lengths(one)
    parts = []
    for name, values in group.vectors:
        held = Held(width=2 * values.size, inv_freq=values, attention_factor=held_factor)
        if values.size != half or len(lengths) == 1:
            reasons, _ = judge_parameters(one, held, lengths[-1][1])
            parts.append(OnnxPart(name, one.layer_type, 0, "float32", parameters_verdict(reasons)))
            continue
        parts += _by_regime(one, name, "float32", held, lengths, group)
    return parts


def _worst_factor(spec, factors, length) -> float:
    """Of the factors scaling the Sin/Cos outputs (none: 1), the one farthest from the
    config's: the verdict is the worst of them all."""
    want = float(spec.frequencies(length)[1])
    found = {1.0 if f is None else f for f in factors}
    return max(found, key=lambda f: abs(f - want) if np.isfinite(f) else np.inf)


def _dtype(ir, const: int) -> str:
    kind = ir.layers[const].data.get("element_type", "")
    return {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}[kind]


def _lengths(spec) -> list:
    """``[(words, length)]``: the lengths a length-dependent rope type has a regime at (up to
    the original length, and past it), else one ``(None, trained length)``."""
    original = spec.scaling.get("original_max_position_embeddings")
    if not spec.length_dependent():
        return [("", spec.max_position_embeddings)]
    original = original or spec.max_position_embeddings
    original = bounded("the original length", original, MAX_POSITION, 1)
    past = max(2 * original, spec.max_position_embeddings or 0)
    return [(f"up to {original:,}", original), (f"past {original:,}, at {past:,}", past)]


def _by_regime(spec, name: str, dtype: str, held: Held, lengths, group) -> list:
    """One length-dependent ``inv_freq`` judged at each regime's length. LongRoPE with one
    vector alone: frozen (the core's words); with two chosen by a ``Select``, each judged in
    the regime it matches, and the switch's length read from the condition."""
    original = lengths[0][1]
    judged = [(words, length, judge_parameters(spec, held, length)[0]) for words, length in lengths]
    longrope = "short_factor" in spec.scaling or "long_factor" in spec.scaling
    passed = [words for words, _, reasons in judged if not reasons]
    if longrope and group.selected and passed:
        regime = "short" if passed[0] == lengths[0][0] else "long"
        findings = []
        if original not in group.limits:  # the graph switches elsewhere, or not by length
            switch = ", ".join(map(str, group.limits)) or "none read"
            fields = dict(title=title(spec), engine=switch, config=original)
            findings.append(finding("original_length", **fields))
        verdict = parameters_verdict(findings)
        return [
            OnnxPart(f"{name} ({regime} factors: {passed[0]})", spec.layer_type, 0, dtype, verdict)
        ]
    if longrope and passed:
        regime = "short" if passed[0] == lengths[0][0] else "long"
        found = finding("frozen", title=title(spec), engine=regime, original=original)
        return [OnnxPart(name, spec.layer_type, 0, dtype, mismatch([found]))]
    return [
        OnnxPart(f"{name} ({words})", spec.layer_type, 0, dtype, parameters_verdict(reasons))
        for words, _, reasons in judged
    ]


def _judge_table(ir, spec, cos, sin, half: int) -> OnnxPart:
    """A cos/sin table folded into constants, every row judged at its own length."""
    one = spec if spec.layer_types is None else spec.layer(spec.layer_types[0])
    shape = ir_file.shape_of(ir.path, cos)
    rows = shape[-2]
    dtype = _dtype(ir, cos.id)
    if ir_file.shape_of(ir.path, sin) != shape:
        raise ValueError(f"{ir.path}: cos {cos.name!r} {shape} and sin {sin.name!r} differ")

    def read(positions):
        c = _rows(ir, cos, positions)[:, :half]
        return c, _rows(ir, sin, positions)[:, :half]

    table = judge_table(one._one(), read, rows, np.arange(half), dtype, rows)
    return OnnxPart(cos.name, None, rows, dtype, table.verdict)
