"""Beside the lmdeploy glue (lmdeploy.py), what is not the use of the kit: TORCHDYNAMO_DISABLE=1
before torch is imported (the rotary builder then runs on the CPU's default backend), and which
model modules build their RoPE with build_rotary_embedding_from_config."""

import importlib.util
import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")


def calls_builder(module: str) -> bool:
    """Whether the source of ``module`` (not imported) calls build_rotary_embedding_from_config."""
    with open(importlib.util.find_spec(module).origin, encoding="utf-8") as source:
        return "build_rotary_embedding_from_config" in source.read()
