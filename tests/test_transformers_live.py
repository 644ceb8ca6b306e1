"""Against transformers itself (the torch CI leg installs transformers 5.24.0, pinned; nothing
is downloaded): the registry's data file is what transformers does today, ``patch()`` replaces
every rotary module it can verify, counted by walking transformers' classes (not a list),
and tiny random models of every family sinpe has a record for keep their logits."""

import copy
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import sinpe  # noqa: E402
import sinpe.torch as st  # noqa: E402
from sinpe._rope.families import FAMILIES  # noqa: E402

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import tiny  # noqa: E402
import transformers_rope as harness  # noqa: E402

pytestmark = pytest.mark.skipif(
    transformers.__version__ not in harness.VERSIONS,
    reason=f"the enumeration is of transformers {', '.join(harness.VERSIONS)}",
)
VERSION = transformers.__version__ if transformers.__version__ in harness.VERSIONS else None
DATA = json.loads(
    (
        Path(__file__).parent / "data" / f"transformers_rope_{VERSION or harness.NEWEST}.json"
    ).read_text()
)


# Rotations that changed between the pinned releases (the records are the newest's):
# HY-V4's attention rotated halves in 5.24 and rotates pairs (DeepSeek's interleave) in 5.25.
EARLIER_ROTATIONS = {("5.24.0", "hy_v4"): "halves"}


@pytest.fixture(scope="module")
def live():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return harness.record_all()


# Two recorded fields are torch's float32 arithmetic, whose vector kernels ATen chooses by
# CPU (AVX-512 or AVX2: its pow, cos and sin are not correctly rounded, so they differ in the
# last bit between hosts): each layer's inv_freq and the forward's largest error. They are
# compared within a few float32 ulps; everything else recorded must be equal.
HOST_DEPENDENT = ("inv_freq", "error")


def split_host_dependent(value, path=(), found=None):
    """``(value with HOST_DEPENDENT fields blanked, {path: field value})``."""
    found = {} if found is None else found
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if key in HOST_DEPENDENT:
                found[path + (key,)] = item
                kept[key] = "(host-dependent)"
            else:
                kept[key] = split_host_dependent(item, path + (key,), found)[0]
        return kept, found
    if isinstance(value, list):
        return [split_host_dependent(v, path + (i,), found)[0] for i, v in enumerate(value)], found
    return value, found


def test_the_data_file_is_what_transformers_does_now(live):
    """The ordinary suite compares sinpe with the data file: it must be this transformers'
    (torch's float32 results within a few ulps: they depend on the host's CPU)."""
    now, now_fields = split_host_dependent(
        [json.loads(json.dumps(e, sort_keys=True)) for e in live]
    )
    recorded, recorded_fields = split_host_dependent(DATA["classes"])
    assert now == recorded
    assert now_fields.keys() == recorded_fields.keys()
    for path, value in now_fields.items():
        before = recorded_fields[path]
        if path[-1] == "inv_freq":
            a, b = harness.unpack(value), harness.unpack(before)
            assert a.shape == b.shape, path
            ulp = np.spacing(np.maximum(np.abs(a), np.abs(b)).astype(np.float32)).astype(float)
            assert np.all(np.abs(a - b) <= 2 * ulp), path
        elif value is None or before is None:
            assert value == before, path
        else:
            assert abs(value - before) <= 2.0**-20, (path, value, before)


def test_the_registry_agrees_with_the_live_modules(live):
    import sinpe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrong = [
            (e["class"], r)
            for e in live
            if e["status"] == "ok" and e.get("primary")
            for r in harness.compare_entry(e, sinpe)
            if r["verdict"] not in ("agrees", "refuses")
        ]
    assert not wrong, wrong[:5]


# --------------------------------------------------------------------------- patch coverage


