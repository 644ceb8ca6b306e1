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


# --------------------------------------------------------------------------- the run line
# (issue 65: the builder's model of the run model run by onnxruntime at p = 0, 100,000 and the
# trained length, against the twin in float64 with sinpe's exact tables; an application
# defect injected into the builder's own code, builders/base.py, in the probe's interpreter,
# tests/defects.py)


def _config(name: str, **changes) -> dict:
    config = json.loads((CONFIGS / name).read_text())
    config.update(changes)
    return config


def _reaching(name: str, **scaling) -> dict:
    """A published config at 131,072 positions: the builder's cos/sin cache has the config's
    length as its rows, and onnxruntime refuses positions past it (p = 100,000 must fit)."""
    config = _config(name, max_position_embeddings=131072)
    if scaling:
        config["rope_scaling"] = dict(config["rope_scaling"], **scaling)
    return config


# Qwen3-8B's model-card YaRN with the betas it leaves out (without them the builder divides by
# zero) and truncate: false (the builder's ramp is not rounded: a mismatch otherwise, which the
# table line says too), at its 131,072 positions
QWEN3_YARN = _reaching("qwen3-8b.yarn-4x.json", beta_fast=32.0, beta_slow=1.0, truncate=False)
RUN_FAMILIES = {
    "llama-3.1": _config("llama-3.1-8b.json"),
    "qwen3-yarn": QWEN3_YARN,
    # sliding layers of 128: onnxruntime's GroupQueryAttention refuses an empty past there
    "gpt-oss": _config("gpt-oss-20b.json"),
}
DEFECTS = {
    # its Q and K projections' rows permuted from halves to pairs: the kernel's half rotation
    # of the permuted vectors is the pair rotation of the model's own
    "rotation style swapped": (
        _config("llama-3.1-8b.json"),
        """
import torch
proj = module.Model.make_attention_input_proj
def pairs(self, layer_id, attention, root_input, **kwargs):
    size = self.head_size
    order = torch.cat([torch.arange(0, size, 2), torch.arange(1, size, 2)])
    with torch.no_grad():
        for linear in (attention.q_proj, attention.k_proj):
            w = linear.weight
            w.copy_(w.view(-1, size, w.shape[-1])[:, order].reshape(w.shape))
            if getattr(linear, "bias", None) is not None:
                linear.bias.copy_(linear.bias.view(-1, size)[:, order].reshape(-1))
    return proj(self, layer_id, attention, root_input, **kwargs)
module.Model.make_attention_input_proj = pairs
""",
    ),
    # YaRN's attention factor, already in the caches, folded into the softmax scale as well
    "attention factor applied twice": (
        QWEN3_YARN,
        """
attributes = module.Model.get_attention_op_attributes
def twice(self, **kwargs):
    found = attributes(self, **kwargs)
    found["scale"] = found["scale"] * self.rope_attrs["mscale"] ** 2
    return found
module.Model.get_attention_op_attributes = twice
""",
    ),
}


def _run_line(config, python=None):
    import sys

    report = sinpe.engines(
        config,
        only=["onnxruntime-genai"],
        pythons={"onnxruntime-genai": python or sys.executable},
        run=True,
    )
    (line,) = report.lines
    print(line.text, line.run.text if line.run else "", sep="\n")  # pytest -rP shows it
    return line


@pytest.mark.parametrize("name", RUN_FAMILIES)
def test_the_run_line_is_the_configs_model_at_every_p(name):
    """The builder's model in onnxruntime at p = 0, 100,000 and the trained length - K (its
    GroupQueryAttention given position_ids): within what float32 angles allow at every p;
    a model with sliding layers (gpt-oss: 128) on as many slots of masked past, which the
    kernel wants (an empty past: "KV cache capacity (0) must be at least local_window_size")."""
    from defects import assert_a_far_run

    config = RUN_FAMILIES[name]
    line = _run_line(config)
    assert_a_far_run(line, config["max_position_embeddings"])  # the kernel reached at p
    assert "GroupQueryAttention" in line.run.how and not line.run.notes, line.run
    window = config.get("sliding_window") or 0
    said = f"a past of {window:,} slots the attention mask leaves out" if window else "empty past"
    assert said in line.run.how, line.run.how


@pytest.mark.parametrize("defect", DEFECTS)
def test_a_defect_in_the_builder_turns_the_run_line_only(tmp_path, defect):
    """One application defect in the builder's own code (``builders.base``, as its command
    line imports it) in the probe's interpreter: the caches it writes are still the config's
    (the table line a match or a drift), what the model computes is not (a mismatch)."""
    from defects import defective_python

    config, body = DEFECTS[defect]
    python = defective_python(tmp_path / "python", "builders.base", body)
    line = _run_line(config, python)
    assert line.verdict in ("match", "drift"), line.text
    assert line.run is not None and line.run.verdict == "mismatch", line.run
    assert line.run.reasons, line.run


