"""Where an MLX model keeps its RoPE modules, and each module as a call the probe adapter
(``sinpe._check.probe``) can run: mlx_lm's modules (``nn.RoPE``, ``Llama3RoPE``,
``YarnRoPE``, ``SuScaledRoPE``, ...) are all called as ``rope(x, offset=o)`` with ``x``
shaped ``(batch, heads, L, head_dim)``, rotate the first ``dims`` elements and pass the rest
through. No class of mlx_lm is named here: a module is whatever a layer keeps as ``rope``."""

from __future__ import annotations

import re

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .._verdict.layers import layer_index

__all__ = ["call_of", "dims_of", "find_ropes", "layer_index"]

_NAMES = ("rope", "rotary_emb")  # the attribute a layer keeps its RoPE module in


def find_ropes(model) -> list:
    """``[(name, parent, attribute, module)]``: every module a layer keeps as ``rope`` (or
    ``rotary_emb``), in the model's order (layer 2 before layer 10)."""
    found = []
    for name, module in model.named_modules():
        for attribute in _NAMES:
            child = module.get(attribute) if isinstance(module, dict) else None
            if isinstance(child, nn.Module) and callable(child):
                found.append(
                    (f"{name}.{attribute}" if name else attribute, module, attribute, child)
                )
    return sorted(
        found, key=lambda item: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", item[0])]
    )


def dims_of(rope, default: int) -> int:
    """The rotary width: the module's ``dims`` (or ``dim``), else ``default``."""
    for attribute in ("dims", "dim"):
        value = getattr(rope, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def call_of(rope):
    """The module as the probe calls it: NumPy float32 in, float64 out."""

    def call(x: np.ndarray, offset: int) -> np.ndarray:
        return np.array(rope(mx.array(x), offset=offset), dtype=np.float64)

    return call
