"""Megatron-Core 0.16.1: the rotary module GPTModel.__init__ builds (megatron/core/models/gpt/
gpt_model.py) from a Hugging Face config, mapped as Megatron-Bridge's providers map it: rope_theta,
partial_rotary_factor, llama3 -> rope_scaling + factor, linear -> seq_len_interpolation_factor."""

import _megatron_core  # YaRN's arguments; get_emb's torch.cuda.current_device() -> CPU
from _runs import by_runs, rope_keys
from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
from megatron.core.models.common.embeddings.yarn_rotary_pos_embedding import YarnRotaryEmbedding


def candidate(config: dict):
    k = rope_keys(config)
    common = dict(kv_channels=k.head, rotary_percent=k.partial, rotary_base=k.theta)
    if k.kind == "yarn":
        yarn = _megatron_core.yarn_args(k.params)
        rope = YarnRotaryEmbedding(**common, use_cpu_initialization=True, **yarn)

        def table(length, offset):
            emb, mscale = rope.get_emb(length, offset)
            return emb.cos() * mscale, emb.sin() * mscale

        return by_runs(table)
    if k.kind not in ("default", "linear", "llama3"):
        raise NotImplementedError(f"Megatron-Core 0.16.1 has no {k.kind!r} RoPE")
    linear = k.params["factor"] if k.kind == "linear" else None
    scaling = dict(rope_scaling=k.kind == "llama3", rope_scaling_factor=k.params.get("factor", 8.0))
    rope = RotaryEmbedding(
        **common, use_cpu_initialization=True, seq_len_interpolation_factor=linear, **scaling
    )
    return by_runs(rope.get_cos_sin)
