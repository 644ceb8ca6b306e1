"""Reading an MLX model's RoPE modules through their call alone: where they are, which
elements they rotate together, how wide, and the ``cos``/``sin`` they apply at any positions.

mlx_lm's modules (``nn.RoPE``, ``Llama3RoPE``, ``YarnRoPE``, ``SuScaledRoPE``, ...) are all
called as ``rope(x, offset=o)`` with ``x`` shaped ``(batch, heads, L, head_dim)``, rotate the
first ``dims`` elements and pass the rest through. A probe input gives the table back: for
a module rotating halves (``traditional=False``), ``x = [1]*d/2 + [0]*d/2`` returns
``[A cos | A sin]``; for pairs (``traditional=True``), ``x = [1, 0, 1, 0, ...]`` returns
``A cos`` at even and ``A sin`` at odd elements (``A``: the attention factor it applies). No
class of mlx_lm is named here: a module is whatever a layer keeps as ``rope``.
"""

from __future__ import annotations

import re

import mlx.core as mx
import mlx.nn as nn
import numpy as np

__all__ = ["dims_of", "find_ropes", "fit_frequencies", "layer_index", "measure", "rotation_of"]

_NAMES = ("rope", "rotary_emb")  # the attribute a layer keeps its RoPE module in
PROBE_EXTRA = 4  # columns past the rotary width: they must come back untouched


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


def layer_index(name: str) -> int | None:
    """The layer a module's name places it in (``model.layers.3.self_attn.rope``: 3)."""
    found = re.search(r"layers\.(\d+)\.", name)
    return int(found.group(1)) if found else None


def dims_of(rope, default: int) -> int:
    """The rotary width: the module's ``dims`` (or ``dim``), else ``default``."""
    for attribute in ("dims", "dim"):
        value = getattr(rope, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def _call(rope, x: np.ndarray, offset) -> np.ndarray:
    return np.array(rope(mx.array(x), offset=offset), dtype=np.float64)


def rotation_of(rope, dims: int) -> str:
    """``"halves"`` or ``"pairs"``: where element 0 sends its sine at position 1."""
    x = np.zeros((1, 1, 1, dims), np.float32)
    x[..., 0] = 1.0
    y = _call(rope, x, 1)[0, 0, 0]
    if abs(y[1]) > 1e-3 and abs(y[dims // 2]) <= 1e-3:
        return "pairs"
    if abs(y[dims // 2]) > 1e-3 and abs(y[1]) <= 1e-3:
        return "halves"
    raise ValueError(f"the module's rotation is neither halves nor pairs (probe: {y[:4]} ...)")


def measure(rope, dims: int, rotation: str, offset, length: int) -> tuple:
    """``(cos, sin)``, each ``(length, dims/2)`` float64 of float32 values, as the module
    applies them at positions ``offset .. offset + length - 1`` (its attention factor in
    them); ``ValueError`` where it changes elements past its width."""
    x = np.zeros((1, 1, length, dims + PROBE_EXTRA), np.float32)
    if rotation == "halves":
        x[..., : dims // 2] = 1.0
    else:
        x[..., 0:dims:2] = 1.0
    x[..., dims:] = 1.0
    y = _call(rope, x, offset)[0, 0]
    if not np.all(y[:, dims:] == 1.0):
        raise ValueError("the module changes the elements past its rotary width")
    if rotation == "halves":
        return y[:, : dims // 2], y[:, dims // 2 : dims]
    return y[:, 0:dims:2], y[:, 1:dims:2]


def fit_frequencies(rope, dims: int, rotation: str, top: int = 1 << 20) -> np.ndarray:
    """The module's inverse frequencies, unwrapped by doubling the position 1, 2, 4 .. ``top``
    (each step's angle fixes the next one's whole turns)."""
    cos, sin = measure(rope, dims, rotation, 1, 1)
    theta = np.arctan2(sin[0], cos[0])
    position = 2
    while position <= top:
        cos, sin = measure(rope, dims, rotation, position, 1)
        angle = np.arctan2(sin[0], cos[0])
        turns = np.round((theta * position - angle) / (2 * np.pi))
        theta = (angle + 2 * np.pi * turns) / position
        position *= 2
    return theta
