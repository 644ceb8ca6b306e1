"""GPT-J's and CodeGen's rotary module, exact: a table of ``(sin, cos)`` by position.

Their module keeps ``embed_positions``, ``[sin | cos]`` of ``rotary_dim / 2`` frequencies
``10000 ** (-2i / rotary_dim)`` at positions ``0 .. max_positions - 1`` (formed in float32),
and ``forward(x, position_ids)`` returns ``(sin, cos)``, compact, gathered by position: GPT-J
casts them to ``x``'s dtype, CodeGen keeps the table's (float32); an id at or past
``max_positions`` raises, as indexing raises. The attention rotates pairs (GPT-J's
``rotate_every_two``): the table is what both need. :class:`SinCosTable` is the same module
with the exact values, each rounded once to float32.
"""

from __future__ import annotations

import torch
from torch import nn

from ._tensors import rope_cache

__all__ = ["SinCosTable", "sin_cos_candidate"]

BASE = 10000.0  # written into both models' create_sinusoidal_positions


class SinCosTable(nn.Module):
    """``forward(x, position_ids) -> (sin, cos)``: GPT-J's (``cast_to_input``) or CodeGen's
    rotary module with the exact table."""

    def __init__(
        self,
        rotary_dim: int,
        max_positions: int,
        *,
        cast_to_input: bool,
        dtype: torch.dtype = torch.float32,
        device=None,
    ):
        super().__init__()
        self.max_positions = max_positions
        self.pos_embd_dim = rotary_dim
        self.cast_to_input = cast_to_input
        self.embed_positions = nn.Buffer(self._table(dtype, device), persistent=False)

    def _table(self, dtype: torch.dtype, device) -> torch.Tensor:
        """``[sin | cos]`` at every position, each value the exact one rounded once."""
        return rope_cache(
            self.max_positions, self.pos_embd_dim, base=BASE, format="sincos", dtype=dtype
        ).to(device)

    def _apply(self, fn, recurse=True):  # model.to(dtype): the table made again, exactly
        before = self.embed_positions
        result = super()._apply(fn, recurse)
        after = self.embed_positions
        if after.dtype != before.dtype and after.is_floating_point():
            self.embed_positions = self._table(after.dtype, after.device)
        return result

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):
        sincos = self.embed_positions[position_ids]
        if self.cast_to_input:
            sincos = sincos.to(x.dtype)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        return sin, cos

    def extra_repr(self) -> str:
        return (
            f"rotary_dim={self.pos_embd_dim}, max_positions={self.max_positions}, "
            f"cast_to_input={self.cast_to_input}"
        )


def _angle_bound(positions: torch.Tensor) -> torch.Tensor:
    """The original's float32 error at each position: its angle ``p * w`` rounded in float32
    (and ``w`` itself), and the float32 sin/cos."""
    return 2.0**-21 * (1.0 + positions.to(torch.float64)) + 2.0**-23


def sin_cos_candidate(module) -> tuple[SinCosTable | None, str]:
    """An exact stand-in for a GPT-J-style module (``embed_positions``, ``pos_embd_dim``,
    ``max_positions``), checked against it: its table at every position, and ``forward`` on
    probe ids (structure, shapes, dtype for float32 and float16 input, values); or why not."""
    buffer = getattr(module, "embed_positions", None)
    rotary_dim = getattr(module, "pos_embd_dim", None)
    length = getattr(module, "max_positions", None)
    if not isinstance(buffer, torch.Tensor) or not isinstance(rotary_dim, int):
        return None, "no inv_freq buffer"
    if not isinstance(length, int) or rotary_dim % 2 or buffer.shape != (length, rotary_dim):
        return None, f"an embed_positions table of shape {tuple(buffer.shape)} sinpe cannot read"
    ids = torch.tensor([sorted({0, 1, 2, 63 % length, length // 2, length - 1})] * 2)
    try:
        with torch.no_grad():
            half = module(torch.zeros(1, dtype=torch.float16), ids)
    except Exception as exc:
        return None, f"its forward fails on probe positions: {type(exc).__name__}: {exc}"[:200]
    if not (isinstance(half, tuple) and len(half) == 2):
        return None, "its forward does not return (sin, cos)"
    cast = half[0].dtype == torch.float16
    mine = SinCosTable(
        rotary_dim, length, cast_to_input=cast, dtype=buffer.dtype, device=buffer.device
    )
    rows = torch.arange(length, device=buffer.device)[:, None]
    off = (buffer.to(torch.float64) - mine.embed_positions.to(torch.float64)).abs()
    if not bool((off <= _angle_bound(rows) + torch.finfo(buffer.dtype).eps).all()):
        return None, f"its table differs from the exact one by {float(off.max()):.3g}"
    with torch.no_grad():
        for x in (torch.zeros(1), torch.zeros(1, dtype=torch.float16)):
            real, exact = module(x, ids), mine(x, ids)
            same = all(
                a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
                for a, b in zip(real, exact)
            )
            if not same:
                return None, f"on {x.dtype} input its output's shape or dtype differs"
    return mine, ""
