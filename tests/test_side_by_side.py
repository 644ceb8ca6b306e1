"""``sinpe engines`` without the engines (their legs run the real ones: tests/test_mlx.py,
tests/test_vllm.py, tests/test_transformers_live.py): the twin keeps every RoPE the config
gives; the probe's answer becomes one line per engine (the verdict core's, or why not) with
stand-in interpreters that answer as the probe would, or die as an engine may; and the probe
itself on stand-in readers judged by the real core."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from command import run

import sinpe
from sinpe._check.probe import judge_module
from sinpe._check.steps import EngineFailed, step
from sinpe._engines import ABSENT, ENGINES, FAILED, _side, engines, probe
from sinpe._engines._shrink import (
    _KEYED_LAYERS,
    HEADS,
    MOE_ALIGNMENT,
    VOCAB,
    active_layers,
    shrink,
)
from sinpe._verdict.layers import layer_spec
from sinpe._verdict.verdict import finding, mismatch

CONFIGS = Path(__file__).with_name("data") / "configs"
LLAMA = CONFIGS / "llama-3.1-8b.json"


def _refused(data) -> bool:
    try:
        sinpe.rope_config(data)
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_the_twin_keeps_every_rope_of_the_config(path):
    """Every published config: the twin's RoPE (each layer type's too) is the config's, and
    the twin is small (two heads, a small vocabulary, few layers)."""
    data = json.loads(path.read_text())
    if _refused(data):
        pytest.skip("a config sinpe refuses (a vision encoder's alone): sinpe engines refuses it")
    twin = shrink(data)
    spec, kept = sinpe.rope_config(data), sinpe.rope_config(twin)
    assert kept == spec
    for layer_type in spec.layer_types or ():
        assert kept.layer(layer_type) == spec.layer(layer_type)
    text = twin.get("text_config", twin)
    heads = text.get("num_attention_heads", HEADS)
    # more heads only where a mixture of experts' hidden size must be a multiple of 32
    assert heads <= HEADS or (heads <= MOE_ALIGNMENT and text["hidden_size"] % MOE_ALIGNMENT == 0)
    assert text.get("vocab_size", VOCAB) <= VOCAB
    keyed = _KEYED_LAYERS.get(str(text.get("model_type")), ())  # all of them: an engine keys
    layers = text.get("num_hidden_layers", 1)
    assert layers in keyed or layers <= max(8, len(set(text.get("layer_types") or [])))
    assert data == json.loads(path.read_text())  # the config given is left as it was


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_the_twin_keeps_a_layer_of_each_kind(path):
    """Each kind of layer the config places (by ``layer_types``, or by a pattern its file or
    its class sets: Gemma 3's every sixth layer full, which its published config leaves to
    the class) is among the twin's layers, at the same index as in the model."""
    data = json.loads(path.read_text())
    if _refused(data) or sinpe.rope_config(data).layer_types is None:
        pytest.skip("one RoPE for every layer")
    spec, twin = sinpe.rope_config(data), shrink(data)
    text, small = data.get("text_config", data), twin.get("text_config", twin)
    every = {layer_spec(spec, data, i) for i in range(text["num_hidden_layers"])}
    kept = [layer_spec(spec, twin, i) for i in range(small["num_hidden_layers"])]
    assert set(kept) == every and len(every) > 1
    assert kept == [layer_spec(spec, data, i) for i in range(len(kept))]


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_a_mixture_of_experts_twin_keeps_the_sizes_its_kernels_take(path):
    """vLLM's CPU experts take hidden and intermediate sizes that are multiples of 32 only
    (tests/test_matrix_where.py reads the number in vLLM): a twin with experts keeps them so,
    and its head dim ``hidden_size / num_attention_heads`` where the config's is whole."""
    data = json.loads(path.read_text())
    text, twin = data.get("text_config", data), shrink(data)
    small = twin.get("text_config", twin)
    experts = [
        text[k] for k in ("n_routed_experts", "num_experts", "num_local_experts") if k in text
    ]
    if not any(isinstance(n, int) and n > 1 for n in experts) or "hidden_size" not in text:
        pytest.skip("no mixture of experts")
    assert small["hidden_size"] % MOE_ALIGNMENT == 0
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if key in small:
            assert small[key] % MOE_ALIGNMENT == 0, key
    heads = text["num_attention_heads"]
    if text["hidden_size"] % heads == 0:
        ratio = text["hidden_size"] // heads
        assert small["hidden_size"] == small["num_attention_heads"] * ratio
        assert small["num_attention_heads"] <= MOE_ALIGNMENT