# The builder reads a LayerNorm's epsilon from rms_norm_eps only (builders/base.py,
# Model.__init__: 1e-6 without it), where Phi-2 gives layer_norm_eps (1e-5): in its interpreter,
# given as rms_norm_eps too, the run line is Phi-2's model
PHI_2_EPSILON = """
init = module.Model.__init__
def epsilon_given(self, config, *args, **kwargs):
    if not hasattr(config, "rms_norm_eps") and hasattr(config, "layer_norm_eps"):
        config.rms_norm_eps = config.layer_norm_eps
    init(self, config, *args, **kwargs)
module.Model.__init__ = epsilon_given
"""
# Phi-2's caches (its 40% of the head) tiled across the whole head before GroupQueryAttention,
# which takes its rotary width from the cache's
PHI_2_WHOLE_HEAD = """
gqa = module.Model.make_group_query_attention
def whole(self, name, **kwargs):
    half = self.head_size // 2
    if kwargs.get("cos_cache"):
        for key in ("cos_cache", "sin_cache"):
            tiled, cut = f"{name}/{key}/Concat", f"{name}/{key}/Slice"
            self.make_concat(
                tiled, [kwargs[key]] * half, module.ir.DataType.FLOAT, ["rows", "columns"], axis=1
            )
            bounds = ["/model/constants/INT64/[0]", f"/model/constants/INT64/[{half}]"]
            self.make_slice(
                cut,
                [f"{tiled}/output_0", *bounds, "/model/constants/INT64/[1]"],
                module.ir.DataType.FLOAT,
                ["rows", half],
            )
            kwargs[key] = f"{cut}/output_0"
    return gqa(self, name, **kwargs)
module.Model.make_group_query_attention = whole
"""


def test_phi_2_runs_with_another_layernorm_epsilon_and_its_partial_width_in_the_cache(tmp_path):
    """Phi-2 as published (2,048 positions): p = 100,000 is past the builder's cache, which
    onnxruntime refuses, said in the run line; at p = 0 and 2,016 it departs by the same
    amount, not by its RoPE: the builder's LayerNorm epsilon, 1e-6 for the config's 1e-5 (a
    mismatch at p = 0, which the p not run does not hide). At 131,072 positions with the
    epsilon given, a drift; with the partial width also ignored (the caches tiled across the
    head), a mismatch, far larger. The table line cannot stay a match there: GroupQueryAttention's
    rotary width is its cache's, so that defect is in what the table line reads (which it does
    not follow through Concat and Slice)."""
    from defects import defective_python

    built = _run_line(_config("phi-2.json")).run
    assert built is not None and built.verdict == "mismatch", built
    assert built.reasons[0].startswith("at p = 0 its log-probabilities are "), built.reasons
    assert [p for p, _, _ in built.distances] == [0, 2016]
    assert any("p = 100,000 not run: the builder's cos/sin cache has 2,048 rows" in n
               for n in built.notes), built.notes  # fmt: skip
    near = [distance for _, distance, _ in built.distances]
    assert near[0] > 1e-3 and max(near) < 2 * near[0], built.distances  # as large at p = 0
    config = _reaching("phi-2.json")
    python = defective_python(tmp_path / "eps", "builders.base", PHI_2_EPSILON)
    line = _run_line(config, python)
    assert line.verdict == "drift", line.text
    assert line.run.verdict in ("match", "drift"), line.run  # the departure was the epsilon's
    python = defective_python(tmp_path / "whole", "builders.base", PHI_2_EPSILON + PHI_2_WHOLE_HEAD)
    line = _run_line(config, python)
    assert line.verdict not in ("match", "drift"), line.text
    assert line.run.verdict == "mismatch" and line.run.distances[0][1] > 10 * near[0], line.run


def _longrope_graph(onnx, condition="Greater"):
    """The builder's LongRoPE choice as it writes it (``make_rotary_embedding_multi_cache``):
    an ``If`` on ``Greater(the mask's width, the original length)`` feeding a
    GroupQueryAttention's cos cache (its eighth input), long caches of 8 rows then, short
    ones of 4 else."""
    helper, tensor = onnx.helper, onnx.TensorProto

    def branch(rows, name):
        cos = helper.make_node(
            "Constant", [], [f"cos_cache_{name}"],
            value=helper.make_tensor(f"c_{name}", tensor.FLOAT, [rows, 2], [0.0] * (2 * rows)),
        )  # fmt: skip
        out = helper.make_tensor_value_info(f"cos_cache_{name}", tensor.FLOAT, [rows, 2])
        return helper.make_graph([cos], name, [], [out])

    nodes = [
        helper.make_node(condition, ["mask_width", "original"], ["longer"]),
        helper.make_node(
            "If",
            ["longer"],
            ["cos_cache"],
            then_branch=branch(8, "long"),
            else_branch=branch(4, "short"),
        ),  # fmt: skip
        helper.make_node(
            "GroupQueryAttention",
            [f"in{i}" for i in range(7)] + ["cos_cache"],
            ["out"],
            domain="com.microsoft",
            do_rotary=1,
        ),  # fmt: skip
    ]
    return helper.make_graph(nodes, "longrope", [], [])


