"""Beside the exllamav3 glue (exllamav3.py), what is not the use of the kit: importing exllamav3
starts a CUDA build of its extension, so its packages are stubbed (exllamav3.ext, .loader,
.util.backend) and the two files the glue needs loaded alone (they need only torch); and the rope
style an architecture passes, read from its file in exllamav3/architecture."""

import importlib.util
import os
import re
import sys
import types

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

__all__ = ["Config", "RoPE", "RopeStyle", "rope_style"]


def rope_style(config: dict):
    """The rope style the architecture of config.json passes, where it passes nothing else;
    else why not (a string)."""
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
