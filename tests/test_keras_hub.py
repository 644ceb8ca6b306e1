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
