"""vLLM's reading of a config (``sinpe engines``): vLLM builds the twin's model as ``vllm.LLM``
does (``EngineArgs.create_engine_config``, one distributed group, ``get_model`` with dummy
weights), its ``max_model_len`` the length asked for, and sinpe's plugin audits each rotary
cache the model holds as it loads (``SINPE_VLLM=audit``). Without a GPU, vLLM's CPU worker's
stand-ins are set first, as its CPU model runner does.

``run`` (``sinpe engines --run``) runs the run model in ``vllm.LLM`` itself, the K tokens
as a prompt at positions moved to each ``p`` (vLLM takes none from a request)."""

from __future__ import annotations

import os
import socket

from .._check.steps import EngineFailed, step
from .._verdict.verdict import unchecked

__all__ = ["read", "run"]


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


def run(model, original: dict, offsets):
    """vLLM's run line: the run model (``_engines/_run.py`` makes it) loaded by ``vllm.LLM``
    (float32, eager, its real weights, sinpe's plugin off) and given the run's ``K`` tokens
    as a prompt for each ``p``. vLLM takes no positions from a request, so a forward
    pre-hook on the model adds ``p`` to the positions its model runner passes (everything
    else, the rotary module, the attention kernel and the KV cache, runs as vLLM runs it);
    the final hidden states of the prompt's tokens are kept by a forward hook, and the
    model's own ``compute_logits`` gives their logits."""
    import time

    from .._check import run as _run

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    raised = _kv_space(model, max(offsets) + _run.K)
    os.environ["SINPE_VLLM"] = "off"  # vLLM's own tables, never sinpe's
    os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"  # the far p, past the config's length
    import vllm

    state: dict = {"p": 0, "rows": []}
    llm = _run_llm(vllm, model, max(offsets) + _run.K, state)
    vocab = llm.llm_engine.model_config.get_vocab_size()
    ids = _run.tokens(vocab)
    rows = min(llm.apply_model(_cache_rows) or [None], key=lambda n: n or 1 << 62)
    params = vllm.SamplingParams(max_tokens=1, temperature=0.0)
    logprobs, seconds, skipped = {}, {}, []
    for p in offsets:
        if rows is not None and p + _run.K > rows:  # past its cache, vLLM reads past it
            skipped.append(
                f"p = {p:,} not run: vLLM's cos/sin cache has {rows:,} rows (the config's "
                "length), and it would read past it (it runs no longer sequences unless "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)"
            )
            continue
        state["p"], state["rows"] = p, []
        start = time.perf_counter()
        with step(f"generate, the prompt's positions moved to {p:,}.."):
            llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
        seconds[p] = time.perf_counter() - start
        logprobs[p] = _logprobs(llm, state["rows"], p)
    how = (
        "the run model loaded by vllm.LLM (float32, eager), the K tokens as a prompt, the "
        "positions vLLM's runner passes to the model moved to p .. p + K - 1 (a forward "
        "pre-hook: vLLM takes no positions from a request); logits from the model's own "
        "compute_logits"
    )
    far = max(seconds, default=0)
    notes = (
        "vLLM takes no positions from a request: the positions its runner passes moved by p "
        f"(a hook; the farthest run, {far:,}, in {seconds.get(far, 0.0):.1f} s)",
        *raised,
        *skipped,
    )
    return _run.RunResult(logprobs, None, notes, how)


def _kv_need(config: dict, length: int, kinds=None) -> int:
    """Bytes of float32 KV cache a model needs for one sequence of ``length`` tokens: each
    full layer ``length`` rows, each sliding layer its window's and each chunked one its
    chunk's (about what vLLM's CPU worker asks for: its hybrid allocator gives a sliding
    layer its window, v1/kv_cache_interface.py's ``ChunkedLocalAttentionSpec`` a chunked
    layer its chunk). ``kinds``: the layer types where the config's JSON leaves them to the
    config class (Llama 4's ``chunked_attention``, from ``no_rope_layers``)."""
    inner = config.get("text_config")
    text: dict = inner if isinstance(inner, dict) else config
    heads = int(text.get("num_attention_heads") or 1)
    kv = int(text.get("num_key_value_heads") or heads)
    head = int(text.get("head_dim") or (text.get("hidden_size") or 0) // heads)
    given = text.get("layer_types") or kinds
    kinds = list(given) if isinstance(given, (list, tuple)) else []
    window = text.get("sliding_window")
    window = window if isinstance(window, int) and window > 0 else length
    chunk = text.get("attention_chunk_size")
    chunk = chunk if isinstance(chunk, int) and chunk > 0 else length
    rows = 0
    for i in range(int(text.get("num_hidden_layers") or 0)):
        kind = str(kinds[i]) if i < len(kinds) else ""
        rows += min(window if "sliding" in kind else chunk if "chunked" in kind else length, length)
    return 2 * kv * head * 4 * rows


def _layer_kinds(model) -> list | None:
    """The run model's layer types as transformers' config class gives them (vLLM builds the
    model from that config), where it has them; ``None`` where it cannot be read."""
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(model))
        kinds = getattr(config.get_text_config(), "layer_types", None)
    except Exception:  # a config transformers cannot read here: the JSON's own, if any
        return None
    return list(kinds) if isinstance(kinds, (list, tuple)) else None


