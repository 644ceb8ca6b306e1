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
docs/engines.md).

Its run line (``run``): the run model loaded by ``CausalLM.from_preset`` (its Hugging Face
converter, weights included) and run by ``call_with_cache``, keras-hub's generation step, at
cache index ``p``: the cache ``p + K`` long, its first ``p`` entries empty and masked out (each
decoder layer given that mask through its own mask argument), so that the ``K`` tokens sit at
positions ``p .. p + K - 1`` and attend to each other only."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
from pathlib import Path

import numpy as np

from .._check.probe import judge_rows
from .._check.steps import EngineFailed, step
from .._rope.config import rope_config
from .._rope.rope_types import frequency_count
from .._verdict.layers import layer_spec
from .._verdict.verdict import unchecked

__all__ = ["read", "run"]


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


# ------------------------------------------------------------------ the run line


def run(model, original: dict, offsets):
    """keras-hub's run line: the run model (``_engines/_run.py`` makes it; in its published
    checkpoint's layout where that is not transformers', ``_check/published.py``) loaded by
    ``keras_hub.models.CausalLM.from_preset`` (no preprocessor: its tokenizers need TensorFlow
    Text) and run by ``call_with_cache`` at cache index ``p`` for each ``p``; each decoder
    layer's output kept."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras_hub
    from keras import ops

    from .._check import run as _run
    from .._check.published import published_layout

    with step("the run model in its published layout"):
        model = published_layout(model, "keras-hub")
    with step("keras_hub.models.CausalLM.from_preset (the run model, its converter)"):
        causal_lm = keras_hub.models.CausalLM.from_preset(str(Path(model)), preprocessor=None)
    ids = np.asarray([_run.tokens(int(causal_lm.backbone.token_embedding.input_dim))], "int32")
    logprobs, hidden, skipped = {}, {}, []
    for p in offsets:
        too_big = _square_mask(causal_lm.backbone, p + _run.K)
        if too_big:
            skipped.append(f"p = {p:,} not run: {too_big}")
            continue
        with step(f"{type(causal_lm).__name__}.call_with_cache at cache index {p:,}"):
            cache = _empty_cache(causal_lm, p + _run.K)
            with _past_masked(causal_lm.backbone, p, _run.K) as outputs:
                logits, last, _ = causal_lm.call_with_cache(
                    **_with_nones(
                        causal_lm.call_with_cache,
                        token_ids=ids,
                        cache=cache,
                        cache_update_index=p,
                    )
                )
        logprobs[p] = _run.log_softmax(ops.convert_to_numpy(logits)[0])
        states = [np.asarray(ops.convert_to_numpy(x)[0], np.float64) for x in outputs]
        states[-1] = np.asarray(ops.convert_to_numpy(last)[0], np.float64)  # the final norm's
        hidden[p] = states
    how = (
        "the run model loaded by CausalLM.from_preset (its Hugging Face converter, float32), "
        "call_with_cache at cache index p, the cache's first p entries masked out"
    )
    return _run.RunResult(logprobs, hidden, tuple(skipped), how)


# bytes per entry of a (cache x cache) mask at its peak: 4.6 and 5.2 measured (Gemma 3's twin,
# caches of 32,768 and 16,384 entries: 5.5 and 2.0 GB)
MASK_BYTES = 6


def _square_mask(backbone, length: int) -> str:
    """Why a cache ``length`` long is not run ("" where it is): keras-hub's sliding-window
    attention (Gemma 3's ``gemma3_attention.py``, ``Gemma3Attention._mask_sliding_window``)
    builds a ``length x length`` mask on every call, more than this machine's free memory
    (the process would be killed, as a user's generation at that length would be)."""
    layers = list(getattr(backbone, "transformer_layers", ()))
    attentions = [getattr(layer, "attention", None) for layer in layers] + layers
    if not any(hasattr(a, "_mask_sliding_window") for a in attentions):
        return ""
    need = MASK_BYTES * length * length
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # no such figure here: try it
        return ""
    if need <= free:
        return ""
    found = type(next(a for a in attentions if hasattr(a, "_mask_sliding_window")))
    owner = next(c for c in found.__mro__ if "_mask_sliding_window" in vars(c))
    where = f"{owner.__module__.rpartition('.')[2]}.py, {owner.__name__}"
    return (
        f"keras-hub's sliding attention ({where}._mask_sliding_window) builds a "
        f"{length:,} x {length:,} mask on every call, about {need / 2**30:.0f} GiB where "
        f"this machine has {free / 2**30:.0f} GiB free"
    )


def _with_nones(method, **given) -> dict:
    """``given``, and ``None`` for each other argument ``method`` requires (Gemma 3's images)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    required = [
        name
        for name, parameter in inspect.signature(method).parameters.items()
        if parameter.kind in kinds and parameter.default is inspect.Parameter.empty
    ]
    return {**dict.fromkeys(required), **given}


def _empty_cache(causal_lm, length: int):
    """An empty cache ``length`` long in ``causal_lm``'s own layout: ``_build_cache``'s for 1
    and for 2 tokens name the axis that grows with the length (a stacked tensor or one per
    layer); zeros of that structure, that axis ``length`` long."""
    import keras
    from keras import ops

    built = []
    for n in (1, 2):
        token_ids = ops.ones((1, n), "int32")
        _, cache = causal_lm._build_cache(
            **_with_nones(causal_lm._build_cache, token_ids=token_ids)
        )
        built.append(cache)

    def grown(one, two):
        axes = [i for i, (a, b) in enumerate(zip(one.shape, two.shape)) if a != b]
        if len(axes) != 1 or len(one.shape) != len(two.shape):
            raise EngineFailed(f"its cache's sequence axis is not one axis: {axes}")
        shape = list(one.shape)
        shape[axes[0]] = length
        return ops.zeros(shape, one.dtype)

    return keras.tree.map_structure(grown, *built)


@contextlib.contextmanager
def _past_masked(backbone, p: int, k: int):
    """Each decoder layer given a mask that hides the cache's first ``p`` entries (empty: no
    past was run) through its own argument (``decoder_attention_mask``, else Gemma's
    ``padding_mask`` over the cache); the layer intersects it with its causal mask. Yields the
    list that receives the first layer's input and each layer's output."""
    keep = np.arange(p + k) >= p
    outputs: list = []
    layers = list(backbone.transformer_layers)
    for index, layer in enumerate(layers):
        arguments = inspect.signature(layer.call).parameters
        if "decoder_attention_mask" in arguments:
            mask = {"decoder_attention_mask": np.broadcast_to(keep, (1, k, p + k)).astype("int32")}
        elif "padding_mask" in arguments:
            mask = {"padding_mask": keep[None].astype("int32")}
        else:
            raise EngineFailed(f"{type(layer).__name__}.call takes no mask sinpe can set")
        layer.call = functools.partial(_recorded, layer.call, outputs, index == 0, mask)
    try:
        yield outputs
    finally:
        for layer in layers:
            del layer.call


def _recorded(call, outputs: list, first: bool, mask: dict, x, *args, **kwargs):
    if first:
        outputs.append(x)
    out = call(x, *args, **{**kwargs, **mask})
    outputs.append(out[0] if isinstance(out, tuple) else out)
    return out