def built_modules():
    """Every rotary class whose forward takes (x, position_ids[, layer_type]), built from
    its configuration class's defaults (or their text sub-config): ``(class name, vision,
    module, why it does not count)``."""
    for module_name, name, cls in harness.rotary_classes():
        if not harness.takes_position_ids(cls):
            continue
        config_cls = harness.config_class(module_name, cls)
        try:
            config = config_cls()
        except Exception:
            continue
        for candidate in harness.candidate_configs(config):
            try:
                module = cls(candidate)
            except Exception:
                continue
            vision = harness.is_vision(name, candidate)
            yield name, vision, module, _fails_on_defaults(module, candidate, vision)
            break


def _fails_on_defaults(module, config, vision):
    """Why the module does not count: its own forward fails on its defaults."""
    found = harness._buffers(module)
    for layer_type, (w, factor, _) in found.items():
        probed = harness.probe(module, config, layer_type, w, factor or 1.0, vision)
        why = probed.get("why", "")
        if why.startswith("forward fails"):
            return why
    return None


@pytest.fixture(scope="module")
def coverage():
    rows = []
    for name, vision, module, excluded in built_modules():
        original = copy.deepcopy(module)
        holder = torch.nn.Module()
        holder.rope = module
        # tables of 4096 positions (the probe's largest is 4093): 180 modules at their
        # trained lengths would keep gigabytes
        report = st.patch(holder, warn=False, max_positions=4096)
        rows.append(
            (name, vision, excluded, bool(report), report.left.get("rope"), original, holder.rope)
        )
    return rows


def _outputs_agree(original, replaced) -> bool:
    """The replacement against a copy of the module it replaced, at positions 0 .. 63 and
    a few up to the trained length, within the real module's float32 angle error."""
    if not hasattr(replaced, "_layers"):  # GPT-J's and CodeGen's (sin, cos) table
        return _tables_agree(original, replaced)
    layers = replaced._layers
    for layer_type, layer in layers.items():
        buffers = harness._buffers(original)
        if layer_type not in buffers:
            continue
        positions = list(range(64)) + [1000, 4093]
        from sinpe.torch._patch import _probe_forms

        for _, ids, largest, _ in _probe_forms(layer, np.array(positions)):
            x = torch.zeros(1, 1, len(positions), 8)
            args = (x, ids) if layer_type is None else (x, ids, layer_type)
            with torch.no_grad():
                try:
                    a = copy.deepcopy(original)(*args)
                except Exception:  # a form the original does not take
                    continue
                b = replaced(*args)
            a = (a.real, a.imag) if isinstance(a, torch.Tensor) else a
            b = (b.real, b.imag) if isinstance(b, torch.Tensor) else b
            if [p.shape for p in a] != [q.shape for q in b]:
                return False
            w = layer.inv_freq
            bound = 2.0**-21 * (1 + largest.max() * w.max()) * max(1.0, layer.attention_scaling)
            if any((p - q).abs().max() > bound for p, q in zip(a, b)):
                return False
    return True


def _tables_agree(original, replaced) -> bool:
    """A (sin, cos) table module against the one it replaced, at every position it holds."""
    ids = torch.arange(original.max_positions)[None]
    bound = 2.0**-21 * (1.0 + ids[0, :, None].double()) + 2.0**-23
    with torch.no_grad():
        real, mine = original(torch.zeros(1), ids), replaced(torch.zeros(1), ids)
    return all(
        a.shape == b.shape and a.dtype == b.dtype and bool(((a - b).double().abs() <= bound).all())
        for a, b in zip(real, mine)
    )


def test_patch_replaces_at_least_97_percent_and_names_every_one_left(coverage):
    """At least 97% of every text class built from its defaults, counting the ones whose own
    forward fails there as not replaced; each replacement agrees on every id form it takes."""
    built = [r for r in coverage if not r[1]]
    text = [r for r in built if r[2] is None]
    replaced = [r for r in text if r[3]]
    assert len(replaced) >= 0.97 * len(built), (len(replaced), len(built))
    assert all(r[4] for r in text if not r[3]), "a module left without a reason"
    assert all(_outputs_agree(r[5], r[6]) for r in replaced)
    doc = (ROOT / "docs" / "torch.md").read_text()
    vision = [r for r in coverage if r[1]]
    numbers = (len(replaced), len(text), sum(r[3] for r in vision), len(vision))
    found = re.search(
        rf"transformers {re.escape(VERSION)}: `patch` replaces (\d+) of the (\d+) text "
        r"classes and (\d+) of the (\d+)\s+vision",
        doc,
    )
    assert found and tuple(map(int, found.groups())) == numbers, numbers
    for r in text:
        if not r[3]:
            assert f"`{r[0]}`" in doc, f"docs/torch.md does not name {r[0]}, left alone"