def test_the_moe_twins_take_the_fewest_heads_that_align():
    """gpt-oss's head dim ratio 45 (2880 / 64) takes 32 heads, DeepSeek-V3's 56 four,
    Kimi-K2's 112 two; Laguna's 2048 / 48 is not whole, and its twin is rounded up to 96."""
    sizes = {}
    for name in ("gpt-oss-20b", "deepseek-v3", "kimi-k2-instruct", "laguna-xs.2-fp8"):
        twin = shrink(json.loads((CONFIGS / f"{name}.json").read_text()))
        sizes[name] = (
            twin["hidden_size"],
            twin["num_attention_heads"],
            twin["num_key_value_heads"],
        )
    assert sizes == {
        "gpt-oss-20b": (1440, 32, 1),
        "deepseek-v3": (224, 4, 4),
        "kimi-k2-instruct": (224, 2, 2),
        "laguna-xs.2-fp8": (96, 2, 1),
    }


def test_a_layer_count_an_engine_keys_the_attention_on_is_kept():
    """EXAONE 4.0 32B keeps its 64 layers (llama.cpp's exaone4 loader gives the sliding
    layers, and the unrotated full ones, to 64 layers only), its layer types whole; a model
    with another count keeps one period, as any other."""
    data = json.loads((CONFIGS / "exaone-4.0-32b.json").read_text())
    twin = shrink(data)
    assert twin["num_hidden_layers"] == data["num_hidden_layers"] == 64
    assert twin["layer_types"] == data["layer_types"] and twin["hidden_size"] < 1024
    fewer = shrink(data | {"num_hidden_layers": 32, "layer_types": data["layer_types"][:32]})
    assert fewer["num_hidden_layers"] == 4
    assert fewer["layer_types"] == ["sliding_attention"] * 3 + ["full_attention"]
    # the run model makes all but one period inert (tests/test_run_lines.py)
    assert active_layers(twin) == 4 and active_layers(fewer) is None
    assert active_layers(shrink(json.loads(LLAMA.read_text()))) is None


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_a_fourfold_mlp_stays_fourfold_and_a_nested_vocabulary_is_said_at_the_top(path):
    """An MLP of exactly four times the hidden size (Phi-2's, Gemma 3's) stays so in the twin
    (llama.cpp's Phi-2 converter writes ``4 * n_embd`` as the MLP's width, whatever the
    config says); a config nesting a ``text_config`` gives the twin's vocabulary at the top
    too where it gives none there (MLX-LM's Gemma 3 reads the top level's, else 262,208)."""
    data = json.loads(path.read_text())
    twin = shrink(data)
    for given, small in ((data, twin), (data.get("text_config"), twin.get("text_config"))):
        if not isinstance(given, dict) or not isinstance(given.get("intermediate_size"), int):
            continue
        experts = any(isinstance(given.get(k), int) and given[k] > 1 for k in
                      ("n_routed_experts", "num_experts", "num_local_experts"))  # fmt: skip
        if given["intermediate_size"] == 4 * given.get("hidden_size", 0) and not experts:
            assert small["intermediate_size"] == 4 * small["hidden_size"] < 4 * 4096
    if isinstance(data.get("text_config"), dict):
        assert twin["vocab_size"] == VOCAB == twin["text_config"]["vocab_size"]


def test_phi_2_and_gemma_3_twins_keep_their_fourfold_mlp():
    for name, width in (("phi-2", 640), ("gemma-3-4b-it.transformers-5", 2560)):
        twin = shrink(json.loads((CONFIGS / f"{name}.json").read_text()))
        text = twin.get("text_config", twin)
        assert text["intermediate_size"] == width == 4 * text["hidden_size"], name
    llama = shrink(json.loads(LLAMA.read_text()))  # 14,336 / 4,096: not fourfold, shrunk
    assert llama["intermediate_size"] == 64 and "vocab_size" in llama


def test_the_twin_keeps_the_head_dim_where_an_engine_derives_it():
    data = json.loads(LLAMA.read_text())
    twin = shrink(data)
    assert twin["hidden_size"] // twin["num_attention_heads"] == 128
    assert twin["num_key_value_heads"] == 1 and twin["max_position_embeddings"] == 131072


