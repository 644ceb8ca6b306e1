"""``sinpe check model.onnx``: ONNX models written here by hand (tests/onnx_files.py: the forms
ONNX Runtime GenAI's builder writes, by its rules; CI's ONNX leg runs the builder itself,
tests/test_onnx_genai.py), each RoPE form found and judged by the verdict core, ``--fix``
writing the exact copy, and hostile files refused in one line, in bounded memory."""

from __future__ import annotations

import json
import math
import os
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from command import run
from onnx_files import (
    BFLOAT16,
    FLOAT,
    FLOAT16,
    field,
    graph,
    model,
    nested,
    node,
    tensor,
    text,
    varint,
)
from rope_cases import LLAMA31, phi3_longrope

import sinpe
import sinpe.onnx
from sinpe._files import onnx as onnx_file
from sinpe._verdict.judge import judge_table

LLAMA = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 5e5}
YARN = {
    "model_type": "qwen3",
    "head_dim": 64,
    "max_position_embeddings": 16384,
    "rope_scaling": {
        "rope_type": "yarn",
        "rope_theta": 1e6,
        "factor": 4.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
    },
}
LONGROPE = phi3_longrope(128, 2, 8192, 1024)


def _float32_tables(config: dict, rows: int, length: int | None = None):
    """The builder's computation: float32 inverse frequencies and angles, compact."""
    spec = sinpe.rope_config(config)
    inv_freq, factor = spec.frequencies(length or rows)
    angle = np.arange(rows, dtype=np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
    cos = (np.cos(angle) * np.float32(factor)).astype(np.float32)
    return cos, (np.sin(angle) * np.float32(factor)).astype(np.float32)


def _gqa(cos="cos_cache", sin="sin_cache", layer=0, interleaved=0):
    inputs = ["q", "k", "v", "past_k", "past_v", "seqlens", "total", cos, sin]
    name = f"/model/layers.{layer}/attn/GroupQueryAttention"
    return node(
        "GroupQueryAttention", inputs, [f"o{layer}"], domain="com.microsoft", name=name,
        do_rotary=1, rotary_interleaved=interleaved, num_heads=2, kv_num_heads=1,
    )  # fmt: skip


def _save(folder: Path, graph_bytes: bytes, config: dict | None, data: dict | None = None):
    """``model.onnx`` (and ``model.onnx.data`` of ``data``'s arrays, in order) in
    ``folder``, with ``config.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(model(graph_bytes))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    if data:
        (folder / "model.onnx.data").write_bytes(b"".join(a.tobytes() for a in data.values()))
    return folder / "model.onnx"


def _external(name: str, array: np.ndarray, offset: int, data_type=FLOAT) -> bytes:
    location = {"location": "model.onnx.data", "offset": offset, "length": array.nbytes}
    return tensor(name, dims=array.shape, data_type=data_type, external=location)


def _builder_model(folder: Path, config: dict, cos, sin, data_type=FLOAT):
    """The builder's CPU form: caches in external data, fed to GroupQueryAttention."""
    initializers = [_external("cos_cache", cos, 0, data_type)]
    initializers.append(_external("sin_cache", sin, cos.nbytes, data_type))
    weights = graph([_gqa(layer=0), _gqa(layer=1)], initializers, ["input_ids"])
    return _save(folder, weights, config, {"cos": cos, "sin": sin})


# --------------------------------------------------------------------------- verdicts


def test_the_builders_float32_cache_drifts_and_the_exact_one_matches(tmp_path):
    cos, sin = _float32_tables(LLAMA, 4096)
    path = _builder_model(tmp_path / "built", LLAMA, cos, sin)
    report = sinpe.check_onnx(path)
    assert report.verdict == "drift" and [p.name for p in report.parts] == ["cos_cache"]
    result = run("check", path)
    assert result.returncode == 0 and "drifts with the position: float32 angles" in result.stdout
    exact = sinpe.rope_config(LLAMA).rope(4096, layout="compact", dtype="float32")
    path = _builder_model(tmp_path / "exact", LLAMA, *exact)
    assert sinpe.check_onnx(path).verdict == "match"


def _written(config: dict, form: str) -> dict:
    """The config as given (``rope_scaling``), as transformers 5 writes it
    (``rope_parameters``), or nested in a ``text_config``."""
    config = json.loads(json.dumps(config))
    if form in ("rope_parameters", "text_config"):
        config["rope_parameters"] = config.pop("rope_scaling")
    if form == "text_config":
        config = {
            "model_type": "qwen3_vl",
            "text_config": {**config, "model_type": "qwen3_vl_text"},
        }
    return config


@pytest.mark.parametrize(
    "truncate, form",
    [
        (None, "rope_scaling"),
        (True, "rope_scaling"),
        (None, "rope_parameters"),
        (None, "text_config"),
    ],
)
def test_an_unrounded_yarn_ramp_is_named_with_its_size(tmp_path, truncate, form):
    """ONNX Runtime GenAI's make_inv_freq_rescaled_with_ntk: YaRN's correction range is not
    floored and ceiled (the config's truncate is never read), whether the config leaves
    truncate to its default or says true, however the config carries its mapping."""
    unrounded = json.loads(json.dumps(YARN))
    unrounded["rope_scaling"]["truncate"] = False
    config = json.loads(json.dumps(YARN))
    if truncate is not None:
        config["rope_scaling"]["truncate"] = truncate
    cos, sin = _float32_tables(unrounded, 16384)
    path = _builder_model(tmp_path, _written(config, form), cos, sin)
    report = sinpe.check_onnx(path)
    assert report.verdict == "mismatch"
    assert report.reasons == (
        "YaRN correction range not rounded (truncate): 9 of 32 pairs off, up to 23%",
    )
    assert report.judgment.findings[0].code == "ramp_unrounded"


def test_an_ignored_yarn_attention_factor_is_named(tmp_path):
    given = json.loads(json.dumps(YARN))
    given["rope_scaling"]["attention_factor"] = 1.0
    cos, sin = _float32_tables(YARN, 16384)  # the builder's 0.1 ln(4) + 1 anyway
    report = sinpe.check_onnx(_builder_model(tmp_path, given, cos, sin))
    assert "YaRN attention factor 1.13863 where the config gives 1.0" in report.reasons


def test_longrope_if_branches_are_each_judged_at_their_length(tmp_path):
    """The builder's Phi-3 LongRoPE on the CPU: two Constant caches in an If's branches
    (the large one for sequences past the original length, the small one within it)."""
    large = _float32_tables(LONGROPE, 8192)
    small = _float32_tables(LONGROPE, 1024)
    branch = {
        key: graph(
            [
                node("Constant", [], [f"cos_{key}"], value=("tensor", tensor("", t[0]))),
                node("Constant", [], [f"sin_{key}"], value=("tensor", tensor("", t[1]))),
            ]
        )
        + b"".join(field(12, 2, text(1, f"{part}_{key}")) for part in ("cos", "sin"))
        for key, t in (("large", large), ("small", small))
    }
    nodes = [
        node(
            "If", ["longer"], ["cos_cache", "sin_cache"],
            then_branch=("graph", branch["large"]), else_branch=("graph", branch["small"]),
        ),
        _gqa(),
    ]  # fmt: skip
    path = _save(tmp_path, graph(nodes, [], ["input_ids"]), LONGROPE)
    report = sinpe.check_onnx(path)
    assert report.verdict == "drift", report.reasons
    assert sorted(p.rows for p in report.parts) == [1024, 8192]
    wrong = graph(
        [
            node(
                "If", ["longer"], ["cos_cache", "sin_cache"],
                then_branch=("graph", branch["small"]), else_branch=("graph", branch["small"]),
            ),
            _gqa(),
        ]
    )  # fmt: skip
    assert sinpe.check_onnx(_save(tmp_path / "w", wrong, LONGROPE)).verdict == "drift"


def test_a_concatenated_longrope_cache_is_judged_in_its_two_parts(tmp_path):
    """DML's and WebGPU's one cache: the original length's rows (short factors), then the
    trained length's (long)."""
    small, large = _float32_tables(LONGROPE, 1024), _float32_tables(LONGROPE, 8192)
    cos, sin = (np.concatenate([small[k], large[k]]) for k in (0, 1))
    report = sinpe.check_onnx(_builder_model(tmp_path, LONGROPE, cos, sin))
    assert [p.name for p in report.parts] == ["cos_cache[0:1024]", "cos_cache[1024:9216]"]
    assert report.verdict == "drift"
    swapped = (np.concatenate([large[k][:1024], large[k]]) for k in (0, 1))
    report = sinpe.check_onnx(_builder_model(tmp_path / "s", LONGROPE, *swapped))
    assert report.verdict == "mismatch"
    assert report.reasons == (
        "LongRoPE long factors at every length (transformers: short factors while the "
        "sequence is <= 1024)",
    )
    short = _float32_tables(LONGROPE, 8192, 1024)  # the trained length's rows, short factors
    swapped = (np.concatenate([small[k], short[k]]) for k in (0, 1))
    report = sinpe.check_onnx(_builder_model(tmp_path / "l", LONGROPE, *swapped))
    assert report.reasons == (
        "LongRoPE short factors at every length (transformers: long factors while the "
        "sequence is > 1024)",
    )


@pytest.mark.parametrize("data_type, name", [(FLOAT16, "float16"), (BFLOAT16, "bfloat16")])
def test_a_half_cache_rounded_twice_is_said_and_fixed(tmp_path, data_type, name):
    """The builder's GPU caches: the float32 table cast to float16 (two roundings)."""
    if data_type == BFLOAT16:
        pytest.importorskip("ml_dtypes")
    cos, sin = _float32_tables(LLAMA, 4096)
    if data_type == FLOAT16:
        cos, sin = cos.astype(np.float16), sin.astype(np.float16)
    else:
        cos, sin = ((a.view(np.uint32) >> 16).astype(np.uint16) for a in (cos, sin))
    path = _builder_model(tmp_path / "m", LLAMA, cos, sin, data_type)
    report = sinpe.check_onnx(path)
    assert report.verdict in ("match", "drift")
    positions = np.arange(4096)  # every row; sinpe's tables correctly rounded
    exact = sinpe.rope_config(LLAMA).rope_at(positions, layout="compact", dtype=name)
    read = [c[positions] for c in (cos, sin)]
    if data_type == BFLOAT16:
        read = [(r.astype(np.uint32) << 16).view(np.float32) for r in read]
    differ = sum(int((r != e).sum()) for r, e in zip(read, exact))
    assert report.parts[0].notes == (
        f"rounded twice: {differ} of {2 * positions.size * 32} entries are not the "
        f"exact value rounded once to {name} (a float32 table rounded again)",
    )
    assert differ > 0
    fixed = sinpe.onnx.fix(path, tmp_path / "fixed")
    again = sinpe.check_onnx(fixed)
    assert again.verdict == "match" and again.parts[0].notes == ()


def _traced(tmp_path, config, inv_freq, initializers=()):
    """optimum's export (TorchScript, transformers 4.57): one inv_freq constant, multiplied
    with the position ids (after ``initializers``, the model's weights, where given)."""
    nodes = [
        node("Constant", [], ["inv_freq"], value=("tensor", tensor("", inv_freq[None, :, None]))),
        node("Expand", ["inv_freq", "shape"], ["expanded"]),
        node("MatMul", ["expanded", "position_ids"], ["angles"]),
        node("Cos", ["angles"], ["cos"]),
    ]
    inputs = ["input_ids", "position_ids"]
    return _save(tmp_path, graph(nodes, list(initializers), inputs), config)


@pytest.mark.parametrize("length, regime", [(1024, "short"), (8192, "long")])
def test_a_traced_longrope_frozen_to_one_set_of_factors_is_named(tmp_path, length, regime):
    """Phi-3's export: transformers' per-call switch was a Python if, so the graph holds the
    factors of the length it was traced at, short or long."""
    spec = sinpe.rope_config(LONGROPE)
    path = _traced(tmp_path, LONGROPE, spec.frequencies(length)[0])
    report = sinpe.check_onnx(path)
    assert report.reasons == (
        f"LongRoPE frozen to its {regime} factors: no switch in the graph (transformers "
        "switches at the original length 1024)",
    )
    result = run("check", path, "--fix", tmp_path / "out")
    assert result.returncode == 2 and "not fixed: its RoPE is not the config's" in result.stderr


def test_a_traced_inv_freq_is_judged_as_parameters(tmp_path):
    """A traced plain RoPE: its frequencies read as the config within the core's parameter
    bound; another base's, a mismatch saying the base."""
    spec = sinpe.rope_config(LLAMA)
    right = sinpe.check_onnx(_traced(tmp_path, LLAMA, spec.frequencies()[0]))
    assert right.verdict == "match" and right.judgment.kind == "parameters"
    assert right.judgment.bound == 2.0**-19
    other = sinpe.rope_config({**LLAMA, "rope_theta": 2 * LLAMA["rope_theta"]})
    wrong = sinpe.check_onnx(_traced(tmp_path, LLAMA, other.frequencies()[0]))
    assert wrong.verdict == "mismatch"
    assert wrong.reasons == ("base 1e+06 where the config gives 500000.0",)


@pytest.mark.parametrize("between, found", [(0, True), (5, True), (6, False)])
def test_an_inv_freq_counts_only_where_it_reaches_a_matmul(tmp_path, between, found):
    """A traced inv_freq is one only where it reaches a MatMul within 6 nodes (Expand, then
    ``between`` Identity nodes); the part it makes says its name, no layer type, no rows,
    float32. A constant of the same size that never reaches one is no RoPE."""
    spec = sinpe.rope_config(LLAMA)
    inv_freq = spec.frequencies()[0]
    nodes = [
        node("Constant", [], ["inv_freq"], value=("tensor", tensor("", inv_freq[None, :, None]))),
        node("Expand", ["inv_freq", "shape"], ["e0"]),
    ]
    nodes += [node("Identity", [f"e{i}"], [f"e{i + 1}"]) for i in range(between)]
    nodes += [node("MatMul", [f"e{between}", "position_ids"], ["angles"])]
    path = _save(tmp_path, graph(nodes, [], ["input_ids", "position_ids"]), LLAMA)
    if not found:
        with pytest.raises(ValueError, match="no RoPE found"):
            sinpe.check_onnx(path)
        return
    (part,) = sinpe.check_onnx(path).parts
    assert (part.name, part.layer_type, part.rows, part.dtype) == ("inv_freq", None, 0, "float32")
    assert part.judgment.verdict == "match"
    nodes[-1] = node("Add", [f"e{between}", "position_ids"], ["angles"])
    path = _save(tmp_path, graph(nodes, [], ["input_ids", "position_ids"]), LLAMA)
    with pytest.raises(ValueError, match="no RoPE found"):
        sinpe.check_onnx(path)


def test_a_model_without_config_json_asks_for_it(tmp_path):
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path, LLAMA, cos, sin)
    (tmp_path / "config.json").unlink()
    result = run("check", path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "no config.json beside the model (ONNX Runtime GenAI's builder writes none)" in (
        result.stderr
    )
    config = tmp_path / "elsewhere.json"
    config.write_text(json.dumps(LLAMA))
    assert run("check", path, config).returncode == 0


# --------------------------------------------------------------------------- how caches are found


def _inline_model(folder: Path, nodes: list, config: dict, initializers=()) -> Path:
    return _save(folder, graph(nodes, list(initializers), ["input_ids"]), config)


def _constant(name: str, array) -> bytes:
    return node("Constant", [], [name], value=("tensor", tensor("", array)))


def _exact(config: dict, rows: int, **options):
    return sinpe.rope_config(config).rope(rows, layout="compact", dtype="float32", **options)


@pytest.mark.parametrize(
    "damage", ["random rows", "one wrong row", "nan", "inf", "last row"], ids=str
)
def test_every_row_of_a_cache_is_judged(tmp_path, damage):
    """A 4,096-row cache with one row (2,500, else the last) wrong, or 3,909 of its rows
    random: a mismatch naming the entry (an audit of ~190 sampled rows read "matches ...
    every entry within"); the exact cache's verdict counts every entry it holds."""
    cos, sin = (a.copy() for a in _exact(LLAMA, 4096))
    report = sinpe.check_onnx(_builder_model(tmp_path / "exact", LLAMA, cos, sin))
    entries = report.parts[0].judgment.as_json()["entries"]
    assert entries == {"compared": 2 * 4096 * 32, "held": 2 * 4096 * 32}
    assert "every entry within" in report.text
    rows = np.random.default_rng(7).permutation(4096)[:3909]
    if damage == "random rows":
        cos[rows] = np.random.default_rng(8).uniform(-1, 1, (3909, 32))
    else:
        row = 4095 if damage == "last row" else 2500
        cos[row, 17] = {"nan": np.nan, "inf": np.inf}.get(damage, cos[row, 17] + 0.01)
    report = sinpe.check_onnx(_builder_model(tmp_path / "bad", LLAMA, cos, sin))
    assert report.verdict == "mismatch", report.text
    if damage in ("nan", "inf"):
        assert report.reasons == (
            f"the entry at position 2,500, column 17 is {damage}: not a value a RoPE can use",
        )
    elif damage != "random rows":
        assert report.parts[0].judgment.worst[0] == (4095 if damage == "last row" else 2500)


def test_a_cache_no_layer_of_which_is_placed_is_named_never_dropped(tmp_path):
    """Gemma 3 with a second cache (0.5 everywhere) used only by a node whose name gives no
    layer index: not judged, named with its reason, and the model is "unchecked" (exit 1),
    never a match; a config whose layer types share one RoPE judges it by that RoPE."""
    spec = sinpe.rope_config(GEMMA)
    local = spec.layer("sliding_attention").rope(64, layout="compact", dtype="float32")
    full = spec.layer("full_attention").rope(64, layout="compact", dtype="float32")
    half = np.full((64, 16), 0.5, np.float32)
    names = ["lc", "ls", "gc", "gs", "hc", "hs"]
    nodes = [_constant(n, t) for n, t in zip(names, [*local, *full, half, half])]
    nodes += [_gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
    nodes += [_gqa("hc", "hs", layer="extra")]
    path = _inline_model(tmp_path / "g", nodes, GEMMA)
    report = sinpe.check_onnx(path)
    assert [(p.name, p.judgment.verdict) for p in report.parts] == [
        ("lc", "match"), ("gc", "match"), ("hc", "unchecked")
    ]  # fmt: skip
    assert report.verdict == "unchecked" and "match" not in report.text
    result = run("check", path)
    assert result.returncode == 1, result.stdout + result.stderr
    with pytest.raises(ValueError, match="not fixed: not every cache was judged"):
        sinpe.onnx.fix(path, tmp_path / "fixed")
    assert not (tmp_path / "fixed").exists()
    same = {**GEMMA, "rope_theta": 1e4}  # both layer types: base 10,000
    nodes[2:6] = [_constant(n, t) for n, t in zip(names[2:], [*local, *local])]
    report = sinpe.check_onnx(_inline_model(tmp_path / "same", nodes, same))
    assert [(p.name, p.judgment.verdict) for p in report.parts] == [
        ("lc", "match"), ("gc", "match"), ("hc", "match")
    ]  # fmt: skip
    assert report.verdict == "match"


def test_find_caches_reads_each_way_a_cache_is_held(tmp_path):
    """sinpe.onnx.find_caches: an initializer pair used by two layers is one cache with both
    users; Constants reached through Cast and Identity are held as "constant" and named by
    their outputs; each branch of an If is its own cache; RotaryEmbedding's `interleaved`
    rotates pairs; a GroupQueryAttention without do_rotary, or without a sin input, holds no
    RoPE."""
    cos, sin = _exact(LLAMA, 16)
    built = onnx_file.read(_builder_model(tmp_path / "a", LLAMA, cos, sin))
    (cache,) = sinpe.onnx.find_caches(built)
    assert (cache.cos.name, cache.sin.name, cache.held, cache.rotation) == (
        "cos_cache", "sin_cache", "initializer", "halves"
    )  # fmt: skip
    assert cache.users == tuple(f"/model/layers.{i}/attn/GroupQueryAttention" for i in (0, 1))
    nodes = [
        _constant("c0", cos), node("Cast", ["c0"], ["c1"], to=1), node("Identity", ["c1"], ["c"]),
        _constant("s", sin),
        node("RotaryEmbedding", ["x", "ids", "c", "s"], ["y"], domain="com.microsoft",
             name="/model/layers.0/attn/RotaryEmbedding", interleaved=1),
    ]  # fmt: skip
    (cache,) = sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path / "b", nodes, LLAMA)))
    assert (cache.cos.name, cache.sin.name, cache.held, cache.rotation) == (
        "c0", "s", "constant", "pairs"
    )  # fmt: skip
    branch = graph([_constant("bc", cos), _constant("bs", sin)]) + b"".join(
        field(12, 2, text(1, name)) for name in ("bc", "bs")
    )
    nodes = [
        node("If", ["longer"], ["cos_cache", "sin_cache"],
             then_branch=("graph", branch), else_branch=("graph", branch)),
        _gqa(),
    ]  # fmt: skip
    found = sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path / "c", nodes, LLAMA)))
    assert [c.held for c in found] == ["branch"] and found[0].cos.name == "bc"
    plain = node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "t", "c", "s"], ["o"],
                 domain="com.microsoft", do_rotary=0)  # fmt: skip
    nodes = [_constant("c", cos), _constant("s", sin), plain, _gqa("c", "s")]
    found = sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path / "e", nodes, LLAMA)))
    assert [c.users for c in found] == [("/model/layers.0/attn/GroupQueryAttention",)]
    short = graph([_constant("bc", cos)]) + field(12, 2, text(1, "bc"))  # one output of two
    nodes = [
        node("If", ["longer"], ["cos_cache", "sin_cache"],
             then_branch=("graph", short), else_branch=("graph", short)),
        _gqa(),
    ]  # fmt: skip
    assert sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path / "f", nodes, LLAMA))) == []
    for gqa in (
        plain,
        node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "t", "c", ""], ["o"],
             domain="com.microsoft", do_rotary=1),
        node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "t", "c"], ["o"],
             domain="com.microsoft", do_rotary=1),
    ):  # fmt: skip
        path = _inline_model(tmp_path / "d", [_constant("c", cos), _constant("s", sin), gqa], LLAMA)
        assert sinpe.onnx.find_caches(onnx_file.read(path)) == []
        with pytest.raises(ValueError, match="no RoPE found .no cos/sin cache fed to a rotary op"):
            sinpe.check_onnx(path)