def test_longropes_cache_choice_is_given_the_sequences_total_length():
    """sinpe's run gives the builder's LongRoPE choice the total length p + K as an input of
    its own (an empty past's mask is K wide: the short caches at every p, and onnxruntime
    refuses p = 100,000 past their rows); the long caches' rows are what the run can reach. A
    choice made by another condition is refused, not guessed at."""
    import onnx

    from sinpe._check.steps import EngineFailed
    from sinpe._engines.ort_genai import TOTAL_LENGTH, _feed, _length_input

    graph = _longrope_graph(onnx)
    attention = [n for n in graph.node if n.op_type == "GroupQueryAttention"]
    assert _length_input(onnx, graph, attention) == 8
    (greater,) = [n for n in graph.node if n.op_type == "Greater"]
    assert list(greater.input) == [TOTAL_LENGTH, "original"]
    assert [i.name for i in graph.input] == [TOTAL_LENGTH]
    assert _length_input(onnx, onnx.helper.make_graph([], "none", [], []), []) is None

    class Port:
        shape, type = [], "tensor(int64)"

    fed = _feed({TOTAL_LENGTH: Port()}, np.zeros((1, 32), np.int64), 100_000, 1, 64, 0)
    assert fed[TOTAL_LENGTH].dtype == np.int64 and int(fed[TOTAL_LENGTH]) == 100_032
    odd = _longrope_graph(onnx, condition="Less")
    with pytest.raises(EngineFailed, match="condition sinpe does not read"):
        _length_input(onnx, odd, [n for n in odd.node if n.op_type == "GroupQueryAttention"])


def test_a_linear_attention_layers_states_start_at_zero():
    """A GatedDeltaNet layer's convolution and recurrent states (the builder's ``past.N.conv``
    and ``past.N.recurrent``) are fed as a new sequence's, zeros of the port's shape with a
    batch of 1 and its dtype; a state with another free axis or a type that is not a float
    is refused, naming it."""
    from sinpe._check.steps import EngineFailed
    from sinpe._engines.ort_genai import _feed, _zero_state

    class Port:
        def __init__(self, shape, type="tensor(float)"):
            self.shape, self.type = shape, type

    conv = _zero_state("past.0.conv", Port(["batch_size", 192, 3]))
    assert conv.shape == (1, 192, 3) and conv.dtype == np.float32 and not conv.any()
    half = _zero_state("past.0.recurrent", Port(["batch_size", 2, 32, 32], "tensor(float16)"))
    assert half.shape == (1, 2, 32, 32) and half.dtype == np.float16
    with pytest.raises(EngineFailed, match=r"past\.1\.conv"):
        _zero_state("past.1.conv", Port(["batch_size", "window", 3]))
    with pytest.raises(EngineFailed, match="tensor\\(int64\\)"):
        _zero_state("past.1.conv", Port(["batch_size", 4, 3], "tensor(int64)"))
    fed = _feed(
        {"past.2.recurrent": Port(["batch_size", 2, 8, 8])}, np.zeros((1, 4), np.int64), 0, 1, 8, 0
    )
    assert fed["past.2.recurrent"].shape == (1, 2, 8, 8)
    with pytest.raises(EngineFailed, match="sinpe does not give"):
        _feed({"past.2.state": Port([1])}, np.zeros((1, 4), np.int64), 0, 1, 8, 0)


def test_longropes_run_reaches_the_long_caches_at_far_positions():
    """Phi-3.5's LongRoPE (short caches to 4,096, long ones to 131,072, chosen in the graph by
    the total length): the run reaches p = 100,000 and the trained length on the long caches,
    as GenAI's runtime would (its attention mask spans the past), and says how they were
    chosen."""
    from defects import assert_a_far_run

    config = _config("phi-3.5-mini-instruct.autoconfig-dump.json")
    line = _run_line(config)
    assert_a_far_run(line, config["max_position_embeddings"])
    assert any("given as p + K" in note for note in line.run.notes), line.run.notes
