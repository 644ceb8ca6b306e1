"""``--json`` on every path (GitHub issue 64, item 5): ``sinpe check`` (a cache file, a GGUF
file, an ONNX model with and without ``--fix``, an MLX folder) and ``sinpe engines`` print
exactly one strict JSON object on stdout, whatever happens: a verdict, or a refusal (a config
sinpe refuses, a missing, truncated, unparseable or hostile file, a FIFO, a missing shard, an
argument out of range, argparse's own errors), its ``exit_code`` the process's exit status.
Only Ctrl-C prints none. The inputs are built with the tests' own writers."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from command import run
from gguf_files import CONFIGS as GGUF_CONFIGS
from gguf_files import converted, write, write_split
from onnx_files import graph, model, node, tensor
from test_check import save_safetensors

import sinpe
from sinpe._engines import ABSENT, FAILED, EngineLine, _side
from sinpe._engines._side import RunLine
from sinpe._verdict import verdict

DOCS = Path(__file__).parents[1] / "docs"
ROWS = 64
SMALL = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": ROWS, "rope_theta": 1e4}
FACTOR = {"rope_scaling": {"rope_type": "linear", "factor": "2"}}  # a string: a TypeError
CACHE_KINDS = ("npz", "npy", "safetensors", "pt")
KINDS = (*CACHE_KINDS, "gguf", "onnx", "onnx --fix")
_OUTS = itertools.count()  # each --fix its own new folder


def _no_constant(name: str):
    raise AssertionError(f"{name} in strict JSON")


def one_object(result) -> dict:
    """stdout as exactly one strict JSON object (no NaN, no Infinity), whose ``exit_code``
    is the process's exit status."""
    data = json.loads(result.stdout, parse_constant=_no_constant)  # one value, nothing after
    assert isinstance(data, dict), result.stdout
    assert data["exit_code"] == result.returncode, (data, result.stderr)
    return data


def refused(result, *words: str) -> dict:
    """A refusal: exit 2, the object ``{"verdict": "refused", "reason", "exit_code": 2}``
    holding ``words``, and its line on stderr."""
    data = one_object(result)
    assert result.returncode == 2 and set(data) == {"verdict", "reason", "exit_code"}, data
    assert data["verdict"] == verdict.REFUSED
    for word in words:
        assert word in data["reason"], (word, data["reason"])
    assert f"sinpe: error: {data['reason']}" in result.stderr.splitlines(), result.stderr
    return data