# --------------------------------------------------------------------------- the parent


def _interpreter(tmp_path, body: str) -> str:
    """A stand-in for an engine's interpreter: a shell script that does ``body``."""
    path = tmp_path / f"python-{abs(hash(body))}"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _answering(tmp_path, **answer) -> str:
    """An interpreter that prints the probe's line (after some engine log) with ``answer``."""
    answer = {"engine": "vllm", "sinpe": sinpe.__version__, "installed": True, **answer}
    line = _side.MARK + json.dumps(answer)
    data = tmp_path / f"answer-{abs(hash(line))}.txt"
    data.write_text("INFO an engine's own log line\n" + line + "\n")
    return _interpreter(tmp_path, f"cat '{data}'\n")


def _layer(verdict, text="", largest=None, what="RotaryEmbedding"):
    reasons = [{"code": "x", "text": text}] if text else []
    return {"what": what, "verdict": verdict, "reasons": reasons, "largest_error": largest}


def _one(tmp_path, python, key="vllm", **options):
    report = engines(LLAMA, only=[key], pythons={key: python}, **options)
    (line,) = report.lines
    return report, line


def test_the_worst_judged_layer_decides_and_the_largest_error_is_the_largest(tmp_path):
    python = _answering(
        tmp_path,
        version="0.32.0",
        layers=[_layer("match", largest=1e-7), _layer("drift", "float32 angles", 0.0089)],
    )
    report, line = _one(tmp_path, python)
    assert (line.verdict, line.version, line.largest) == ("drift", "0.32.0", 0.0089)
    assert line.python == python and report.exit_code == 0
    assert line.text.startswith("vLLM 0.32.0: drift (largest error 0.0089)")


def test_a_mismatch_says_its_layer_and_exits_1(tmp_path):
    python = _answering(
        tmp_path,
        version="1",
        layers=[
            _layer("drift", largest=0.01, what="A"),
            _layer("mismatch", "base 10000 where the config gives 500000", 2.0, what="B"),
        ],
    )
    report, line = _one(tmp_path, python)
    assert line.verdict == "mismatch" and report.exit_code == 1
    assert line.reasons == ("B: base 10000 where the config gives 500000",)


def test_a_layer_not_judged_beside_judged_ones_is_a_note_not_the_verdict(tmp_path):
    python = _answering(
        tmp_path,
        version="1",
        layers=[_layer("unchecked", "a vision encoder", what="V"), _layer("drift", largest=0.01)],
    )
    _, line = _one(tmp_path, python)
    assert line.verdict == "drift" and line.notes == ("V: a vision encoder",)


def test_only_layers_not_judged_are_unchecked_and_exit_0(tmp_path):
    python = _answering(tmp_path, version="1", layers=[_layer("unchecked", "remote code")])
    report, line = _one(tmp_path, python)
    assert (line.verdict, line.reasons, report.exit_code) == ("unchecked", ("remote code",), 0)


@pytest.mark.parametrize("verdict", ["refused", "fine", None])
def test_a_probe_answering_a_verdict_sinpe_has_not_is_a_failed_line(tmp_path, verdict):
    """A tampered or foreign probe's layer verdict is read as no verdict (it was a KeyError)."""
    python = _answering(tmp_path, version="1", layers=[_layer("match", ""), _layer(verdict, "")])
    report, line = _one(tmp_path, python)
    assert (line.verdict, report.exit_code) == (FAILED, 1)
    assert line.reasons == (f"the probe answered a verdict sinpe has not: {verdict!r}",)


def test_an_engine_that_fails_on_the_twin_is_a_failed_line_naming_its_error(tmp_path):
    failed = "get_model (dummy weights) raised KeyError: 'rope_type'"
    report, line = _one(tmp_path, _answering(tmp_path, version="1", failed=failed))
    assert (line.verdict, line.reasons, report.exit_code) == (FAILED, (failed,), 1)


def test_an_engine_not_installed_says_how_to_install_it(tmp_path):
    python = _answering(tmp_path, installed=False)
    report, line = _one(tmp_path, python)
    vllm = next(e for e in ENGINES if e.key == "vllm")
    assert (line.verdict, line.reasons, report.exit_code) == (ABSENT, (vllm.install,), 0)
    assert line.text == f"vLLM: not installed: {vllm.install}"


