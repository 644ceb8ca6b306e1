"""``sinpe check``: how far another engine's cos/sin cache is from the exact table.

A cache is read from a file (``.npy``; ``.npz`` with ``cos`` and ``sin`` or one array; ``.pt``
with torch, ``weights_only=True``; ``.safetensors`` with safetensors), its layout is found by
trying each one sinpe writes (or given), and its error against the exact table (for the
model's config, rows from an offset) is summarised by position decade.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

__all__ = ["LAYOUTS", "Report", "compare", "load"]

LAYOUTS = ("half", "interleaved", "compact", "vllm", "complex", "pairs")
MAX_CACHE_BYTES = 16 << 30  # a cache of more than 16 GiB is not a RoPE cache
# The float32-angle signature: the usual computation forms p * w in float32, so its error
# grows in proportion to the position; an exact table's stays at the rounding of its dtype.
GROWTH_FACTOR = 8.0


class Report(NamedTuple):
    layout: str
    rows: int
    decades: list  # (first position, last position, largest error)
    largest: float
    grows: bool
    errors: np.ndarray  # the largest error of each row


def _arrays_from(mapping, path):
    keys = list(mapping)
    if "cos" in keys and "sin" in keys:
        return [np.asarray(mapping["cos"]), np.asarray(mapping["sin"])]
    if len(keys) == 1:
        return [np.asarray(mapping[keys[0]])]
    raise ValueError(
        f"{path} holds {', '.join(map(repr, keys[:8]))}: expected 'cos' and 'sin', or one array"
    )


def _regular(path: str) -> None:
    if not os.path.exists(path):
        raise ValueError(f"cannot read {path!r}: no such file")
    if not os.path.isfile(path):
        raise ValueError(f"{path!r} is not a regular file")
    if os.path.getsize(path) > MAX_CACHE_BYTES:
        raise ValueError(f"{path!r} is larger than {MAX_CACHE_BYTES >> 30} GiB")


def load(path: str) -> list:
    """The cache's arrays: ``[cos, sin]`` or ``[one array]``, as NumPy."""
    _regular(path)
    lower = path.lower()
    try:
        if lower.endswith(".npy"):
            return [np.load(path, allow_pickle=False)]
        if lower.endswith(".npz"):
            with np.load(path, allow_pickle=False) as data:
                return _arrays_from({k: data[k] for k in data.files}, path)
        if lower.endswith(".pt") or lower.endswith(".pth"):
            try:
                import torch
            except ImportError:
                raise ValueError(
                    f"{path}: reading .pt files needs torch: pip install torch"
                ) from None
            data = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(data, torch.Tensor):
                data = {"cache": data}
            elif isinstance(data, (tuple, list)) and len(data) == 2:
                data = {"cos": data[0], "sin": data[1]}
            if not isinstance(data, dict):
                raise ValueError(f"{path} holds a {type(data).__name__}, not tensors")
            return _arrays_from({k: _from_torch(v) for k, v in data.items()}, path)
        if lower.endswith(".safetensors"):
            try:
                from safetensors.numpy import load_file
            except ImportError:
                raise ValueError(
                    f"{path}: reading .safetensors files needs safetensors: pip install safetensors"
                ) from None
            return _arrays_from(load_file(path), path)
    except ValueError as exc:
        if path in str(exc):  # sinpe's own, naming the file
            raise
        raise ValueError(f"cannot read {path!r}: {exc}") from None
    except Exception as exc:  # a corrupt or foreign file: one line, never a traceback
        raise ValueError(f"cannot read {path!r}: {type(exc).__name__}: {exc}") from None
    raise ValueError(f"{path}: expected a .npy, .npz, .pt or .safetensors file")


def _from_torch(value):
    import torch

    if not isinstance(value, torch.Tensor):
        raise ValueError(f"expected tensors, got {type(value).__name__}")
    if value.dtype == torch.bfloat16:
        value = value.float()
    return value.detach().cpu().numpy()


