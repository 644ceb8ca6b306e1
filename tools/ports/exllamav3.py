"""exllamav3 1.6.5: RopeSettings read from config.json by Config.read_rope_settings_default
(exllamav3/model/config.py) and the RoPE built from them (exllamav3/util/rope.py, RoPE.__init__,
compute_sincos), for the architectures that call it with a rope style alone. Importing
exllamav3 starts a CUDA build, so its packages are stubbed and the two files loaded alone."""

import importlib.util
import os
import re
import sys
import types

import torch

ROOT = os.path.dirname(importlib.util.find_spec("exllamav3").origin)
for name, attrs in {
    "exllamav3": {},
    "exllamav3.util": {},
    "exllamav3.model": {},
    "exllamav3.ext": {"exllamav3_ext": None},
    "exllamav3.loader": {"SafetensorsCollection": object},
    "exllamav3.util.backend": {"INT8_GEMV_MODE": 0},
}.items():
    sys.modules[name] = types.ModuleType(name)
    sys.modules[name].__path__ = [os.path.join(ROOT, *name.split(".")[1:])]
    vars(sys.modules[name]).update(attrs)
from exllamav3.model.config import Config  # noqa: E402
from exllamav3.util.rope import RoPE, RopeStyle  # noqa: E402


def _style(config: dict):
    """The rope style the architecture of config.json passes, where it passes nothing else."""
    arch = (config.get("architectures") or ["(none)"])[0]
    for file in sorted(
        f for f in os.listdir(os.path.join(ROOT, "architecture")) if f.endswith(".py")
    ):
        with open(os.path.join(ROOT, "architecture", file), encoding="utf-8") as source:
            text = source.read()
        if f'arch_string = "{arch}"' in text:
            found = re.search(
                r"self\.rope_settings = self\.read_rope_settings_default\(RopeStyle\.(\w+)\)", text
            )
            return (
                getattr(RopeStyle, found.group(1))
                if found
                else f"{file} reads RoPE settings otherwise"
            )
    return f"exllamav3 has no architecture {arch}"


def takes(config: dict):
    style = _style(config)
    return style if isinstance(style, str) else None


def candidate(config: dict):
    cfg = types.SimpleNamespace(config_dict=config)
    cfg.head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    rope = RoPE("cpu", Config.read_rope_settings_default(cfg, _style(config)))

    def table(positions):
        sin, cos = rope.compute_sincos(torch.as_tensor(positions))
        return cos, sin

    # compute_sincos lays each value out as the style says: GPT-J repeats it in place
    table.layout = "interleaved" if rope.rope_settings.rope_style == RopeStyle.GPTJ else "half"
    return table