# --------------------------------------------------------------------------- tiny models

TINY = dict(
    tiny.TEXT, **tiny.MOE, vocab_size=128, intermediate_size=64, max_position_embeddings=4096
)


def tiny_models():
    """A tiny random causal LM of every model type with a family record that builds from
    TINY (1-2 layers, at most 5M parameters): ``(model_type, model)``."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        try:
            config = AutoConfig.for_model(model_type, **TINY)
            text = getattr(config, "text_config", None) or config
            if getattr(text, "model_type", model_type) not in FAMILIES:
                continue
            with torch.device("meta"):
                size = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
            if size > 5_000_000:
                continue
            torch.manual_seed(0)
            model = AutoModelForCausalLM.from_config(config).eval()
            ids = torch.randint(0, 128, (1, 8))
            with torch.no_grad():
                model(ids)
        except Exception:
            continue
        yield model_type, model


@pytest.fixture(scope="module")
def logits():
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type, model in tiny_models():
            ids = torch.randint(0, 128, (1, 64), generator=torch.Generator().manual_seed(1))
            near = torch.arange(64)[None]
            far = torch.arange(100_000, 100_064)[None]
            with torch.no_grad():
                before = [model(ids, position_ids=p).logits for p in (near, far)]
                report = st.patch(model, warn=False)
                if not report:
                    continue
                after = [model(ids, position_ids=p).logits for p in (near, far)]
                try:  # some kernels (grouped MoE matmuls) have no float64
                    wide = copy.deepcopy(model).double()
                    exact = [wide(ids, position_ids=p).logits for p in (near, far)]
                except RuntimeError:
                    exact = None
            rows[model_type] = (before, after, exact)
    return rows


def test_tiny_models_of_30_families_keep_their_logits(logits):
    """Patched against unpatched: within 1e-6 at positions 0-63 (transformers' own float32
    angles differ from the exact ones by up to 2**-24 p there); past 100,000 the patched
    float32 model is at least as close to the float64 one as the unpatched, up to twice the
    model's own float32 noise (its error at positions 0-63, where RoPE's is negligible)."""
    near = {t: float((a[0] - b[0]).abs().max()) for t, (a, b, _) in logits.items()}
    within = [t for t, d in near.items() if d <= 1e-6]
    assert len(within) >= 30, (len(within), near)
    assert max(near.values()) <= 1e-5, near
    checked = 0
    for model_type, (before, after, exact) in logits.items():
        if exact is None:
            continue
        checked += 1
        # the model's float32 error where RoPE's is negligible (positions 0-63): the noise
        # floor below which "closer" cannot be told
        floor = float((after[0].double() - exact[0]).abs().max())
        mine = float((after[1].double() - exact[1]).abs().max())
        theirs = float((before[1].double() - exact[1]).abs().max())
        assert mine <= max(theirs, 2 * floor), (model_type, mine, theirs, floor)
    assert checked >= 30, checked


# --------------------------------------------------------------------------- softmax scale


def test_the_softmax_scale_is_transformers_yarn_apply_mscale():
    """Every family whose modeling module defines yarn_apply_mscale (the MLA families) has
    the rule, and spec.softmax_scale is that function's multiplier, on the class defaults
    and on a yarn mapping with mscale_all_dim; every other family's is 1."""
    import importlib

    import sinpe

    yarn = {
        "rope_type": "yarn",
        "factor": 40.0,
        "mscale": 1.0,
        "mscale_all_dim": 0.707,
        "original_max_position_embeddings": 4096,
    }
    checked = 0
    for entry in DATA["classes"]:
        if entry["status"] != "ok" or not entry.get("primary") or entry["vision"]:
            continue
        module = importlib.import_module(entry["module"])
        applies = callable(getattr(module, "yarn_apply_mscale", None))
        assert FAMILIES[entry["model_type"]].softmax_mscale == applies, entry["class"]
        if not applies:
            continue
        config_cls = harness._config_class_of(entry)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for config in (config_cls(), config_cls(rope_parameters=dict(yarn))):
                want = module.yarn_apply_mscale(config.rope_parameters, 1.0)
                got = sinpe.rope_config(config).softmax_scale
                assert got == pytest.approx(want, rel=1e-12), (entry["class"], got, want)
                checked += 1
    assert checked >= 2 * 14, checked


