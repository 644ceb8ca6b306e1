"""A loaded vLLM model's rotary layers against the model's own config.json, read as
transformers reads it (``sinpe.rope_config``), not as vLLM's ``hf_config`` holds it. The
plugin (``_plugin``) and ``check(llm)`` run the same audit: the same context (config, its
source, the notes on it, the deployment's max_model_len), the same reports."""

from __future__ import annotations

import functools
import os
import warnings
from typing import NamedTuple

from .._files import reading
from .._rope.config import rope_config
from .._verdict.verdict import finding, not_judged, note
from ._audit import LayerReport, _report, audit_layer, fill_exact, is_rotary

__all__ = ["Context", "audit_model", "check", "context", "layers"]


class Context(NamedTuple):
    """What an audit judges a model against: the config mapping, where it came from, the
    notes every report carries, and the deployment's ``max_model_len``."""

    config: dict
    source: str
    notes: tuple
    max_model_len: int | None


def _config_json(source, revision, hf_config, engine: str) -> tuple:
    """``(config mapping, where it came from, found)``: the model folder's config.json, else
    the Hugging Face cache's copy the engine downloaded, else the engine's own ``hf_config``
    (``found`` False: the report says so)."""
    path = os.path.join(str(source), "config.json")
    if os.path.lexists(path):  # through the reading room: a FIFO or a bomb is refused
        return reading.read_json(path), path, True
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(str(source), "config.json", revision=revision)
    except Exception:  # not installed, or a local path that is no repository id
        cached = None
    if isinstance(cached, str):
        return reading.read_json(cached), cached, True
    return hf_config.to_dict(), note("hf_config_source", who=engine), False


def make_context(source, revision, hf_config, length, engine: str = "vLLM") -> Context:
    """The ``Context`` of a model loaded by ``engine`` from ``source`` (a folder or a
    repository id) at ``revision``: its config.json (else the engine's ``hf_config``, said),
    where the engine's ``hf_config`` reads another RoPE (said), the deployment's length."""
    config, where, found = _config_json(source, revision, hf_config, engine)
    notes = [] if found else [note("config_source", engine=where)]
    differs = hf_config_differs(config, hf_config, engine) if found else ""
    if differs:
        notes.append(differs)
    return Context(config, where, tuple(notes), length if isinstance(length, int) else None)


def context(model_config) -> Context:
    """The ``Context`` of a vLLM ``ModelConfig``."""
    source = getattr(model_config, "hf_config_path", None) or getattr(model_config, "model", "")
    return make_context(
        source,
        getattr(model_config, "revision", None),
        getattr(model_config, "hf_config", None),
        getattr(model_config, "max_model_len", None),
    )


def layers(model) -> dict:
    """``{id: (layer, [names])}`` of every distinct rotary layer (vLLM shares one module
    among the layers with the same RoPE)."""
    found: dict = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if is_rotary(module):
            found.setdefault(id(module), (module, []))[1].append(name)
    return found


_PERMUTES = "permute_qk_weight_for_rotary"  # vLLM's models that permute q/k weights at load
_FIELDS = ("head_dim", "base", "scaling", "max_position_embeddings", "layer_types")


def hf_config_differs(config: dict, hf_config, engine: str = "vLLM") -> str:
    """Where the engine's ``hf_config`` (its transformers' reading, with the engine's own
    edits) gives another RoPE than the config.json read by sinpe's rules: ``""`` where it
    does not (or cannot be read)."""
    if hf_config is None:
        return ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = rope_config(hf_config.to_dict())
            ours = rope_config(config)
    except Exception:  # noqa: BLE001 (an hf_config sinpe cannot read says nothing here)
        return ""
    changed = [
        note("hf_field", field=name, engine=getattr(theirs, name), config=getattr(ours, name))
        for name in _FIELDS
        if getattr(theirs, name) != getattr(ours, name)
    ]
    return note("hf_config_differs", who=engine, engine=", ".join(changed)) if changed else ""