@pytest.mark.parametrize("chain, found", [(8, True), (9, False)])
def test_a_cache_is_followed_through_at_most_eight_casts(tmp_path, chain, found):
    """The walk back from a rotary op's input stops after 8 Cast/Identity nodes (a graph
    can loop only through a malformed file, but the walk is bounded all the same)."""
    cos, sin = _exact(LLAMA, 4)
    nodes = [_constant("c0", cos), _constant("sin_cache", sin)]
    nodes += [node("Identity", [f"c{i}"], [f"c{i + 1}"]) for i in range(chain - 1)]
    nodes += [node("Identity", [f"c{chain - 1}"], ["cos_cache"]), _gqa()]
    caches = sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path, nodes, LLAMA)))
    assert [c.cos.name for c in caches] == (["c0"] if found else [])


def test_a_cache_in_pairs_where_the_attention_rotates_halves_is_a_mismatch(tmp_path):
    """The exact table, fed to GroupQueryAttention with rotary_interleaved=1, for a config
    whose attention rotates halves: a mismatch naming the rotation alone (the values are
    right); the report's fields say the model, its part and no genai_config.json."""
    cos, sin = _exact(LLAMA, 256)
    initializers = [_external("cos_cache", cos, 0), _external("sin_cache", sin, cos.nbytes)]
    nodes = [_gqa(interleaved=1)]
    path = _save(tmp_path, graph(nodes, initializers, ["input_ids"]), LLAMA, {"c": cos, "s": sin})
    report = sinpe.check_onnx(path)
    assert report.verdict == "mismatch"
    assert report.reasons == ("rotates pairs where the model's attention rotates halves",)
    assert (report.path, report.notes, report.context_length) == (str(path), (), None)
    (part,) = report.parts
    assert (part.name, part.layer_type, part.rows, part.dtype) == (
        "cos_cache",
        None,
        256,
        "float32",
    )
    (tmp_path / "genai_config.json").write_text(json.dumps({"model": {"context_length": 2048}}))
    assert sinpe.check_onnx(path).context_length == 2048


