"""Beside the Megatron-Core glue (megatron-core.py), what is not the use of the kit: the CPU
shim, and YaRN's arguments as Megatron-Bridge's providers map a Hugging Face config to them."""

import torch

# YarnRotaryEmbedding.get_emb (yarn_rotary_pos_embedding.py) moves inv_freq to
# torch.cuda.current_device() whatever use_cpu_initialization says (0.16.1 and 0.19.2)
torch.cuda.current_device = lambda: "cpu"


def yarn_args(params: dict) -> dict:
    """YarnRotaryEmbedding's arguments from the config's YaRN parameters."""
    return dict(
        scaling_factor=params["factor"],
        original_max_position_embeddings=params["original_max_position_embeddings"],
        beta_fast=params.get("beta_fast", 32.0),
        beta_slow=params.get("beta_slow", 1.0),
        mscale=params.get("mscale", 1.0),
        mscale_all_dim=params.get("mscale_all_dim", 0.0),
        correction_range_round_to_int=params.get("truncate", True),
    )
