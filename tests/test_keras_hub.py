"""keras-hub's line of ``sinpe engines``, on keras-hub itself (the llama.cpp and MLX leg
installs it without TensorFlow; a skip fails the leg): its Hugging Face converter builds the
twin's backbone, and the verdict core judges each RotaryEmbedding layer."""

from __future__ import annotations

import functools
import json
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras_hub = pytest.importorskip("keras_hub")

from pathlib import Path  # noqa: E402

from defects import run_lines, side_folder  # noqa: E402

import sinpe  # noqa: E402
from sinpe._engines import keras_hub as reader  # noqa: E402
from sinpe._engines._shrink import shrink  # noqa: E402

CONFIGS = Path(__file__).with_name("data") / "configs"


def _line(config):
    (line,) = sinpe.engines(config, only=["keras-hub"]).lines
    return line


def test_llama_3_1_reads_as_its_config_with_float32_angles(monkeypatch):
    """Keras 3 picks TensorFlow (absent here) unless ``KERAS_BACKEND`` says otherwise: the
    reader runs keras-hub on torch where the user's environment does not set it."""
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    line = _line(CONFIGS / "llama-3.1-8b.json")
    assert line.version == keras_hub.__version__
    assert line.verdict == "drift" and 1e-4 < line.largest < 2e-2, line.text


def test_qwen3_s_yarn_is_not_applied():
    """convert_qwen3.py reads rope_theta only: the model card's YaRN x4 is plain RoPE there,
    its attention factor 1."""
    line = _line(CONFIGS / "qwen3-8b.yarn-4x.json")
    assert line.verdict == "mismatch" and line.largest > 1, line.text
    assert line.reasons == (
        "YaRN scaling not applied; YaRN attention factor 1.0 where the config gives 1.13863",
    )


