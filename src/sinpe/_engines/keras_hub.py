"""keras-hub's reading of a config (``sinpe engines``): its Hugging Face converter
(``keras_hub.models.Backbone.from_preset`` on the twin's folder, which holds a config.json and
no weights: ``load_weights=False``) builds the backbone as keras-hub builds it from a Hub
model, on Keras 3's torch backend unless ``KERAS_BACKEND`` says otherwise; each distinct
``RotaryEmbedding`` layer is called at the core's probe positions on unit vectors (its cos at column
``k``, its sin at column ``width/2 + k``, the layer's own halves) and judged by the verdict
core against the spec of the layer it serves.

keras-hub requires ``tensorflow-text`` (so TensorFlow) on Linux, but only its tokenizers,
preprocessing and metrics import it, each inside ``try``: the backbones and converters run
without it (``pip install --no-deps keras-hub`` and the small packages it imports;
docs/engines.md)."""

from __future__ import annotations

import json
import os

import numpy as np

from .._check.probe import judge_rows
from .._check.steps import step
from .._rope.config import rope_config
from .._rope.rope_types import frequency_count
from .._verdict.layers import layer_spec
from .._verdict.verdict import unchecked

__all__ = ["read"]


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each distinct rotary layer's verdict against ``original``."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras_hub
    from keras_hub.src.layers.modeling.rotary_embedding import RotaryEmbedding

    with step("keras_hub.models.Backbone.from_preset (its Hugging Face converter)"):
        backbone = keras_hub.models.Backbone.from_preset(str(folder), load_weights=False)
    spec = rope_config(original)
    found: dict = {}
    for index, block in enumerate(getattr(backbone, "transformer_layers", [])):
        for layer in block._flatten_layers(include_self=False):
            if isinstance(layer, RotaryEmbedding):
                found.setdefault(id(layer), (layer, []))[1].append(index)
    widths = _widths(backbone, [layer for layer, _ in found.values()])
    groups: dict = {}
    layers = []
    for layer, blocks in found.values():
        width = widths[id(layer)]
        one = layer_spec(spec, original, blocks[0])
        if width is None:  # not seen fed: unknown unless the head's width is the spec's
            width = _head(backbone)
            if width != 2 * frequency_count(one.head_dim):
                why = "the width it is fed: the backbone's forward takes more than tokens"
                what = f"RotaryEmbedding (transformer_layers[{blocks[0]}])"
                layers.append((what, unchecked("unreadable", engine=what, config=why)))
                continue
        settings = {k: v for k, v in layer.get_config().items() if k != "name"}
        key = (json.dumps(settings, sort_keys=True, default=str), width, id(one))
        groups.setdefault(key, (one, layer, width, []))[3].extend(blocks)
    for one, layer, width, blocks in groups.values():
        what = f"RotaryEmbedding x{width} (transformer_layers[{blocks[0]}]: {len(blocks)} layers)"
        layers.append((what, judge_rows(one, _reader(layer, width), width, length)))
    return layers, (), None


def _widths(backbone, layers) -> dict:
    """The width each layer is fed, recorded in a 4-token forward pass (``None`` where the
    backbone takes more than tokens, a multimodal one: its head's width is taken where it is
    the spec's rotary width, else the layer is not judged)."""
    widths: dict = {}
    for layer in layers:
        compute = layer._compute_cos_sin_embedding

        def recorded(x, *args, _layer=layer, _compute=compute, **kwargs):
            widths.setdefault(id(_layer), int(x.shape[-1]))
            return _compute(x, *args, **kwargs)

        layer._compute_cos_sin_embedding = recorded
    try:
        ones = np.ones((1, 4), "int32")
        backbone({"token_ids": ones, "padding_mask": ones})
    except Exception:  # noqa: BLE001 (a backbone that takes images: widths not seen)
        pass
    finally:
        for layer in layers:
            del layer._compute_cos_sin_embedding
    return {id(layer): widths.get(id(layer)) for layer in layers}


def _head(backbone) -> int:
    return getattr(backbone, "head_dim", None) or backbone.hidden_dim // backbone.num_query_heads


def _reader(layer, width: int):
    """``read_at(length)`` for ``judge_rows``: keras-hub's table does not depend on the
    sequence's length, so every length reads the same."""
    import keras

    half = width // 2
    pairs = np.arange(half)

    def read(positions):
        positions = np.asarray(positions, np.int64)
        x = np.zeros((half, len(positions), 1, width), np.float32)
        x[pairs, :, 0, pairs] = 1.0  # row k: the unit vector of column k
        y = layer(x, positions=np.broadcast_to(positions, (half, len(positions))))
        y = np.asarray(keras.ops.convert_to_numpy(y), np.float64)
        return y[pairs, :, 0, pairs].T.copy(), y[pairs, :, 0, half + pairs].T.copy()

    return lambda length: read
