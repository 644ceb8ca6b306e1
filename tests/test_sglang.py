"""SGLang's line of ``sinpe engines``, on SGLang itself (the SGLang leg, .ci/sglang: SGLang
0.5.23 installed without its CUDA dependencies, on the CPU; skipped where SGLang is absent,
and a skip fails that leg): its model classes built from each config's twin by its own model
loader, every rotary cache judged by the verdict core. SGLang's model files import
torchvision, which cannot load beside the CPU build of torch: the stand-in of tests/stubs is
on the probe's path (it never runs: no image is processed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sglang.srt.layers.rotary_embedding")
pytest.importorskip("torch")

from engine_rules import changed_interpreter  # noqa: E402

import sinpe  # noqa: E402

CONFIGS = Path(__file__).with_name("data") / "configs"
HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _stand_in_torchvision(monkeypatch):
    stubs = str(Path(__file__).with_name("stubs"))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [stubs, os.environ.get("PYTHONPATH")]))
    )


def _line(name: str, **options):
    report = sinpe.engines(CONFIGS / f"{name}.json", only=["sglang"], **options)
    (line,) = report.lines
    assert line.version == "0.5.23", line.text
    return report, line


@pytest.mark.parametrize(
    "name, said",
    [
        ("llama-3.1-8b", ()),
        ("deepseek-v3", ()),
        ("gpt-oss-20b", ()),
        (
            "phi-3.5-mini-instruct.autoconfig-dump",
            ("SGLang switches a whole batch to its long factors once any of its positions "
             "exceeds 4,096",),
        ),
        (
            "devstral-small-2-24b-instruct",
            ("SGLang's attention scales its queries by 1 + beta ln(1 + floor(p / 16,384)) "
             "where transformers divides by the config's original length 8,192",),
        ),
    ],
)  # fmt: skip
def test_sglang_runs_these_configs_as_transformers_up_to_float32(name, said):
    """SGLang's model files read each of these configs as transformers does: float32 drift
    only (Llama-3 scaling, DeepSeek's YaRN with mscale and its pairs rotation, gpt-oss's
    untruncated YaRN, Phi-3.5's two LongRoPE tables, Devstral's YaRN), and Phi-3.5's
    batch-wide switch said, and the length Devstral's Llama 4 query scale is taken over."""
    report, line = _line(name)
    assert line.verdict == "drift" and report.exit_code == 0, line.text
    assert 0 < line.largest < 0.05, line.text
    for words in said:
        assert any(words in note for note in line.notes), line.notes


def test_sglang_s_gemma_3_layer_modules_drop_the_global_layers_linear_scaling():
    """A finding: SGLang's Gemma 3 builds each attention layer's rotary module with
    ``rope_type: default``, so the full-attention layers' module lacks the config's linear x8
    (an error of 2 in cos and sin: the layer's module is judged, named). Its model-level
    modules (``Gemma3RotaryEmbedding``, computed per call) are named and not judged."""
    report, line = _line("gemma-3-4b-it.transformers-5")
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    (reason,) = line.reasons
    assert "layers.5.self_attn.rotary_emb" in reason and "linear scaling not applied" in reason
    assert any("Gemma3RotaryEmbedding is not a rotary class" in note for note in line.notes)


def test_a_rule_changed_in_sglang_changes_its_line(tmp_path):
    """The line is SGLang's own: its Llama-3 rule made to scale nothing (in SGLang's own
    interpreter) makes the line a mismatch saying so."""
    changed = changed_interpreter(
        tmp_path,
        """
        from sglang.srt.layers.rotary_embedding import base, rope_variant
        rule = base.RotaryEmbedding._compute_inv_freq  # the plain rule: no Llama-3 scaling
        rope_variant.Llama3RotaryEmbedding._compute_inv_freq = rule
        """,
    )
    report, line = _line("llama-3.1-8b", pythons={"sglang": changed})
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    assert any("Llama-3 scaling not applied" in reason for reason in line.reasons), line.reasons
    # a mismatch is read again: the same bytes from a second build, each cache's hash said
    assert "SGLang's second build of the model made the same bytes" in line.notes, line.notes
    assert any("(cos_sin_cache) has SHA-256 " in note for note in line.notes), line.notes
    assert not any("sinpe judged the same bytes twice" in note for note in line.notes)


