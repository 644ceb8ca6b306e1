"""A loaded vLLM model's rotary layers against the model's own config.json, read as
transformers reads it (``sinpe.rope_config``), not as vLLM's ``hf_config`` holds it."""

from __future__ import annotations

import functools
import json
import os
import warnings

from .._rope.config import rope_config
from ._audit import audit_layer, fill_exact, unchecked

__all__ = ["audit_model", "check", "layers", "model_config_json"]


def model_config_json(model_config) -> tuple[dict, str]:
    """``(config mapping, where it came from)``: the model folder's config.json, else the
    Hugging Face cache's copy vLLM downloaded, else vLLM's own ``hf_config``."""
    source = getattr(model_config, "hf_config_path", None) or model_config.model
    path = os.path.join(str(source), "config.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), path
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(str(source), "config.json", revision=model_config.revision)
    except ImportError:
        cached = None
    if isinstance(cached, str):
        with open(cached, encoding="utf-8") as handle:
            return json.load(handle), cached
    return model_config.hf_config.to_dict(), "vLLM's hf_config (no config.json found)"


def layers(model) -> dict:
    """``{id: (layer, [names])}`` of every distinct rotary layer (vLLM shares one module
    among the layers with the same RoPE)."""
    found: dict = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if type(module).__name__.endswith("RotaryEmbedding"):
            found.setdefault(id(module), (module, []))[1].append(name)
    return found


def _spec_for(spec, layer):
    """The spec a layer is judged by: the one RoPE, or the layer type whose base and width
    are the layer's (else the first, and the verdict says how it differs)."""
    if spec.layer_types is None:
        return spec
    specs = [spec.layer(t) for t in spec.layer_types if spec._layers.get(t) is not None]
    for candidate in specs:
        if candidate.base == getattr(layer, "base", None) and candidate.head_dim == getattr(
            layer, "rotary_dim", None
        ):
            return candidate
    return specs[0]


def audit_model(model, model_config, exact: bool = False) -> list:
    """Every distinct rotary layer's ``LayerReport``s, its cache filled exactly where
    ``exact`` and the verdict allows."""
    config, source = model_config_json(model_config)
    reports = _audit(model, config, source, exact)
    differs = hf_config_differs(config, model_config)
    if differs:
        reports = [r._replace(note="; ".join(n for n in (r.note, differs) if n)) for r in reports]
    return reports


_FIELDS = ("head_dim", "base", "scaling", "max_position_embeddings", "layer_types")


def hf_config_differs(config: dict, model_config) -> str:
    """Where vLLM's ``hf_config`` (its transformers' reading, with vLLM's own edits) gives
    another RoPE than the config.json read by sinpe's rules: ``""`` where it does not (or
    cannot be read)."""
    hf_config = getattr(model_config, "hf_config", None)
    if hf_config is None:
        return ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = rope_config(hf_config.to_dict())
            ours = rope_config(config)
    except (ValueError, TypeError, AttributeError):
        return ""
    changed = [
        f"{name} {getattr(theirs, name)!r} where config.json gives {getattr(ours, name)!r}"
        for name in _FIELDS
        if getattr(theirs, name) != getattr(ours, name)
    ]
    return ("vLLM's hf_config reads " + ", ".join(changed)) if changed else ""


def _audit(model, config: dict, source: str, exact: bool) -> list:
    try:
        spec = rope_config(config)
    except ValueError as exc:
        why = f"sinpe.rope_config refuses {source}: {exc}"
        return [unchecked(layer, names, why) for layer, names in layers(model).values()]
    reports = []
    for layer, names in layers(model).values():
        chosen = _spec_for(spec, layer)
        for report in audit_layer(layer, chosen, names):
            reports.append(fill_exact(layer, chosen, report) if exact else report)
    return reports


def check(llm, exact: bool = False) -> list:
    """The ``LayerReport``s of a loaded ``vllm.LLM``'s rotary layers (its model's config.json
    read as transformers reads it); ``exact=True`` also fills each matching cache exactly.
    Runs in vLLM's workers through ``LLM.apply_model``."""
    config, source = model_config_json(llm.llm_engine.model_config)
    per_worker = llm.apply_model(
        functools.partial(_audit, config=config, source=source, exact=exact)
    )
    return [report for found in per_worker for report in found]