def process(*args) -> subprocess.CompletedProcess:
    """``python -m sinpe ARGS`` in a process of its own (a FIFO must never block the suite)."""
    argv = [sys.executable, "-m", "sinpe", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


# --------------------------------------------------------------------------- the inputs


def _onnx(folder: Path, config: dict, cos, sin) -> Path:
    """An ONNX model as ONNX Runtime GenAI's builder writes one: a cos and a sin cache fed
    to GroupQueryAttention (here inline), ``config.json`` beside it."""
    inputs = ["q", "k", "v", "past_k", "past_v", "seqlens", "total", "cos_cache", "sin_cache"]
    attention = node(
        "GroupQueryAttention", inputs, ["o"], domain="com.microsoft",
        name="/model/layers.0/attn/GroupQueryAttention", do_rotary=1, rotary_interleaved=0,
        num_heads=2, kv_num_heads=1,
    )  # fmt: skip
    caches = [tensor("cos_cache", cos), tensor("sin_cache", sin)]
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(model(graph([attention], caches, ["input_ids"])))
    (folder / "config.json").write_text(json.dumps(config))
    return folder / "model.onnx"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    """Each kind's file, its config, and the same config with a rope ``factor`` that is a
    string; a mismatching file of each kind; an MLX folder."""
    root = tmp_path_factory.mktemp("inputs")
    spec = sinpe.rope_config(SMALL)
    cos, sin = spec.rope(ROWS)
    found = {"config": root / "small.json", "bad": root / "bad.json"}
    found["config"].write_text(json.dumps(SMALL))
    found["bad"].write_text(json.dumps({**SMALL, **FACTOR}))
    np.savez(root / "c.npz", cos=cos, sin=sin)
    np.save(root / "c.npy", spec.rope_cache(ROWS, format="vllm"))
    save_safetensors(
        root / "c.safetensors",
        {n: ("F64", a.shape, a.astype("<f8").tobytes()) for n, a in (("cos", cos), ("sin", sin))},
    )
    torch = pytest.importorskip("torch")
    torch.save({"cos": torch.from_numpy(cos), "sin": torch.from_numpy(sin)}, root / "c.pt")
    kv, tensors = converted("llama31")
    found["gguf"] = write(root / "m.gguf", kv, tensors)
    found["gguf config"] = root / "llama31.json"
    found["gguf config"].write_text(json.dumps(GGUF_CONFIGS["llama31"]))
    found["gguf bad"] = root / "llama31-bad.json"
    found["gguf bad"].write_text(json.dumps({**GGUF_CONFIGS["llama31"], **FACTOR}))
    found["gguf mismatch"] = write(root / "base.gguf", {**kv, "llama.rope.freq_base": 1e4}, tensors)
    (root / "split").mkdir()
    shards = write_split(root / "split", "m", kv, tensors, 3)
    shards[1].unlink()
    found["shard"] = shards[0]
    compact = spec.rope(ROWS, layout="compact", dtype="float32")
    found["onnx"] = _onnx(root / "onnx", SMALL, *compact)
    other = sinpe.rope_config({**SMALL, "rope_theta": 5e5}).rope(ROWS, layout="compact")
    found["onnx mismatch"] = _onnx(root / "onnx-base", SMALL, *other)
    other = sinpe.rope_config({**SMALL, "rope_theta": 5e5}).rope(ROWS)
    np.savez(root / "base.npz", cos=other[0], sin=other[1])
    nan = cos.copy()
    nan[3, 5] = np.nan
    np.savez(root / "nan.npz", cos=nan, sin=sin)
    (root / "mlx").mkdir()
    (root / "mlx" / "config.json").write_text(json.dumps(SMALL))
    found["root"] = root
    return found


def _args(inputs, kind: str, config_key: str = "config") -> list:
    """The command line of ``kind``'s file (``onnx --fix``: a new folder as OUT)."""
    if kind in CACHE_KINDS:
        return [inputs["root"] / f"c.{kind}", inputs[config_key]]
    if kind == "gguf":
        return [inputs["gguf"], inputs["gguf bad" if config_key == "bad" else "gguf config"]]
    fix = ["--fix", inputs["root"] / f"fixed-{next(_OUTS)}"] if kind == "onnx --fix" else []
    return [inputs["onnx"], inputs[config_key], *fix]


def _named(inputs, kind: str, path: Path) -> list:
    """``kind``'s command line with ``path`` in place of its file."""
    args = _args(inputs, kind)
    return [path, *args[1:]]


def _suffix(kind: str) -> str:
    return "." + kind.split()[0]


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_is_one_object_and_exit_0(inputs, kind):
    args = _args(inputs, kind)
    result = run("check", *args, "--json")
    data = one_object(result)
    assert (data["verdict"], result.returncode) == ("match", 0), data
    if kind == "onnx --fix":
        assert data["fixed"] == str(args[-1] / "model.onnx") and Path(data["fixed"]).is_file()
    elif kind == "onnx":
        assert data["fixed"] is None


@pytest.mark.parametrize(
    "name, config",
    [("base.npz", "10000.0"), ("gguf mismatch", "500000.0"), ("onnx mismatch", "10000.0")],
)
def test_a_mismatch_is_one_object_and_exit_1(inputs, name, config):
    """Another base: a mismatch, exit 1, its reason ``base`` giving the config's value."""
    path = inputs.get(name) or inputs["root"] / name
    given = inputs["gguf config"] if name.startswith("gguf") else inputs["config"]
    data = one_object(run("check", path, given, "--json"))
    assert data["verdict"] == "mismatch" and data["exit_code"] == 1
    reasons = data["reasons"] + [r for p in data.get("parts", ()) for r in p.get("reasons", ())]
    assert [r["config"] for r in reasons if r["code"] == "base"][:1] == [config], data


@pytest.mark.parametrize(
    "kind, name", [("npz", "compare_cache"), ("gguf", "check_gguf"), ("onnx", "check_onnx")]
)
def test_a_verdict_unchecked_exits_1_as_a_mismatch(inputs, kind, name, monkeypatch):
    """A report whose verdict is ``unchecked`` (not every part judged) never passes: exit 1,
    with and without ``--json``."""
    from sinpe.cli import check as check_cli

    real = getattr(check_cli, name)
    skipped = verdict.unchecked("no_cache")

    def unjudged(*args, **kwargs):
        return real(*args, **kwargs)._replace(judgment=skipped)

    monkeypatch.setattr(check_cli, name, unjudged)
    result = run("check", *_args(inputs, kind), "--json")
    data = one_object(result)
    assert (data["verdict"], result.returncode) == ("unchecked", 1)
    assert [r["code"] for r in data["reasons"]] == ["no_cache"]
    assert run("check", *_args(inputs, kind)).returncode == 1


def test_an_error_over_max_error_exits_1_and_says_so(inputs, tmp_path):
    """A match whose largest error exceeds ``--max-error``: the verdict stays, exit 1."""
    cos, sin = sinpe.rope_config(SMALL).rope(ROWS, dtype="float32")
    np.savez(tmp_path / "f32.npz", cos=cos, sin=sin)
    result = run("check", tmp_path / "f32.npz", inputs["config"], "--max-error", "0", "--json")
    data = one_object(result)
    assert (data["verdict"], data["max_error"], result.returncode) == ("match", 0.0, 1)
    assert 0 < data["largest_error"] < 1e-7


def test_a_nan_entry_is_a_mismatch_in_strict_json(inputs):
    """A value that does not exist is never a match, and never a bare NaN in the JSON."""
    result = run("check", inputs["root"] / "nan.npz", inputs["config"], "--json")
    data = one_object(result)
    assert (data["verdict"], result.returncode) == ("mismatch", 1)
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout


def test_an_onnx_fix_of_a_mismatch_is_refused_and_writes_nothing(inputs):
    out = inputs["root"] / "fixed-mismatch"
    result = run("check", inputs["onnx mismatch"], inputs["config"], "--fix", out, "--json")
    refused(result)
    assert not out.exists()


def test_plot_is_named_in_the_object_and_no_line_follows_it(inputs):
    pytest.importorskip("matplotlib")
    out = inputs["root"] / "error.png"
    result = run("check", *_args(inputs, "npz"), "--plot", out, "--json")
    data = one_object(result)
    assert data["plot"] == str(out) and out.read_bytes()[:4] == b"\x89PNG"
    assert one_object(run("check", *_args(inputs, "npz"), "--json"))["plot"] is None


def test_plot_without_matplotlib_is_a_refusal_before_any_work(inputs, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    out = inputs["root"] / "none.png"
    result = run("check", *_args(inputs, "npz"), "--plot", out, "--json")
    refused(result, "sinpe check --plot needs matplotlib: pip install 'sinpe[plot]'")
    assert not out.exists()


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("kind", KINDS)
def test_a_factor_that_is_a_string_is_refused(inputs, kind):
    """The TypeError of a config's rope factor that is a string: one refusal naming it."""
    refused(run("check", *_args(inputs, kind, "bad"), "--json"), "factor", "str", "'2'")


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_file_is_refused(inputs, kind):
    path = inputs["root"] / f"nosuch{_suffix(kind)}"
    refused(run("check", *_named(inputs, kind, path), "--json"), str(path))


@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_file_is_refused(inputs, kind):
    source = _args(inputs, kind)[0]
    path = inputs["root"] / f"truncated-{kind.replace(' ', '')}{_suffix(kind)}"
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    refused(run("check", *_named(inputs, kind, path), "--json"), str(path))


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_sinpe_cannot_parse_is_refused(inputs, kind):
    path = inputs["root"] / f"noise-{kind.replace(' ', '')}{_suffix(kind)}"
    path.write_bytes(np.random.default_rng(64).bytes(512))
    refused(run("check", *_named(inputs, kind, path), "--json"), str(path))


@pytest.mark.parametrize("kind", KINDS)
def test_a_fifo_is_refused_at_once(inputs, kind):
    path = inputs["root"] / f"fifo-{kind.replace(' ', '')}{_suffix(kind)}"
    if not path.exists():
        os.mkfifo(path)
    refused(process("check", *_named(inputs, kind, path), "--json"), "is a FIFO")


def test_a_fifo_config_is_refused_at_once(inputs):
    path = inputs["root"] / "fifo.json"
    os.mkfifo(path)
    result = process("check", inputs["gguf"], path, "--json")
    refused(result, f"config {str(path)!r} is a FIFO, not a regular file")


def test_a_missing_shard_is_refused(inputs):
    result = run("check", inputs["shard"], inputs["gguf config"], "--json")
    refused(result, "shard 2", "is missing")


def test_an_mlx_folder_is_one_object(inputs):
    """Here without mlx-lm: a refusal saying what it needs; with it, a folder holding no
    model is refused all the same."""
    data = refused(run("check", inputs["root"] / "mlx", "--json"))
    try:
        import mlx_lm  # noqa: F401
    except ImportError:
        assert "needs mlx and mlx-lm" in data["reason"]


@pytest.mark.parametrize(
    "kind, options, words",
    [
        ("npz", ["--offset", "-1"], "--offset must be >= 0, got -1"),
        ("npz", ["--max-bytes", "-1"], "--max-bytes must be >= 0, got -1"),
        ("npz", ["--max-error", "nan"], "--max-error must be a number >= 0, got nan"),
        ("npz", ["--max-bytes", "8"], "more than --max-bytes"),
        ("npz", ["--layer-type", "full_attention"], "--layer-type is for configs"),
        ("npz", ["--fix", "out"], "--fix is for a .onnx model"),
        ("npz", ["--n-ctx", "8"], "--n-ctx is for a .gguf model file"),
        ("gguf", ["--offset", "3"], "--offset: for a cos/sin cache, not a .gguf model file"),
        ("gguf", ["--n-ctx", "0"], "n_ctx"),
        ("onnx", ["--n-ctx", "8"], "--n-ctx: not for a .onnx model"),
        ("onnx --fix", ["--layout", "half"], "--layout: not for a .onnx model"),
        ("npz", ["--offset", "abc"], "argument --offset: invalid int value: 'abc'"),
        ("npz", ["--layout", "nope"], "argument --layout: invalid choice: 'nope'"),
        ("npz", ["--frobnicate"], "unrecognized arguments: --frobnicate"),
        ("npz", ["--config", "x.json"], "pass the model's config.json once"),
    ],
)
def test_an_argument_out_of_range_is_refused(inputs, kind, options, words):
    refused(run("check", *_args(inputs, kind), *options, "--json"), words)


def test_argparse_errors_are_refusals_as_soon_as_json_is_asked_for():
    """argparse's own errors (before any argument is read into a namespace) are refusals
    too: ``--json`` or a prefix argparse takes for it, anywhere before ``--``."""
    refused(run("check", "--json"), "the following arguments are required: cache")
    refused(run("check", "--offset", "--json"), "argument --offset: expected one argument")
    refused(run("check", "x.npz", "--js", "--sin"), "argument --sin: expected one argument")
    refused(run("engines", "--json"), "the following arguments are required: config")
    result = run("check", "a.npz", "b.json", "--", "--json")  # after --: a file's name
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "sinpe: error: unrecognized arguments: --json\n"


def test_a_prefix_of_json_is_json(inputs):
    data = one_object(run("check", *_args(inputs, "npz"), "--js"))
    assert data["verdict"] == "match"


# --------------------------------------------------------------------------- any other exit


def test_what_a_library_prints_goes_to_stderr(inputs, monkeypatch):
    from sinpe.cli import check as check_cli

    real = check_cli.check_gguf

    def chatty(*args, **kwargs):
        print("INFO a library's own line")
        return real(*args, **kwargs)

    monkeypatch.setattr(check_cli, "check_gguf", chatty)
    result = run("check", *_args(inputs, "gguf"), "--json")
    assert one_object(result)["verdict"] == "match"
    assert "INFO a library's own line" in result.stderr


def test_an_error_of_sinpe_itself_is_a_refusal_naming_a_bug(inputs, monkeypatch):
    from sinpe.cli import check as check_cli

    def broken(*args, **kwargs):
        raise KeyError("layout")

    monkeypatch.setattr(check_cli, "compare_cache", broken)
    result = run("check", *_args(inputs, "npz"), "--json")
    refused(result, "sinpe failed: KeyError: 'layout' (a bug: please report it)")
    assert "Traceback" in result.stderr
    with pytest.raises(KeyError):  # without --json: Python's own traceback, as before
        from sinpe import cli

        cli.main(["check", *map(str, _args(inputs, "npz"))])


def test_out_of_memory_is_a_refusal(inputs, monkeypatch):
    from sinpe.cli import check as check_cli

    def hungry(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(check_cli, "compare_cache", hungry)
    refused(run("check", *_args(inputs, "npz"), "--json"), "out of memory")


def test_ctrl_c_prints_no_json_and_exits_130(inputs, monkeypatch):
    from sinpe.cli import check as check_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_cli, "compare_cache", interrupted)
    result = run("check", *_args(inputs, "npz"), "--json")
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "sinpe: interrupted\n")


# --------------------------------------------------------------------------- sinpe engines


def _engine(tmp_path, answer: dict | None) -> str:
    """A stand-in interpreter for vLLM: it prints the probe's line with ``answer`` (after a
    log line of its own), or (``None``) dies as a killed process does."""
    path = tmp_path / "python"
    if answer is None:
        body = "kill -9 $$\n"
    else:
        answer = {"engine": "vllm", "sinpe": sinpe.__version__, "installed": True, **answer}
        line = tmp_path / "answer.txt"
        line.write_text("INFO the engine's log\n" + _side.MARK + json.dumps(answer) + "\n")
        body = f"cat '{line}'\n"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _layers(state: str) -> dict:
    largest = {"match": 1e-8, "drift": 0.004, "mismatch": 2.0}.get(state)
    reasons = [] if state in ("match", "drift") else [{"code": "x", "text": f"why {state}"}]
    layer = {"what": "R", "verdict": state, "reasons": reasons, "largest_error": largest}
    return {"version": "1", "layers": [layer]}


ANSWERS = {
    "match": _layers("match"),
    "drift": _layers("drift"),
    "mismatch": _layers("mismatch"),
    "unchecked": _layers("unchecked"),
    FAILED: {"version": "1", "failed": "get_model raised KeyError: 'rope_type'"},
    ABSENT: {"installed": False},
    "killed": None,
}


@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_every_engine_state_is_one_object_exiting_as_the_report(tmp_path, inputs, answer):
    python = _engine(tmp_path, ANSWERS[answer])
    result = run(
        "engines", inputs["config"], "--only", "vllm", "--python", f"vllm={python}", "--json"
    )
    data = one_object(result)
    (line,) = data["engines"]
    state = FAILED if answer == "killed" else answer
    assert (line["engine"], line["verdict"], line["python"]) == ("vllm", state, python)
    assert result.returncode == (1 if state in ("mismatch", FAILED) else 0)
    assert data["length"] == ROWS and data["config"] == str(inputs["config"])


@pytest.mark.parametrize(
    "options, words",
    [
        (["--length", "0"], "length must be an integer from 1 to 2**40, got 0"),
        (["--python", "vllm"], "--python takes KEY=PATH"),
        (["--only", "nope"], "engine 'nope' is not one sinpe knows"),
        (["--length", "abc"], "argument --length: invalid int value: 'abc'"),
        (["--python", "vllm=/nonexistent/python"], "is not an executable file"),
    ],
)
def test_an_engines_argument_out_of_range_is_refused(inputs, options, words):
    refused(run("engines", inputs["config"], *options, "--json"), words)


def test_engines_refuse_a_factor_that_is_a_string_a_missing_config_and_a_fifo(inputs):
    refused(run("engines", inputs["bad"], "--json"), "factor", "str")
    missing = inputs["root"] / "nosuch.json"
    refused(run("engines", missing, "--json"), str(missing), "No such file")
    fifo = inputs["root"] / "engines-fifo.json"
    os.mkfifo(fifo)
    refused(process("engines", fifo, "--json"), "is a FIFO, not a regular file")


# --------------------------------------------------------------------------- the docs


def _line_states() -> set:
    """Every state a line of ``sinpe engines`` can be in, from the code: the ranks of the
    verdicts a line takes from its modules, and every ``verdict`` an ``EngineLine`` is made
    or replaced with in ``_side.py``, and every one a ``RunLine`` (``--run``) is made with (a
    constant's value, or a literal)."""
    states = set(_side._ORDER)
    tree = ast.parse(textwrap.dedent(inspect.getsource(_side)))
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        given = [k.value for k in call.keywords if k.arg == "verdict"]
        if isinstance(call.func, ast.Name) and call.func.id in ("EngineLine", "RunLine"):
            line = EngineLine if call.func.id == "EngineLine" else RunLine
            given += call.args[line._fields.index("verdict") :][:1]
        for value in given:
            if isinstance(value, ast.Constant):
                states.add(value.value)
            elif isinstance(value, ast.Name) and isinstance(getattr(_side, value.id, 0), str):
                states.add(getattr(_side, value.id))
    return states


def test_every_state_a_line_can_be_in_is_in_the_docs():
    states = _line_states()
    assert {"match", "drift", "mismatch", "unchecked", FAILED, ABSENT} <= states
    text = (DOCS / "engines.md").read_text()
    missing = [state for state in sorted(states) if f"\n| `{state}` |" not in text]
    assert not missing, f"docs/engines.md names no line state {missing}"


def test_every_field_of_the_engines_json_is_in_the_docs(tmp_path, inputs):
    text = (DOCS / "engines.md").read_text()
    python = _engine(tmp_path, ANSWERS["drift"])
    data = one_object(
        run("engines", inputs["config"], "--only", "vllm", "--python", f"vllm={python}", "--json")
    )
    fields = set(data) | set(data["engines"][0]) | set(EngineLine._fields)
    fields |= set(RunLine._fields) | {"p", "distance", "allowed"}  # --run's lines
    assert not [f for f in sorted(fields) if f"`{f}`" not in text]


def test_every_verdict_and_the_refusal_are_in_the_docs():
    engines_md, rope_md = (DOCS / "engines.md").read_text(), (DOCS / "rope.md").read_text()
    assert not [v for v in verdict.VERDICTS if f"\n| `{v}` |" not in engines_md]
    refusal = '`{"verdict": "refused", "reason": ..., "exit_code": 2}`'
    assert refusal in engines_md and refusal in rope_md
    assert verdict.refusal("x") == {"verdict": "refused", "reason": "x", "exit_code": 2}