def _unapplied(model, config: dict, engine: str) -> tuple:
    """What the config's RoPE parameters ask of the attention that the model's attention
    does not do, as notes: Llama 4's query scale (Ministral 3, Devstral Small 2), which vLLM's
    ``MistralAttention`` applies only from ``config.llama_4_scaling`` (Mistral's params.json),
    never from config.json's ``rope_parameters["llama_4_scaling_beta"]``, and SGLang's
    ``Ministral3Attention`` applies over another length than the config's original one."""
    inner = config.get("text_config")
    text: dict = inner if isinstance(inner, dict) else config
    rope = text.get("rope_parameters") or text.get("rope_scaling") or {}
    beta = rope.get("llama_4_scaling_beta") if isinstance(rope, dict) else None
    if not beta:
        return ()
    length = rope.get("original_max_position_embeddings") or text.get("max_position_embeddings")
    if not isinstance(length, int) or isinstance(length, bool):
        return ()
    modules = list(model.modules())
    # vLLM's MistralAttention: do_llama_4_scaling
    applied = [m.do_llama_4_scaling for m in modules if hasattr(m, "do_llama_4_scaling")]
    if applied and not any(applied):
        return (note("llama4_scale_unread", engine=engine, config=beta, length=length),)
    # SGLang's Ministral3Attention: llama_4_scaling_beta, over its max_position_embeddings
    # (set from the config's top-level original_max_position_embeddings, else 16,384)
    scaled = [m for m in modules if getattr(m, "llama_4_scaling_beta", None) is not None]
    found = sorted({int(getattr(m, "max_position_embeddings", 0) or 0) for m in scaled})
    if found and found != [length]:
        said = " or ".join(f"{n:,}" for n in found)
        return (note("llama4_scale_length", engine=engine, found=said, length=length),)
    return ()


def _audit_all(model, context: Context, engine: str = "vLLM") -> list:
    """Every distinct rotary layer judged (nothing changed); ``engine`` whose model it is
    (SGLang's rotary classes are vLLM's: ``sinpe.sglang._engine``)."""
    refused = None
    try:
        spec = rope_config(context.config)
    except (TypeError, ValueError) as exc:
        spec, refused = None, finding("config_refused", engine=context.source, config=exc)
    reports: list = []
    permuted = any(hasattr(module, _PERMUTES) for module in model.modules())
    for layer, names in layers(model).values():
        try:
            found = audit_layer(
                layer,
                spec,
                names,
                context.config,
                context.max_model_len,
                permuted,
                refused,
                engine,
            )
        except Exception as exc:  # noqa: BLE001 (one odd layer never stops the others)
            why = finding("unreadable", engine=type(layer).__name__, config=exc)
            found = [_report(layer, names, "", 0, not_judged(why))]
        reports += [r._replace(notes=r.notes + context.notes) for r in found]
    try:
        unapplied = _unapplied(model, context.config, engine)
    except Exception as exc:  # noqa: BLE001 (an odd module never stops the audit: said)
        unapplied = (note("unread_attention", engine=f"{type(exc).__name__}: {exc}"),)
    return [r._replace(notes=r.notes + unapplied) for r in reports]


def audit(model, context: Context, exact: bool = False, engine: str = "vLLM") -> list:
    """Every layer judged first; then (``exact``) each cache that matches or drifts filled,
    each layer's outcome in its report (a fill that fails leaves that cache as it was)."""
    reports = _audit_all(model, context, engine)
    if not exact:
        return reports
    by_name = {name: layer for layer, names in layers(model).values() for name in names}
    return [_fill(by_name.get(r.names[0]), context, r, engine) for r in reports]


def _fill(layer, context: Context, report: LayerReport, engine: str) -> LayerReport:
    if report.verdict not in ("match", "drift") or layer is None:
        return report._replace(outcome=note("left", who=engine, engine=report.verdict))
    try:
        spec = _spec_of(layer, context, report)
        return fill_exact(layer, spec, report)
    except Exception as exc:  # noqa: BLE001 (said in the report, the cache as it was made)
        why = f"{type(exc).__name__}: {exc}"
        return report._replace(outcome=note("left", who=engine, engine=why))


def _spec_of(layer, context: Context, report: LayerReport):
    from .._verdict.layers import layer_index, layer_spec

    spec = rope_config(context.config)
    return layer_spec(spec, context.config, layer_index(report.names[0]))


def audit_model(model, model_config, exact: bool = False) -> list:
    """Every distinct rotary layer's ``LayerReport``s, its cache filled exactly where
    ``exact`` and the verdict allows."""
    return audit(model, context(model_config), exact)


def check(llm, exact: bool = False) -> list:
    """The ``LayerReport``s of a loaded ``vllm.LLM``'s rotary layers, as the plugin gives
    them (the same context: its model's config.json read as transformers reads it, or vLLM's
    ``hf_config`` where there is none, said); ``exact=True`` also fills each matching cache.
    Runs in vLLM's workers through ``LLM.apply_model``."""
    found = context(llm.llm_engine.model_config)
    per_worker = llm.apply_model(functools.partial(audit, context=found, exact=exact))
    return [report for reports in per_worker for report in reports]
