"""The engine adapters without their engines (tests/test_vllm.py runs them with vLLM): the
entry point every install declares, importing without the engine, the mode variable, and a
layer's verdict on duck-typed stand-ins for vLLM's rotary layers."""

import contextlib
import dataclasses
import json
import logging
import os
import types
from importlib.metadata import entry_points

import numpy as np
import pytest
from subprocesses import run_script

import sinpe

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


PLUGINS = [("vllm", "vllm.general_plugins"), ("sglang", "sglang.srt.plugins")]


@pytest.mark.parametrize("engine, group", PLUGINS)
def test_every_install_declares_the_engines_entry_points(engine, group):
    found = [e for e in entry_points(group=group) if e.name == "sinpe"]
    assert [e.value for e in found] == [f"sinpe.{engine}:register"]


@pytest.mark.parametrize("engine, group", PLUGINS)
def test_importing_and_registering_without_the_engine_does_nothing(engine, group):
    """Where the engine is absent the entry point's function returns, says nothing, imports
    neither the engine nor torch, and has seen nothing."""
    result = run_script(
        f"""
        import sys
        sys.modules["{engine}"] = None  # the engine absent, even where it is installed
        import sinpe.{engine} as plugin
        plugin.register()
        plugin.register()
        assert "torch" not in sys.modules and plugin.reports() == []
        assert not plugin._plugin._STATE["registered"] and getattr(plugin, "wrapped", list)() == []
        print("done")
        """
    )
    assert result.stdout == "done\n" and result.stderr == ""


def test_the_sglang_hooks_never_raise(monkeypatch, caplog):
    """Whatever SGLang hands them, the hooks return None (SGLang keeps its own result) and
    say what failed in one warning."""
    from sinpe.sglang import _plugin

    monkeypatch.setenv("SINPE_SGLANG", "audit")
    with caplog.at_level(logging.WARNING, logger="sglang.sinpe"):
        assert _plugin.after_load_model(None, object()) is None
        assert _plugin.before_reserve(object(), None) is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all(m.startswith("sinpe could not") for m in said), said
    assert {r.name for r in caplog.records} == {"sglang.sinpe"}  # the logger users filter
    assert said[0].startswith("sinpe could not audit the rotary layers: AttributeError: ")
    assert said[1].startswith("sinpe could not read the rotary caches: AttributeError: ")
    assert "'object' object has no attribute" in said[0] and "named_modules" in said[1]
    assert _plugin.reports() == []
    monkeypatch.setenv("SINPE_SGLANG", "off")
    caplog.clear()
    assert _plugin.after_load_model(None, object()) is None and not caplog.records


@contextlib.contextmanager
def _sglang_warnings(monkeypatch):
    """The warnings of sinpe's SGLang logger, as a list of messages."""
    from sinpe.sglang import _plugin

    said: list = []
    logger = _plugin._logger()
    monkeypatch.setattr(logger, "warning", lambda message, *args: said.append(message % args))
    yield said


def _sglang_runner(tmp_path, cache):
    """A stand-in of SGLang's ModelRunner: its model (one rotary layer, shared by two
    attention layers, as SGLang shares it) and its model_config (a folder with config.json,
    the context length)."""
    torch = pytest.importorskip("torch")

    class RotaryEmbedding(torch.nn.Module):
        def __init__(self, cache):
            super().__init__()
            self.register_buffer("cos_sin_cache", cache, persistent=False)
            self.rotary_dim = self.head_size = 64
            self.base = 10000.0
            self.is_neox_style = True

    rotary = RotaryEmbedding(cache)
    model = torch.nn.Module()
    model.layers = torch.nn.ModuleList([torch.nn.Module(), torch.nn.Module()])
    for layer in model.layers:
        layer.rotary_emb = rotary
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    config = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096}
    (folder / "config.json").write_text(json.dumps({**config, "rope_theta": 10000.0}))
    settings = types.SimpleNamespace(model_path=str(folder), context_len=4352, hf_config=None)
    return types.SimpleNamespace(model=model, model_config=settings), rotary


def test_the_sglang_hooks_record_the_rows_made_then_audit_report_and_fill(tmp_path, monkeypatch):
    """before_reserve records the rows each rotary layer's class made; after load_model,
    the rows SGLang appended are judged apart, the reports kept and written as JSON, and
    exact mode fills what matches (the trained rows) and leaves what does not."""
    torch = pytest.importorskip("torch")
    from sinpe.sglang import _plugin
    from sinpe.vllm._audit import MADE

    path = tmp_path / "report.json"
    monkeypatch.setenv("SINPE_SGLANG_REPORT", str(path))
    spec = _spec()
    for current in ("audit", "exact"):
        monkeypatch.setenv("SINPE_SGLANG", current)
        runner, rotary = _sglang_runner(tmp_path, _float32_angles(4096))
        assert _plugin.before_reserve(runner.model, 4352) is None
        assert getattr(rotary, MADE) == 4096
        grown = torch.cat([rotary.cos_sin_cache, _float32_angles(4352, 5e5)[4096:]])
        rotary.cos_sin_cache = grown.clone()
        assert _plugin.after_load_model("SGLang's own result", runner) is None
        made, appended = _plugin.reports()
        assert (made.verdict, appended.verdict) == ("drift", "mismatch"), appended.line()
        assert made.names == appended.names == ("layers.0.rotary_emb", "layers.1.rotary_emb")
        assert (made.cache, appended.cache) == ("cos_sin_cache[0:4096]", "cos_sin_cache[4096:4352]")
        written = json.loads(path.read_text())
        assert [r["verdict"] for r in written] == ["drift", "mismatch"]
        layer = {k: written[0][k] for k in ("names", "cls", "cache", "rows", "dtype", "rotary_dim")}
        assert layer == {
            "names": ["layers.0.rotary_emb", "layers.1.rotary_emb"],
            "cls": "RotaryEmbedding",
            "cache": "cos_sin_cache[0:4096]",
            "rows": 4096,
            "dtype": "float32",
            "rotary_dim": 64,
        }
        assert written[0]["notes"][-1].startswith("largest error 0.000146 up to context_len 4,352")
        assert written[1]["notes"][0].startswith("the rows SGLang appended past the 4,096")
        exact = current == "exact"
        assert [(r["replaced"], r["outcome"]) for r in written] == [
            (exact, "replaced" if exact else ""),
            (False, "left as SGLang made it (mismatch)" if exact else ""),
        ]
        assert written[1]["reasons"][0]["code"] == "table"  # no row 0 or 1 to fit a base from
        table = rotary.cos_sin_cache.numpy()
        if current == "audit":
            assert rotary.cos_sin_cache.equal(grown)
        else:
            assert np.array_equal(table[:4096], spec.rope_cache(4096, dtype=np.float32))
            assert np.array_equal(table[4096:], grown[4096:].numpy())
    monkeypatch.setenv("SINPE_SGLANG", "off")
    path.unlink()
    runner, rotary = _sglang_runner(tmp_path, _float32_angles(4096))
    assert _plugin.before_reserve(runner.model) is None and not hasattr(rotary, MADE)
    assert _plugin.after_load_model(None, runner) is None
    assert _plugin.reports() == [] and not path.exists()
    monkeypatch.setenv("SINPE_SGLANG", "audit")
    runner, rotary = _sglang_runner(tmp_path, _float32_angles(4096)[None])  # not 2-D: no count
    assert _plugin.before_reserve(runner.model) is None and not hasattr(rotary, MADE)
    del rotary.cos_sin_cache  # a rotary class without a cache: nothing to count, nothing said
    with _sglang_warnings(monkeypatch) as said:
        assert _plugin.before_reserve(runner.model) is None and not hasattr(rotary, MADE)
    assert said == []


