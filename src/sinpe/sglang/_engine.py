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
on the CPU, the line names its error (``EngineFailed``)."""

from __future__ import annotations

import socket

from .._check.steps import step
from .._verdict.verdict import unchecked

__all__ = ["read"]


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

    with step("SGLang's process group"):
        _group()
    try:
        with step("ModelConfig"):
            model_config = ModelConfig(
                model_path=str(folder), dtype="float32", trust_remote_code=False
            )
        with step("_initialize_model (no weights)"):
            model = _initialize_model(model_config, LoadConfig(load_format="dummy"))
    finally:
        torch.distributed.destroy_process_group()
    context = Context(original, "the config given", (), length)
    reports = _audit_all(model, context, engine="SGLang")
    layers = [(f"{r.cls} ({r.names[0]}: {len(r.names)} layers)", r.judgment) for r in reports]
    notes = [n for r in reports for n in r.notes if n and not n.startswith("largest error")]
    return layers, tuple(dict.fromkeys(notes)), None
