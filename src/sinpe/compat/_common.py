"""What the compat modules share: positions from NumPy or torch, and torch output."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tables.types import TensorOrArray

OUTPUT_TYPES = ("np", "pt")


def is_tensor(value: object) -> bool:
    """A torch tensor, recognised without importing torch."""
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def as_array(value: Any, name: str) -> np.ndarray:
    """NumPy positions from an array-like or a torch tensor (any device; copied to the CPU)."""
    if is_tensor(value):
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of positions, got {type(value).__name__}")
    return np.asarray(value)


def output_type(value: object) -> str:
    if value not in OUTPUT_TYPES:
        raise ValueError(f"output_type must be 'np' or 'pt', got {value!r:.60}")
    return value


def hand_over(table: np.ndarray, output_type: str, device: Any = None) -> TensorOrArray:
    """``table`` as asked: NumPy, or a torch tensor sharing its memory (moved to ``device``
    when one is given, which copies unless it is the CPU)."""
    if output_type == "np":
        return table
    torch = import_torch("output_type='pt'")
    tensor = torch.from_numpy(table)
    return tensor if device is None else tensor.to(device)


def import_torch(why: str) -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"{why} needs PyTorch, which is not installed: pip install torch "
            "(a CPU build is enough)"
        ) from None
    return torch


def embed_dim(name: str, value: object, multiple: int) -> int:
    """A width the original accepts: an int (not bool), >= 0, a multiple of ``multiple``."""
    from .._tables.checks import integer

    value = integer(name, value, 0)
    if value % multiple:
        raise ValueError(f"{name} must be divisible by {multiple}, got {value}")
    return value


def truth(name: str, value: object) -> bool:
    """``bool(value)``, as the originals test their flags (``if cls_token:``), with a clear
    error where there is no single truth value (an array of several elements)."""
    try:
        return bool(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a bool, got {type(value).__name__} {value!r:.60}"
        ) from None
