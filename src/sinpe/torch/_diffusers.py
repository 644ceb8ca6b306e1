"""diffusers' positional embeddings as exact modules: Flux's axes (also HunyuanVideo's and
Wan's blocks) over a grid of ids."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._rope.rope import rope_blocks
from .._tables import checks as check
from ._tensors import tensor

__all__ = ["FluxPosEmbed", "grid_ids"]


class FluxPosEmbed(nn.Module):
    """diffusers' ``FluxPosEmbed(theta, axes_dim)``, exact: ``forward(ids)`` with ``ids`` of
    shape ``(N, n_axes)`` returns ``(cos, sin)``, float32 ``(N, sum(axes_dim))``: axis ``k``'s
    block rotates ``ids[:, k]`` (taken as float32, as diffusers does) with
    ``theta**(-2i/axes_dim[k])``, each value repeated in place. The same blocks are
    HunyuanVideo's (``theta=256``) and Wan's rotary embeddings over a :func:`grid_ids` grid."""

    def __init__(self, theta, axes_dim):
        super().__init__()
        self.theta = theta
        self.axes_dim = [check.integer("axes_dim", d, 2) for d in axes_dim]
        for d in self.axes_dim:
            if d % 2:
                raise ValueError(f"axes_dim must hold even widths, got {list(axes_dim)}")

    def forward(self, ids: torch.Tensor):
        """``(cos, sin)``, float32 ``(N, sum(axes_dim))`` on ``ids``'s device: the exact
        values of each axis's block at its ids (rounded to float32 first, as diffusers
        takes them), each value twice in place (diffusers' ``repeat_interleave_real``).

        Parameters
        ----------
        ids : torch.Tensor
            ``(N, len(axes_dim))`` positions, one column per axis (:func:`grid_ids`).
        """
        if ids.ndim != 2 or ids.shape[-1] != len(self.axes_dim):
            raise ValueError(
                f"ids must have shape (N, {len(self.axes_dim)}), got {tuple(ids.shape)}"
            )
        positions = ids.detach().float().cpu().numpy().astype(np.float64).T
        positions = check.positions(np.ascontiguousarray(positions))
        cos, sin = rope_blocks(positions, self.axes_dim, base=float(self.theta), dtype=np.float32)
        return tensor(cos, ids.device), tensor(sin, ids.device)


def grid_ids(*sizes, device=None) -> torch.Tensor:
    """``(prod(sizes), len(sizes))`` float32 ids of a grid (first axis slowest): what
    HunyuanVideo and Wan rotate, e.g. ``grid_ids(frames, height, width)``."""
    axes = [torch.arange(check.integer("sizes", n, 0), dtype=torch.float32) for n in sizes]
    grid = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([g.reshape(-1) for g in grid], dim=-1).to(device)