def _kv_space(model, length: int) -> tuple:
    """``VLLM_CPU_KVCACHE_SPACE`` (GiB) raised, for this run only, to what the run model's
    KV cache takes at ``length`` tokens, with a quarter to spare, where it is less (a twin
    that keeps a model's many layers: EXAONE 4's 64); a note saying so, or none."""
    from .._files import reading

    config = reading.read_json(os.path.join(str(model), "config.json"), what="the run model")
    need = -(-_kv_need(config, length, _layer_kinds(model)) * 5 // 4 // (1 << 30))  # GiB, up
    try:
        have = float(os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
    except ValueError:
        return ()
    if need <= have:
        return ()
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(need)
    return (
        f"VLLM_CPU_KVCACHE_SPACE raised from {have:g} to {need} GiB for the run: the run "
        f"model's KV cache at {length:,} tokens",
    )


def _run_llm(vllm, model, length: int, state: dict):
    """The run model in ``vllm.LLM`` (float32, eager, its language model only), its model
    hooked: a forward pre-hook adds ``state["p"]`` to the positions vLLM's runner passes, a
    forward hook keeps (positions, final hidden states) in ``state["rows"]``."""
    import torch

    def shift(module, args, kwargs):
        kwargs["positions"] = kwargs["positions"] + state["p"]
        return args, kwargs

    def keep(module, args, kwargs, output):
        if isinstance(output, torch.Tensor):
            state["rows"].append((kwargs["positions"].clone(), output.detach().clone()))

    def hook(module):
        module.register_forward_pre_hook(shift, with_kwargs=True)
        module.register_forward_hook(keep, with_kwargs=True)

    with step("vllm.LLM (the run model, float32)"):
        llm = vllm.LLM(
            # as in _engine_config: on a CPU with AMX, vLLM's AMX MLA backend takes bfloat16
            # weights only (v1/attention/backends/mla/amx_mla.py,
            # AMXMLAImpl.process_weights_after_loading); its reference CPU one, float32
            attention_backend=None if torch.cuda.is_available() else "CPU_MLA",
            model=str(model),
            skip_tokenizer_init=True,
            dtype="float32",
            enforce_eager=True,
            seed=0,
            max_model_len=length,
            # one sequence at a time: the model runner's per-request buffers are
            # max_num_seqs x max_model_len (v1/worker/gpu_input_batch.py, InputBatch.__init__:
            # token_ids_cpu_tensor, is_token_ids_tensor), 256 x 10,485,760 x 5 bytes (12.5 GiB)
            # for Llama 4 Scout with the CPU's default 256
            max_num_seqs=1,
            enable_prefix_caching=False,
            # a vision-language model's language model alone (its multimodal processor,
            # which wants a tokenizer and a processor config, is never built): the run is
            # text (vllm/config/multimodal.py, MultiModalConfig.language_model_only)
            language_model_only=True,
        )
    llm.apply_model(hook)
    return llm


def _cache_rows(model) -> int | None:
    """The fewest rows of the model's rotary cos/sin caches (``cos_sin_cache``), if any."""
    found = [
        int(module.cos_sin_cache.shape[0])
        for module in model.modules()
        if getattr(module, "cos_sin_cache", None) is not None
    ]
    return min(found) if found else None


def _logprobs(llm, rows: list, p: int):
    """The log-probabilities of the prompt's tokens at ``p .. p + K - 1``: the kept final
    hidden states of those positions, through the model's ``compute_logits``."""
    import torch

    from .._check import run as _run

    kept = {}
    for positions, hidden in rows:
        axis = positions[0] if positions.dim() == 2 else positions  # M-RoPE: (3, tokens)
        for i, position in enumerate(axis.tolist()):
            if p <= position < p + _run.K:
                kept[position] = hidden[i]
    if sorted(kept) != list(range(p, p + _run.K)):
        raise EngineFailed(f"vLLM ran positions {sorted(kept)[:3]}.., not {p:,}..")
    hidden = torch.stack([kept[position] for position in range(p, p + _run.K)])
    (logits,) = llm.apply_model(lambda model: model.compute_logits(hidden))
    return _run.log_softmax(logits.double().numpy())
