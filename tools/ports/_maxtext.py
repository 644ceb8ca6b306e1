"""Beside the MaxText glue (maxtext.py), what is not the use of the kit: the families it takes,
and YaRN's arguments as MaxText's model configs (configs/models) set its keys from a Hugging Face
config: max_position_embeddings, rope_max_timescale = rope_theta, original_max_position_embeddings,
rope_factor, beta_fast/slow, rope_truncate, rope_interleave false, rope_attention_scaling as its
gpt-oss/OLMo-3 configs set it."""

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


def yarn_args(k) -> dict:
    """YarnRotaryEmbedding's arguments from ``_runs.rope_keys(config)``."""
    rp = k.params
    return dict(
        max_position_embeddings=k.text["max_position_embeddings"],
        rope_theta=k.theta,
        original_max_position_embeddings=rp["original_max_position_embeddings"],
        rope_factor=rp["factor"],
        beta_fast=rp.get("beta_fast", 32),
        beta_slow=rp.get("beta_slow", 1),
        truncate=rp.get("truncate", True),
        # rope_interleave: false (its interleaved mode takes pairs in, gives halves out);
        # the factor multiplied in where no mscale_all_dim folds it into the softmax scale
        interleave=False,
        attention_scaling="mscale_all_dim" not in rp,
    )