def test_a_cache_narrower_than_the_rotary_width_is_a_mismatch_on_its_width(tmp_path):
    cos, sin = (np.ascontiguousarray(t[:, :16]) for t in _exact(LLAMA, 64))
    report = sinpe.check_onnx(_builder_model(tmp_path, LLAMA, cos, sin))
    assert report.verdict == "mismatch"
    assert report.reasons == ("rotary width 32 where the config gives 64",)
    assert report.as_dict()["parts"][0]["dtype"] == "float32"  # no table judged: the cache's
    other = {**LLAMA, "rope_theta": 1e4}  # wrong values too: the width alone is said
    cos, sin = (np.ascontiguousarray(t[:, :16]) for t in _exact(other, 64))
    report = sinpe.check_onnx(_builder_model(tmp_path / "b", LLAMA, cos, sin))
    assert report.reasons == ("rotary width 32 where the config gives 64",)


GEMMA = {
    "model_type": "gemma3_text",
    "head_dim": 32,
    "max_position_embeddings": 4096,
    "rope_theta": 1e6,
    "rope_local_base_freq": 1e4,
    "num_hidden_layers": 2,
    "layer_types": ["sliding_attention", "full_attention"],
}


@pytest.mark.parametrize("swapped", [False, True])
def test_each_cache_is_judged_by_the_layer_type_of_the_layers_using_it(tmp_path, swapped):
    """Gemma 3's two caches (sliding layers: base 10,000; full layers: 1,000,000), each fed
    to its layers (and the local one also to a node no layer index names, which is named
    as not judged: its layer type, and so its RoPE, is not known): each part carries the
    layer type that judged it, the model is "unchecked", never a match; the caches
    swapped, each is a mismatch on its base."""
    spec = sinpe.rope_config(GEMMA)
    local = spec.layer("sliding_attention").rope(64, layout="compact", dtype="float32")
    full = spec.layer("full_attention").rope(64, layout="compact", dtype="float32")
    if swapped:
        local, full = full, local
    nodes = [_constant(n, t) for n, t in zip(["lc", "ls", "gc", "gs"], [*local, *full])]
    nodes += [_gqa("lc", "ls", layer="x"), _gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
    report = sinpe.check_onnx(_inline_model(tmp_path, nodes, GEMMA))
    got = [(p.name, p.layer_type, p.judgment.verdict) for p in report.parts]
    if not swapped:
        assert got == [
            ("lc", None, "unchecked"),
            ("lc", "sliding_attention", "match"),
            ("gc", "full_attention", "match"),
        ]
        assert report.verdict == "unchecked"
        assert report.reasons == (
            "the config says no layer type for '/model/layers.x/attn/GroupQueryAttention' "
            "(layer_types)",
        )
        return
    assert [verdict for *_, verdict in got] == ["unchecked", "mismatch", "mismatch"]
    assert report.reasons == (
        "base 1000000.0 where the config gives 10000.0",
        "base 10000.0 where the config gives 1000000.0",
    )


def test_a_cache_of_nan_or_of_another_base_is_said_so_and_only_so(tmp_path):
    """A cache with a NaN is a mismatch saying that alone (no explanation fitted to it); a
    float16 cache of another base is a mismatch on its base, with no note on its rounding;
    a cache with no rows is refused, naming it; one row is judged."""
    cos, sin = _exact(LLAMA, 64)
    cos[7, 3] = np.nan
    report = sinpe.check_onnx(_builder_model(tmp_path / "nan", LLAMA, cos, sin))
    assert [f.code for f in report.judgment.findings] == ["not_a_number"], report.reasons
    cos, sin = (t.astype(np.float16) for t in _exact({**LLAMA, "rope_theta": 1e4}, 64))
    report = sinpe.check_onnx(_builder_model(tmp_path / "base", LLAMA, cos, sin, FLOAT16))
    assert report.verdict == "mismatch" and report.reasons[0].startswith("base 1000")
    assert report.parts[0].notes == ()  # fitted from float16 values: about 10,000
    cos, sin = _exact(LLAMA, 1)
    assert sinpe.check_onnx(_builder_model(tmp_path / "one", LLAMA, cos, sin)).verdict == "match"
    empty = np.zeros((0, 32), np.float32)
    with pytest.raises(ValueError, match="cos_cache's rows 0 is outside 1 .. "):
        sinpe.check_onnx(_builder_model(tmp_path / "none", LLAMA, empty, empty))


def test_the_models_verdict_is_its_worst_part_and_its_json_says_every_field(tmp_path):
    """Gemma 3's sliding cache exact and its full one in float32 angles: the model drifts,
    by the drifting part's error; both drifting, by the larger. `sinpe check --json`: the
    file, genai's context length, the verdict's fields, notes, and each part's name, layer
    type, rows, dtype, verdict and notes."""
    spec = sinpe.rope_config(GEMMA)
    local = spec.layer("sliding_attention").rope(2048, layout="compact", dtype="float32")
    drifting = {
        name: _float32_tables({**LLAMA, "head_dim": 32, "rope_theta": base}, 2048)
        for name, base in (("local", 1e4), ("full", 1e6))
    }
    for sliding in (local, drifting["local"]):
        nodes = [
            _constant(n, t) for n, t in zip(["lc", "ls", "gc", "gs"], [*sliding, *drifting["full"]])
        ]
        nodes += [_gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
        path = _inline_model(tmp_path, nodes, GEMMA)
        report = sinpe.check_onnx(path)
        verdicts = [p.judgment.verdict for p in report.parts]
        assert report.verdict == "drift" and "drift" in verdicts, verdicts
        assert report.largest == max(p.judgment.largest for p in report.parts)
    (tmp_path / "genai_config.json").write_text(json.dumps({"model": {"context_length": 2048}}))
    result = run("check", path, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["file"], data["context_length"], data["verdict"], data["notes"]) == (
        str(path), 2048, "drift", []
    )  # fmt: skip
    assert [
        (p["name"], p["layer_type"], p["rows"], p["dtype"], p["verdict"]) for p in data["parts"]
    ] == [
        ("lc", "sliding_attention", 2048, "float32", "drift"),
        ("gc", "full_attention", 2048, "float32", "drift"),
    ]
    assert all(isinstance(p["notes"], list) for p in data["parts"])


def test_caches_that_are_not_two_equal_float_tables_are_refused(tmp_path):
    """A cos and a sin of different shapes, a cache of integers, a cache of a type ONNX
    numbers but sinpe does not know: one line each, exit 2, naming the tensor."""
    cos, sin = _exact(LLAMA, 8)
    cases = {
        "are not two equal (rows, rotary/2) tables": [cos, sin[:, :16]],
        "the cache 'cos_cache' holds int64, not floats": [cos.astype(np.int64), sin],
    }
    for words, (c, s) in cases.items():
        kind = 7 if c.dtype == np.int64 else FLOAT
        initializers = [tensor("cos_cache", c, data_type=kind), tensor("sin_cache", s)]
        path = _inline_model(tmp_path / str(len(words)), [_gqa()], LLAMA, initializers)
        result = run("check", path)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert words in result.stderr
    odd = [tensor("cos_cache", cos, data_type=8, dims=cos.shape), tensor("sin_cache", sin)]
    with pytest.raises(ValueError, match="the cache 'cos_cache' holds type 8, not floats"):
        sinpe.check_onnx(_inline_model(tmp_path / "odd", [_gqa()], LLAMA, odd))


# --------------------------------------------------------------------------- --fix


def test_fix_writes_an_exact_copy_and_never_the_original(tmp_path):
    cos, sin = _float32_tables(LLAMA, 4096)
    source = tmp_path / "src"
    path = _builder_model(source, LLAMA, cos, sin)
    (source / "genai_config.json").write_text(json.dumps({"model": {"context_length": 4096}}))
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    result = run("check", path, "--fix", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    fixed = tmp_path / "out" / "model.onnx"
    assert f"wrote {fixed}" in result.stdout
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before  # untouched
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "config.json",
        "genai_config.json",
        "model.onnx",
        "model.onnx.data",
        "model.sinpe-rope.data",
    ]
    report = sinpe.check_onnx(fixed)
    assert report.verdict == "match" and report.judgment.largest <= 2.0**-24
    exact = sinpe.rope_config(LLAMA).rope(4096, layout="compact", dtype="float32")
    read = onnx_file.read(fixed)
    got = onnx_file.tensor_values(read, read.graph.initializers["cos_cache"], 1 << 20)
    assert np.array_equal(got, exact[0])
    # the weights file is the original's (linked or copied); the new caches are the copy's own
    assert (tmp_path / "out" / "model.onnx.data").read_bytes() == before["model.onnx.data"]


def test_fix_refuses_what_it_cannot_do(tmp_path):
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path / "m", LLAMA, cos, sin)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    for out, message in [
        (tmp_path / "taken", "give a new folder"),
        (path, "that is the model itself"),
        (tmp_path / "nowhere" / "m.onnx", "does not exist"),
    ]:
        result = run("check", path, "--fix", out)
        assert result.returncode == 2 and message in result.stderr, result.stderr
    cache = tmp_path / "c.npy"
    np.save(cache, np.zeros((4, 64)))
    result = run("check", cache, LLAMA and tmp_path / "m" / "config.json", "--fix", "x")
    assert result.returncode == 2 and "--fix is for a .onnx model" in result.stderr


def test_fix_to_an_onnx_path_in_another_folder_brings_its_data(tmp_path):
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path / "m", LLAMA, cos, sin)
    (tmp_path / "o").mkdir()
    out = tmp_path / "o" / "exact.onnx"
    sinpe.onnx.fix(path, out)
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "exact.onnx",
        "exact.sinpe-rope.data",
        "model.onnx.data",
    ]
    assert sinpe.check_onnx(out, tmp_path / "m" / "config.json").verdict == "match"