@pytest.mark.parametrize(
    "package, variable, logger",
    [("vllm", "SINPE_VLLM", "sinpe.vllm"), ("sglang", "SINPE_SGLANG", "sglang.sinpe")],
)
def test_the_mode_variable(monkeypatch, caplog, package, variable, logger):
    import importlib

    plugin = importlib.import_module(f"sinpe.{package}._plugin")
    monkeypatch.delenv(variable, raising=False)
    assert plugin.mode() == plugin.DEFAULT == "audit"
    for value in ("audit", "exact", "off", " EXACT "):
        monkeypatch.setenv(variable, value)
        assert plugin.mode() == value.strip().lower()
    monkeypatch.setitem(plugin._STATE, "warned", False)
    monkeypatch.setenv(variable, "fix-everything")
    with caplog.at_level(logging.WARNING, logger=logger):
        assert plugin.mode() == "off" and plugin.mode() == "off"
    warned = [r.getMessage() for r in caplog.records if variable in r.getMessage()]
    assert len(warned) == 1 and "audit" in warned[0] and "fix-everything" in warned[0]
    engine = {"vllm": "vLLM", "sglang": "SGLang"}[package]
    assert warned[0].endswith(f"sinpe leaves {engine} alone"), warned[0]
    # vLLM's plugin logs through vLLM's own logger where vLLM is installed (vllm.sinpe)
    names = {"vllm": {"sinpe.vllm", "vllm.sinpe"}, "sglang": {"sglang.sinpe"}}[package]
    assert {r.name for r in caplog.records} == {plugin._logger().name} <= names


# --------------------------------------------------------------------------- one layer


class _Layer:
    """The attributes sinpe reads of a vLLM rotary layer."""

    def __init__(self, cache, rotary_dim=64, head_size=64, base=10000.0, neox=True):
        self.cos_sin_cache = cache
        self.rotary_dim = rotary_dim
        self.head_size = head_size
        self.base = base
        self.is_neox_style = neox


class RotaryEmbedding(_Layer):
    pass


class FourierRotaryEmbedding(_Layer):
    pass


class LinearScalingRotaryEmbedding(_Layer):
    scaling_factors = [2.0, 4.0]


class DynamicNTKAlphaRotaryEmbedding(_Layer):
    pass


class MyOwnRotaryEmbedding(_Layer):  # a class this vLLM does not have
    pass


def _spec(base=10000.0):
    return sinpe.rope_config(
        {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_theta": base}
    )


def _float32_angles(n, base=10000.0):
    """vLLM's cache: float32 inverse frequencies and angles."""
    torch = pytest.importorskip("torch")
    inv_freq = 1.0 / base ** (torch.arange(0, 64, 2, dtype=torch.float) / 64)
    angles = torch.outer(torch.arange(n, dtype=torch.float), inv_freq)
    return torch.cat((angles.cos(), angles.sin()), dim=-1)


def test_a_layer_gets_the_verdict_of_the_core():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = _spec()
    exact = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32))
    (match,) = audit_layer(RotaryEmbedding(exact), spec, ["model.layers.0.self_attn.rotary_emb"])
    assert match.verdict == "match" and match.reason == "" and match.rows == 4096
    assert match.judgment.bound == 8 * 2.0**-24  # 8 float32 ulps below the factor 1
    (drift,) = audit_layer(RotaryEmbedding(_float32_angles(4096)), spec, ["l"])
    assert drift.verdict == "drift" and "float32 angles" in drift.text
    assert drift.decades[-1][0] <= 4095 <= drift.decades[-1][1] and drift.largest > 1e-5
    (base,) = audit_layer(RotaryEmbedding(_float32_angles(4096, 5e5)), spec, ["l"])
    assert base.verdict == "mismatch"
    assert base.reason == "base 500000.0 where the config gives 10000.0", base.line()
    (width,) = audit_layer(RotaryEmbedding(exact[:, :32], rotary_dim=32), spec, ["l"])
    assert width.verdict == "mismatch"
    assert width.reason == "rotary width 32 where the config gives 64"
    (pairs,) = audit_layer(RotaryEmbedding(exact, neox=False), spec, ["l"])
    assert pairs.verdict == "mismatch"
    assert pairs.reason == (
        "rotates pairs (is_neox_style=False) where the model's attention rotates halves"
    )
    # the rotation mismatch keeps what the table showed: its largest error, decades, dtype
    assert pairs.decades and (pairs.largest, pairs.decades) == (match.largest, match.decades)
    assert pairs.judgment.dtype == "float32"
    data = json.loads(json.dumps(pairs.as_json(), allow_nan=False))
    assert (data["largest_error"], data["dtype"]) == (match.largest, "float32")
    assert [(d["first"], d["last"]) for d in data["decades"]] == [
        (first, last) for first, last, _ in match.decades
    ]


def test_a_cache_whose_rows_are_not_the_rotary_dim_wide_is_a_mismatch_saying_both():
    """A layer whose rotary_dim is the config's but whose cache rows are 48 wide: a mismatch
    naming the row's width (the rotary dim the cache holds) and the config's; the line says
    the cache, its rows and dtype, and the JSON the cache's dtype (no table was judged)."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = _spec()
    exact = torch.from_numpy(spec.rope_cache(64, dtype=np.float32))
    (report,) = audit_layer(RotaryEmbedding(exact[:, :48].contiguous()), spec, ["l"])
    assert report.verdict == "mismatch"
    assert report.reason == "the cache's width 48 does not fit the config's rotary dim 64"
    assert report.line() == (
        "l RotaryEmbedding cos_sin_cache 64x64 float32: does not match this config: "
        "the cache's width 48 does not fit the config's rotary dim 64"
    )
    data = report.as_json()
    assert (data["cache"], data["rows"], data["dtype"], data["rotary_dim"]) == (
        "cos_sin_cache", 64, "float32", 64
    )  # fmt: skip
    assert [(r["code"], r["engine"], r["config"]) for r in data["reasons"]] == [
        ("cache_width", 48, 64)
    ]


def test_exact_mode_fills_a_long_cache_block_by_block():
    """fill_exact makes the rows in blocks of 2^20 values (8,192 rows of 128 here): vLLM's
    float32 cache of 20,000 rows (a drift) ends as sinpe's table, every row of the three
    blocks, in the cache's dtype."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    config = {"model_type": "llama", "head_dim": 128, "max_position_embeddings": 20000}
    spec = sinpe.rope_config(config | {"rope_theta": 10000.0})
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, 128, 2, dtype=torch.float) / 128)
    angles = torch.outer(torch.arange(20000, dtype=torch.float), inv_freq)
    layer = RotaryEmbedding(torch.cat((angles.cos(), angles.sin()), -1), 128, 128)
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "drift"
    assert fill_exact(layer, spec, report).outcome == "replaced"
    assert torch.equal(
        layer.cos_sin_cache, torch.from_numpy(spec.rope_cache(20000, dtype="float32"))
    )


class Interrupted(Exception):
    pass


