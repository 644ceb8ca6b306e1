"""SGLang's reading of a config (``sinpe engines``): SGLang builds the twin's model as its
model loader does (``ModelConfig`` reads the folder; ``_initialize_model`` makes the class
``get_model_architecture`` names, with no weights: SGLang's rotary caches are made when the
model is built), in one gloo process group with default server arguments. Each distinct
rotary cache is then judged as sinpe's vLLM plugin judges vLLM's (``sinpe.vllm._model``):
SGLang's rotary classes are vLLM's, forked under the same names with the same ``[cos | sin]``
cache; a class of another name is "unchecked", named.

Without a GPU, two of SGLang's device choices are pointed at the CPU, as its CPU engine
would: the rotary kernel (its torch code, not vLLM's CUDA ops) and the device DeepSeek's YaRN
cache is computed on. Neither changes a value of a table. Where SGLang cannot build a class
on the CPU, the line names its error (``EngineFailed``).

A mismatch is read twice more before it is said (issue 67: once, in CI, gpt-oss's line said
"frequencies differ by up to 0.000148 (pair 26)" and never again): sinpe judges the same
caches a second time, and SGLang builds the model a second time (its process-wide module
cache emptied, so each rotary cache is made anew). Each cache's SHA-256 is noted; where the
two builds' bytes differ, both readings are on the line (the second one's layers named so)
with the rows and pairs that differ; where sinpe's two judgments of the same bytes differ,
the line says that it is sinpe's (a defect). Nothing more is done when nothing mismatches."""

from __future__ import annotations

import hashlib
import socket

from .._check.steps import step
from .._verdict.verdict import unchecked

__all__ = ["RUN_UNAVAILABLE", "read"]

# the run line (``sinpe engines --run``): SGLang runs no model on this machine
RUN_UNAVAILABLE = (
    "SGLang runs a model through sgl-kernel's compiled kernels (attention, sampling), which "
    "its CPU leg installs without (sglang --no-deps, no GPU): no run line here; on a GPU, "
    "tools/gpu_check.py runs the model in sglang.Engine"
)


def _on_the_cpu() -> None:
    import sglang.srt.layers.rotary_embedding.base as base
    import sglang.srt.layers.rotary_embedding.rope_variant as variant

    base._is_cpu = True  # its native kernel; else it imports vllm._custom_ops
    variant.get_device = lambda *args, **kwargs: "cpu"  # DeepSeek's YaRN cache


def _group() -> None:
    """One process's gloo group and the server arguments SGLang's layers read."""
    from sglang.srt.distributed.parallel_state import (
        init_distributed_environment,
        initialize_model_parallel,
    )
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.server_args import ServerArgs

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    init_distributed_environment(
        world_size=1,
        rank=0,
        local_rank=0,
        backend="gloo",
        distributed_init_method=f"tcp://127.0.0.1:{port}",
    )
    # the defaults, unresolved: resolving them for a model path asks for an accelerator
    publish(ServerArgs(model_path="dummy"), role="scheduler", ranks=SpawnRanks(world_rank=0))
    initialize_model_parallel(backend="gloo")


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each distinct rotary cache's verdict against ``original``."""
    import torch
    from transformers import CONFIG_MAPPING

    kind = original.get("model_type")
    if original.get("auto_map") and kind not in CONFIG_MAPPING:  # the model's own code
        return [("model", unchecked("remote_code", engine=repr(kind)))], (), None
    with step("importing SGLang's model loader"):
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.model_loader.loader import _initialize_model

        if not torch.cuda.is_available():
            _on_the_cpu()
    from ..vllm._model import Context, _audit_all

    context = Context(original, "the config given", (), length)
    with step("SGLang's process group"):
        _group()
    try:
        with step("ModelConfig"):
            model_config = ModelConfig(
                model_path=str(folder), dtype="float32", trust_remote_code=False
            )

        def build():
            _forget_rope_modules()
            with step("_initialize_model (no weights)"):
                return _initialize_model(model_config, LoadConfig(load_format="dummy"))

        def reading(model):
            return _audit_all(model, context, engine="SGLang")

        model = build()
        reports = reading(model)
        layers, notes = _said(reports)
        if any(r.judgment.verdict == "mismatch" for r in reports):
            more_layers, more_notes = _read_again(model, reports, build, reading)
            layers += more_layers
            notes += more_notes
    finally:
        torch.distributed.destroy_process_group()
    return layers, tuple(dict.fromkeys(notes)), None


