"""``sinpe check model.onnx`` on what ONNX Runtime GenAI's own builder writes (the ONNX leg,
.ci/onnx: onnxruntime-genai 0.18.0 and what its builder needs, pinned; tiny random models
saved here, tests/onnx_models.py), ``--fix`` run in onnxruntime, and a model traced as
optimum-onnx 0.1.0 exports it (its own venv: ``$SINPE_ONNX_TRACED`` names the folder)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime_genai")
onnxruntime = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import onnx_models  # noqa: E402
import shift  # noqa: E402
from command import run  # noqa: E402

import sinpe  # noqa: E402
import sinpe.onnx  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
BUILT = ["llama-3.1", "qwen3-yarn", "ministral-yarn", "phi-3-longrope", "gpt-oss", "mistral-window"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Each model saved and built by the builder (fp32, CPU): name -> (folder, model.onnx)."""
    root = tmp_path_factory.mktemp("onnx")
    found = {}
    for name in BUILT:
        folder = onnx_models.save(name, root / name)
        done = onnx_models.build(folder, root / f"{name}-out")
        assert done.returncode == 0, done.stderr[-3000:]
        found[name] = (folder, root / f"{name}-out" / "model.onnx")
    return found


def _check(built, name):
    folder, path = built[name]
    return sinpe.onnx.check(path, folder / "config.json")


def test_the_builders_llama_and_phi_3_drift_as_float32_angles(built):
    """Its caches are float32 angles (make_rotary_embedding_caches_from_scratch): a drift,
    Phi-3's large and small caches each at its length."""
    llama = _check(built, "llama-3.1")
    assert llama.verdict == "drift" and 1e-4 < llama.judgment.largest < 1e-2
    phi = _check(built, "phi-3-longrope")
    assert phi.verdict == "drift" and sorted(p.rows for p in phi.parts) == [4096, 131072]
    assert _check(built, "gpt-oss").verdict == "drift"  # truncate: false, its own builder


@pytest.mark.parametrize(
    "name, reason",
    [
        (
            "qwen3-yarn",
            "YaRN correction range not rounded (truncate): 9 of 32 pairs off, up to 23%",
        ),
        (
            "ministral-yarn",
            "YaRN correction range not rounded (truncate): 8 of 32 pairs off, up to 47%",
        ),
    ],
)
def test_the_builders_yarn_ramp_is_called_unrounded_and_not_fixed(built, tmp_path, name, reason):
    report = _check(built, name)
    assert report.verdict == "mismatch" and report.reasons == (reason,)
    folder, path = built[name]
    result = run("check", path, folder / "config.json", "--fix", tmp_path / "out")
    assert result.returncode == 2 and reason in result.stderr, result.stderr
    assert not (tmp_path / "out" / "model.onnx").exists()


@pytest.mark.parametrize(
    "name, error",
    [
        ("qwen3-yarn-no-betas", "ZeroDivisionError"),
        ("qwen3-yarn-partial", "RuntimeError"),
        ("gemma-3", "KeyError: 'rope_type'"),
        ("phi-3-longrope-v5", "KeyError: 'type'"),
    ],
)
def test_where_the_builder_stops_instead(tmp_path, name, error):
    """docs/onnx.md's table: YaRN without betas (they default to 0), a partial rotary YaRN
    (the ramp sized by the head), Gemma 3 from transformers 5 (no rope_local_base_freq), Phi-3
    as transformers 5 saves it (phi.py reads rope_parameters["type"])."""
    folder = onnx_models.save(name, tmp_path / name)
    done = onnx_models.build(folder, tmp_path / "out")
    assert done.returncode != 0 and error in done.stderr, done.stderr[-2000:]


def test_a_gpu_build_in_float16_is_rounded_twice_and_fixed_once(built, tmp_path):
    """``-p fp16 -e cuda`` writes its files without a GPU: float16 caches cast from the
    float32 ones; fixed, each value is the exact one rounded once."""
    folder, _ = built["llama-3.1"]
    done = onnx_models.build(folder, tmp_path / "fp16", "fp16", "cuda")
    assert done.returncode == 0, done.stderr[-3000:]
    path = tmp_path / "fp16" / "model.onnx"
    report = sinpe.onnx.check(path, folder / "config.json")
    assert report.parts[0].dtype == "float16" and report.verdict in ("match", "drift")
    assert any(n.startswith("rounded twice:") for n in report.parts[0].notes)
    fixed = sinpe.onnx.fix(path, tmp_path / "fixed", folder / "config.json")
    again = sinpe.onnx.check(fixed, folder / "config.json")
    assert again.verdict == "match" and again.parts[0].notes == ()