@pytest.mark.parametrize("shared", [False, True], ids=["own memory", "shared memory"])
def test_exact_mode_leaves_a_cache_as_it_was_or_whole_whatever_signal_arrives(shared, monkeypatch):
    """A timer's handler (every 50 us) raising at a time spread over fill_exact's, try by
    try: after each, the cache is either vLLM's rows or sinpe's table, never part of each
    (in its own memory with the kernel: written in place, nothing of the table's size
    allocated; in shared memory, or on the NumPy backend: made apart, then one copy). That
    the in-place fill cannot stop part-way is tests/test_threads.py's
    test_a_whole_fill_ends_whole_and_then_the_signal_is_raised (fills longer than the
    kernel's 20 ms between signal checks)."""
    torch = pytest.importorskip("torch")
    import signal
    import time

    from sinpe._tables import backends
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    rows = 1 << 16 if backends.BACKEND == "cython" else 1 << 12
    config = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": rows}
    spec = sinpe.rope_config(config | {"rope_theta": 10000.0})
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, 64, 2, dtype=torch.float) / 64)
    angles = torch.outer(torch.arange(rows, dtype=torch.float), inv_freq)
    made = torch.cat((angles.cos(), angles.sin()), -1)
    layer = RotaryEmbedding(made.clone().share_memory_() if shared else made.clone(), 64, 64)
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "drift"
    want = torch.from_numpy(spec.rope_cache(rows, dtype="float32"))
    in_place = not shared and backends.BACKEND == "cython"
    empty, apart = np.empty, []

    def spy(shape, *args, **kwargs):  # in place: no table apart; else: one per fill
        if np.prod(shape) >= rows * 64:
            assert not in_place, shape
            apart.append(shape)
        return empty(shape, *args, **kwargs)

    monkeypatch.setattr(np, "empty", spy)
    state = {"at": None}

    def handler(signum, frame):
        if state["at"] is not None and time.perf_counter() >= state["at"]:
            state["at"] = None  # one raise per try
            raise Interrupted

    seen = {"as made": 0, "whole": 0, "whole, then the signal": 0}
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 5e-5, 5e-5)
    try:
        start = time.perf_counter()
        fill_exact(layer, spec, report)  # timed under the timer: its handler slows Python
        span = 3 * (time.perf_counter() - start)  # the raise spread over three fills
        for attempt in range(40):
            layer.cos_sin_cache.copy_(made)
            raised = False
            try:
                state["at"] = time.perf_counter() + span * attempt / 40
                fill_exact(layer, spec, report)
                state["at"] = None
            except Interrupted:
                raised = True
            state["at"] = None
            if torch.equal(layer.cos_sin_cache, made):
                seen["as made"] += 1
            else:
                assert torch.equal(layer.cos_sin_cache, want), "part-written"
                seen["whole, then the signal" if raised else "whole"] += 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen["as made"] and seen["whole"] + seen["whole, then the signal"], seen
    assert bool(apart) != in_place  # shared memory, the NumPy backend: made apart


def test_a_whole_fill_is_refused_where_it_cannot_be_promised():
    """``whole`` is refused, before anything is written, on the NumPy twin (Python runs
    between its steps) and for a row too wide to plan whole (filled a block at a time)."""
    from sinpe import _twin
    from sinpe._rope import rotary as rot
    from sinpe._tables import backends

    spec = sinpe.rope_config({"model_type": "llama", "head_dim": 64, "rope_theta": 1e4})
    one = spec._one()
    out = np.full((8, 64), 7.0, np.float32)
    with pytest.raises(ValueError, match="cannot fill whole"):
        _twin.fill(None, out, None, None, None, None, 0, 0.0, 1, True)
    if backends.BACKEND != "cython":
        assert not rot.fills_whole(one, 8, "vllm")
        with pytest.raises(ValueError, match="cannot be filled whole"):
            rot.table_run(one, 8, 0, "vllm", np.dtype("float32"), None, "auto", "", (out,), True)
        assert (out == 7.0).all()
        return
    assert rot.fills_whole(one, 8, "vllm")
    rot.table_run(one, 8, 0, "vllm", np.dtype("float32"), None, "auto", "", (out,), True)
    assert np.array_equal(out, spec.rope_cache(8, dtype="float32"))
    wide = sinpe.rope_config({"model_type": "llama", "head_dim": 2 * 4097, "rope_theta": 1e4})
    assert not rot.fills_whole(wide._one(), 8, "vllm")


class DynamicNTKScalingRotaryEmbedding(_Layer):
    pass


class Phi3LongRoPEScaledRotaryEmbedding:
    """vLLM's Phi-3 LongRoPE layer: the short factors' rows, then the long ones'; like vLLM's
    and SGLang's class, no is_neox_style (it rotates halves only)."""

    def __init__(self, spec, short, long, use_long_rope=None):
        torch = pytest.importorskip("torch")
        self.long_short_cos_sin_cache = torch.from_numpy(np.concatenate([short, long]))
        self.rotary_dim = self.head_size = spec.head_dim
        self.base = 10000.0
        self.original_max_position_embeddings = len(short)
        if use_long_rope is not None:
            self.use_long_rope = use_long_rope


def test_each_engines_notes_on_dynamic_and_longrope_caches():
    """What a static dynamic-NTK cache and LongRoPE's two sets of rows mean in each engine:
    vLLM builds the dynamic cache once at its largest length; it uses one set of LongRoPE
    factors for every sequence (use_long_rope: the long ones); SGLang switches a whole batch
    past the original length."""
    torch = pytest.importorskip("torch")
    from rope_cases import phi3_longrope

    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    llama = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096}
    spec = sinpe.rope_config(llama | {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})
    cache = torch.from_numpy(spec.rope_cache(8192, dtype=np.float32))
    layer = DynamicNTKScalingRotaryEmbedding(cache.clone())
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "match" and report.notes == (
        "vLLM's cache is static, built at its largest length; transformers' dynamic base "
        "follows the current length (the two agree only for sequences that long)",
    )
    assert fill_exact(layer, spec, report).replaced  # at the cache's own length, 8192
    assert torch.equal(layer.cos_sin_cache, cache)
    spec = sinpe.rope_config(phi3_longrope(128, 2, 8192, 1024))
    rows = [spec.rope_cache(n, dtype=np.float32) for n in (1024, 8192)]
    policy = "vLLM uses its {} factors for every sequence (max_model_len against the original "
    policy += "length), transformers switches per sequence at the original length"
    for use_long_rope, uses in [(None, "short"), (False, "short"), (True, "long")]:
        layer = Phi3LongRoPEScaledRotaryEmbedding(spec, *rows, use_long_rope)
        reports = audit_layer(layer, spec, ["l"])
        assert [(r.cache, r.verdict) for r in reports] == [
            ("long_short_cos_sin_cache[0:1024]", "match"),
            ("long_short_cos_sin_cache[1024:9216]", "match"),
        ]
        assert [r.notes for r in reports] == [
            (f"the {which} factors' rows; " + policy.format(uses),) for which in ("short", "long")
        ]
    reports = audit_layer(
        Phi3LongRoPEScaledRotaryEmbedding(spec, *rows), spec, ["l"], engine="SGLang"
    )
    assert [r.notes for r in reports] == [
        (
            f"the {which} factors' rows; SGLang switches a whole batch to its long factors once "
            "any of its positions exceeds 1,024 (transformers: each sequence once it is longer "
            "than 1,024, one position earlier)",
        )
        for which in ("short", "long")
    ]


def test_a_scaled_cache_names_the_attention_factor():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = _spec()
    scaled = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32)) * 1.2
    (report,) = audit_layer(RotaryEmbedding(scaled), spec, ["l"])
    assert report.verdict == "mismatch"
    assert report.reason == "attention factor 1.2 where the config gives 1.0", report.line()
    assert [r["code"] for r in report.as_json()["reasons"]] == ["attention_factor"]


def test_a_class_sinpe_does_not_know_is_unchecked_and_named_never_replaced():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = _spec()
    padded = torch.from_numpy(spec.rope_cache(64, dtype=np.float32))
    padded = torch.cat([padded, torch.zeros(64, 32)], 1)  # a cache of another form
    for layer, reason in [
        (MyOwnRotaryEmbedding(padded), "MyOwnRotaryEmbedding is not a rotary class sinpe knows"),
        (FourierRotaryEmbedding(torch.zeros(16, 2, 128)), "learned weights"),
        (LinearScalingRotaryEmbedding(torch.zeros(24, 64)), "2 linear scaling factors stacked"),
    ]:
        before = layer.cos_sin_cache.clone()
        (report,) = audit_layer(layer, spec, ["l"])
        assert report.verdict == "unchecked" and reason in report.reason, report.line()
        assert (report.cls, report.cache, report.rows) == (type(layer).__name__, "", 0)
        assert report.dtype == "" and report.as_json()["dtype"] == ""
        assert report.largest is None and f"l {report.cls}: unchecked: " in report.line()
        assert json.loads(json.dumps(report.as_json(), allow_nan=False))["largest_error"] is None
        assert fill_exact(layer, spec, report) is report and layer.cos_sin_cache.equal(before)