# --------------------------------------------------------------------------- bounded


def test_a_10_gb_model_is_judged_reading_only_its_rope_rows(tmp_path):
    """A sparse 10 GB external-data file (weights) with the caches at its end: a verdict in
    seconds (printed, not judged), in the few MiB of a check's blocks, whatever the
    weights' size (only the caches' sampled rows are read)."""
    cos, sin = _float32_tables(LLAMA, 4096)
    weights = 10 << 30
    embed = {"location": "model.onnx.data", "offset": 0, "length": weights}
    initializers = [
        tensor("embed", dims=(weights // 4,), external=embed),
        _external("cos_cache", cos, weights),
        _external("sin_cache", sin, weights + cos.nbytes),
    ]
    path = _save(tmp_path, graph([_gqa()], initializers, ["input_ids"]), LLAMA)
    with open(tmp_path / "model.onnx.data", "wb") as stream:
        stream.truncate(weights)
        stream.seek(weights)
        stream.write(cos.tobytes() + sin.tobytes())
    start = time.perf_counter()
    tracemalloc.start()
    try:
        report = sinpe.check_onnx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"10 GB model: {time.perf_counter() - start:.2f} s, {peak / 2**20:.1f} MiB traced")
    assert report.verdict == "drift"
    assert peak < 64 << 20, peak  # the check's own blocks (16 MiB here), never the weights


def _caches(dims, location, offset, length) -> list:
    place = {"location": location, "offset": offset}
    if length is not None:
        place["length"] = length
    return [tensor(name, dims=dims, external=place) for name in ("cos_cache", "sin_cache")]


def _packed(count: int) -> bytes:
    """A Constant node whose attribute holds ``count`` packed ints."""
    return text(4, "C") + field(5, 2, text(1, "x") + field(8, 2, b"\x01" * count))


def _integers(name: str) -> bytes:
    """A (4, 32) INT32 TensorProto: a cache of integers."""
    dims = field(1, 0, 4) + field(1, 0, 32)
    return dims + field(2, 0, 6) + text(8, name) + field(9, 2, bytes(4 * 4 * 32))


def _hostile() -> dict:
    head = field(1, 0, 8)  # ir_version 8

    outside = {"location": "../secret.data", "offset": 0, "length": 16}
    absolute = {"location": "/etc/passwd", "offset": 0, "length": 16}
    gqa = _gqa()
    return {
        "empty": b"",
        "not protobuf": b"\xff" * 64,
        "an 11-byte varint": head + b"\x38" + b"\xff" * 11,
        "a 2^40-byte field": head + b"\x3a" + varint(1 << 40),
        "a field past the end": head + field(7, 2, b"x" * 10)[:-3],
        "a group wire type": head + b"\x3b",
        "no graph": head,
        "no ir_version": field(7, 2, graph()),
        "graphs 17 deep": nested(17),
        "an external path outside the folder": model(
            graph([gqa], [tensor("cos_cache", dims=(2, 2), external=outside)])
        ),
        "an absolute external path": model(
            graph([gqa], [tensor("cos_cache", dims=(2, 2), external=absolute)])
        ),
        "a negative dim": model(graph([], [tensor("x", dims=(-1,), external=outside)])),
        "9 dims": model(graph([], [field(1, 0, 1) * 9 + text(8, "t")])),
        "a 2^20-byte name": model(graph([node("Relu", ["a" * (1 << 20)], ["b"])])),
        "2^18 + 1 nodes": model(graph([node("A")] * ((1 << 18) + 1))),
        "a packed list of 2^17 numbers": model(graph([_packed(1 << 17)])),
        "a lying external length": model(graph([gqa], _caches((64, 32), "d", 0, 8))),
        "a missing external file": model(graph([gqa], _caches((64, 32), "gone", 0, 8192))),
        "an external offset past the file": model(
            graph([gqa], _caches((64, 32), "d", 1 << 40, 8192))
        ),
        "caches of 2^41 rows": model(graph([gqa], _caches((1 << 41, 32), "d", 0, None))),
        "an integer cache": model(graph([gqa], [_integers("cos_cache"), _integers("sin_cache")])),
    }  # fmt: skip


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_a_hostile_onnx_file_is_one_line_exit_2_fast_in_bounded_memory(tmp_path, case):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "d").write_bytes(bytes(64))
    (tmp_path / "secret.data").write_bytes(bytes(64))
    path = folder / "model.onnx"
    path.write_bytes(_hostile()[case])
    (folder / "config.json").write_text(json.dumps(LLAMA))
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as found:
            sinpe.check_onnx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 << 20, peak  # the 2^18-node graph's records: the largest
    print(f"{case}: {time.perf_counter() - start:.2f} s")  # said, never judged
    assert "\n" not in str(found.value)
    result = run("check", path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("sinpe: error:") and result.stderr.count("\n") == 1


def test_the_reader_keeps_what_the_check_needs(tmp_path):
    cos, sin = _float32_tables(LLAMA, 8)
    path = _builder_model(tmp_path, LLAMA, cos, sin)
    found = onnx_file.read(path)
    assert found.ir_version == 8 and found.opsets == {"": 17, "com.microsoft": 1}
    gqa = found.graph.nodes[0]
    assert gqa.op_type == "GroupQueryAttention" and gqa.domain == "com.microsoft"
    assert gqa.attributes["do_rotary"] == 1 and gqa.inputs[7:9] == ("cos_cache", "sin_cache")
    cache = found.graph.initializers["cos_cache"]
    assert cache.dims == (8, 32) and cache.where[0] == "external"
    assert np.array_equal(onnx_file.tensor_values(found, cache), cos)
    rows = onnx_file.tensor_rows(found, cache, np.array([1, 2, 6]))
    assert np.array_equal(rows, cos[[1, 2, 6]])


def test_import_sinpe_and_an_onnx_check_import_neither_onnx_nor_onnxruntime(tmp_path):
    from subprocesses import run_script

    cos, sin = _float32_tables(LLAMA, 8)
    path = _builder_model(tmp_path, LLAMA, cos, sin)
    result = run_script(
        f"""
        import sys, sinpe
        sinpe.check_onnx({str(path)!r})
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("onnx", "onnxruntime", "torch")))
        """
    )
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------- from the mutation run


def test_a_traced_inv_freq_is_found_past_the_weights_and_judged_by_its_scaling(tmp_path):
    """A traced Llama 3.1 (one set of frequencies at every length) whose graph holds a
    weight before its inv_freq: the inv_freq is still found, and its exact frequencies
    match (never "frozen", which only LongRoPE can be). LongRoPE's two traced vectors, short
    and long, chosen by a Where before the MatMul: both found, both a match."""
    llama31 = {**LLAMA, "max_position_embeddings": 131072, "rope_scaling": LLAMA31}
    inv_freq = sinpe.rope_config(llama31).frequencies()[0]
    weight = tensor("weight", np.ones((4, 4), np.float32))
    report = sinpe.check_onnx(_traced(tmp_path / "l", llama31, inv_freq, [weight]))
    assert [(p.name, p.judgment.verdict) for p in report.parts] == [("inv_freq", "match")]
    spec = sinpe.rope_config(LONGROPE)
    nodes = [
        _constant(name, spec.frequencies(length)[0][None, :, None])
        for name, length in (("short", 1024), ("long", 8192))
    ]
    nodes += [
        node("Where", ["longer", "long", "short"], ["inv_freq"]),
        node("MatMul", ["inv_freq", "position_ids"], ["angles"]),
    ]
    path = _save(tmp_path / "p", graph(nodes, [], ["input_ids", "position_ids"]), LONGROPE)
    report = sinpe.check_onnx(path)
    assert [(p.name, p.judgment.verdict) for p in report.parts] == [
        ("short", "match"),
        ("long", "match"),
    ]


def test_rotary_inputs_without_a_cache_are_passed_over_and_a_3d_cache_is_refused(tmp_path):
    """A GroupQueryAttention with an empty sin input before one fed a cache: the cache is
    still found. A cos from a Constant of one float (value_float, no tensor): no cache, so
    no RoPE found, said as that. A cos and sin of three dims, (1, 4, 32): refused in one
    line, exit 2, as not two (rows, rotary/2) tables."""
    cos, sin = _exact(LLAMA, 4)
    empty = node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "t", "c", ""], ["o"],
                 domain="com.microsoft", do_rotary=1)  # fmt: skip
    nodes = [_constant("c", cos), _constant("s", sin), empty, _gqa("c", "s")]
    found = sinpe.onnx.find_caches(onnx_file.read(_inline_model(tmp_path / "e", nodes, LLAMA)))
    assert [c.cos.name for c in found] == ["c"]
    nodes = [node("Constant", [], ["cos_cache"], value_float=1.0), _constant("sin_cache", sin)]
    path = _inline_model(tmp_path / "f", [*nodes, _gqa()], LLAMA)
    assert sinpe.onnx.find_caches(onnx_file.read(path)) == []
    with pytest.raises(ValueError, match="no RoPE found"):
        sinpe.check_onnx(path)
    initializers = [tensor("cos_cache", cos[None]), tensor("sin_cache", sin[None])]
    result = run("check", _inline_model(tmp_path / "3d", [_gqa()], LLAMA, initializers))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "cos 'cos_cache' (1, 4, 32) and sin 'sin_cache' (1, 4, 32) are not two equal" in (
        result.stderr
    )


