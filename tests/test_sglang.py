"""SGLang's line of ``sinpe engines``, on SGLang itself (the SGLang leg, .ci/sglang: SGLang
0.5.23 installed without its CUDA dependencies, on the CPU; skipped where SGLang is absent,
and a skip fails that leg): its model classes built from each config's twin by its own model
loader, every rotary cache judged by the verdict core. SGLang's model files import
torchvision, which cannot load beside the CPU build of torch: the stand-in of tests/stubs is
on the probe's path (it never runs: no image is processed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("sglang.srt.layers.rotary_embedding")
pytest.importorskip("torch")

from engine_rules import changed_interpreter  # noqa: E402

import sinpe  # noqa: E402

CONFIGS = Path(__file__).with_name("data") / "configs"


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
    ],
)  # fmt: skip
def test_sglang_runs_these_configs_as_transformers_up_to_float32(name, said):
    """SGLang's model files read each of these configs as transformers does: float32 drift
    only (Llama-3 scaling, DeepSeek's YaRN with mscale and its pairs rotation, gpt-oss's
    untruncated YaRN, Phi-3.5's two LongRoPE tables), and Phi-3.5's batch-wide switch said."""
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