def test_the_rotary_layers_of_a_model_are_every_class_of_the_name_or_with_a_cache():
    """vLLM's classes by name, any class named ...RotaryEmbedding (then judged or called
    unknown), and any module holding a cos_sin_cache; each layer once, with every name."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm._model import layers

    class MyOwnRotaryEmbedding(torch.nn.Module):  # no cache: still a rotary layer
        pass

    class Holder(torch.nn.Module):  # another name, a cache
        def __init__(self):
            super().__init__()
            self.register_buffer("cos_sin_cache", torch.zeros(4, 8), persistent=False)

    model = torch.nn.Module()
    model.a, model.b, model.c = MyOwnRotaryEmbedding(), Holder(), torch.nn.Linear(2, 2)
    model.d = model.a  # shared, as vLLM shares one module among layers
    found = {type(layer).__name__: names for layer, names in layers(model).values()}
    assert found == {"MyOwnRotaryEmbedding": ["a", "d"], "Holder": ["b"]}


def test_a_known_class_without_its_attributes_is_unchecked_saying_which():
    """A RotaryEmbedding without its rotary_dim, or without its cos_sin_cache: unchecked,
    its class named and the attribute it lacks; a rotary_dim no layer has is refused."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    layer = RotaryEmbedding(torch.zeros(8, 64))
    del layer.rotary_dim
    (report,) = audit_layer(layer, _spec(), ["l"])
    assert report.verdict == "unchecked"
    assert report.reason == "RotaryEmbedding has no rotary_dim: not judged"
    assert (report.cls, report.rotary_dim, report.as_json()["rotary_dim"]) == (
        "RotaryEmbedding", 0, 0
    )  # fmt: skip
    layer = RotaryEmbedding(torch.zeros(8, 64))
    del layer.cos_sin_cache
    (report,) = audit_layer(layer, _spec(), ["l"])
    assert report.verdict == "unchecked" and report.cls == "RotaryEmbedding"
    assert report.reason == "RotaryEmbedding has no cos_sin_cache: not judged"
    layer = RotaryEmbedding(torch.zeros(8, 64), rotary_dim=2**40)
    with pytest.raises(ValueError, match="rotary_dim 1099511627776 is outside 2 .. 65536"):
        audit_layer(layer, _spec(), ["l"])


def test_exact_fills_a_drifting_cache_in_place_and_leaves_a_mismatch():
    pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = _spec()
    layer = RotaryEmbedding(_float32_angles(4096))
    memory = layer.cos_sin_cache.data_ptr()
    (report,) = audit_layer(layer, spec, ["l"])
    assert fill_exact(layer, spec, report).replaced
    assert layer.cos_sin_cache.data_ptr() == memory
    assert np.array_equal(layer.cos_sin_cache.numpy(), spec.rope_cache(4096, dtype=np.float32))
    wrong = RotaryEmbedding(_float32_angles(4096, 5e5))
    before = wrong.cos_sin_cache.clone()
    (report,) = audit_layer(wrong, spec, ["l"])
    assert not fill_exact(wrong, spec, report).replaced
    assert wrong.cos_sin_cache.equal(before)


def test_rows_an_engine_appended_are_judged_and_filled_apart():
    """SGLang appends rows to a cache past what its class made (sinpe.sglang records that
    count on the layer): they are a part of their own, judged at their own positions; exact
    mode writes each part at its positions and leaves a part that mismatches. A cache wrong in
    both: the made rows' base is named, the grown rows (not a table from position 0) keep the
    table's reason."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import MADE, fill_exact

    spec = _spec()
    right = RotaryEmbedding(_float32_angles(4096 + 256))
    setattr(right, MADE, 4096)
    made, grown = audit_layer(right, spec, ["l"], engine="SGLang")
    assert (made.cache, made.rows, made.start) == ("cos_sin_cache[0:4096]", 4096, 0)
    assert (grown.cache, grown.rows, grown.start) == ("cos_sin_cache[4096:4352]", 256, 4096)
    assert made.verdict == grown.verdict == "drift", grown.line()
    assert grown.decades[0][0] >= 4096 and "appended past the 4,096" in grown.note
    assert all(fill_exact(right, spec, r).replaced for r in (made, grown))
    assert np.array_equal(right.cos_sin_cache.numpy(), spec.rope_cache(4352, dtype=np.float32))
    wrong = RotaryEmbedding(torch.cat([_float32_angles(4096), _float32_angles(256, 5e5)]))
    setattr(wrong, MADE, 4096)
    before = wrong.cos_sin_cache[4096:].clone()
    made, grown = audit_layer(wrong, spec, ["l"], engine="SGLang")
    assert made.verdict == "drift" and grown.verdict == "mismatch", grown.line()
    assert fill_exact(wrong, spec, made).replaced and not fill_exact(wrong, spec, grown).replaced
    assert np.array_equal(
        wrong.cos_sin_cache[:4096].numpy(), spec.rope_cache(4096, dtype=np.float32)
    )
    assert wrong.cos_sin_cache[4096:].equal(before)
    both = RotaryEmbedding(_float32_angles(4096 + 256, 5e5))  # wrong in both parts
    setattr(both, MADE, 4096)
    made, grown = audit_layer(both, spec, ["l"], engine="SGLang")
    assert made.reason == "base 500000.0 where the config gives 10000.0", made.line()
    # the grown rows are not a table from position 0: no base is fitted to them
    assert [r["code"] for r in grown.as_json()["reasons"]] == ["table"], grown.line()
    for count in (0, 4352, 10**9, 4096.0, True, "4096"):  # nothing appended, or not a count
        setattr(wrong, MADE, count)
        (whole,) = audit_layer(wrong, spec, ["l"], engine="SGLang")
        assert whole.cache == "cos_sin_cache" and whole.rows == 4352, count


def test_a_family_rope_type_gets_its_notes():
    """HunYuan's NTK-alpha and PhiMoE's LongRoPE are types of a family record: a cache of
    theirs is judged (not "could not be read" because the notes looked the type up among
    the public ones)."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    config = json.loads((ROOT / "tests/data/configs/hunyuan-promptenhancer-7b.json").read_text())
    spec = sinpe.rope_config(config)
    assert spec.scaling["rope_type"] == "ntk_alpha"
    cache = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32))
    (report,) = audit_layer(DynamicNTKAlphaRotaryEmbedding(cache, 128, 128), spec, ["l"])
    assert report.verdict == "match", report.line()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_exact_writes_a_non_contiguous_cache_of_any_dtype_in_its_own_layout(dtype):
    """A transposed (non-contiguous) cache, in half precision too: filled where it lies,
    each value sinpe's table rounded once to its dtype; more rows than one block."""
    torch = pytest.importorskip("torch")
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = _spec()
    kind = getattr(torch, dtype)
    storage = _float32_angles(20000).t().contiguous().to(kind)
    cache = storage.t()  # (20000, 64), strides (1, 20000)
    assert not cache.is_contiguous()
    layer = RotaryEmbedding(cache)
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict in ("match", "drift"), report.line()
    assert fill_exact(layer, spec, report).replaced
    assert layer.cos_sin_cache.data_ptr() == storage.data_ptr()
    want = spec.rope_cache(20000, dtype=dtype)
    got = layer.cos_sin_cache.contiguous()
    if dtype == "bfloat16":
        got, want = got.view(torch.int16).numpy(), want.view(np.int16)
    assert np.array_equal(got.numpy() if hasattr(got, "numpy") else got, want)