def test_another_sinpe_in_the_engine_s_interpreter_is_said(tmp_path):
    _, line = _one(tmp_path, _answering(tmp_path, sinpe="0.0.1", version="1"))
    assert line.verdict == FAILED and "sinpe 0.0.1 in" in line.reasons[0]


def test_no_sinpe_in_the_engine_s_interpreter_is_said(tmp_path):
    python = _interpreter(
        tmp_path, "echo 'ModuleNotFoundError: No module named sinpe' >&2\nexit 1\n"
    )
    _, line = _one(tmp_path, python)
    assert line.reasons == (
        f"sinpe is not installed in {python}: pip install sinpe=={sinpe.__version__} there",
    )


def test_a_probe_killed_for_memory_says_so(tmp_path):
    _, line = _one(tmp_path, _interpreter(tmp_path, "kill -9 $$\n"))
    assert line.verdict == FAILED and line.reasons[0].startswith("killed (out of memory")


def test_a_probe_that_hangs_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(_side, "TIMEOUT", 1)
    _, line = _one(tmp_path, _interpreter(tmp_path, "exec sleep 30\n"))
    assert line.reasons == ("sinpe's reading did not finish in 1 s",)


def test_the_probe_gets_the_twin_and_the_config_and_no_terminal(tmp_path):
    """What the engine's interpreter is handed: the twin's folder and the original, and an
    empty stdin (an engine that prompts, e.g. for remote code, gets no answer)."""
    seen = tmp_path / "seen.txt"
    python = _interpreter(
        tmp_path,
        f"""\
        echo "$@" > '{seen}'
        cat "$4/twin/config.json" >> '{seen}'
        read answer && echo "read: $answer" >> '{seen}'
        exit 3
        """,
    )
    _, line = _one(tmp_path, python, length=5000)
    args, *rest = seen.read_text().splitlines()
    assert args.split()[:3] == ["-m", "sinpe._engines.probe", "vllm"] and args.split()[-1] == "5000"
    assert json.loads("\n".join(rest)) == shrink(json.loads(LLAMA.read_text()))
    assert line.reasons[0].startswith("sinpe's reading stopped (exit 3)")


def test_a_config_of_the_model_s_own_code_goes_to_the_engines_as_its_family_s(tmp_path):
    """Kimi-K2's config names model_type kimi_k2 and its own code (auto_map), which is
    DeepSeek-V3's configuration: no engine loads it from a config alone, so the twin goes to
    them as deepseek_v3 (no auto_map), and the report says so, in its text and its JSON."""
    seen = tmp_path / "seen.json"
    python = _interpreter(tmp_path, f"cp \"$4/twin/config.json\" '{seen}'\nexit 3\n")
    kimi = CONFIGS / "kimi-k2-instruct.json"
    report = engines(kimi, only=["vllm"], pythons={"vllm": python})
    twin = json.loads(seen.read_text())
    assert twin["model_type"] == "deepseek_v3" and "auto_map" not in twin
    assert twin["rope_scaling"] == json.loads(kimi.read_text())["rope_scaling"]
    (note,) = report.notes
    assert note.startswith("model_type 'kimi_k2' is the model's own code (auto_map)")
    assert report.as_dict()["notes"] == [note]
    done = run("engines", kimi, "--only", "vllm", "--python", f"vllm={python}")
    assert done.stdout.splitlines()[1] == f"  ({note})"
    # a config of a family transformers has keeps its model_type
    assert engines(LLAMA, only=["vllm"], pythons={"vllm": python}).notes == ()
    assert json.loads(seen.read_text())["model_type"] == "llama"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"only": ["sglang-x"]}, "engine 'sglang-x' is not one sinpe knows: transformers, vllm"),
        ({"length": 0}, "length must be an integer from 1 to 2**40, got 0"),
        ({"length": True}, "length must be an integer"),
        ({"pythons": {"vllm": "/nonexistent/python"}}, "is not an executable file"),
        ({"pythons": {"nope": sys.executable}}, "engine 'nope' is not one sinpe knows"),
    ],
)
def test_bad_arguments_are_refused_before_any_engine_runs(options, message):
    with pytest.raises(ValueError, match=message.replace("*", r"\*").replace("(", r"\(")):
        engines(LLAMA, **options)


def test_a_config_sinpe_refuses_is_refused_before_any_engine_runs():
    with pytest.raises(ValueError, match="rope_type"):
        engines(
            {
                "rope_scaling": {"rope_type": "no-such-type"},
                "hidden_size": 64,
                "num_attention_heads": 2,
            }
        )


