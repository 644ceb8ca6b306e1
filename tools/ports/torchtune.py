"""torchtune 0.6.1: the RoPE module its component builders make (torchtune/models/<family>/
_component_builders.py) from the arguments its model builders take: head_dim, max_seq_len,
rope_base and, for Llama 3.1/3.2, scale_factor (low/high frequency factors and the original
length keep Llama3ScaledRoPE's defaults 1, 4, 8192; no builder reads any other rope_scaling)."""

import torch
from _runs import text_config
from torchtune.models.llama3_1._position_embeddings import Llama3ScaledRoPE
from torchtune.models.phi3._position_embeddings import Phi3RotaryPositionalEmbeddings
from torchtune.models.qwen2._positional_embeddings import Qwen2RotaryPositionalEmbeddings
from torchtune.modules import RotaryPositionalEmbeddings

from sinpe.testing import Rotates

# model_type -> (module, layout): torchtune keeps Llama's pairs interleaved (its checkpoint
# converter permutes q/k), Qwen2's and Phi-3's in halves
FAMILIES = {
    "llama": (RotaryPositionalEmbeddings, "interleaved"),
    "mistral": (RotaryPositionalEmbeddings, "interleaved"),
    "gemma": (RotaryPositionalEmbeddings, "interleaved"),
    "gemma2": (RotaryPositionalEmbeddings, "interleaved"),
    "qwen2": (Qwen2RotaryPositionalEmbeddings, "half"),
    "phi3": (Phi3RotaryPositionalEmbeddings, "half"),
}


def candidate(config: dict):
    c = text_config(config)
    rp = c.get("rope_scaling") or c.get("rope_parameters") or {}
    module, layout = FAMILIES[c["model_type"]]
    args = dict(
        dim=c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"],
        max_seq_len=c["max_position_embeddings"],
        base=c.get("rope_theta", rp.get("rope_theta", 10_000)),
    )
    rope = (
        Llama3ScaledRoPE(**args, scale_factor=rp["factor"])
        if rp.get("rope_type") == "llama3"
        else module(**args)
    )

    def rotate(q, positions):
        if (
            positions.max() >= rope.max_seq_len
        ):  # the cache holds max_seq_len rows; grow it as torchtune's docstring says
            rope.build_rope_cache(int(positions.max()) + 1)
        out = rope(torch.as_tensor(q)[None, :, None, :], input_pos=torch.as_tensor(positions)[None])
        return out[0, :, 0, :]

    return Rotates(rotate, layout)