def _as_float(array: np.ndarray, name: str) -> np.ndarray:
    if array.dtype.kind == "c":
        return array
    if array.dtype.kind not in "fiu" and array.dtype.name != "bfloat16":
        raise ValueError(f"the cache's {name} has dtype {array.dtype}: not a table of numbers")
    return np.asarray(array, dtype=np.float64)


def _candidates(arrays, h: int):
    """``(layout, cos, sin)`` for every layout the arrays' shapes allow, each as ``(n, 2h)``
    or ``(n, h)`` float arrays comparable with sinpe's table of that layout."""
    out = []
    if len(arrays) == 2:
        cos, sin = (_as_float(a, k) for a, k in zip(arrays, ("cos", "sin")))
        cos, sin = (a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a for a in (cos, sin))
        if cos.shape != sin.shape or cos.ndim != 2:
            raise ValueError(f"cos {cos.shape} and sin {sin.shape} must be two equal 2-D tables")
        if cos.shape[1] == 2 * h:
            out += [("half", cos, sin), ("interleaved", cos, sin)]
        elif cos.shape[1] == h:
            out.append(("compact", cos, sin))
        return out
    (table,) = arrays
    if table.dtype.kind == "c":
        flat = table.reshape(-1, table.shape[-1])
        if flat.shape[1] == h:
            out.append(("complex", flat.real.astype(np.float64), flat.imag.astype(np.float64)))
        return out
    table = _as_float(table, "array")
    if table.ndim == 3 and table.shape[1:] == (h, 2):
        out.append(("pairs", table[..., 0], table[..., 1]))
    elif table.ndim >= 2 and table.shape[-1] == 2 * h:
        flat = table.reshape(-1, 2 * h)
        out.append(("vllm", flat[:, :h], flat[:, h:]))
    return out


def compare(spec, arrays, offset: int = 0, layout: str | None = None) -> Report:
    """The cache's error against ``spec``'s exact table at positions ``offset ..``."""
    h = spec.head_dim // 2
    candidates = _candidates(arrays, h)
    if layout is not None:
        candidates = [c for c in candidates if c[0] == layout]
    if not candidates:
        shapes = ", ".join(str(a.shape) for a in arrays)
        allowed = f"layout {layout!r}" if layout else f"any layout ({', '.join(LAYOUTS)})"
        raise ValueError(
            f"the cache's arrays {shapes} do not fit {allowed} of rotary dim {spec.head_dim}"
        )
    best = None
    for name, cos, sin in candidates:
        n = cos.shape[0]
        kind = "half" if name in ("half", "interleaved") else "compact"
        exact = spec.rope(n, offset=offset, layout=name if kind == "half" else "compact")
        with np.errstate(invalid="ignore", over="ignore"):
            errors = np.maximum(np.abs(cos - exact[0]), np.abs(sin - exact[1])).max(
                axis=1, initial=0
            )
        errors = np.where(np.isfinite(errors), errors, np.inf)
        largest = float(errors.max(initial=0.0))
        if best is None or largest < best[1]:
            best = (name, largest, errors)
    name, largest, errors = best
    positions = offset + np.arange(errors.shape[0])
    decades, lo = [], 0
    while lo <= (positions[-1] if positions.size else 0):
        hi = 10 if lo == 0 else lo * 10
        mask = (positions >= lo) & (positions < hi)
        if mask.any():
            decades.append(
                (int(positions[mask][0]), int(positions[mask][-1]), float(errors[mask].max()))
            )
        lo = hi
    grows = False
    if len(decades) >= 3:
        early = max(e for a, b, e in decades[:2])
        grows = decades[-1][2] >= GROWTH_FACTOR * max(early, 1e-300) and decades[-1][2] > 1e-6
    return Report(name, int(errors.shape[0]), decades, largest, grows, errors)