# --------------------------------------------------------------------------- the probe


def _angles_call(base: float, width: int = 128):
    """A RoPE module as the core probes it (halves, float32 angles)."""

    def call(x, offset):
        n = x.shape[2]
        pairs = np.arange(width // 2, dtype=np.float32)
        inv = (1.0 / np.float32(base) ** (2 * pairs / np.float32(width))).astype(np.float32)
        angles = np.arange(offset, offset + n, dtype=np.float32)[:, None] * inv
        cos, sin = np.cos(angles).astype(np.float64), np.sin(angles).astype(np.float64)
        y = x.astype(np.float64).copy()
        x1, x2 = x[..., : width // 2], x[..., width // 2 : width]
        y[..., : width // 2] = x1 * cos - x2 * sin
        y[..., width // 2 : width] = x1 * sin + x2 * cos
        return y

    return call


def _stand_in(base=None, error=None):
    """A reader module as the probe imports it: judges a module of ``base`` with the core."""

    def read(folder, original, length):
        assert json.loads(Path(folder, "config.json").read_text())["num_attention_heads"] == 2
        if error is not None:
            with step("the engine's own loading"):
                raise error
        spec = sinpe.rope_config({**original, "rope_scaling": None, "rope_theta": 500000.0})
        judgment, _ = judge_module(spec, _angles_call(base), 128, length)
        return [("RoPE", judgment)], ("a note",), "its module, probed"

    return types.SimpleNamespace(read=read)


def _probe(tmp_path, monkeypatch, capsys, reader, version="1.2.3", length=4096) -> dict:
    folder = tmp_path / "probe"
    (folder / "twin").mkdir(parents=True)
    data = {**json.loads(LLAMA.read_text())}
    (folder / "twin" / "config.json").write_text(json.dumps(shrink(data)))
    (folder / "original.json").write_text(json.dumps(data))
    monkeypatch.setattr(probe, "version_of", lambda distributions: version)
    monkeypatch.setattr(probe.importlib, "import_module", lambda name: reader)
    assert probe.main(["mlx-lm", str(folder), str(length)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if _side.MARK in line]
    return json.loads(line.rpartition(_side.MARK)[2])


def test_the_probe_reports_the_core_s_verdict_of_what_the_reader_read(
    tmp_path, monkeypatch, capsys
):
    answer = _probe(tmp_path, monkeypatch, capsys, _stand_in(base=500000.0))
    assert (
        answer["installed"]
        and answer["version"] == "1.2.3"
        and answer["sinpe"] == sinpe.__version__
    )
    ((layer),) = answer["layers"]
    assert (
        layer["what"] == "RoPE"
        and layer["verdict"] == "drift"
        and 0 < layer["largest_error"] < 1e-2
    )
    assert answer["notes"] == ["a note"] and answer["how"] == "its module, probed"


def test_the_probe_of_a_wrong_base_is_a_mismatch_saying_the_base(tmp_path, monkeypatch, capsys):
    answer = _probe(tmp_path, monkeypatch, capsys, _stand_in(base=10000.0))
    ((layer),) = answer["layers"]
    assert layer["verdict"] == "mismatch"
    assert any("base 10000" in r["text"] for r in layer["reasons"]), layer["reasons"]


def test_the_engine_s_own_error_is_a_failure_naming_the_step(tmp_path, monkeypatch, capsys):
    answer = _probe(tmp_path, monkeypatch, capsys, _stand_in(error=KeyError("rope_type")))
    assert answer["failed"] == "the engine's own loading raised KeyError: 'rope_type'"


def test_an_engine_not_installed_is_said_by_the_probe(tmp_path, monkeypatch, capsys):
    answer = _probe(tmp_path, monkeypatch, capsys, _stand_in(base=1.0), version=None)
    assert answer["installed"] is False and "layers" not in answer


def test_an_error_in_sinpe_s_own_reading_is_not_called_the_engine_s(tmp_path, monkeypatch, capsys):
    """A bug of sinpe's reader (not inside a step) propagates: the parent says sinpe's reading
    stopped, never that the engine failed."""
    broken = types.SimpleNamespace(read=lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        _probe(tmp_path, monkeypatch, capsys, broken)


def test_step_says_memory_as_memory():
    said = r"building raised MemoryError: out of memory \(the twin keeps the config's lengths\)"
    with pytest.raises(EngineFailed, match=said):
        with step("building"):
            raise MemoryError


def test_step_cuts_a_long_error_and_says_so():
    from sinpe._check.steps import WORDS

    with pytest.raises(EngineFailed) as caught:
        with step("running"):
            raise ValueError("x" * (WORDS - 10) + " status message:\n  position_ids exceed " * 3)
    said = str(caught.value)
    assert said.startswith("running raised ValueError: xxx") and said.endswith(" [cut]")
    assert len(said) <= len("running raised ValueError: ") + WORDS + len(" [cut]")
    with pytest.raises(EngineFailed, match=r"running raised ValueError: short$"):
        with step("running"):
            raise ValueError("short")


# --------------------------------------------------------------------------- the command


def test_the_command_prints_one_line_per_engine_and_exits_as_the_report(tmp_path):
    python = _answering(tmp_path, version="9", layers=[_layer("mismatch", "wrong", 1.0)])
    done = run("engines", LLAMA, "--only", "vllm", "--python", f"vllm={python}")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{LLAMA}: RoPE as each engine runs it, judged up to position 131,071"
    assert lines[1] == "  vLLM 9: mismatch (largest error 1): wrong"
    assert lines[2].startswith("      read: its model class built by vLLM")


def test_the_command_s_json(tmp_path):
    python = _answering(tmp_path, installed=False)
    done = run(
        "engines",
        LLAMA,
        "--only",
        "vllm",
        "--python",
        f"vllm={python}",
        "--json",
        "--length",
        "8192",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["length"] == 8192 and report["exit_code"] == 0
    assert [(e["engine"], e["verdict"]) for e in report["engines"]] == [("vllm", ABSENT)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--python", "vllm"], "--python takes KEY=PATH"),
        (["--only", "nope"], "engine 'nope' is not one sinpe knows"),
        (["--length", "-3"], "length must be an integer from 1"),
    ],
)
def test_the_command_refuses_bad_arguments_in_one_line(args, message):
    done = run("engines", LLAMA, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("sinpe: error: ") and message in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_the_matrix_script_writes_one_cell_per_engine_and_a_footnote_per_disagreement(tmp_path):
    """tools/matrix.py (docs/matrix.md) on one config and a stand-in engine that mismatches:
    a row with one cell per engine, the mismatch footnoted with its reason."""
    tool = Path(__file__).resolve().parent.parent / "tools" / "matrix.py"
    if not tool.exists():
        pytest.skip("tools/ is not beside the tests (an installed wheel's run)")
    answer = {
        "engine": "vllm",
        "sinpe": sinpe.__version__,
        "installed": True,
        "version": "9.9",
        "layers": [
            {"what": "X", **mismatch([_base_finding()]).as_json()},
        ],
    }
    stand_in = _interpreter(tmp_path, f"echo '{_side.MARK}{json.dumps(answer)}'\n")
    absent = {"sinpe": sinpe.__version__, "installed": False}
    nowhere = _interpreter(tmp_path, f"echo '{_side.MARK}{json.dumps(absent)}'\n")
    options = [f"--python={e.key}={nowhere}" for e in ENGINES if e.key != "vllm"]
    out = tmp_path / "matrix.md"
    done = subprocess.run(
        [sys.executable, str(tool), f"--python=vllm={stand_in}", *options, "--out", str(out)]
        + [str(LLAMA)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    (row,) = [line for line in text.splitlines() if line.startswith("| llama-3.1-8b |")]
    assert row.count("|") == len(ENGINES) + 3
    assert "| mismatch [1] |" in row and "vLLM 9.9" in text
    assert (
        "1. vLLM on `llama-3.1-8b.json`: mismatch: base 10000.0 where the config gives 500000.0."
        in text
    )


def _matrix(tmp_path, *args):
    tool = Path(__file__).resolve().parent.parent / "tools" / "matrix.py"
    if not tool.exists():
        pytest.skip("tools/ is not beside the tests (an installed wheel's run)")
    return subprocess.run(
        [sys.executable, str(tool), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _without_time(page: str) -> list:
    return [line for line in page.splitlines() if not line.startswith("Generated by")]


def test_the_matrix_in_shards_merges_into_the_one_machine_page(tmp_path):
    """tools/matrix.py --shard I/N --json, then --merge (the CI job matrix of
    .github/workflows/matrix.yml): the page is the one machine's, footnotes renumbered in
    the config list's order, but for the line saying how long it took; a merge of parts
    that are not one run's shards, each once, is refused with the reason."""
    answer = {
        "engine": "vllm",
        "sinpe": sinpe.__version__,
        "installed": True,
        "version": "9.9",
        "layers": [{"what": "X", **mismatch([_base_finding()]).as_json()}],
    }
    stand_in = _interpreter(tmp_path, f"echo '{_side.MARK}{json.dumps(answer)}'\n")
    absent = {"sinpe": sinpe.__version__, "installed": False}
    nowhere = _interpreter(tmp_path, f"echo '{_side.MARK}{json.dumps(absent)}'\n")
    options = [f"--python=vllm={stand_in}"]
    options += [f"--python={e.key}={nowhere}" for e in ENGINES if e.key != "vllm"]
    configs = [CONFIGS / f"{n}.json" for n in ("llama-3.1-8b", "phi-2", "gpt-oss-20b")]
    whole = tmp_path / "whole.md"
    done = _matrix(tmp_path, *options, "--out", whole, *configs)
    assert done.returncode == 0, done.stderr
    parts = [tmp_path / f"part-{i}.json" for i in (1, 2)]
    for i, part in enumerate(parts, 1):
        done = _matrix(tmp_path, *options, "--shard", f"{i}/2", "--json", part, *configs)
        assert done.returncode == 0, done.stderr
    assert [r["family"] for r in json.loads(parts[0].read_text())["rows"]] == [
        "llama-3.1-8b",
        "gpt-oss-20b",
    ]
    merged = tmp_path / "merged.md"
    done = _matrix(tmp_path, "--merge", parts[1], parts[0], "--out", merged)
    assert done.returncode == 0, done.stderr
    page = whole.read_text()
    assert _without_time(merged.read_text()) == _without_time(page)
    assert "in 2 shards" in merged.read_text() and "shards" not in page
    assert [line.split(".")[0] for line in page.splitlines() if line[:1].isdigit()] == [
        "1",
        "2",
        "3",
    ]
    for bad, reason in [
        ([parts[0]], "parts are shards [1] of 2"),
        ([parts[0], parts[0]], "parts are shards [1, 1] of 2"),
    ]:
        done = _matrix(tmp_path, "--merge", *bad, "--out", tmp_path / "bad.md")
        assert done.returncode == 2 and reason in done.stderr, done.stderr
    other = json.loads(parts[1].read_text())
    other["configs"] = other["configs"][:2]
    parts[1].write_text(json.dumps(other))
    done = _matrix(tmp_path, "--merge", *parts, "--out", tmp_path / "bad.md")
    assert done.returncode == 2 and "parts differ in 'configs'" in done.stderr
    assert not (tmp_path / "bad.md").exists()


def _base_finding():
    return finding("base", engine=10000.0, config=500000.0)


def test_the_engines_help_names_every_engine_and_key(monkeypatch):
    """``sinpe engines --help`` names each engine sinpe reads and each ``--only`` key (the
    registry, ENGINES, is the list: an engine added there must be said here)."""
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps "MLX-LM" at its hyphen
    done = run("engines", "--help")
    text = " ".join(done.stdout.split())
    assert done.returncode == 0
    named = text.split("side by side (", 1)[1].split(")", 1)[0].split(", ")
    keys = text.split("keys: ", 1)[1].split(";", 1)[0].split(", ")
    assert named == [e.name for e in ENGINES] and keys == [e.key for e in ENGINES]
    top = " ".join(run("--help").stdout.split())
    assert "sinusoidal and rotary" in top and "engine" in top


def _bare_assert(x: int) -> None:
    if x <= 0:  # what a bare ``assert`` raises outside pytest's rewriting
        raise AssertionError


def test_step_says_where_an_error_without_a_message_was_raised():
    """An engine's bare ``assert`` (vLLM's MiniMax and Laguna runs once said only
    "AssertionError: "): the line names the file, line and function that raised it."""
    line = _bare_assert.__code__.co_firstlineno + 2
    with pytest.raises(EngineFailed) as caught:
        with step("generate"):
            _bare_assert(0)
    said = str(caught.value)
    assert said.startswith("generate raised AssertionError: (no message) at "), said
    assert said.endswith(f"test_side_by_side.py line {line}, in _bare_assert"), said