def test_a_fill_that_fails_leaves_the_cache_whole_and_says_so(monkeypatch):
    torch = pytest.importorskip("torch")
    from sinpe._rope import rotary
    from sinpe._tables import backends
    from sinpe.vllm._model import Context, audit

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rotary_emb = RotaryEmbeddingModule(_float32_angles(40000))

    made = []

    def failing(rotary_, count, start, name, dtype, threads, isa, order, out, whole=False):
        # a whole fill (in place) fails only before it writes (its refusals, no scratch);
        # any other fails after writing part of its table (made apart, then copied once)
        made.append(whole)
        if not whole:
            out[0][: count // 3] = 7.0
        raise RuntimeError("out of device memory")

    monkeypatch.setattr(rotary, "table_run", failing)
    model = Model()
    before = model.rotary_emb.cos_sin_cache.clone()
    context = Context(_spec_config(), "config.json", (), None)
    (report,) = audit(model, context, exact=True)
    assert report.verdict == "drift" and not report.replaced
    assert report.outcome == "left as vLLM made it (RuntimeError: out of device memory)"
    assert made == [backends.BACKEND == "cython"]
    assert model.rotary_emb.cos_sin_cache.equal(before)
    assert "[exact: left as vLLM made it" in report.line()
    model.rotary_emb.cos_sin_cache.share_memory_()  # not its own memory: made apart
    (report,) = audit(model, context, exact=True)
    assert not report.replaced and made[-1] is False
    assert model.rotary_emb.cos_sin_cache.equal(before)


def _spec_config():
    return {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096,
            "rope_theta": 10000.0}  # fmt: skip


@pytest.mark.parametrize(
    "applied", [False, True, None, 16384, 1024], ids=["unapplied", "applied", "none",
    "sglang's 16,384", "sglang's right length"]
)  # fmt: skip
def test_a_llama_4_query_scale_the_attention_does_not_apply_is_said(applied):
    """Ministral 3's config.json gives Llama 4's query scale in ``rope_parameters``; vLLM's
    MistralAttention applies it only from ``config.llama_4_scaling`` (``do_llama_4_scaling``):
    where every attention says it does not, each report says so (the held table is judged
    as ever); SGLang's Ministral3Attention applies it over its ``max_position_embeddings``,
    the config's top-level original length or 16,384: where that is not the config's
    original length, said; where it does right, or no module says, nothing is said."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm._model import Context, audit

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if isinstance(applied, bool):  # vLLM's MistralAttention
                self.do_llama_4_scaling = applied
            elif isinstance(applied, int):  # SGLang's Ministral3Attention
                self.llama_4_scaling_beta, self.max_position_embeddings = 0.1, applied

    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
    rope |= {"rope_theta": 10000.0, "llama_4_scaling_beta": 0.1}
    text = {"model_type": "ministral3", "head_dim": 64, "max_position_embeddings": 4096}
    config = {"model_type": "mistral3", "text_config": text | {"rope_parameters": rope}}
    cache = sinpe.rope_config(config).rope_cache(4096, dtype=np.float32)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rotary_emb = RotaryEmbeddingModule(torch.from_numpy(cache))
            self.attn = Attention()

    (report,) = audit(Model(), Context(config, "config.json", (), 4096))
    said = [n for n in report.notes if "queries" in n]
    assert report.verdict == "match"
    if applied == 16384:
        assert said == [
            "vLLM's attention scales its queries by 1 + beta ln(1 + floor(p / 16,384)) where "
            "transformers divides by the config's original length 1,024 (rope_parameters' "
            "original_max_position_embeddings): from p = 1,024 on, its queries are scaled "
            "otherwise"
        ]
    elif applied is False:
        assert said == [
            "the config's llama_4_scaling_beta 0.1 is not applied: vLLM's attention takes "
            "Llama 4's query scale from config.llama_4_scaling only (set from Mistral's "
            "params.json), so past 1,024 tokens its queries go unscaled where transformers "
            "scales them by 1 + beta ln(1 + floor(p / 1,024)) (the run line: a mismatch there)"
        ]
    else:
        assert said == []
    if applied == 16384:  # a module whose length is not a number: said, the audit goes on
        model = Model()
        model.attn.max_position_embeddings = object()
        (report,) = audit(model, Context(config, "config.json", (), 4096))
        assert report.verdict == "match" and any(
            n.startswith("the attention's position-dependent query scale could not be read")
            for n in report.notes
        )


def RotaryEmbeddingModule(cache):  # noqa: N802 (a stand-in class made as torch allows)
    torch = pytest.importorskip("torch")

    class RotaryEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cos_sin_cache", cache, persistent=False)
            self.rotary_dim, self.head_size, self.is_neox_style = 64, 64, True

    return RotaryEmbedding()


def test_the_audit_reads_every_row_off_the_device_a_block_at_a_time():
    """A 1,000,000-row cache: every row reaches the host, once, a block at a time (a block
    of the core's BLOCK_ENTRIES), never the whole cache at once."""
    torch = pytest.importorskip("torch")
    from sinpe._verdict.judge import BLOCK_ENTRIES
    from sinpe.vllm import audit_layer

    moved = []

    class Watched(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in (torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.tolist):
                moved.append(tuple(args[0].shape))
            if func is torch.Tensor.to and any(
                getattr(a, "type", None) == "cpu" or a == "cpu" for a in args[1:]
            ):
                moved.append(tuple(args[0].shape))
            return super().__torch_function__(func, types, args, kwargs or {})

    n = 1_000_000
    spec = sinpe.rope_config({**_spec_config(), "max_position_embeddings": n})
    cache = torch.from_numpy(spec.rope_cache(n, dtype=np.float32)).as_subclass(Watched)
    (report,) = audit_layer(RotaryEmbedding(cache), spec, ["l"])
    assert report.verdict == "match" and report.rows == n
    assert report.judgment.compared == report.judgment.held == n * 64
    assert "every entry within" in report.judgment.text
    assert moved and max(shape[0] for shape in moved) <= BLOCK_ENTRIES // 32, moved
    assert sum(shape[0] for shape in moved) == 2 * n  # each block once by .cpu, once by .numpy


def test_the_log_line_gives_the_error_at_the_deployment_length():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = sinpe.rope_config({**_spec_config(), "max_position_embeddings": 65536})
    cache = _float32_angles(65536)
    (full,) = audit_layer(RotaryEmbedding(cache), spec, ["l"], max_model_len=65536)
    (short,) = audit_layer(RotaryEmbedding(cache), spec, ["l"], max_model_len=1024)
    assert "largest error" in full.line() and "up to max_model_len 65,536" in full.line()
    at = [float(n.split()[2]) for n in short.notes if n.startswith("largest error")]
    assert at and at[0] < full.largest / 10  # float32 angles: the error grows with the length
    assert isinstance(torch.Tensor, type)


def test_where_vllms_hf_config_reads_another_rope_it_is_said():
    from types import SimpleNamespace

    from sinpe.vllm._model import hf_config_differs

    config = {"model_type": "llama", "head_dim": 64, "rope_theta": 10000.0}
    same = SimpleNamespace(to_dict=lambda: dict(config))
    assert hf_config_differs(config, same) == ""
    edited = SimpleNamespace(to_dict=lambda: {**config, "rope_theta": 5e5})
    assert hf_config_differs(config, edited) == (
        "vLLM's hf_config reads base 500000.0 where config.json gives 10000.0"
    )
    assert hf_config_differs(config, edited, "SGLang") == (
        "SGLang's hf_config reads base 500000.0 where config.json gives 10000.0"
    )
    assert hf_config_differs(config, None) == ""
    assert hf_config_differs(config, SimpleNamespace()) == ""  # no to_dict: nothing said


def _fake_llm(model, folder, hf_config):
    """A ``vllm.LLM`` stand-in: its engine's model config, ``apply_model`` in this process."""
    from types import SimpleNamespace

    model_config = SimpleNamespace(
        model=str(folder), hf_config=hf_config, max_model_len=4096, revision=None
    )
    return SimpleNamespace(
        llm_engine=SimpleNamespace(model_config=model_config),
        apply_model=lambda function: [function(model)],
    ), model_config


def test_a_model_without_config_json_is_judged_by_hf_config_and_says_so(tmp_path):
    """A GGUF or Mistral-format folder served by vLLM has no config.json: vLLM's hf_config
    is the config, every report says so, and check(llm) gives what the plugin gives."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    import sinpe.vllm as sv

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rotary_emb = RotaryEmbeddingModule(_float32_angles(4096))

    hf_config = SimpleNamespace(to_dict=lambda: _spec_config())
    model = Model()
    llm, model_config = _fake_llm(model, tmp_path / "not-a-repo id!", hf_config)
    plugin = sv.audit_model(model, model_config)
    checked = sv.check(llm)
    assert [r.as_json() for r in plugin] == [r.as_json() for r in checked]
    (report,) = checked
    assert report.verdict == "drift"
    assert "config: vLLM's hf_config (no config.json found)" in report.notes


def test_an_sglang_model_without_config_json_is_judged_by_hf_config_and_says_so(tmp_path):
    """SGLang's runner as vLLM's: no config.json in its model path, so SGLang's hf_config is
    the config, said in every report; audit only (no cache changed) unless asked."""
    pytest.importorskip("torch")
    from sinpe.sglang import _plugin

    runner, rotary = _sglang_runner(tmp_path, _float32_angles(4096))
    (tmp_path / "model" / "config.json").unlink()
    runner.model_config.hf_config = types.SimpleNamespace(to_dict=lambda: _spec_config())
    before = rotary.cos_sin_cache.clone()
    (report,) = _plugin.audit_runner(runner)
    assert report.verdict == "drift" and not report.replaced, report.line()
    assert "config: SGLang's hf_config (no config.json found)" in report.notes, report.notes
    assert rotary.cos_sin_cache.equal(before)


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(_has("mlx") and _has("mlx_lm"), reason="mlx and mlx-lm are installed")
def test_an_mlx_model_folder_without_mlx_is_one_line_and_exit_2(tmp_path):
    import json

    from command import run

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    result = run("check", tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"checking the MLX model folder {tmp_path} needs mlx and mlx-lm" in result.stderr
    assert "pip install 'sinpe[mlx]'" in result.stderr
    result = run("check", tmp_path, "--offset", "2")
    assert result.returncode == 2 and "--offset: not for an MLX model folder" in result.stderr


def test_import_sinpe_mlx_without_mlx_says_what_to_install():
    if _has("mlx"):
        pytest.skip("mlx is installed")
    with pytest.raises(ImportError, match=r"mlx and mlx-lm: pip install 'sinpe\[mlx\]'"):
        import sinpe.mlx  # noqa: F401


# --------------------------------------------------------------------------- the plugin

_FAKE_VLLM = """
import sys, types, logging
def module(name, **attrs):
    found = types.ModuleType(name)
    found.__path__ = []
    found.__dict__.update(attrs)
    sys.modules[name] = found
    return found
module("vllm", __version__="9.9.9")
module("vllm.logger", init_logger=lambda name: logging.getLogger(name))
module("vllm.model_executor")
"""
_LOADERS = """
class BaseModelLoader:
    def load_model(self, vllm_config, model_config):
        return MODEL
class TensorizerLoader(BaseModelLoader):
    def load_model(self, vllm_config, model_config):
        return super().load_model(vllm_config, model_config)
module("vllm.model_executor.model_loader")
module("vllm.model_executor.model_loader.base_loader", BaseModelLoader=BaseModelLoader)
"""


def test_where_vllms_loaders_moved_one_warning_names_the_version():
    result = run_script(
        _FAKE_VLLM
        + """
import sinpe.vllm as sv
sv.register(); sv.register()
print(sv.wrapped())
"""
    )
    assert result.stdout == "[]\n"
    lines = [line for line in result.stderr.splitlines() if "sinpe" in line]
    assert len(lines) == 1, result.stderr
    assert "vLLM 9.9.9 has no" in lines[0] and "vllm.model_executor.model_loader" in lines[0]


@pytest.mark.parametrize("trouble", ["audit", "report path", "none"])
def test_the_plugin_never_stops_vllm_loading_a_model(tmp_path, trouble):
    """Every loader that overrides load_model is wrapped (its call of the base's audits
    once); an audit that raises, or a report path that cannot be written, is one warning
    and the model loads."""
    pytest.importorskip("torch")
    report = tmp_path / ("no-such-folder" if trouble == "report path" else "") / "r.json"
    script = (
        _FAKE_VLLM
        + _LOADERS
        + f"""
import os, types
import torch, sinpe.vllm as sv
from sinpe.vllm import _model
os.environ["SINPE_VLLM_REPORT"] = {str(report)!r}
class RotaryEmbedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cos_sin_cache = torch.zeros(8, 64)
        self.rotary_dim, self.is_neox_style = 64, True
MODEL = torch.nn.Sequential(RotaryEmbedding())
calls = []
real = _model.audit
def audit(*args, **kwargs):
    calls.append(1)
    if {trouble!r} == "audit":
        raise RuntimeError("an engine object sinpe did not foresee")
    return real(*args, **kwargs)
_model.audit = audit
sv.register()
config = types.SimpleNamespace(model="/nowhere", max_model_len=8, revision=None,
    hf_config=types.SimpleNamespace(to_dict=lambda: dict(model_type="llama", head_dim=64,
    max_position_embeddings=8, rope_theta=10000.0)))
assert TensorizerLoader().load_model(None, config) is MODEL
print(len(calls), sorted(w.rsplit(".", 1)[1] for w in sv.wrapped()))
"""
    )
    result = run_script(script)
    assert result.stdout == "1 ['BaseModelLoader', 'TensorizerLoader']\n", result.stderr
    warned = [line for line in result.stderr.splitlines() if "sinpe could not" in line]
    if trouble == "none":  # an unchecked layer (zeros: no NaN, but no number to give) and
        assert warned == [], result.stderr  # a strict JSON report written
        (data,) = json.loads(report.read_text(), parse_constant=pytest.fail)
        assert data["verdict"] == "mismatch" and data["largest_error"] is not None
        return
    assert len(warned) == 1, result.stderr
    if trouble == "audit":
        assert "RuntimeError: an engine object sinpe did not foresee" in warned[0]
    else:
        assert "SINPE_VLLM_REPORT" in warned[0] and "No such file or directory" in warned[0]


def _hub_cache(tmp_path, monkeypatch, repo: str, bases: dict):
    """An offline Hugging Face cache (HF_HUB_CACHE) holding ``repo`` at each ref of ``bases``
    (ref -> rope_theta): ``refs/<ref>`` names a snapshot with its own config.json."""
    constants = pytest.importorskip("huggingface_hub.constants")
    hub = tmp_path / "hub"
    folder = hub / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    for k, (ref, base) in enumerate(bases.items()):
        commit = f"{k + 1:040x}"
        (folder / "refs" / ref).write_text(commit)
        snapshot = folder / "snapshots" / commit
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps({**_spec_config(), "rope_theta": base}))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))  # huggingface_hub read it at import


def test_an_sglang_model_by_repo_id_is_judged_by_its_revisions_config(tmp_path, monkeypatch):
    """A runner whose model_path is a repository id at revision "v1": judged by the
    config.json of v1's snapshot in the Hugging Face cache (the cache's base: drift), not
    main's (another base: a mismatch, as it is without the revision)."""
    pytest.importorskip("torch")
    from sinpe.sglang import _plugin

    runner, _ = _sglang_runner(tmp_path, _float32_angles(4096))
    _hub_cache(tmp_path, monkeypatch, "org/model", {"main": 5e5, "v1": 10000.0})
    monkeypatch.chdir(tmp_path)  # no folder org/model here: the id is found in the cache
    runner.model_config.model_path, runner.model_config.revision = "org/model", "v1"
    (report,) = _plugin.audit_runner(runner)
    assert report.verdict == "drift", report.line()
    assert not any("hf_config" in note for note in report.notes), report.notes
    runner.model_config.revision = None
    (report,) = _plugin.audit_runner(runner)
    assert report.verdict == "mismatch", report.line()


# --------------------------------------------------------------------------- reports kept


def test_a_phi3_longrope_layer_without_is_neox_style_rotates_halves():
    """vLLM's and SGLang's Phi-3 LongRoPE class has no is_neox_style: it rotates halves, so
    against a config whose attention rotates pairs both parts are a rotation mismatch saying
    is_neox_style=True; each part's line gives its rows and the cache's dtype."""
    pytest.importorskip("torch")
    from rope_cases import phi3_longrope

    from sinpe.vllm import audit_layer

    config = phi3_longrope(128, 2, 8192, 1024)
    spec = sinpe.rope_config(config)
    layer = Phi3LongRoPEScaledRotaryEmbedding(
        spec, *(spec.rope_cache(n, dtype=np.float32) for n in (1024, 8192))
    )
    assert not hasattr(layer, "is_neox_style")
    short, long = audit_layer(layer, spec, ["l"])
    assert short.line().startswith(
        "l Phi3LongRoPEScaledRotaryEmbedding long_short_cos_sin_cache[0:1024] 1024x64 float32: "
    ), short.line()
    assert long.dtype == "float32" and long.verdict == "match"
    pairs = dataclasses.replace(spec, rotation="pairs")  # its attention rotates pairs
    reports = audit_layer(layer, pairs, ["l"])
    assert [(r.verdict, r.reason) for r in reports] == 2 * [
        (
            "mismatch",
            "rotates halves (is_neox_style=True) where the model's attention rotates pairs",
        )
    ]


def test_a_cache_with_a_nan_is_not_a_number_whatever_else_is_wrong():
    """A cache of base 500000 (the config's is 10000) with a NaN at row 3: the NaN is the
    reason, not a base fitted to it; and with max_model_len given, no largest error is
    noted (a NaN has none)."""
    pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    cache = _float32_angles(4096, 5e5)
    cache[3, 5] = float("nan")
    (report,) = audit_layer(RotaryEmbedding(cache), _spec(), ["l"], max_model_len=4096)
    assert report.verdict == "mismatch"
    assert [r["code"] for r in report.as_json()["reasons"]] == ["not_a_number"], report.line()
    assert report.reason == "the entry at position 3, column 5 is nan: not a value a RoPE can use"
    assert report.notes == ()


def test_the_error_at_the_deployment_length_counts_only_the_rows_below_it():
    """max_model_len 64: the largest error noted is that of rows 0..63 (row 64, one float32
    ulp off, is past it); SGLang's grown rows all lie past a context_len of 2,048, so that
    part notes no error at the length (and the rows it made do)."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import MADE

    spec = _spec()
    cache = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32))
    cache[64] = torch.nextafter(cache[64], torch.full_like(cache[64], 2.0))
    (report,) = audit_layer(RotaryEmbedding(cache), spec, ["l"], max_model_len=64)
    assert report.verdict == "match"
    assert report.notes == ("largest error 2.98e-08 up to max_model_len 64",)
    assert report.largest > 8e-8  # row 64's error, counted in the whole cache's
    layer = RotaryEmbedding(_float32_angles(4096 + 256))
    setattr(layer, MADE, 4096)
    made, grown = audit_layer(layer, spec, ["l"], max_model_len=2048, engine="SGLang")
    assert made.notes == ("largest error 7.22e-05 up to context_len 2,048",)
    assert grown.verdict == "drift" and len(grown.notes) == 1, grown.notes
    assert grown.note.startswith("the rows SGLang appended past the 4,096 its class made")


def test_a_scaled_dynamic_ntk_cache_names_only_its_attention_factor():
    """A dynamic-NTK cache built at 8,192 rows (twice the trained 4,096) and multiplied by
    1.1: the parameters fitted to it are judged at its own length, so the one reason is the
    attention factor (no base or scaling is said wrong)."""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    config = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096}
    spec = sinpe.rope_config(config | {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})
    cache = torch.from_numpy(spec.rope_cache(8192, dtype=np.float32)) * 1.1
    (report,) = audit_layer(DynamicNTKScalingRotaryEmbedding(cache), spec, ["l"])
    assert report.verdict == "mismatch"
    assert report.reason == "dynamic NTK attention factor 1.1 where the config gives 1.0"
    assert len(report.judgment.findings) == 1, report.line()


@pytest.mark.parametrize("dtype, width", [("float64", 64), ("bfloat16", 6)])
def test_exact_fills_a_float64_cache_and_a_bfloat16_cache_of_an_odd_half_width(dtype, width):
    """A float64 cache is filled with sinpe's float64 table, bit for bit (not one rounded
    through float32); a bfloat16 cache of rotary dim 6 (rows of 6 values: an odd number of
    32-bit words) is filled too, each value sinpe's rounded to bfloat16."""
    torch = pytest.importorskip("torch")
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = sinpe.rope_config({**_spec_config(), "head_dim": width})
    wide = np.float64 if dtype == "float64" else np.float32
    cache = torch.from_numpy(spec.rope_cache(256, dtype=wide)).to(getattr(torch, dtype))
    layer = RotaryEmbedding(cache, rotary_dim=width, head_size=width)
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "match", report.line()
    assert fill_exact(layer, spec, report).replaced
    want = spec.rope_cache(256, dtype=dtype)
    got = layer.cos_sin_cache
    if dtype == "bfloat16":
        got, want = got.view(torch.int16), want.view(np.int16)
    assert np.array_equal(got.numpy(), want)


def _gemma3(scaling=None):
    """A Gemma 3 config: layer 0 slides (base 10000), layer 1 attends fully (base 10000,
    ``scaling`` its rope_scaling)."""
    config = {"model_type": "gemma3_text", "head_dim": 64, "max_position_embeddings": 4096,
              "rope_theta": 10000.0, "rope_local_base_freq": 10000.0,
              "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip
    return config | ({"rope_scaling": scaling} if scaling else {})


def test_a_layer_the_config_cannot_place_or_could_not_read_is_unchecked_without_a_cache():
    """A Gemma 3 spec (a RoPE per layer type) whose config has no layer_types, for a module
    named model.rotary_emb: unchecked, saying no layer type is given, its class named and no
    cache, rows or dtype; a config sinpe refused (spec None): unchecked for that reason,
    likewise without a cache."""
    pytest.importorskip("torch")
    from sinpe._verdict.verdict import finding
    from sinpe.vllm import audit_layer

    config = _gemma3()
    spec = sinpe.rope_config(config)
    untyped = {k: v for k, v in config.items() if k != "layer_types"}
    refused = finding("config_refused", engine="config.json", config="no head_dim")
    for report, line in [
        (
            audit_layer(RotaryEmbedding(_float32_angles(64)), spec, ["model.rotary_emb"], untyped),
            "model.rotary_emb RotaryEmbedding: unchecked: the config says no layer type for "
            "a module outside the numbered layers (layer_types)",
        ),
        (
            audit_layer(RotaryEmbedding(_float32_angles(64)), None, ["l"], refused=refused),
            "l RotaryEmbedding: unchecked: sinpe.rope_config refuses config.json: no head_dim",
        ),
    ]:
        (report,) = report
        assert report.verdict == "unchecked" and report.line() == line
        assert (report.cls, report.cache, report.rows, report.dtype) == (
            "RotaryEmbedding", "", 0, ""
        )  # fmt: skip
        data = json.loads(json.dumps(report.as_json(), allow_nan=False))
        assert (data["cls"], data["cache"], data["rows"], data["rotary_dim"]) == (
            "RotaryEmbedding", "", 0, 64
        )  # fmt: skip
    assert data["reasons"][0]["code"] == "config_refused"


def test_one_module_shared_by_two_layer_types_gets_a_report_for_each():
    """One rotary module shared by Gemma 3's layer 0 (sliding: no scaling) and layer 1 (full:
    linear scaling 8): a report for each layer's spec, a drift and a mismatch."""
    pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    config = _gemma3({"rope_type": "linear", "factor": 8.0})
    names = ["model.layers.0.self_attn.rotary_emb", "model.layers.1.self_attn.rotary_emb"]
    reports = audit_layer(RotaryEmbedding(_float32_angles(4096)), sinpe.rope_config(config),
                          names, config)  # fmt: skip
    assert [(r.names, r.verdict) for r in reports] == [
        ((names[0],), "drift"),
        ((names[1],), "mismatch"),
    ]


def test_a_vision_layer_is_named_and_a_permuted_rotation_is_noted():
    """A module in a vision encoder (any part of its name, however deep) is unchecked with
    its class named; a layer rotating pairs in a model whose loader permutes the query and
    key weights keeps the config's rotation, and says so in full."""
    pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import in_vision

    assert in_vision("model.visual.blocks.0") and not in_vision("model.layers.0")
    (report,) = audit_layer(RotaryEmbedding(_float32_angles(64)), _spec(), ["model.visual.b.0"])
    assert report.verdict == "unchecked" and report.reason == (
        "RotaryEmbedding belongs to a vision encoder (an image's positions, not the config's "
        "text RoPE): not judged"
    )
    assert report.as_json()["reasons"][0]["engine"] == "RotaryEmbedding"
    layer = RotaryEmbedding(_float32_angles(4096), neox=False)
    (report,) = audit_layer(layer, _spec(), ["l"], permuted=True)
    assert report.verdict == "drift", report.line()
    assert report.notes == (
        "vLLM rotates pairs and permutes the query and key weights at load, so the model's "
        "halves rotation is kept",
    )


def test_the_vllm_run_raises_its_kv_cache_space_to_what_the_run_model_takes(tmp_path, monkeypatch):
    """EXAONE 4's twin keeps its 64 layers (48 sliding, window 4,096): its float32 KV cache
    at 131,104 tokens is 2.19 GiB, so the run asks vLLM for 3 GiB (a quarter to spare) where
    1 is set, and says so; a twin that fits leaves the setting as it is, and a larger one
    given is never lowered."""
    from sinpe._engines._shrink import shrink
    from sinpe._rope.config import load_config
    from sinpe.vllm._engine import _kv_need, _kv_space

    twin = shrink(load_config(ROOT / "tests" / "data" / "configs" / "exaone-4.0-32b.json"))
    (tmp_path / "config.json").write_text(json.dumps(twin))
    full, sliding = 16 * 131104, 48 * 4096  # rows: the full layers' and the sliding ones'
    assert _kv_need(twin, 131104) == 2 * 1 * 128 * 4 * (full + sliding)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    assert _kv_space(tmp_path, 131104) == (
        "VLLM_CPU_KVCACHE_SPACE raised from 1 to 3 GiB for the run: the run model's KV cache "
        "at 131,104 tokens",
    )
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "3"
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    assert _kv_space(tmp_path, 131104) == () and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "8"
    (tmp_path / "config.json").write_text(json.dumps(shrink(load_config(
        ROOT / "tests" / "data" / "configs" / "llama-3.1-8b.json"))))  # fmt: skip
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    assert _kv_space(tmp_path, 131104) == () and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_the_vllm_run_asks_for_one_sequence_and_the_cpu_mla_backend(tmp_path):
    """The run's ``vllm.LLM`` runs one sequence (``max_num_seqs=1``: the model runner's
    per-request buffers are ``max_num_seqs`` x ``max_model_len``, 12.5 GiB for Llama 4
    Scout's 10,485,760 at the CPU's default 256) and, without a GPU, vLLM's reference CPU MLA
    backend, as the table line's reading does (on a CPU with AMX, the AMX one refuses the
    float32 run model: "expect weight to be bfloat16, ..."). The twin of an MLA model keeps
    its ``kv_lora_rank`` (vLLM's CPU MLA takes a latent width of 576 only)."""
    torch = pytest.importorskip("torch")
    from sinpe._engines._shrink import shrink
    from sinpe._rope.config import load_config
    from sinpe.vllm._engine import _run_llm

    given = {}

    class LLM:
        def __init__(self, **kwargs):
            given.update(kwargs)

        def apply_model(self, function):
            return []

    class FakeVllm:
        pass

    FakeVllm.LLM = LLM
    _run_llm(FakeVllm, tmp_path, 163840, {"p": 0, "rows": []})
    assert given["max_num_seqs"] == 1 and given["max_model_len"] == 163840
    assert given["attention_backend"] == (None if torch.cuda.is_available() else "CPU_MLA")
    for name in ("deepseek-v3.json", "kimi-k2-instruct.json"):
        twin = shrink(load_config(ROOT / "tests" / "data" / "configs" / name))
        assert twin["kv_lora_rank"] + twin["qk_rope_head_dim"] == 576


def test_the_vllm_run_gives_a_chunked_layer_its_chunk(tmp_path, monkeypatch):
    """Llama 4 Scout's twin (two layers, both chunked: its config.json leaves the layer types
    to the config class, from ``no_rope_layers``) takes 2 x 8,192 rows of KV cache at its
    10,485,760 tokens, not 2 x 10,485,760 (20 GiB, the run killed): vLLM gives a chunked
    layer its chunk (``ChunkedLocalAttentionSpec``), so 1 GiB is left as it is."""
    from sinpe._engines._shrink import shrink
    from sinpe._rope.config import load_config
    from sinpe.vllm._engine import _kv_need, _kv_space, _layer_kinds

    config = ROOT / "tests" / "data" / "configs" / "llama-4-scout-17b-16e-instruct.trimmed.json"
    twin = shrink(load_config(config))
    length = 10485760
    assert _kv_need(twin, length) == 2 * 1 * 128 * 4 * 2 * length  # the JSON alone: full
    assert _kv_need(twin, length, ["chunked_attention"] * 2) == 2 * 1 * 128 * 4 * 2 * 8192
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text(json.dumps(twin))
    assert _layer_kinds(tmp_path) == ["chunked_attention"] * 2
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    assert _kv_space(tmp_path, length) == () and os.environ["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_no_twin_projection_is_as_wide_as_its_vocabulary():
    """ONNX Runtime GenAI's builder takes any Linear whose width is the vocabulary for the LM
    head (``Model.has_lm_head``, asked of every module, a vision tower's too): no twin of the
    corpus has a hidden size, a fused qkv or gate-up width (Phi-3's kind) or a tower's MLP
    width equal to its vocabulary, as no published model does; the twins that had one (Phi-4
    mini's fused qkv, Devstral's and Gemma 4's vision MLP) are the ones kept apart."""
    from sinpe._engines._shrink import VOCAB, _widths, shrink
    from sinpe._rope.config import load_config

    kept_apart = set()
    for path in sorted((ROOT / "tests" / "data" / "configs").glob("*.json")):
        try:
            config = load_config(path)
        except ValueError:  # a file the corpus keeps as refused
            continue
        twin = shrink(config)
        text = twin.get("text_config") if isinstance(twin.get("text_config"), dict) else twin
        assert VOCAB not in _widths(text), path.name
        for key in ("vision_config", "audio_config"):
            tower = twin.get(key)
            if isinstance(tower, dict):
                assert VOCAB not in {tower.get("intermediate_size")}, (path.name, key)
        heads = (config.get("text_config") or config).get("num_attention_heads")
        if text.get("num_attention_heads") not in (None, heads) and text["num_attention_heads"] > 2:
            kept_apart.add(path.stem)
    assert "phi-4-mini-instruct.markdown-block" in kept_apart
    phi4 = shrink(
        load_config(ROOT / "tests" / "data" / "configs" / "phi-4-mini-instruct.markdown-block.json")
    )
    assert VOCAB in _widths({**phi4, "num_attention_heads": 2, "hidden_size": 256})  # as it was