def test_a_nan_in_a_cache_of_another_base_is_the_one_reason(tmp_path):
    """A cache built at another rope_theta with a NaN at cos[7, 3]: a mismatch saying the
    NaN alone (no base is fitted from values that hold one)."""
    cos, sin = _exact({**LLAMA, "rope_theta": 1e4}, 64)
    cos[7, 3] = np.nan
    report = sinpe.check_onnx(_builder_model(tmp_path, LLAMA, cos, sin))
    assert report.reasons == (
        "the entry at position 7, column 3 is nan: not a value a RoPE can use",
    )


def test_a_concatenated_longrope_caches_long_part_is_judged_at_the_trained_length(tmp_path):
    """The concatenated cache's second part (the trained length's rows) is judged at 8192,
    by the long factors' bounds: its worst entry is the one the core finds in the same rows
    at that length."""
    small, large = _float32_tables(LONGROPE, 1024), _float32_tables(LONGROPE, 8192)
    cos, sin = (np.concatenate([small[k], large[k]]) for k in (0, 1))
    long_part = sinpe.check_onnx(_builder_model(tmp_path, LONGROPE, cos, sin)).parts[1]
    spec = sinpe.rope_config(LONGROPE)

    def read(positions):
        return large[0][positions], large[1][positions]

    pairs = np.arange(cos.shape[1])
    table = judge_table(spec._one(), read, 8192, pairs, "float32", 8192)
    assert long_part.name == "cos_cache[1024:9216]" and long_part.judgment.verdict == "drift"
    assert long_part.judgment.worst == table.verdict.worst


