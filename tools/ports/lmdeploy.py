"""lmdeploy 0.18.0, PyTorch engine: the rotary module its models build from the Hugging Face
config (lmdeploy/pytorch/nn/rotary_embedding.py, build_rotary_embedding_from_config; the model
classes pass their text config), on the CPU's default backend with TORCHDYNAMO_DISABLE=1."""

import importlib.util
import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
import torch  # noqa: E402
from lmdeploy.pytorch.models.module_map import MODULE_MAP  # noqa: E402
from lmdeploy.pytorch.nn.rotary_embedding import build_rotary_embedding_from_config  # noqa: E402
from transformers import AutoConfig  # noqa: E402


def takes(config: dict):
    """None where lmdeploy maps the architecture to a model whose RoPE that builder makes."""
    arch = (config.get("architectures") or ["(none)"])[0]
    if arch not in MODULE_MAP:
        return f"architecture {arch} is not in lmdeploy's MODULE_MAP"
    module = MODULE_MAP[arch].rpartition(".")[0]
    with open(importlib.util.find_spec(module).origin, encoding="utf-8") as source:
        if "build_rotary_embedding_from_config" not in source.read():
            return f"{module} builds its RoPE without build_rotary_embedding_from_config"
    return None


def candidate(config: dict):
    hf = AutoConfig.for_model(**config).get_text_config()
    rotary = build_rotary_embedding_from_config(hf, device=torch.device("cpu"))

    def table(positions):
        cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.as_tensor(positions)[None])
        return cos[0], sin[0]

    return table
