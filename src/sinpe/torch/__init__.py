"""sinpe for PyTorch: exact RoPE tables as tensors, and modules that stand in for a model's
rotary embedding (transformers) or positional embedding (diffusers' Flux, HunyuanVideo, Wan).

``import sinpe`` never imports this package or torch; ``import sinpe.torch`` needs torch
(``pip install 'sinpe[torch]'``). Every value is the exact float64 value rounded once to the
tensor's dtype by the kernel (float16 and bfloat16 included: no float32 detour), shared with
NumPy without a copy on the CPU.
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised where torch is absent
    raise ImportError(
        "sinpe.torch needs PyTorch, which is not installed: pip install 'sinpe[torch]' "
        "(or any torch 2 build)"
    ) from exc

from ._diffusers import FluxPosEmbed, grid_ids
from ._patch import PatchReport, patch
from ._rotary import GROWTH_ROWS, MAX_POSITIONS, RotaryEmbedding
from ._sincos import SinCosTable
from ._tensors import rope, rope_at, rope_cache

__all__ = [
    "FluxPosEmbed",
    "GROWTH_ROWS",
    "MAX_POSITIONS",
    "PatchReport",
    "RotaryEmbedding",
    "SinCosTable",
    "grid_ids",
    "patch",
    "rope",
    "rope_at",
    "rope_cache",
]
