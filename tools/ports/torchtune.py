"""torchtune 0.6.1: the RoPE module its component builders make (torchtune/models/<family>/
_component_builders.py) from what its model builders take: head_dim, max_seq_len, rope_base."""

import _torchtune
import torch
from _runs import text_config
from torchtune.models.llama3_1._position_embeddings import Llama3ScaledRoPE

from sinpe.testing import Rotates

FAMILIES = _torchtune.FAMILIES  # model_type -> (module, layout), as its builders make them


def candidate(config: dict):
    c = text_config(config)
    rp = c.get("rope_scaling") or c.get("rope_parameters") or {}
    module, layout = FAMILIES[c["model_type"]]
    dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    base = c.get("rope_theta", rp.get("rope_theta", 10_000))
    args = dict(dim=dim, max_seq_len=c["max_position_embeddings"], base=base)
    llama3 = rp.get("rope_type") == "llama3"  # scale_factor alone: low/high/original 1, 4, 8192
    rope = Llama3ScaledRoPE(**args, scale_factor=rp["factor"]) if llama3 else module(**args)

    def rotate(q, positions):
        if positions.max() >= rope.max_seq_len:  # grow the cache, as torchtune's docstring says
            rope.build_rope_cache(int(positions.max()) + 1)
        out = rope(torch.as_tensor(q)[None, :, None, :], input_pos=torch.as_tensor(positions)[None])
        return out[0, :, 0, :]

    return Rotates(rotate, layout)
