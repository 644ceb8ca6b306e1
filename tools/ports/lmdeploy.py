"""lmdeploy 0.18.0, PyTorch engine: the rotary module its models build from their text config
(lmdeploy/pytorch/nn/rotary_embedding.py, build_rotary_embedding_from_config), on the CPU."""

import _lmdeploy  # first: TORCHDYNAMO_DISABLE=1 before torch is imported
import torch
from lmdeploy.pytorch.models.module_map import MODULE_MAP
from lmdeploy.pytorch.nn.rotary_embedding import build_rotary_embedding_from_config
from transformers import AutoConfig


def takes(config: dict):
    """None where lmdeploy maps the architecture to a model whose RoPE that builder makes."""
    arch = (config.get("architectures") or ["(none)"])[0]
    if arch not in MODULE_MAP:
        return f"architecture {arch} is not in lmdeploy's MODULE_MAP"
    module = MODULE_MAP[arch].rpartition(".")[0]
    if not _lmdeploy.calls_builder(module):
        return f"{module} builds its RoPE without build_rotary_embedding_from_config"
    return None


def candidate(config: dict):
    hf = AutoConfig.for_model(**config).get_text_config()
    rotary = build_rotary_embedding_from_config(hf, device=torch.device("cpu"))

    def table(positions):
        cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.as_tensor(positions)[None])
        return cos[0], sin[0]

    return table