def _rotated(x, cos, sin, rotation, sign=1):
    """x (..., seq, d) rotated by the compact angles' cos and sin (seq, d/2) times ``sign``,
    pairing elements as ``rotation`` says: the rotation an engine applies with a RopeSpec."""
    h = x.shape[-1] // 2
    sin = sin * sign
    a, b = (x[..., :h], x[..., h:]) if rotation == "halves" else (x[..., 0::2], x[..., 1::2])
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def _scores(q, k):
    return q @ k.transpose(-1, -2)


def test_the_rotation_is_the_one_the_attention_applies():
    """For every text family, the rotation function its attention calls (and, where
    rope_interleave chooses, both), run on sinpe's table in the family's layout, gives the
    attention scores q_m . k_n of rotating with sinpe's compact angles, the spec's rotation
    and its sin sign, and not those of the other rotation or sign; rope_config says the same
    rotation on the class defaults and with rope_interleave false."""
    import importlib

    import sinpe

    positions = np.arange(0, 600, 37)
    cos_c, sin_c = (torch.from_numpy(t) for t in sinpe.rope_at(positions, 8, layout="compact"))
    seed = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 1, 1, len(positions), 8, generator=seed, dtype=torch.float64)
    other = {"halves": "pairs", "pairs": "halves"}
    checked = 0
    for entry in DATA["classes"]:
        if entry["status"] != "ok" or not entry.get("primary") or entry["vision"]:
            continue
        family = FAMILIES[entry["model_type"]]
        module = importlib.import_module(entry["module"])
        prefix = entry["class"].replace("RotaryEmbedding", "")
        calls = harness.rotation_calls(module, prefix)
        assert calls, entry["class"]
        layout = "compact" if family.layout == "complex" else family.layout
        cos, sin = (torch.from_numpy(t)[None] for t in sinpe.rope_at(positions, 8, layout=layout))
        config_cls = harness._config_class_of(entry)
        for name, conditions in calls.items():
            for condition in conditions:
                if condition is None:
                    rotation = family.rotation
                else:
                    key, when_true, when_false = family.rotation_key
                    rotation = when_true if condition[1] else when_false
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        config = config_cls(**{key: condition[1]})
                    if family.refused is None:
                        assert sinpe.rope_config(config).rotation == rotation, entry["class"]
                rotation = EARLIER_ROTATIONS.get((VERSION, entry["model_type"]), rotation)
                fn = getattr(module, name)
                got = _scores(*(harness.apply_rotation(fn, x, cos, sin).double() for x in (q, k)))
                sign = family.sin_sign
                want = _scores(*(_rotated(x, cos_c, sin_c, rotation, sign) for x in (q, k)))
                assert torch.allclose(got, want, atol=1e-5), (entry["class"], name, rotation)
                for wrong_rotation, wrong_sign in ((other[rotation], sign), (rotation, -sign)):
                    wrong = _scores(
                        *(_rotated(x, cos_c, sin_c, wrong_rotation, wrong_sign) for x in (q, k))
                    )
                    assert not torch.allclose(got, wrong, atol=1e-2), (entry["class"], name)
                checked += 1
        if family.refused is not None:
            continue
        try:  # (a default rope_config refuses, as the agreement test counts, has no spec)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec = sinpe.rope_config(config_cls())
        except ValueError:
            continue
        if (VERSION, entry["model_type"]) not in EARLIER_ROTATIONS:
            assert (spec.rotation, spec.sin_sign) == (family.rotation, family.sin_sign)
    assert checked >= 180, checked  # 184 in 5.24, 187 in 5.25