def _said(reports, suffix: str = "") -> tuple:
    """``(layers, notes)`` of the audit's reports, as the line gives them."""
    layers = [
        (f"{r.cls} ({r.names[0]}: {len(r.names)} layers){suffix}", r.judgment) for r in reports
    ]
    notes = [n for r in reports for n in r.notes if n and not n.startswith("largest error")]
    return layers, notes


def _forget_rope_modules() -> None:
    """SGLang's ``get_rope`` hands back a module it made before for the same arguments (a
    process-wide dict): emptied, so that a build makes each rotary cache itself."""
    from sglang.srt.layers.rotary_embedding import factory

    made = getattr(factory, "_ROPE_DICT", None)
    if isinstance(made, dict):
        made.clear()


_BUFFERS = ("cos_sin_cache", "long_short_cos_sin_cache")


def caches(model) -> dict:
    """``{first name: (buffer, tensor)}`` of each distinct rotary layer's table."""
    from ..vllm._model import layers

    found = {}
    for layer, names in layers(model).values():
        for buffer in _BUFFERS:
            tensor = getattr(layer, buffer, None)
            if tensor is not None and hasattr(tensor, "shape"):
                found[names[0]] = (buffer, tensor)
                break
    return found


def digest(tensor) -> str:
    """The SHA-256 of a cache's bytes (its dtype's), the first 16 hex digits."""
    import torch

    raw = tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy()
    return hashlib.sha256(raw.tobytes()).hexdigest()[:16]


def differing(first, second) -> str:
    """Where two caches of one shape differ: the rows, the first of them, the pairs."""
    if first.shape != second.shape or first.dtype != second.dtype:
        return f"shapes {tuple(first.shape)} {first.dtype} and {tuple(second.shape)} {second.dtype}"
    apart = (first != second) & ~(first.isnan() & second.isnan())
    rows = apart.any(dim=1).nonzero().flatten()
    columns = apart.any(dim=0).nonzero().flatten().tolist()
    half = max(1, int(first.shape[1]) // 2)
    pairs = sorted({c % half for c in columns})
    largest = float((first.double() - second.double()).abs().nan_to_num(0.0).max())
    shown = ", ".join(map(str, pairs[:12])) + (", ..." if len(pairs) > 12 else "")
    return (
        f"{rows.numel():,} rows differ (the first at position {int(rows[0]):,}), pairs "
        f"{shown}, by up to {largest:.3g}"
    )


def _read_again(model, reports, build, reading) -> tuple:
    """A mismatch read twice more: the same caches judged again (a difference is sinpe's),
    and the model built again (a difference in the bytes is SGLang's). ``(layers, notes)``:
    the second build's layers where its caches differ, and what was found."""
    first = caches(model)
    notes = [
        f"SGLang's {name} ({buffer}) has SHA-256 {digest(tensor)}"
        for name, (buffer, tensor) in first.items()
    ]
    again = reading(model)
    if [r.judgment.as_json() for r in again] != [r.judgment.as_json() for r in reports]:
        words = "; ".join(f"{r.cls}: {r.judgment.verdict}" for r in again)
        notes.append(
            "sinpe judged the same bytes twice and its verdicts differ (a defect in sinpe, "
            f"not SGLang's): the second judgment says {words}"
        )
    second = build()
    rebuilt = caches(second)
    if any(rebuilt.get(name, (None, None))[1] is tensor for name, (_, tensor) in first.items()):
        return [], notes + ["SGLang's second build reused its rotary modules: not compared"]
    changed = {
        name: differing(tensor, rebuilt[name][1])
        for name, (_, tensor) in first.items()
        if name in rebuilt and digest(tensor) != digest(rebuilt[name][1])
    }
    if not changed and rebuilt.keys() == first.keys():
        return [], notes + ["SGLang's second build of the model made the same bytes"]
    notes += [
        f"SGLang built {name} differently on a second build of the same config "
        f"(SHA-256 {digest(rebuilt[name][1])}): {where}"
        for name, where in changed.items()
    ]
    layers, more = _said(reading(second), " (second build)")
    return layers, notes + more
