"""The verdict core, part three: which of a config's RoPEs a layer is judged by, and at which
lengths a RoPE whose values change with the length (LongRoPE) is judged. Every engine's
adapter asks here, so a sliding-window layer, a Gemma pattern or LongRoPE's two regimes are
told apart the same way for every engine."""

from __future__ import annotations

import re

from .verdict import finding

__all__ = ["LayerUnknown", "layer_index", "layer_spec", "layer_types_of", "lengths", "specs_of"]


class LayerUnknown(ValueError):
    """The config does not say which layer type a layer is (a reason, not a crash)."""

    def __init__(self, index):
        where = "a module outside the numbered layers" if index is None else f"layer {index}"
        self.finding = finding("layer_of", engine=where)
        super().__init__(self.finding.text)


def layer_index(name: str) -> int | None:
    """The layer a module's or node's name places it in (``model.layers.3.self_attn.rope``,
    an ONNX node's ``/model/layers.3/attn/GroupQueryAttention``: 3)."""
    found = re.search(r"layers[./](\d+)[./]", name + ".")
    return int(found.group(1)) if found else None


def layer_types_of(config: dict) -> list | None:
    """The config's ``layer_types`` (or its text config's)."""
    found = config.get("layer_types")
    if found is None and isinstance(config.get("text_config"), dict):
        found = config["text_config"].get("layer_types")
    return found if isinstance(found, list) else None


# a pattern a family's config class sets when the file says none (transformers'
# Gemma3TextConfig: sliding_window_pattern=6, every sixth layer full)
DEFAULT_PATTERN = {"gemma3": 6, "gemma3_text": 6}


def _pattern(config: dict):
    for data in (config, config.get("text_config")):
        if isinstance(data, dict):
            pattern = data.get("sliding_window_pattern")
            if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
                return pattern
    for data in (config.get("text_config"), config):
        if isinstance(data, dict) and data.get("model_type") in DEFAULT_PATTERN:
            return DEFAULT_PATTERN[data["model_type"]]
    return None


def layer_spec(spec, config: dict, index: int | None):
    """The spec of layer ``index``: the config's own for one RoPE; for a RoPE per layer type,
    the type ``layer_types`` gives the layer (else Gemma's ``sliding_window_pattern``: every
    ``pattern``-th layer full, the others sliding). ``LayerUnknown`` where the config does
    not say."""
    if spec.layer_types is None:
        return spec
    types = layer_types_of(config)
    if index is not None and types is not None and 0 <= index < len(types):
        return spec.layer(types[index])
    pattern = _pattern(config)
    if index is not None and pattern is not None:
        kind = "full_attention" if (index + 1) % pattern == 0 else "sliding_attention"
        return spec.layer(kind)
    raise LayerUnknown(index)


def specs_of(spec, config: dict, names) -> dict:
    """``{spec: [names]}``: the layers ``names`` (module names, one per layer that holds the
    module) grouped by the spec each is judged by (one engine module may serve layers of
    different types: each group is judged apart)."""
    found: dict = {}
    for name in names:
        found.setdefault(layer_spec(spec, config, layer_index(name)), []).append(name)
    return found


def lengths(spec, trained: int, given: int | None = None) -> list:
    """The current lengths to judge ``spec`` at: ``given`` if given; else ``trained``, and
    the original length too where the values change with the length (LongRoPE's short
    factors while a sequence is within it)."""
    if given is not None:
        return [given]
    found = {trained}
    original = spec.scaling.get("original_max_position_embeddings")
    if spec.length_dependent() and isinstance(original, int) and 0 < original < trained:
        found.add(original)
    return sorted(found)
