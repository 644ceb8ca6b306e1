"""MaxText 0.2.5 (JAX, CPU): the rotary module Attention.init_rotary_embedding builds
(maxtext/layers/attentions.py) from MaxText's config keys, set from a Hugging Face config as its
model configs set them: rope_max_timescale = rope_theta, rope_type "llama3.1" for llama3 scaling
(LLaMARotaryEmbedding, maxtext/layers/embeddings.py), "yarn" with rope_factor,
original_max_position_embeddings, beta_fast/slow, rope_truncate, rope_interleave false,
rope_attention_scaling as its gpt-oss/OLMo-3 configs set it; rope_linear_scaling_factor for
linear; the rotary width from partial_rotary_factor (PartialRotaryEmbedding rotates that many)."""

import jax.numpy as jnp
from _runs import text_config
from maxtext.layers.embeddings import LLaMARotaryEmbedding, RotaryEmbedding, YarnRotaryEmbedding

from sinpe.testing import Rotates

# the text families of MaxText's model configs (configs/models) with one RoPE for every layer
FAMILIES = (
    "llama",
    "llama4_text",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "deepseek_v3",
    "gpt_oss",
)


def candidate(config: dict):
    c = text_config(config)
    rp = c.get("rope_parameters") or c.get("rope_scaling") or {}
    kind = rp.get("rope_type", rp.get("type", "default"))
    head = (
        c.get("qk_rope_head_dim")
        or c.get("head_dim")
        or c["hidden_size"] // c["num_attention_heads"]
    )
    dims = int(head * c.get("partial_rotary_factor", rp.get("partial_rotary_factor", 1.0)))
    theta = c.get("rope_theta", rp.get("rope_theta", 10_000))
    common = dict(mesh=None, embedding_dims=dims, fprop_dtype=jnp.float32)
    if (
        kind == "llama3"
    ):  # MaxText's "llama3.1": factor 8, 1, 4, 8192 fixed in _apply_scaling_factor
        rope, layout = LLaMARotaryEmbedding(1, theta, **common), "interleaved"
    elif kind == "yarn":
        rope, layout = (
            YarnRotaryEmbedding(
                **common,
                max_position_embeddings=c["max_position_embeddings"],
                rope_theta=theta,
                original_max_position_embeddings=rp["original_max_position_embeddings"],
                rope_factor=rp["factor"],
                beta_fast=rp.get("beta_fast", 32),
                beta_slow=rp.get("beta_slow", 1),
                truncate=rp.get("truncate", True),
                # rope_interleave: false (its interleaved mode takes pairs in, gives halves out);
                # the factor multiplied in where no mscale_all_dim folds it into the softmax scale
                interleave=False,
                attention_scaling="mscale_all_dim" not in rp,
            ),
            "half",
        )
    elif kind in ("default", "linear"):
        rope, layout = (
            RotaryEmbedding(1, theta, **common, rope_linear_scaling_factor=rp.get("factor", 1.0)),
            "half",
        )
    else:
        raise NotImplementedError(f"MaxText 0.2.5 has no {kind!r} RoPE for a text model")

    def rotate(q, positions):
        return rope(jnp.asarray(q)[None, :, None, :], jnp.asarray(positions)[None])[0, :, 0, :]

    return Rotates(rotate, layout)