def test_a_cache_sglang_builds_differently_once_is_said_with_both_readings(tmp_path):
    """Issue 67: once, gpt-oss's line said "frequencies differ ... by up to 0.000148
    (relative, pair 26)" and 45 reruns did not. Here SGLang's YaRN rule is made to err so
    only on its first call (its pair 26 off by 1.48e-4): the line stays a mismatch (that build
    held it) and says that a second build made other bytes, where (the rows, pair 26), each
    hash, and the second build's verdict (drift: no reason of its own)."""
    changed = changed_interpreter(
        tmp_path,
        """
        from sglang.srt.layers.rotary_embedding import yarn
        rule = yarn.YaRNScalingRotaryEmbedding._compute_inv_freq
        calls = []
        def first_call_off(self, scaling_factor):
            inv_freq = rule(self, scaling_factor)
            calls.append(scaling_factor)
            if len(calls) == 1:
                inv_freq[26] *= 1 + 1.48e-4
            return inv_freq
        yarn.YaRNScalingRotaryEmbedding._compute_inv_freq = first_call_off
        """,
    )
    report, line = _line("gpt-oss-20b", pythons={"sglang": changed})
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    (reason,) = line.reasons  # the first build's; the second drifts (no reason)
    assert "(relative, pair 26)" in reason and "(second build)" not in reason, reason
    (rebuilt,) = [n for n in line.notes if "differently on a second build" in n]
    assert re.match(
        r"SGLang built model\.layers\.0\.self_attn\.rotary_emb differently on a second build "
        r"of the same config \(SHA-256 [0-9a-f]{16}\): 131,071 rows differ ",
        rebuilt,
    ), rebuilt
    assert "pairs 26, by up to" in rebuilt and "(the first at position 1" in rebuilt, rebuilt
    assert not any("same bytes" in n for n in line.notes), line.notes


# --------------------------------------------------------------------------- the plugin


