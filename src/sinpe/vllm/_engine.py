"""vLLM's reading of a config (``sinpe engines``): vLLM builds the twin's model as ``vllm.LLM``
does (``EngineArgs.create_engine_config``, one distributed group, ``get_model`` with dummy
weights), its ``max_model_len`` the length asked for, and sinpe's plugin audits each rotary
cache the model holds as it loads (``SINPE_VLLM=audit``). Without a GPU, vLLM's CPU worker's
stand-ins are set first, as its CPU model runner does."""

from __future__ import annotations

import os
import socket

from .._check.steps import step
from .._verdict.verdict import unchecked

__all__ = ["read"]


def _engine_config(folder, length: int, remote: bool, dtype: str = "float32"):
    import torch
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs(
        model=str(folder),
        tokenizer=str(folder),
        skip_tokenizer_init=True,
        dtype=dtype,
        enforce_eager=True,
        trust_remote_code=remote,
        load_format="dummy",
        seed=0,
        max_model_len=length,
        enable_prefix_caching=False,
        # on a CPU with AMX, vLLM picks its AMX MLA backend, which takes bfloat16 weights
        # only: its reference CPU one takes the float32 twin (the rotary caches are the same)
        attention_backend=None if torch.cuda.is_available() else "CPU_MLA",
    ).create_engine_config()


def _distributed(vllm_config) -> None:
    from vllm.config import set_current_vllm_config
    from vllm.distributed.parallel_state import (
        init_distributed_environment,
        initialize_model_parallel,
    )

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with set_current_vllm_config(vllm_config):
        init_distributed_environment(
            world_size=1,
            rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            local_rank=0,
            backend="gloo",
        )
        initialize_model_parallel(1, 1)


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each distinct rotary layer's verdict, as the plugin reports it."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["SINPE_VLLM"] = "audit"
    os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"  # the length asked for, past the config's
    import torch

    import sinpe.vllm as sv

    if not torch.cuda.is_available():
        import vllm.v1.worker.cpu_worker  # noqa: F401 (its torch.cuda stand-ins)
        from vllm.v1.worker.cpu_model_runner import _set_torch_accelerator_to_noop

        _set_torch_accelerator_to_noop()
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    sv.register()
    from transformers import CONFIG_MAPPING

    kind = original.get("model_type")
    if original.get("auto_map") and kind not in CONFIG_MAPPING:  # the model's own code
        return [("model", unchecked("remote_code", engine=repr(kind)))], (), None
    with step("EngineArgs.create_engine_config"):
        vllm_config = _engine_config(folder, length, remote=False)
    with step("vLLM's distributed group"):
        _distributed(vllm_config)
    with step("get_model (dummy weights)"), set_current_vllm_config(vllm_config):
        get_model(vllm_config=vllm_config)
    layers = [(f"{r.cls} ({r.names[0]}: {len(r.names)} layers)", r.judgment) for r in sv.reports()]
    # the plugin's notes but its "largest error ... up to max_model_len" (the line says it)
    notes = [n for r in sv.reports() for n in r.notes if n and not n.startswith("largest error")]
    return layers, tuple(dict.fromkeys(notes)), None
