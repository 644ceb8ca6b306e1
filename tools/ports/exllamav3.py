"""exllamav3 1.6.5: RopeSettings read from config.json by Config.read_rope_settings_default
(exllamav3/model/config.py) and the RoPE built from them (exllamav3/util/rope.py, RoPE.__init__,
compute_sincos), for the architectures that call it with a rope style alone."""

import types

import torch
from _exllamav3 import Config, RoPE, RopeStyle, rope_style  # exllamav3 without its CUDA build


def takes(config: dict):
    style = rope_style(config)
    return style if isinstance(style, str) else None


def candidate(config: dict):
    cfg = types.SimpleNamespace(config_dict=config)
    cfg.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    rope = RoPE("cpu", Config.read_rope_settings_default(cfg, rope_style(config)))

    def table(positions):
        sin, cos = rope.compute_sincos(torch.as_tensor(positions))
        return cos, sin

    # compute_sincos lays each value out as the style says: GPT-J repeats it in place
    table.layout = "interleaved" if rope.rope_settings.rope_style == RopeStyle.GPTJ else "half"
    return table