def test_a_genai_context_length_of_0_is_refused_naming_it(tmp_path):
    """genai_config.json's context_length 0 is no model's: refused in one line, exit 2,
    naming it; 1, the least, is taken."""
    path = _builder_model(tmp_path, LLAMA, *_exact(LLAMA, 8))
    genai = tmp_path / "genai_config.json"
    genai.write_text(json.dumps({"model": {"context_length": 1}}))
    assert sinpe.check_onnx(path).context_length == 1
    genai.write_text(json.dumps({"model": {"context_length": 0}}))
    result = run("check", path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "genai_config.json's context_length 0 is outside 1 .. " in result.stderr


def test_the_models_error_is_its_largest_parts_whatever_the_order(tmp_path):
    """Gemma 3's two caches both in float32 angles, the full layers' node first: the model's
    largest error is the larger of the two parts', not the first part's."""
    nodes = [
        _constant(n, t)
        for base, names in ((1e4, ("lc", "ls")), (1e6, ("gc", "gs")))
        for n, t in zip(names, _float32_tables({**LLAMA, "head_dim": 32, "rope_theta": base}, 2048))
    ]
    nodes += [_gqa("gc", "gs", layer=1), _gqa("lc", "ls", layer=0)]
    report = sinpe.check_onnx(_inline_model(tmp_path, nodes, GEMMA))
    assert [(p.name, p.judgment.verdict) for p in report.parts] == [
        ("gc", "drift"),
        ("lc", "drift"),
    ]
    assert report.parts[0].judgment.largest < report.parts[1].judgment.largest
    assert report.verdict == "drift" and report.largest == report.parts[1].judgment.largest


def test_yarn_per_layer_type_in_rope_parameters_gives_reasons_not_a_refusal(tmp_path):
    """transformers 5's rope_parameters per layer type, YaRN on the full layers, and a full
    cache of another base without YaRN: a mismatch with its reasons (the unrounded-ramp
    reading, which needs one mapping to change, is not tried), never a refusal."""
    yarn = {
        "rope_type": "yarn",
        "rope_theta": 1e6,
        "factor": 4.0,
        "original_max_position_embeddings": 1024,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
    }
    config = {key: value for key, value in GEMMA.items() if "rope" not in key}
    config["rope_parameters"] = {
        "full_attention": yarn,
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    }
    local = sinpe.rope_config(config).layer("sliding_attention")
    local = local.rope(64, layout="compact", dtype="float32")
    full = _exact({**LLAMA, "head_dim": 32, "rope_theta": 1e5}, 64)
    nodes = [_constant(n, t) for n, t in zip(["lc", "ls", "gc", "gs"], [*local, *full])]
    nodes += [_gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
    report = sinpe.check_onnx(_inline_model(tmp_path, nodes, config))
    assert [p.judgment.verdict for p in report.parts] == ["match", "mismatch"]
    assert report.reasons == (
        "base 100000.0 where the config gives 1000000.0",
        "YaRN scaling not applied",
        "YaRN attention factor 1.0 where the config gives 1.13863",
    )


assert math and os and struct  # used by the hostile cases' helpers
