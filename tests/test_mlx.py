"""sinpe.mlx on tiny random models saved by transformers and loaded by mlx_lm (the engine leg,
.ci/engines: mlx[cpu] and mlx-lm, with torch and transformers to make the models; skipped
where they are absent)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core")
nn = pytest.importorskip("mlx.nn")
mlx_utils = pytest.importorskip("mlx_lm.utils")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import engine_models  # noqa: E402
import shift  # noqa: E402
from command import run  # noqa: E402
from defects import defective_python, run_lines, side_folder  # noqa: E402
from engine_rules import changed_interpreter  # noqa: E402

import sinpe  # noqa: E402
import sinpe.mlx as smlx  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
CONFIGS = Path(__file__).with_name("data") / "configs"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    """Each model of tests/engine_models.py as transformers 5 saves it, and with the legacy
    keys mlx_lm reads."""
    root = tmp_path_factory.mktemp("mlx")
    found = {}
    for name in ["llama-3.1", *engine_models.MODELS]:
        found[name] = engine_models.save(name, root / name)
        found[name + "-legacy"] = engine_models.with_legacy_keys(found[name], root / f"{name}-l")
    return found


def _load(folder):
    model, _ = mlx_utils.load_model(folder)
    return model


def test_a_transformers_5_folder_misread_by_mlx_lm_is_not_this_config(folders):
    """mlx_lm's Llama reads rope_theta and rope_scaling, which transformers 5 no longer
    writes: it builds a plain RoPE of base 10000 (its default), silently."""
    folder = folders["llama-3.1"]
    (report,) = smlx.check(_load(folder), folder / "config.json")
    assert report.verdict == "mismatch"
    assert (
        report.reason == "base 10000.0 where the config gives 500000.0; Llama-3 scaling not applied"
    )
    result = run("check", folder)
    assert result.returncode == 1, result.stderr
    assert (
        "model.layers.0.self_attn.rope (+1 more) RoPE halves x64: does not match this config: "
        "base 10000.0 where the config gives 500000.0; Llama-3 scaling not applied"
    ) in result.stdout
    layer = json.loads(run("check", folder, "--json").stdout)["layers"][0]
    assert layer == report.as_json()
    names = [f"model.layers.{i}.self_attn.rope" for i in range(2)]
    assert layer["names"] == names and layer["cls"] == "RoPE" and layer["verdict"] == "mismatch"
    assert layer["rotary_dim"] == 64 and layer["rotation"] == "halves"
    (left,) = smlx.patch(_load(folder), folder / "config.json")
    assert not left.replaced and left.reason == report.reason


READ = [
    "llama-3.1-legacy",
    "qwen3-yarn",
    "qwen3-yarn-legacy",
    "gemma3-legacy",
    "deepseek-v3-legacy",
]


@pytest.mark.parametrize("name", READ)
def test_a_model_mlx_lm_reads_right_drifts_and_is_patched_exact(folders, name):
    folder = folders[name]
    model = _load(folder)
    reports = smlx.check(model, folder / "config.json")
    assert [r.verdict for r in reports] == ["drift"] * len(reports), [r.line() for r in reports]
    for report in reports:  # float32 angles: the error grows with the position
        assert report.decades[-1][2] > 100 * report.decades[0][2]
    patched = smlx.patch(model, folder / "config.json")
    assert all(p.replaced for p in patched), patched
    ropes = [rope for _, _, _, rope in smlx._probe.find_ropes(model)]
    assert len({id(rope) for rope in ropes}) == len(patched)  # alike layers share one table
    assert {r.verdict for r in smlx.check(model, folder / "config.json")} == {"match"}
    spec = sinpe.rope_config(folder / "config.json")
    data = json.loads((folder / "config.json").read_text())
    for name_, _, _, rope in smlx._probe.find_ropes(model):
        assert isinstance(rope, smlx.ExactRoPE)
        one = smlx._check.layer_spec(spec, data, smlx._probe.layer_index(name_))
        _assert_exact_bits_at_100000(rope, one)


def _assert_exact_bits_at_100000(rope, spec):
    half = rope.dims // 2
    cos, sin = rope.tables(100_000, 8)
    want_cos, want_sin = spec.rope_at(np.arange(100_000, 100_008), dtype=np.float32)
    assert np.array_equal(np.array(cos), want_cos[:, :half])
    assert np.array_equal(np.array(sin), want_sin[:, :half])
    x = np.random.default_rng(1).standard_normal((1, 2, 8, rope.dims + 4)).astype(np.float32)
    got = np.array(rope(mx.array(x), offset=100_000))
    c, s = want_cos[:, :half], want_sin[:, :half]
    if rope.traditional:
        x1, x2 = x[..., 0 : rope.dims : 2], x[..., 1 : rope.dims : 2]
        want = np.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).reshape(x[..., : rope.dims].shape)
    else:
        x1, x2 = x[..., :half], x[..., half : rope.dims]
        want = np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
    assert np.array_equal(got[..., : rope.dims], want)
    assert np.array_equal(got[..., rope.dims :], x[..., rope.dims :])


def test_mlx_lm_s_longrope_is_not_transformers_and_is_left(folders):
    """SuScaledRoPE uses the long factors at every length; transformers the short ones up to
    the original length: not replaced (the model's own semantics stay), and said."""
    folder = folders["phi3-longrope-legacy"]
    model = _load(folder)
    (report,) = smlx.check(model, folder / "config.json")
    assert report.verdict == "mismatch"
    assert report.reason == (
        "LongRoPE long factors at every length (transformers: short factors while the "
        "sequence is <= 4096)"
    )
    (left,) = smlx.patch(model, folder / "config.json")
    assert not left.replaced and left.reason == report.reason


def test_array_offsets_read_each_row_and_nan_past_the_table(folders):
    spec = sinpe.rope_config(folders["llama-3.1"] / "config.json")
    rope = smlx.ExactRoPE(spec, 64, "halves", rows=1000)
    x = mx.array(np.random.default_rng(2).standard_normal((3, 2, 4, 64)).astype(np.float32))
    got = np.array(rope(x, offset=mx.array([7, 0, -2])))
    for row, offset in enumerate((7, 0)):
        want = np.array(rope(x[row : row + 1], offset=offset))[0]
        assert np.array_equal(got[row], want)
    assert np.array_equal(got[2, :, 2:], np.array(rope(x[2:3, :, 2:], offset=0))[0])  # padding
    past = np.array(rope(x[:1], offset=mx.array([998])))
    assert np.isfinite(past[0, :, :2]).all() and np.isnan(past[0, :, 2:]).all()
    with pytest.raises(ValueError, match="rotation must be 'halves' or 'pairs'"):
        smlx.ExactRoPE(spec, 64, "neox")


class Shifted(nn.Module):
    """A RoPE module asked for its positions ``shift`` further on."""

    def __init__(self, inner, shift_by: int):
        super().__init__()
        self.inner = inner
        self.shift_by = shift_by

    def __call__(self, x, offset=0):
        return self.inner(x, offset=offset + self.shift_by)


def _logprobs(model, offsets) -> dict:
    ropes = smlx._probe.find_ropes(model)
    ids = mx.array([shift.tokens()])
    found = {}
    for p in offsets:
        for _, parent, attribute, rope in ropes:
            parent[attribute] = Shifted(rope, p)
        found[p] = shift.log_softmax(np.array(model(ids)[0], dtype=np.float64))
        for _, parent, attribute, rope in ropes:
            parent[attribute] = rope
    return found


def test_the_patched_model_stays_within_float32_noise_and_loses_the_drift(folders):
    """The shift model (tests/shift.py) read right (legacy keys): at 0-63 the patched
    model's log-probabilities are as near the float64 exact reference as mlx_lm's own (both
    float32 noise); at 100,000 the patched model stays there and mlx_lm's drifts."""
    folder = folders["llama-3.1-legacy"]
    reference = shift.transformers_logprobs(folders["llama-3.1"], exact=True)
    original = shift.distances(_logprobs(_load(folder), shift.OFFSETS), reference)
    model = _load(folder)
    assert all(p.replaced for p in smlx.patch(model, folder / "config.json"))
    patched = shift.distances(_logprobs(model, shift.OFFSETS), reference)
    assert patched[0] <= max(2 * original[0], 1e-6), (patched, original)
    assert max(patched.values()) <= max(2 * original[0], 1e-6), (patched, original)
    assert original[100_000] > 100 * patched[100_000], (patched, original)  # docs: over 100x
    import mlx_lm

    version = f"mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}"
    shift.record("MLX", version, original, "mlx_lm as it loads the model (legacy keys)")
    shift.record("MLX, sinpe.mlx.patch", version, patched)


def test_the_speed_script_runs(capsys):
    """benchmarks/mlx_patch.py, one round (its timings are read on a quiet machine)."""
    import importlib.util

    path = Path(__file__).parents[1] / "benchmarks" / "mlx_patch.py"
    spec = importlib.util.spec_from_file_location("mlx_patch", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = script.main(["--rounds", "1", "--repeat", "1"])
    assert [row[0] for row in rows] == [
        "RoPE call, decode",
        "RoPE call, prefill",
        "forward, 256 tokens",
    ]
    assert all(row[1] > 0 and row[2] > 0 for row in rows)
    assert "ExactRoPE" in capsys.readouterr().out


def test_a_model_folder_is_checked_without_reading_its_weights(tmp_path):
    """check_folder loads lazily: a model of about 400 MB of weights is checked with a few
    MB of MLX memory (the RoPE modules hold no weight)."""
    import transformers

    big = dict(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_attention_heads=16)
    config = transformers.LlamaConfig(**{**shift.CONFIG, **big})
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    weights = sum(p.stat().st_size for p in tmp_path.glob("*.safetensors"))
    assert weights > 300 << 20
    mx.reset_peak_memory()
    before = mx.get_active_memory()
    reports = smlx.check_folder(tmp_path)
    used = mx.get_peak_memory() - before
    assert reports and used < weights / 20, (used, weights)


def test_deepseek_s_softmax_scale_is_judged_from_its_attention_module(folders):
    """mlx_lm's DeepSeek attention keeps ``scale`` (``q_head_dim ** -0.5`` times YaRN's
    ``mscale_all_dim`` squared) beside its RoPE module: judged with it, so a scale without
    the mscale is a mismatch saying so, whatever the module's table."""
    folder = folders["deepseek-v3-legacy"]
    model = _load(folder)
    for _, attention, _, _ in smlx._probe.find_ropes(model):
        assert attention.scale == pytest.approx(attention.q_head_dim**-0.5 * 1.87385, rel=1e-5)
        attention.scale = attention.q_head_dim**-0.5
    (report,) = smlx.check(model, folder / "config.json")
    assert report.verdict == "mismatch" and report.reason == (
        "softmax scale x1.0 where the config gives x1.87385 (yarn mscale_all_dim)"
    )
    assert report.largest < 0.05  # its table still drifts only
    for _, _, _, rope in smlx._probe.find_ropes(model):
        rope._freqs = rope._freqs * 2  # and its table wrong too: both said, the table's first
    (report,) = smlx.check(model, folder / "config.json", length=5000)
    assert report.judgment.reasons == (
        "frequencies differ from the config's by up to 0.5 (relative, pair 9)",
        "softmax scale x1.0 where the config gives x1.87385 (yarn mscale_all_dim)",
    )
    assert [d[:2] for d in report.decades] == [(0, 9), (10, 71), (100, 928), (1000, 4999)]
    assert report.judgment.dtype == "float32" and report.largest > 1
    for _, attention, _, _ in smlx._probe.find_ropes(model):
        attention.q_head_dim = 0  # a width that tells nothing: the scale is not judged
    (report,) = smlx.check(model, folder / "config.json")
    assert report.verdict == "mismatch" and report.reason.startswith("frequencies differ")


def test_two_modules_alike_but_their_frequencies_are_judged_apart(folders):
    """(``_signature``: modules of one class and one layer spec are judged once, as one,
    only where their attributes and tables are the same.) Layer 1's Llama3RoPE with its
    12th frequency doubled (``_freqs``, an array, not an attribute; told by its bytes, not
    its printed form, which shows only its ends): two reports, the first drifting, the second
    a mismatch."""
    folder = folders["llama-3.1-legacy"]
    model = _load(folder)
    rope = model.model.layers[1].self_attn.rope
    freqs = np.array(rope._freqs)
    freqs[11] *= 2
    assert repr(mx.array(freqs)) == repr(rope._freqs)
    rope._freqs = mx.array(freqs)
    reports = smlx.check(model, folder / "config.json")
    assert [(r.names, r.verdict) for r in reports] == [
        (("model.layers.0.self_attn.rope",), "drift"),
        (("model.layers.1.self_attn.rope",), "mismatch"),
    ], [r.line() for r in reports]


def test_check_folder_takes_the_config_it_is_given_and_names_mlx_lm_where_absent(
    folders, monkeypatch
):
    folder = folders["llama-3.1-legacy"]
    other = {**json.loads((folder / "config.json").read_text()), "rope_theta": 10000.0}
    (report,) = smlx.check_folder(folder, other)
    assert report.verdict == "mismatch" and report.reason.startswith("base 500000.0"), report
    monkeypatch.setitem(sys.modules, "mlx_lm.utils", None)
    with pytest.raises(ImportError, match=r"^mlx-lm, which loads model folders: pip install"):
        smlx.check_folder(folder)


def test_exact_rope_holds_a_bounded_table_and_says_its_size():
    """A 10M-position model: the table holds 2**18 rows (as sinpe.torch's), its size in
    table_bytes; an int offset past it is exact and kept nowhere, an array offset past it NaN."""
    config = {**shift.CONFIG, "max_position_embeddings": 10_000_000}
    config["rope_parameters"] = dict(rope_type="default", rope_theta=1e6)
    spec = sinpe.rope_config(config)
    rope = smlx.ExactRoPE(spec, 64, "halves")
    assert rope.rows == smlx._exact.MAX_ROWS == 1 << 18 and rope.table_bytes == 0
    x = mx.array(np.random.default_rng(3).standard_normal((1, 2, 4, 64)).astype(np.float32))
    near = np.array(rope(x, offset=10))
    assert rope.table_bytes == 2 * ((1 << 18) + 1) * 32 * 4
    far = np.array(rope(x, offset=5_000_000))
    assert rope.table_bytes == 2 * ((1 << 18) + 1) * 32 * 4  # the far rows were not kept
    cos, sin = spec.rope_at(np.arange(5_000_000, 5_000_004), layout="compact", dtype=np.float32)
    x1, x2 = np.array(x)[..., :32], np.array(x)[..., 32:]
    want = np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
    assert np.array_equal(far, want) and np.isfinite(near).all()
    assert np.isnan(np.array(rope(x, offset=mx.array([5_000_000])))).all()


def test_patch_decides_from_the_verdict_not_its_words(folders, monkeypatch):
    """A module the core did not judge (unchecked) is left, whatever its reason's words."""
    from sinpe._verdict.verdict import Verdict

    folder = folders["qwen3-yarn"]
    model = _load(folder)
    real = smlx._exact.check

    def unjudged(*args):
        return [r._replace(judgment=Verdict("unchecked", (), kind="none")) for r in real(*args)]

    monkeypatch.setattr(smlx._exact, "check", unjudged)
    patched = smlx.patch(model, folder / "config.json")
    assert patched and not any(p.replaced for p in patched)
    assert all(p.reason == "unchecked" for p in patched)
    ropes = [rope for _, _, _, rope in smlx._probe.find_ropes(model)]
    assert not any(isinstance(rope, smlx.ExactRoPE) for rope in ropes)


# --------------------------------------------------------------------------- sinpe engines


def _transformers_5(tmp_path) -> Path:
    """Llama-3.1's config as transformers 5 saves it (``rope_parameters``)."""
    data = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    scaling, base = data.pop("rope_scaling"), data.pop("rope_theta")
    data["rope_parameters"] = {**scaling, "rope_theta": base}
    path = tmp_path / "llama-3.1.transformers-5.json"
    path.write_text(json.dumps(data))
    return path


def test_engines_side_by_side_show_mlx_lm_s_misreading_of_a_transformers_5_config(tmp_path):
    """transformers reads the config (float32 drift); mlx-lm's Llama reads no rope_theta
    and no scaling in ``rope_parameters``: base 10000, Llama-3 scaling not applied."""
    report = sinpe.engines(_transformers_5(tmp_path), only=["transformers", "mlx-lm"])
    transformers, mlx = report.lines
    assert transformers.verdict == "drift" and transformers.largest < 0.02, transformers.text
    assert mlx.verdict == "mismatch" and report.exit_code == 1, mlx.text
    said = " ".join(mlx.reasons)
    assert "base 10000.0 where the config gives 500000.0" in said
    assert "Llama-3 scaling not applied" in said


def test_a_rule_changed_in_mlx_lm_changes_its_line_and_no_other(tmp_path):
    """The line is the engine's: mlx-lm's own ``initialize_rope`` made to drop the scaling (in
    its interpreter) turns its line on the Llama-3.1 config from drift to mismatch, and the
    transformers line stays as it was."""
    config = CONFIGS / "llama-3.1-8b.json"
    before = sinpe.engines(config, only=["transformers", "mlx-lm"])
    assert [line.verdict for line in before.lines] == ["drift", "drift"], before.lines
    changed = changed_interpreter(
        tmp_path,
        """
        import mlx_lm.models.llama as llama
        rule = llama.initialize_rope
        llama.initialize_rope = lambda dims, base, traditional, scaling, length: rule(
            dims, base, traditional, None, length)
        """,
    )
    after = sinpe.engines(config, only=["transformers", "mlx-lm"], pythons={"mlx-lm": changed})
    assert after.lines[0] == before.lines[0]
    assert after.lines[1].verdict == "mismatch" and after.exit_code == 1
    assert "Llama-3 scaling not applied" in " ".join(after.lines[1].reasons), after.lines[1]


def test_docs_matrix_holds_for_mlx_lms_column():
    """docs/matrix.md's MLX-LM column for three families is what MLX-LM does now (its
    version in the header too): a cell that no longer holds fails this leg (regenerate the
    page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements(
        "mlx-lm", ["phi-3.5-mini-instruct.autoconfig-dump", "gpt-oss-20b", "llama-3.1-8b"]
    )


# --------------------------------------------------------------------------- the run line

# Each defect is put in the attention of mlx_lm's model module: the RoPE module it calls is
# untouched (the table line reads that module, and stays a match or drift); only the way the
# attention applies it changes, for the length of its call.
APPLIED = """
import mlx.core as mx
import mlx.nn as nn

cls = getattr(module, {cls!r})
call = cls.__call__

def applied(self, *args, **kwargs):  # the attention applies its RoPE module wrongly
    object.__setattr__(self, "rope", wrong(self, self.rope))
    try:
        return call(self, *args, **kwargs)
    finally:
        del self.__dict__["rope"]

cls.__call__ = applied
"""
SWAPPED = """
def wrong(attention, rope):  # pairs rotated where the model rotates halves
    def rotate(x, offset=0):
        d = rope.dims
        head = x[..., :d]
        halves = mx.concatenate([head[..., 0::2], head[..., 1::2]], axis=-1)
        out = rope(mx.concatenate([halves, x[..., d:]], axis=-1), offset=offset)
        turned = out[..., :d]
        pairs = mx.stack([turned[..., : d // 2], turned[..., d // 2 :]], axis=-1)
        return mx.concatenate([pairs.reshape(turned.shape), out[..., d:]], axis=-1)
    return rotate
"""
TWICE = """
def wrong(attention, rope):  # YaRN's factor, which the module applies, applied once more
    return lambda x, offset=0: rope(x * rope.mscale, offset=offset)
"""
WHOLE = """
def wrong(attention, rope):  # the partial rotary width ignored: the whole head rotated
    def rotate(x, offset=0):
        whole = nn.RoPE(x.shape[-1], traditional=rope.traditional, base=rope.base, scale=rope.scale)
        return whole(x, offset=offset)
    return rotate
"""
FULL_FOR_SLIDING = """
init = cls.__init__

def with_full(self, args, layer_idx):  # each layer also builds the full layers' RoPE
    init(self, args, layer_idx)
    full = module.initialize_rope(
        dims=self.rope.dims,
        base=args.rope_theta,
        traditional=False,
        max_position_embeddings=args.max_position_embeddings,
        scaling_config=args.rope_scaling,
    )
    object.__setattr__(self, "full_rope", full)  # no child: the table line does not see it

cls.__init__ = with_full

def wrong(attention, rope):  # a sliding layer given the full layers' RoPE
    return attention.full_rope if attention.is_sliding else rope
"""
RUN_FAMILIES = ("llama-3.1-8b", "qwen3-8b.yarn-4x", "phi-2")
DEFECTS = {
    "rotation style swapped": ("llama-3.1-8b", "llama", "Attention", SWAPPED),
    "attention factor applied twice": ("qwen3-8b.yarn-4x", "qwen3", "Attention", TWICE),
    "partial width ignored": ("phi-2", "phi", "PhiAttention", WHOLE),
}


@pytest.fixture(scope="module")
def run_twins(tmp_path_factory):
    """``twin(family)``: the folder ``sinpe engines --run`` makes for a family (the twin, the
    run model) and its reference, made once for this module's tests."""

    made: dict = {}

    def twin(family):
        if family not in made:
            data = json.loads((CONFIGS / f"{family}.json").read_text())
            made[family] = _side_folder(tmp_path_factory.mktemp(family), data)
        return made[family]

    return twin


def _side_folder(folder, data):
    return side_folder(folder, data)


def _run_lines(twin, python=None, table=True):
    return run_lines("mlx-lm", "MLX-LM", twin, python, table)


@pytest.mark.parametrize("family", RUN_FAMILIES)
def test_mlx_lm_runs_each_family_as_the_exact_twin_at_every_position(run_twins, family):
    """MLX-LM's forward with a cache at offset p, at p = 0, 100,000 and the trained length:
    within float32 noise at p = 0 and within what float32 angles allow at every p."""
    from sinpe._check import run as _run

    _, run = _run_lines(run_twins(family), table=False)
    assert run.verdict in ("match", "drift"), run.text
    assert "KV cache at offset p" in run.how
    ps = [p for p, _, _ in run.distances]
    assert ps[0] == 0 and _run.FAR in ps and len(ps) == 3, run.distances
    for _, distance, allowed in run.distances:
        assert 0 <= distance <= allowed, run.text
    assert run.distances[0][1] < 1e-4, run.text  # exact angles at p = 0: float32 arithmetic


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_an_application_defect_in_mlx_lm_is_caught_by_the_run_line_only(
    run_twins, tmp_path, defect
):
    """One defect in how mlx_lm's attention applies its RoPE module (``DEFECTS``), put in
    its own code in its own interpreter: the run line breaks at p = 0 already; the table
    line, which calls the RoPE modules themselves, stays the config's RoPE (Gemma 3's
    sliding layers given the full RoPE: below)."""
    family, name, cls, body = DEFECTS[defect]
    python = defective_python(tmp_path, f"mlx_lm.models.{name}", APPLIED.format(cls=cls) + body)
    line, run = _run_lines(run_twins(family), python)
    assert line.python == python
    assert line.verdict in ("match", "drift"), line.text
    assert run.verdict == "mismatch", run.text
    (reason,) = run.reasons
    assert reason.startswith("at p = 0 its log-probabilities are "), reason
    assert "not the config's model" in reason


def _gemma3_text() -> dict:
    """A text-only Gemma 3 (``gemma3_text``, as Gemma 3 1B is published) in the keys
    mlx_lm reads: the 4B's text config, the 1B's widths, Gemma 3's two RoPEs (local base
    10,000 on five sliding layers in six; base 1,000,000 and linear x8 on the full ones)."""
    data = json.loads((CONFIGS / "gemma-3-4b-it.json").read_text())
    text = {**data["text_config"], "architectures": ["Gemma3ForCausalLM"]}
    text.update(hidden_size=1152, num_attention_heads=4, num_key_value_heads=1, head_dim=256)
    text.update(rope_theta=1_000_000.0, rope_local_base_freq=10_000.0, vocab_size=262144)
    return text


def test_mlx_lm_s_gemma_3_gives_sliding_layers_their_own_rope_at_run_time(
    tmp_path_factory, tmp_path
):
    """Gemma 3 in mlx_lm runs as the exact twin at every p; with its sliding layers given
    the full layers' RoPE at run time (in its own interpreter), the run line breaks at
    p = 0 while the table line, which calls each layer's own RoPE module, stays the
    config's RoPE."""
    twin = _side_folder(tmp_path_factory.mktemp("gemma3"), _gemma3_text())
    _, run = _run_lines(twin, table=False)
    assert run.verdict in ("match", "drift"), run.text
    assert run.distances[0][1] < 1e-3, run.text
    body = APPLIED.format(cls="Attention") + FULL_FOR_SLIDING
    defective = defective_python(tmp_path, "mlx_lm.models.gemma3_text", body)
    line, run = _run_lines(twin, defective)
    assert line.verdict in ("match", "drift"), line.text
    assert run.verdict == "mismatch", run.text
    assert run.reasons[0].startswith("at p = 0 its log-probabilities are "), run.text