def test_a_transformers_5_llama_3_1_loses_its_scaling(tmp_path):
    """convert_llama3.py reads Llama-3 scaling from rope_scaling only: the same config as
    transformers 5 writes it (rope_parameters) is plain RoPE there."""
    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    config["rope_parameters"] = {**config.pop("rope_scaling"), "rope_theta": config["rope_theta"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    line = _line(path)
    assert line.verdict == "mismatch" and line.reasons == ("Llama-3 scaling not applied",)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras's own __array__, numpy 2
def test_the_line_is_keras_hubs_own_reading(tmp_path, monkeypatch):
    """A rule changed in keras-hub's converter (the base it reads for Qwen3-MoE, doubled) turns
    its reading to a mismatch naming that base: what is judged is what keras-hub built."""
    from keras_hub.src.utils.transformers import convert_qwen3_moe as convert_qwen3

    original = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    folder = tmp_path / "twin"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(shrink(original)))
    ((_, right),), _, _ = reader.read(folder, original, 4096)
    assert right.verdict == "drift", right.text
    convert = convert_qwen3.convert_backbone_config

    @functools.wraps(convert)  # keras-hub passes what the signature it inspects takes
    def doubled(config, *args, **kwargs):
        converted = convert(config, *args, **kwargs)
        return {**converted, "rope_max_wavelength": 2 * converted["rope_max_wavelength"]}

    monkeypatch.setattr(convert_qwen3, "convert_backbone_config", doubled)
    ((what, wrong),), _, _ = reader.read(folder, original, 4096)
    assert what.startswith("RotaryEmbedding x128 (transformer_layers[0]: ")
    assert wrong.verdict == "mismatch"
    assert wrong.reason == "base 2000000.0 where the config gives 1000000.0", wrong.reason


def test_a_layer_whose_fed_width_is_not_seen_is_not_judged_unless_it_is_the_head_s():
    """A multimodal backbone's forward takes images, so the width each rotary layer is fed is
    not seen: the head's width is taken where it is the layer's rotary width (Gemma 3), and a
    layer it is not (Qwen3.5's quarter of 256; Gemma 4's full layers) is not judged, said."""
    assert _line(CONFIGS / "gemma-3-4b-it.transformers-5.json").verdict == "drift"
    line = _line(CONFIGS / "qwen3.5-27b.json")
    assert line.verdict == "unchecked", line.text
    assert line.reasons == (
        "RotaryEmbedding (transformer_layers[3]) could not be read (the width it is fed: the "
        "backbone's forward takes more than tokens): not judged",
    )
    gemma4 = _line(CONFIGS / "gemma-4-e2b-it.json")
    assert gemma4.verdict == "drift" and "transformer_layers[4]" in gemma4.notes[0], gemma4.text


def test_docs_matrix_holds_for_keras_hubs_column():
    """docs/matrix.md's keras-hub column for three families is what keras-hub does now (its
    version in the header too): a cell that no longer holds fails this leg (regenerate the
    page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements(
        "keras-hub", ["qwen3-8b.yarn-4x", "llama-3.1-8b", "gemma-3-4b-it.transformers-5"]
    )


def _twin(tmp_path, name):
    original = json.loads((CONFIGS / f"{name}.json").read_text())
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(shrink(original)))
    return folder, original


def test_a_text_backbone_is_seen_feeding_each_rotary_layer_its_width(tmp_path):
    """(``_widths``: one forward pass of 4 tokens records the width each rotary layer is fed,
    and gives each layer its own method back.)"""
    from keras_hub.src.layers.modeling.rotary_embedding import RotaryEmbedding

    folder, original = _twin(tmp_path, "llama-3.1-8b")
    backbone = keras_hub.models.Backbone.from_preset(str(folder), load_weights=False)
    layers = {
        id(layer): layer
        for block in backbone.transformer_layers
        for layer in block._flatten_layers(include_self=False)
        if isinstance(layer, RotaryEmbedding)
    }
    assert len(layers) == len(backbone.transformer_layers)
    widths = reader._widths(backbone, list(layers.values()))
    assert widths == {key: 128 for key in layers}  # Llama-3.1's head
    assert not any("_compute_cos_sin_embedding" in vars(layer) for layer in layers.values())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras's own __array__, numpy 2
def test_layers_of_two_kinds_are_judged_apart_each_naming_its_layers(tmp_path):
    """(``read``: the rotary layers grouped by their settings, width and the spec of the layer
    they serve, each group named by its first layer and counted.)"""
    folder, original = _twin(tmp_path, "gemma-3-4b-it.transformers-5")
    layers, notes, how = reader.read(folder, original, 4096)
    assert [(what, judged.verdict) for what, judged in layers] == [
        ("RotaryEmbedding x256 (transformer_layers[0]: 5 layers)", "drift"),  # sliding
        ("RotaryEmbedding x256 (transformer_layers[5]: 1 layers)", "drift"),  # full, linear x8
    ]
    assert notes == () and how is None
    assert [judged.decades[-1][1] for _, judged in layers] == [4095, 4095]  # up to the length


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras's own __array__, numpy 2
def test_a_layer_keras_hub_set_apart_is_judged_apart(tmp_path, monkeypatch):
    """(``read``: a layer whose settings differ from its neighbours', though it serves the
    same spec, is its own group.) Llama-3.1's layer 1 built with twice the wavelength: its
    own line, a mismatch naming its base; the others drift."""
    from keras_hub.src.layers.modeling.rotary_embedding import RotaryEmbedding

    folder, original = _twin(tmp_path, "llama-3.1-8b")
    build = keras_hub.models.Backbone.from_preset

    def built(*args, **kwargs):
        backbone = build(*args, **kwargs)
        block = backbone.transformer_layers[1]
        (rope,) = [x for x in block._flatten_layers() if isinstance(x, RotaryEmbedding)]
        rope.max_wavelength *= 2
        return backbone

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", built)
    layers, _, _ = reader.read(folder, original, 4096)
    assert [(what, judged.verdict) for what, judged in layers] == [
        ("RotaryEmbedding x128 (transformer_layers[0]: 1 layers)", "drift"),
        ("RotaryEmbedding x128 (transformer_layers[1]: 1 layers)", "mismatch"),
    ]
    assert layers[1][1].reason.startswith("base 1000000.0 where the config gives 500000.0")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras's own __array__, numpy 2
def test_a_rotary_layer_narrower_than_an_unseen_head_is_not_judged_and_said(tmp_path):
    """(``read`` in this process: Qwen3.5's backbone takes images, so the width its rotary
    layer is fed is not seen, and its rotary width is a quarter of its 256-wide head: the
    layer is not judged, and the reason names it and why.)"""
    folder, original = _twin(tmp_path, "qwen3.5-27b")
    layers, notes, how = reader.read(folder, original, 4096)
    why = "the width it is fed: the backbone's forward takes more than tokens"
    ((what, judged),) = layers
    assert what == "RotaryEmbedding (transformer_layers[3])" and judged.verdict == "unchecked"
    assert [(f.code, f.engine, f.config) for f in judged.findings] == [("unreadable", what, why)]
    assert judged.reason == f"{what} could not be read ({why}): not judged"


# --------------------------------------------------------------------------- the run line

# The defect is put in keras-hub's attention: the RotaryEmbedding layer it calls is untouched
# (the table line calls that layer, and stays the config's RoPE); only the way the attention
# applies it changes, for the length of its call.
SWAPPED = """
import functools

from keras import ops

cls = module.LlamaAttention
call = cls.call

def pairs(rope):  # pairs rotated where the model rotates halves
    def rotate(x, *args, **kwargs):
        d = x.shape[-1]
        halves = ops.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)
        out = rope(halves, *args, **kwargs)
        turned = ops.stack([out[..., : d // 2], out[..., d // 2 :]], axis=-1)
        return ops.reshape(turned, ops.shape(out))
    return rotate

@functools.wraps(call)  # keras binds the arguments by the signature it reads
def swapped(self, *args, **kwargs):
    rope = self.rotary_embedding_layer
    object.__setattr__(self, "rotary_embedding_layer", pairs(rope))
    try:
        return call(self, *args, **kwargs)
    finally:
        object.__setattr__(self, "rotary_embedding_layer", rope)

cls.call = swapped
"""
# keras-hub's Llama 3 converter (convert_llama3.convert_backbone_config) passes no
# rms_norm_eps: its backbone keeps its default 1e-6, Llama 3.1's config gives 1e-5
KERAS_EPSILON = {"rms_norm_eps": 1e-6}
RUN_FAMILIES = {
    "llama-3.1-8b": ("llama-3.1-8b", {}),
    "llama-3.1-8b, epsilon 1e-6": ("llama-3.1-8b", KERAS_EPSILON),
}


@pytest.fixture(scope="module")
def run_twins(tmp_path_factory):
    """``twin(family)``: the folder ``sinpe engines --run`` makes for a family (the twin, the
    run model) and its reference, made once for this module's tests."""
    made: dict = {}

    def twin(family):
        if family not in made:
            name, extra = RUN_FAMILIES[family]
            data = {**json.loads((CONFIGS / f"{name}.json").read_text()), **extra}
            made[family] = _side_folder(tmp_path_factory.mktemp("run"), data)
        return made[family]

    return twin


def _side_folder(folder, data):
    return side_folder(folder, data)


def _run_lines(twin, python=None, table=True):
    return run_lines("keras-hub", "keras-hub", twin, python, table)


def test_keras_hub_runs_llama_3_1_as_the_exact_twin_where_its_norm_epsilon_is_read(run_twins):
    """At cache index p = 0, 100,000 and the trained length (the cache's first p entries
    masked out), keras-hub's Llama 3.1 with keras-hub's own norm epsilon in the config is
    within float32 noise at p = 0 and within what float32 angles allow at every p."""
    from sinpe._check import run as _run

    _, run = _run_lines(run_twins("llama-3.1-8b, epsilon 1e-6"), table=False)
    assert run.verdict in ("match", "drift"), run.text
    assert "call_with_cache at cache index p" in run.how
    ps = [p for p, _, _ in run.distances]
    assert ps[0] == 0 and _run.FAR in ps and len(ps) == 3, run.distances
    for _, distance, allowed in run.distances:
        assert 0 <= distance <= allowed, run.text
    assert run.distances[0][1] < 1e-4, run.text


def test_keras_hub_s_llama_3_converter_drops_the_norm_epsilon_which_the_run_line_shows(
    run_twins,
):
    """Llama 3.1's own config (rms_norm_eps 1e-5): the table line is the config's RoPE, the
    run line a mismatch from p = 0, its first decoder layer's output departing first: the
    converter builds the norms with keras-hub's default 1e-6 (not a RoPE fault; the twin's
    small activations make it show)."""
    line, run = _run_lines(run_twins("llama-3.1-8b"))
    assert line.verdict == "drift", line.text
    assert run.verdict == "mismatch", run.text
    (reason,) = run.reasons
    assert reason.startswith("at p = 0 its log-probabilities are "), reason
    assert "decoder layer 1 (from 1) departs first" in reason, reason


def test_an_application_defect_in_keras_hub_is_caught_by_the_run_line_only(run_twins, tmp_path):
    """The rotation style swapped in how keras-hub's Llama attention applies its rotary
    layer, in its own code in its own interpreter: the run line breaks at p = 0 already, in
    the first decoder layer; the table line, which calls the rotary layers themselves, stays
    the config's RoPE. (keras-hub applies no attention factor, converts no partial-rotary
    family whose rotary width it lets be seen, and builds no Gemma 3 from a run model's
    folder: the other three defects have no family to run on here.)"""
    from defects import defective_python

    target = "keras_hub.src.models.llama.llama_attention"
    python = defective_python(tmp_path, target, SWAPPED)
    line, run = _run_lines(run_twins("llama-3.1-8b, epsilon 1e-6"), python)
    assert line.python == python
    assert line.verdict in ("match", "drift"), line.text
    assert run.verdict == "mismatch", run.text
    (reason,) = run.reasons
    assert reason.startswith("at p = 0 its log-probabilities are "), reason
    assert "decoder layer 1 (from 1) departs first" in reason, reason
