"""transformers' run line (``sinpe engines --run``, the torch leg): the run model's
log-probabilities at p = 0, 100,000 and the trained length against the exact float64 twin's;
and four defects injected into transformers' own modeling code in the engine's interpreter
(``tests/defects.py``), each turning the run line to a mismatch while the table line, which
reads the rotary modules only, stays the config's RoPE."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
from defects import GLOBAL_EVERYWHERE, SWAPPED, TWICE, WHOLE, defective_python  # noqa: E402

from sinpe._check import run as _run  # noqa: E402
from sinpe._check.run import SHARP  # noqa: E402
from sinpe._engines import engines  # noqa: E402
from sinpe._engines._run import sharpen  # noqa: E402
from sinpe._engines._side import RunLine  # noqa: E402
from sinpe._verdict.verdict import DRIFT, MATCH, MISMATCH  # noqa: E402

CONFIGS = "tests/data/configs/"
DEFECTS = {
    "rotation style swapped": ("qwen2.5-7b-instruct.yarn-4x", "qwen2", SWAPPED),
    "attention factor applied twice": ("qwen3-8b.yarn-4x", "qwen3", TWICE),
    "partial width ignored": ("phi-2", "phi", WHOLE),
    "a sliding layer given the full RoPE": (
        "gemma-3-4b-it.transformers-5",
        "gemma3",
        GLOBAL_EVERYWHERE,
    ),
}


def _line(config, **kwargs):
    report = engines(CONFIGS + config + ".json", only=["transformers"], run=True, **kwargs)
    (line,) = report.lines
    return line, report


@pytest.mark.parametrize("config", ["llama-3.1-8b", "gemma-3-4b-it.transformers-5"])
def test_transformers_runs_the_config_as_the_exact_twin(config):
    line, report = _line(config)
    assert line.verdict in (MATCH, DRIFT), line.text
    run = line.run
    assert isinstance(run, RunLine) and run.verdict in (MATCH, DRIFT), run.text
    ps = [p for p, _, _ in run.distances]
    assert 0 in ps and _run.FAR in ps and len(ps) == 3  # and the trained length's
    for _, distance, allowed in run.distances:
        assert 0 <= distance <= allowed
    far = {p: d for p, d, _ in run.distances}
    assert far[0] < far[_run.FAR]  # float32 angles err more far out
    data = report.as_dict()
    json.dumps(data, allow_nan=False)
    assert data["engines"][0]["run"]["verdict"] == run.verdict
    assert report.exit_code == 0


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_an_application_defect_is_caught_by_the_run_line_only(defect, tmp_path):
    config, family, body = DEFECTS[defect]
    python = defective_python(tmp_path, f"transformers.models.{family}.modeling_{family}", body)
    line, report = _line(config, pythons={"transformers": python})
    assert line.python == python
    assert line.verdict in (MATCH, DRIFT), line.text  # the table: the modules are untouched
    assert line.run.verdict == MISMATCH, line.run.text
    (reason,) = line.run.reasons
    assert reason.startswith("at p = 0 its log-probabilities are ")  # breaks at once
    assert "not the config's model" in reason and "decoder layer 1 (from 1)" in reason
    assert report.exit_code == 1


def test_sharpen_scales_query_and_key_through_a_norm_either_way():
    """Gemma's norms multiply by (1 + w), Qwen 3's by w: both outputs scaled by SHARP."""
    import transformers

    from sinpe._engines._shrink import shrink
    from sinpe._files.reading import read_json

    for name in ("qwen3-8b.yarn-4x", "gemma-3-4b-it.transformers-5", "phi-2"):
        data = shrink(read_json(CONFIGS + name + ".json"))
        config = transformers.AutoConfig.for_model(**data)
        torch.manual_seed(0)
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        except ValueError:
            model = transformers.AutoModelForImageTextToText.from_config(
                config, dtype=torch.float32
            )
        before = {  # the language model's attentions (a vision tower's rotates no text)
            n: m for n, m in model.named_modules() if n.endswith("self_attn") and "vision" not in n
        }
        outs = {}
        for n, m in before.items():
            target = getattr(m, "q_norm", None) or getattr(m, "q_proj", None)
            width = target.weight.shape[-1]
            probe = torch.randn(2, width)
            outs[n] = (target, probe, target(probe).detach().clone())
        assert sharpen(model) == len(before)
        for target, probe, out in outs.values():
            np.testing.assert_allclose(
                target(probe).detach().numpy(), SHARP * out.numpy(), rtol=1e-5, atol=1e-6
            )


def test_a_twin_keeping_an_engines_layer_count_runs_as_one_period(tmp_path):
    """EXAONE 4's twin keeps 64 layers (llama.cpp keys its sliding layers on that count):
    its run model makes layers 4 .. 63 the identity (output projections zero), so the run
    sees one period, three sliding layers and a full one, as any other twin: the hidden
    state leaves layer 4 as it came in, and every later one too."""
    import transformers

    from sinpe._engines._run import save_run_model
    from sinpe._engines._shrink import shrink
    from sinpe._files.reading import read_json

    data = shrink(read_json(CONFIGS + "exaone-4.0-32b.json"))
    assert data["num_hidden_layers"] == 64
    (tmp_path / "twin").mkdir()
    (tmp_path / "twin" / "config.json").write_text(json.dumps(data))
    out = save_run_model(tmp_path / "twin", tmp_path / "run")
    model = _run.load(transformers, out, None, torch.float32)
    with torch.no_grad():
        hidden = model(torch.arange(3, 35)[None], output_hidden_states=True).hidden_states
    assert len(hidden) == 65
    assert not torch.equal(hidden[3], hidden[4])  # layer 3 (full) works
    assert all(torch.equal(hidden[4], later) for later in hidden[5:-1])  # then the identity


def test_the_run_model_names_its_tensors_as_the_published_checkpoint(tmp_path):
    """transformers 5 saves Gemma 3's SigLIP tower as ``vision_tower.embeddings.*``; the
    published checkpoint (and keras-hub's converter) has ``vision_tower.vision_model.*``:
    the run model is written with the published names, transformers loads it back to the
    same weights, and its tokenizer has exactly the twin's vocabulary."""
    import json

    import transformers
    from safetensors import safe_open

    from sinpe._engines._run import save_run_model
    from sinpe._engines._shrink import VOCAB, shrink
    from sinpe._files.reading import read_json

    data = shrink(read_json(CONFIGS + "gemma-3-4b-it.transformers-5.json"))
    (tmp_path / "twin").mkdir()
    (tmp_path / "twin" / "config.json").write_text(json.dumps(data))
    out = save_run_model(tmp_path / "twin", tmp_path / "run")
    with safe_open(out / "model.safetensors", "pt") as stored:
        names = list(stored.keys())
        tensors = {k: stored.get_tensor(k) for k in names}
    tower = [k for k in names if k.startswith("vision_tower.")]
    assert tower and all(k.startswith("vision_tower.vision_model.") for k in tower)
    model = _run.load(transformers, out, None, torch.float32)
    loaded = model.state_dict()
    assert sum(t.numel() for t in tensors.values()) == sum(
        t.numel()
        for k, t in loaded.items()
        if k != "lm_head.weight"  # tied to the embedding
    )
    embed = next(t for k, t in loaded.items() if k.endswith("embed_tokens.weight"))
    assert torch.equal(embed, tensors["language_model.model.embed_tokens.weight"])
    vocabulary = json.loads((out / "tokenizer.json").read_text())
    ids = set(vocabulary["model"]["vocab"].values()) | {t["id"] for t in vocabulary["added_tokens"]}
    assert ids == set(range(VOCAB))  # llama.cpp's Gemma 3 converter keeps that many rows


@pytest.mark.parametrize(
    "name", ["qwen2.5-7b-instruct.yarn-4x", "qwen3.5-27b", "gemma-3-4b-it.transformers-5"]
)
def test_the_twins_tokenizer_fits_its_vocabulary_in_the_class_transformers_picks(name, tmp_path):
    """Exactly VOCAB ids (llama.cpp's Gemma 3 converter cuts the embedding to the tokenizer's
    count), none past it in the tokenizer class the model type maps to: Qwen's classes add
    ``<|endoftext|>`` where it is absent (one id past the vocabulary, which llama.cpp's
    converter refuses), so the twin's tokenizer has it."""
    import json

    import transformers

    from sinpe._engines._shrink import VOCAB, shrink
    from sinpe._engines._weights import tokenizer
    from sinpe._files.reading import read_json

    (tmp_path / "config.json").write_text(json.dumps(shrink(read_json(CONFIGS + name + ".json"))))
    tokenizer(tmp_path)
    ids = transformers.AutoTokenizer.from_pretrained(tmp_path).get_vocab().values()
    assert max(ids) == VOCAB - 1 and len(set(ids)) == VOCAB


def test_a_mixture_of_experts_has_its_float64_reference():
    """transformers' grouped matmul takes no float64: the reference loops its experts in
    eager code, so DeepSeek-V3's run line is judged (it was unchecked, "no reference")."""
    line, _ = _line("deepseek-v3")
    assert line.run.verdict in (MATCH, DRIFT), line.run.text
    assert [p for p, _, _ in line.run.distances] == [0, _run.FAR, 163_840 - _run.K]