def _plugin_run(tmp_path, name: str, length: int | None = None, **env):
    """tests/sglang_plugin.py in a fresh interpreter on the twin of a config: SGLang's
    ``load_plugins`` loads sinpe's entry point, SGLang's loader builds the model on the CPU
    and grows its caches (hooked), then the AFTER hook of ``ModelRunner.load_model`` runs."""
    from sinpe._engines._shrink import shrink

    twin = tmp_path / "twin"
    twin.mkdir(parents=True)
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    (twin / "config.json").write_text(json.dumps(shrink(config)))
    command = [sys.executable, str(HERE / "sglang_plugin.py"), str(twin)]
    command += [str(length)] if length else []
    variables = {**os.environ, "SGLANG_PLUGINS": "sinpe", **env}
    result = subprocess.run(
        command, env=variables, capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    found = [x for x in result.stdout.splitlines() if x.startswith("SINPE-JSON ")]
    assert result.returncode == 0 and found, result.stderr[-3000:]
    return json.loads(found[0].split(" ", 1)[1]), result.stderr


def test_sglangs_plugin_loader_loads_sinpe_and_its_hooks_audit_each_cache(tmp_path):
    """SGLang's own ``load_plugins`` finds the entry point; its ``HookRegistry`` applies a
    BEFORE hook on ``reserve_rope_cache_for_long_sequences`` and an AFTER hook on
    ``ModelRunner.load_model``. Llama-3.1's cache as its class made it (131,072 rows) and
    the 256 rows SGLang appends before CUDA-graph capture are judged apart (both float32
    drift), nothing changed, the JSON report written."""
    report = tmp_path / "report.json"
    found, _ = _plugin_run(
        tmp_path, "llama-3.1-8b", SINPE_SGLANG="audit", SINPE_SGLANG_REPORT=str(report)
    )
    from sinpe.sglang import _plugin

    assert found["hooks"][_plugin.LOAD_MODEL] == ["after_load_model"]
    assert found["hooks"][_plugin.RESERVE] == ["before_reserve"]
    assert found["load_model_hooked"] and found["reserve_hooked"] and found["result"] == "None"
    assert found["made"] == [131072] and found["rows"][0] > 131072
    made, grown = found["reports"]
    assert made["cache"] == "cos_sin_cache[0:131072]" and made["verdict"] == "drift"
    assert grown["cache"].startswith("cos_sin_cache[131072:") and grown["verdict"] == "drift"
    assert "appended past the 131,072 its class made" in grown["notes"][0]
    assert not made["replaced"] and not grown["replaced"] and found["exact"] == [False]
    assert json.loads(report.read_text()) == found["reports"]


def test_exact_mode_fills_what_matches_and_names_the_rows_sglang_appended_wrong(tmp_path):
    """A finding: SGLang's NTK-alpha class (HunYuan) appends its rows past 32,768 with the
    base unscaled (an error of 2): judged apart, a mismatch, left; the rows its class made
    drift and are filled with sinpe's table, bit for bit."""
    found, _ = _plugin_run(tmp_path, "hunyuan-promptenhancer-7b", SINPE_SGLANG="exact")
    made, grown = found["reports"]
    assert made["cls"] == "DynamicNTKAlphaRotaryEmbedding" and made["verdict"] == "drift"
    assert made["replaced"] and found["exact_made"] == [True]
    assert grown["verdict"] == "mismatch" and grown["largest_error"] > 1, grown
    assert grown["outcome"] == "left as SGLang made it (mismatch)" and found["exact"] == [False]


def test_off_does_nothing_and_a_report_that_cannot_be_written_never_stops_sglang(tmp_path):
    found, _ = _plugin_run(tmp_path, "llama-3.1-8b", SINPE_SGLANG="off")
    assert found["reports"] == [] and found["load_model_hooked"]
    bad = str(tmp_path / "no-such-folder" / "report.json")
    found, said = _plugin_run(tmp_path / "b", "llama-3.1-8b", SINPE_SGLANG_REPORT=bad)
    assert len(found["reports"]) == 2 and "sinpe could not write SINPE_SGLANG_REPORT" in said


def test_docs_matrix_holds_for_sglangs_column():
    """docs/matrix.md's SGLang column for three families is what SGLang does now (its
    version in the header too): a cell that no longer holds fails this leg (regenerate the
    page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements(
        "sglang",
        [
            "gemma-3-4b-it.transformers-5",
            "phi-3.5-mini-instruct.autoconfig-dump",
            "qwen3-next-80b-a3b-thinking",
        ],
    )


def _stand_in_model(values):
    import torch

    class RotaryEmbedding(torch.nn.Module):  # named as SGLang's (and vLLM's) class
        def __init__(self):
            super().__init__()
            self.register_buffer("cos_sin_cache", torch.tensor(values, dtype=torch.float32))
            self.rotary_dim = 2

    model = torch.nn.Module()
    model.rotary_emb = RotaryEmbedding()
    return model


def _stand_in_reports(*verdicts):
    from types import SimpleNamespace

    def report(verdict):
        judgment = SimpleNamespace(verdict=verdict, as_json=lambda: {"verdict": verdict})
        return SimpleNamespace(
            cls="RotaryEmbedding", names=("rotary_emb",), notes=(), judgment=judgment
        )

    return [report(v) for v in verdicts]


def test_a_mismatch_sinpe_judges_otherwise_the_second_time_is_said_to_be_sinpe_s():
    """The second judgment of the same bytes differing is a defect in sinpe, said so; a
    second build that hands back the same module is not taken as a second reading."""
    from sinpe.sglang import _engine

    model = _stand_in_model([[1.0, 0.0], [0.5, 0.8]])
    said = iter([_stand_in_reports("drift")])
    layers, notes = _engine._read_again(
        model, _stand_in_reports("mismatch"), lambda: model, lambda m: next(said)
    )
    assert layers == [] and notes[0].startswith("SGLang's rotary_emb (cos_sin_cache) has SHA-256 ")
    assert notes[1:] == [
        "sinpe judged the same bytes twice and its verdicts differ (a defect in sinpe, not "
        "SGLang's): the second judgment says RotaryEmbedding: drift",
        "SGLang's second build reused its rotary modules: not compared",
    ]


def test_two_builds_bytes_compared_where_they_differ():
    from sinpe.sglang import _engine

    first, second = (
        _stand_in_model([[1.0, 0.0], [0.5, 0.8]]),
        _stand_in_model([[1.0, 0.0], [0.5, 0.9]]),
    )
    assert _engine.digest(first.rotary_emb.cos_sin_cache) != _engine.digest(
        second.rotary_emb.cos_sin_cache
    )
    where = _engine.differing(first.rotary_emb.cos_sin_cache, second.rotary_emb.cos_sin_cache)
    assert where == "1 rows differ (the first at position 1), pairs 0, by up to 0.1", where
    same = _engine._read_again(
        first,
        _stand_in_reports("mismatch"),
        lambda: _stand_in_model([[1.0, 0.0], [0.5, 0.8]]),
        lambda m: _stand_in_reports("mismatch"),
    )
    assert same[0] == [] and same[1][-1] == "SGLang's second build of the model made the same bytes"
