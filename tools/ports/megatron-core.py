"""Megatron-Core 0.16.1: the rotary module GPTModel builds (megatron/core/models/gpt/gpt_model.py,
GPTModel.__init__) from the arguments a Hugging Face config maps to (as Megatron-Bridge's
providers map them: rope_theta, partial_rotary_factor, llama3 -> rope_scaling + factor,
linear -> seq_len_interpolation_factor, yarn -> position_embedding_type 'yarn')."""

import torch
from _runs import by_runs, text_config
from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
from megatron.core.models.common.embeddings.yarn_rotary_pos_embedding import YarnRotaryEmbedding

torch.cuda.current_device = lambda: "cpu"  # get_emb moves inv_freq to the GPU unconditionally


def candidate(config: dict):
    c = text_config(config)
    rp = c.get("rope_parameters") or c.get("rope_scaling") or {}
    kind = rp.get("rope_type", rp.get("type", "default"))
    head = (
        c.get("qk_rope_head_dim")
        or c.get("head_dim")
        or c["hidden_size"] // c["num_attention_heads"]
    )
    common = dict(
        kv_channels=head,
        rotary_percent=c.get("partial_rotary_factor", rp.get("partial_rotary_factor", 1.0)),
        rotary_base=c.get("rope_theta", rp.get("rope_theta", 10000)),
        use_cpu_initialization=True,
    )
    if kind == "yarn":
        rope = YarnRotaryEmbedding(
            **common,
            scaling_factor=rp["factor"],
            original_max_position_embeddings=rp["original_max_position_embeddings"],
            beta_fast=rp.get("beta_fast", 32.0),
            beta_slow=rp.get("beta_slow", 1.0),
            mscale=rp.get("mscale", 1.0),
            mscale_all_dim=rp.get("mscale_all_dim", 0.0),
            correction_range_round_to_int=rp.get("truncate", True),
        )

        def table(length, offset):
            emb, mscale = rope.get_emb(length, offset)
            return emb.cos() * mscale, emb.sin() * mscale

        return by_runs(table)
    if kind not in ("default", "linear", "llama3"):
        raise NotImplementedError(f"Megatron-Core 0.16.1 has no {kind!r} RoPE")
    rope = RotaryEmbedding(
        **common,
        seq_len_interpolation_factor=rp["factor"] if kind == "linear" else None,
        rope_scaling=kind == "llama3",
        rope_scaling_factor=rp.get("factor", 8.0),
    )
    return by_runs(rope.get_cos_sin)