# --------------------------------------------------------------------------- GPT-J, CodeGen


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, inside compile
@pytest.mark.parametrize("name, casts", [("GPTJ", True), ("CodeGen", False)])
def test_gptj_and_codegen_sin_cos_tables_are_replaced_exactly(name, casts):
    """Their module keeps a [sin | cos] table (embed_positions, float32 angles) and returns
    (sin, cos), compact, rotary_dim / 2 wide: GPT-J in x's dtype, CodeGen in the table's.
    patch() replaces it with the exact table (each value rounded once), the same structure,
    the same IndexError at or past max_positions; model.to(dtype) remakes it exactly."""
    from sinpe.torch._sincos import SinCosTable

    config = getattr(transformers, f"{name}Config")(
        n_embd=64,
        n_head=4,
        n_layer=2,
        rotary_dim=16,
        vocab_size=100,
        n_positions=128,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = getattr(transformers, f"{name}ForCausalLM")(config).eval()
    ids, positions = torch.tensor([[5, 17, 99, 3, 12]]), torch.tensor([[0, 1, 2, 64, 127]])
    with torch.no_grad():
        before = model(ids, position_ids=positions).logits
    report = st.patch(model, warn=False)
    assert list(report) == ["transformer.rotary_emb"] and not report.left
    table = model.transformer.rotary_emb
    assert isinstance(table, SinCosTable) and report.table_bytes == 128 * 16 * 4
    with torch.no_grad():
        after = model(ids, position_ids=positions).logits
    assert float((before - after).abs().max()) < 1e-6
    cos, sin = st.rope_at(np.arange(128), 16, base=10000.0, layout="compact", dtype=torch.float64)
    for dtype in (torch.float32, torch.float16):
        got_sin, got_cos = table(torch.zeros(1, dtype=dtype), torch.arange(128)[None])
        assert got_sin.dtype == got_cos.dtype == (dtype if casts else torch.float32)
        assert got_sin.shape == (1, 128, 8)
        expected = sin.to(torch.float32).to(got_sin.dtype)
        assert torch.equal(got_sin[0], expected)
    with pytest.raises(IndexError):
        table(torch.zeros(1), torch.tensor([[128]]))
    compiled = torch.compile(table, fullgraph=True)  # a gather: one graph, the same values
    ids = torch.tensor([[0, 5, 127]])
    assert all(
        torch.equal(a, b) for a, b in zip(compiled(torch.zeros(1), ids), table(torch.zeros(1), ids))
    )
    model.to(torch.bfloat16)
    exact = st.rope_at(np.arange(128), 16, base=10000.0, layout="compact", dtype=torch.bfloat16)
    assert torch.equal(table.embed_positions, torch.cat((exact[1], exact[0]), dim=1))


# --------------------------------------------------------------------------- M-RoPE, images


# The families whose text RoPE patch() replaces: every one with a get_rope_index but those
# whose text module sinpe has no record of (GLM-4V, GLM-4.6V, GLM-4V-MoE and GLM-Image: their
# class defaults' sections do not fit the width, so the enumeration could not probe them;
# HunYuan-VL's four axes; Cohere Compass's per-layer M-RoPE) or refuses (ERNIE-4.5-VL's
# recomposition also permutes the frequencies).
REPLACED_VLMS = {
    "cosmos3_edge",
    "cosmos3_omni",
    "ernie4_5_vl_moe",
    "glm_ocr",
    "hy_v4_vl",
    "minicpmv4_7",
    "paddleocr_vl",
    "qwen2_5_omni",
    "qwen2_5_vl",
    "qwen2_vl",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_omni_moe",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen4_exp",
}
assert len(REPLACED_VLMS) >= 10


@pytest.mark.parametrize("family", __import__("vlms").families() if VERSION else [])
def test_vision_language_models_on_their_own_position_ids(family):
    """A tiny random model of every family with a get_rope_index (tests/vlms.py), a prompt
    holding an image, and the ids the model itself makes (three axes that differ): every
    rotary module is in patch()'s report, replaced or left with its reason; the logits stay
    within 1e-6; a replaced module gives spec.rope_at(ids) bit for bit, and so past 100,000."""
    import vlms

    spec = vlms.SPECS[family]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config, model = vlms.build(spec)
        builder = vlms.INPUT_BUILDERS.get(spec.get("inputs"), vlms.build_inputs)
        ids, forward = vlms.rope_ids(model, builder(config, spec))
        axes = ids[:, 0]
        assert not all(torch.equal(axes[0], axis) for axis in axes[1:])
        rotary = {
            name
            for name, module in model.named_modules()
            if type(module).__name__.endswith(("RotaryEmbedding", "RopePositionEmbedding"))
        }
        with torch.no_grad():
            before = model(**forward).logits
            report = st.patch(model, warn=False)
            after = model(**forward).logits
    assert set(report) | set(report.left) == rotary and all(report.left.values()), report
    assert float((after - before).abs().max()) <= 1e-6
    kwargs = spec.get("rotary_kwargs", {})
    for name in report:
        module = model.get_submodule(name)
        table = module.spec.layer(kwargs["layer_type"]) if kwargs else module.spec
        x = torch.zeros(1, ids.shape[-1], 8)
        for shift in (0, 100_000):
            with torch.no_grad():
                got = module(x, ids + shift, **kwargs)
            want = table.rope_at(ids.numpy() + shift, layout=module.layout, dtype=np.float32)
            for g, w in zip(got, want):
                assert np.array_equal(g.numpy(), w), (name, shift)
    assert bool(report) == (family in REPLACED_VLMS), (family, report.left)


# --------------------------------------------------------------------------- sinpe engines

CONFIGS = Path(__file__).with_name("data") / "configs"


@pytest.mark.parametrize(
    "name", ["llama-3.1-8b", "gemma-3-4b-it", "phi-3.5-mini-instruct.autoconfig-dump"]
)
def test_engines_read_transformers_as_sinpe_does(name):
    """transformers' column for three families: its modules built from the twin, read at the
    sampled positions, drift from exact (float32 angles) and nothing more; Gemma 3's two
    layer types and Phi-3.5's two LongRoPE regimes each judged."""
    report = sinpe.engines(CONFIGS / f"{name}.json", only=["transformers"])
    (line,) = report.lines
    assert line.version == transformers.__version__ and line.python == sys.executable
    assert line.verdict == "drift" and 0 < line.largest < 0.05 and report.exit_code == 0, line.text


def test_a_rule_changed_in_transformers_changes_its_line(tmp_path):
    """The line is transformers' own: its Llama-3 rule replaced by the linear one (in its own
    interpreter) makes the line a mismatch."""
    from engine_rules import changed_interpreter

    changed = changed_interpreter(
        tmp_path,
        """
        from transformers import modeling_rope_utils as rope
        rope.ROPE_INIT_FUNCTIONS["llama3"] = rope.ROPE_INIT_FUNCTIONS["linear"]
        """,
    )
    config = CONFIGS / "llama-3.1-8b.json"
    report = sinpe.engines(config, only=["transformers"], pythons={"transformers": changed})
    (line,) = report.lines
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text


def test_docs_matrix_holds_for_transformers_column():
    """docs/matrix.md's transformers column for three families is what the installed
    transformers does now (with the page's release, its version too; with the other
    release the torch leg runs, the same verdicts): regenerate it with tools/matrix.py."""
    from matrix_cells import disagreements, page

    same = page()[0]["transformers"] == transformers.__version__
    families = ["llama-3.1-8b", "gemma-3-4b-it.transformers-5", "gpt-oss-20b"]
    assert not disagreements("transformers", families, version=same)