@pytest.fixture(scope="module")
def fixed(built, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("fixed")
    found = {}
    for name in ("llama-3.1", "phi-3-longrope", "gpt-oss", "mistral-window"):
        folder, path = built[name]
        found[name] = sinpe.onnx.fix(path, root / name, folder / "config.json")
    return found


@pytest.mark.parametrize("name", ["llama-3.1", "phi-3-longrope", "gpt-oss"])
def test_a_fixed_model_matches_and_runs_as_the_built_one(built, fixed, name):
    folder, path = built[name]
    report = sinpe.onnx.check(fixed[name], folder / "config.json")
    assert report.verdict == "match", report.reasons
    if name == "gpt-oss":  # plain onnxruntime refuses its sliding-window past of length 0
        return
    tokens = shift.tokens()[: shift.K]
    got = onnx_models.Session(Path(fixed[name]).parent).logprobs(tokens)
    want = onnx_models.Session(path.parent).logprobs(tokens)
    assert np.abs(got - want).max() < 1e-5  # positions 0-63: both within float32 noise


def _reference(folder, tokens, past: int) -> np.ndarray:
    """The float64 exact reference: transformers in float64, its RoPE sinpe's exact table
    (sinpe.torch.patch), after the same past of zeros at positions 0 .. past - 1."""
    import sinpe.torch as st

    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float64, attn_implementation="eager"
    ).eval()
    assert st.patch(model, warn=False)
    config = model.config
    cache = transformers.DynamicCache(config=config)
    heads, width = config.num_key_value_heads, config.head_dim
    for layer in range(config.num_hidden_layers):
        zeros = torch.zeros(1, heads, past, width, dtype=torch.float64)
        cache.update(zeros, zeros.clone(), layer)
    ids = torch.tensor([tokens])
    positions = torch.arange(past, past + len(tokens))[None]
    mask = torch.ones(1, past + len(tokens), dtype=torch.long)
    with torch.no_grad(), shift._float64_softmax():
        logits = model(ids, cache=cache, position_ids=positions, attention_mask=mask).logits[0]
    return torch.log_softmax(logits, -1).numpy()


def test_the_fixed_model_is_exact_past_100000(built, fixed):
    """64 tokens after a past of 100,000 positions (prefilling 100,000 tokens is out of
    reach here): a sliding-window Mistral (a 64-token window) after a KV cache of zeros,
    in onnxruntime and in the reference alike, its query and key weights sharpened as the
    shift model's. The fixed model is at float32 noise from the exact reference, the built
    one drifts; asserted at least 100 times closer (417 times when it was written)."""
    folder, path = built["mistral-window"]
    tokens, past = shift.tokens()[: shift.K], 100_000
    reference = _reference(folder, tokens, past)
    start = _reference(folder, tokens, 0)
    errors = {}
    for label, model_path in (("built", path), ("fixed", Path(fixed["mistral-window"]))):
        session = onnx_models.Session(model_path.parent)
        errors[label] = (
            float(np.abs(session.logprobs(tokens) - start).max()),
            float(np.abs(session.logprobs(tokens, past) - reference).max()),
        )
    print("ONNX built and fixed, |logprob - exact| at 0 and 100,000:", errors)
    assert errors["fixed"][1] < 1e-5 and errors["built"][1] > 100 * errors["fixed"][1], errors
    version = f"onnxruntime {onnxruntime.__version__}, onnxruntime-genai 0.18.0 builder"
    for label, engine in (("built", "ONNX Runtime"), ("fixed", "ONNX Runtime, sinpe --fix")):
        rows = {0: errors[label][0], 100_000: errors[label][1]}
        shift.record(engine, version, rows, model=MODEL)


MODEL = (
    "the builder's sliding-window Mistral (ONNX leg, a 64-token window): the largest distance "
    "of 64 tokens' whole log-probability distributions at positions 0-63 and past 100,000"
)


@pytest.fixture(scope="module")
def traced(built, tmp_path_factory):
    """The built Phi-3's folder exported by optimum-onnx 0.1.0 (its own venv, whose python
    ``$SINPE_OPTIMUM_PYTHON`` names: it pins transformers < 4.58), as its CLI exports it."""
    import shutil
    import subprocess

    python = os.environ.get("SINPE_OPTIMUM_PYTHON")
    if not python:
        pytest.skip("SINPE_OPTIMUM_PYTHON (optimum-onnx 0.1.0's venv) is not set")
    root = tmp_path_factory.mktemp("traced")
    folder, _ = built["phi-3-longrope"]
    source = Path(shutil.copytree(folder, root / "phi-3"))
    tokenizer = json.loads((source / "tokenizer_config.json").read_text())
    tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"  # a class transformers 4.57 has
    (source / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    command = [str(Path(python).parent / "optimum-cli"), "export", "onnx", "--model", str(source)]
    command += ["--task", "text-generation-with-past", str(root / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "out"


def test_a_traced_phi_3_is_frozen_to_its_short_factors(traced):
    """optimum-onnx 0.1.0's export (transformers 4.57, TorchScript): one inv_freq, the
    short factors', multiplied with the position ids: LongRoPE's switch is frozen."""
    report = sinpe.onnx.check(traced / "model.onnx")
    assert report.verdict == "mismatch"
    assert report.reasons == (
        "LongRoPE frozen to its short factors: no switch in the graph (transformers switches "
        "at the original length 4096)",
    )
    config = json.loads((traced / "config.json").read_text())
    assert config["transformers_version"].startswith("4.57")


# --------------------------------------------------------------------------- sinpe engines

CONFIGS = Path(__file__).with_name("data") / "configs"


def _engine_line(config, **options):
    report = sinpe.engines(config, only=["onnxruntime-genai"], **options)
    (line,) = report.lines
    assert line.version == "0.18.0", line.text
    return report, line


def test_engines_read_onnxruntime_genai_by_its_own_builder():
    """ONNX Runtime GenAI's column: its builder on a tiny random model of each config's
    twin, the file judged by the ONNX check. Llama-3.1 drifts (float32 angles); a
    Ministral-3-style YaRN (factor 16, original 16,384) is its unrounded ramp, a mismatch;
    Qwen3-8B with its model card's YaRN snippet (no betas) stops the builder."""
    report, line = _engine_line(CONFIGS / "llama-3.1-8b.json")
    assert line.verdict == "drift" and report.exit_code == 0 and 0 < line.largest < 0.05
    config = transformers.MistralConfig(
        **dict(onnx_models.COMMON, max_position_embeddings=262144),
        rope_parameters=onnx_models.MINISTRAL_YARN,
    ).to_dict()
    report, line = _engine_line(config)
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    assert any("YaRN correction range not rounded (truncate)" in r for r in line.reasons)
    report, line = _engine_line(CONFIGS / "qwen3-8b.yarn-4x.json")
    assert line.verdict == "failed" and report.exit_code == 1, line.text
    assert line.reasons == ("its model builder raised ZeroDivisionError: float division by zero",)


def test_a_published_ministral_3_config_shows_the_builders_unrounded_ramp():
    """Devstral-Small-2's published config (mistral3 around a ministral3 text config: YaRN
    x48 from 8,192): the twin saved as its vision-language class, the builder's file
    judged: its YaRN ramp not rounded, a mismatch (transformers rounds it: truncate)."""
    report, line = _engine_line(CONFIGS / "devstral-small-2-24b-instruct.json")
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    assert any("YaRN correction range not rounded (truncate)" in r for r in line.reasons)


def test_a_rule_changed_in_the_builder_changes_its_line(tmp_path):
    """The line is the builder's own: its Llama-3 rescaling made to do nothing (in its
    interpreter) turns Llama-3.1's line to a mismatch."""
    from engine_rules import changed_interpreter

    changed = changed_interpreter(
        tmp_path,
        """
        import onnxruntime_genai.models  # the builder's folder on the path: it imports
        from builders import base  # its builders as a top-level package
        base.Model.make_inv_freq_rescaled_with_freq_factors = lambda self, f: f  # no Llama-3
        """,
    )
    report, line = _engine_line(
        CONFIGS / "llama-3.1-8b.json", pythons={"onnxruntime-genai": changed}
    )
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text


def test_docs_matrix_holds_for_onnxruntime_genais_column():
    """docs/matrix.md's ONNX Runtime GenAI column for three families is what its builder
    does now (its version in the header too): a cell that no longer holds fails this leg
    (regenerate the page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements(
        "onnxruntime-genai", ["llama-3.1-8b", "qwen3-8b.yarn-4x", "gemma-3-4b-it.transformers-5"]
    )
