"""Tensors of sinpe's tables: torch dtypes, NumPy arrays shared without a copy (bfloat16
through its bits), and ``rope``/``rope_at``/``rope_cache`` as tensors, into ``out=`` tensors."""

from __future__ import annotations

from typing import Any, Union

import numpy as np
import torch

from .._rope import rope as _rope
from .._rope import rotary as rot
from .._tables import checks as check

__all__ = ["numpy_dtype", "rope", "rope_at", "rope_cache", "tensor"]

# a torch dtype or any NumPy spelling of one; a device as torch takes it
TensorDType = Union["torch.dtype", "np.dtype[Any]", type, str, None]
Device = Union["torch.device", str, int, None]

_TORCH_DTYPES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.complex128: "complex128",
    torch.complex64: "complex64",
}


def numpy_dtype(dtype, default=None):
    """A torch dtype (or any NumPy spelling; ``None``: ``default``, else torch's default
    dtype) as the NumPy dtype sinpe writes."""
    if dtype is None:
        dtype = default if default is not None else torch.get_default_dtype()
    if isinstance(dtype, torch.dtype):
        if dtype not in _TORCH_DTYPES:
            raise TypeError(
                f"dtype must be torch.float64, float32, float16 or bfloat16, got {dtype}"
            )
        dtype = _TORCH_DTYPES[dtype]
    if dtype in ("complex64", "complex128"):
        return np.dtype(dtype)
    return check.dtype(dtype)


def tensor(array: np.ndarray, device=None) -> torch.Tensor:
    """``array`` as a tensor sharing its memory (bfloat16 through its bits), on ``device``."""
    if array.dtype.name == "bfloat16":
        result = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    else:
        result = torch.from_numpy(array)
    return result if device is None else result.to(device)


def _array(out: torch.Tensor, name: str) -> np.ndarray:
    """A writable NumPy view of an ``out=`` tensor (checked: a CPU, contiguous tensor of a
    table dtype), sharing its memory."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(out).__name__}")
    problems = []
    if out.device.type != "cpu":
        problems.append(f"on {out.device} (sinpe fills CPU tensors; move the result)")
    if not out.is_contiguous():
        problems.append("not contiguous")
    if out.requires_grad:
        problems.append("requires grad")
    if out.dtype not in _TORCH_DTYPES or out.is_complex():
        problems.append(f"dtype {out.dtype} (expected float64, float32, float16 or bfloat16)")
    if problems:
        raise ValueError(f"{name} is unusable: " + ", ".join(problems))
    if out.dtype == torch.bfloat16:
        return out.view(torch.int16).numpy().view(check.bfloat16())  # type: ignore[arg-type,unused-ignore]
    return out.numpy()


def _outs(out, count: int):
    if out is None:
        return None
    if isinstance(out, torch.Tensor):
        out = (out,)
    if not isinstance(out, (tuple, list)) or len(out) != count:
        raise TypeError(
            f"out must be {'a tensor' if count == 1 else f'a tuple of {count} tensors'}, "
            f"got {type(out).__name__}"
        )
    return tuple(_array(o, "out") for o in out)


def _dtype_of(dtype, outs):
    """The table dtype: ``dtype``, else ``out``'s, else torch's default."""
    if dtype is None and outs is not None:
        return outs[0].dtype
    return numpy_dtype(dtype)


def _positions(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return value


def _rope_arguments(out, dtype, layout: str, head_dim: int, kwargs: dict):
    """What :func:`rope` and :func:`rope_at` read alike, checked in one order: their ``out``
    pair, the dtype (from ``out`` where it is given), the layout and the rotary spec."""
    outs = _outs(out, 2)
    dtype = _dtype_of(dtype, outs)
    name = check.choice("layout", layout, _rope.LAYOUTS)
    return outs, dtype, name, rot.resolve(head_dim, **_resolve_kwargs(kwargs))


def _pair(out, cos: np.ndarray, sin: np.ndarray, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``cos, sin`` pair a call returns: the caller's ``out`` tensors where it gave them
    (already written), else new tensors on ``device``."""
    if out is not None:
        return out[0], out[1]
    return tensor(cos, device), tensor(sin, device)


def rope(
    seq_len: int,
    head_dim: int,
    *,
    device: Device = None,
    dtype: TensorDType = None,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
    layout: str = "half",
    offset: int = 0,
    threads: int | None = None,
    backend: str = "auto",
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sinpe.rope` as tensors: ``(cos, sin)`` on ``device``.

    ``dtype``: a torch dtype or any NumPy spelling; default ``out``'s, else
    ``torch.get_default_dtype()``. ``out``: ``(cos, sin)`` CPU contiguous tensors, filled and
    returned. Other keywords (``base``, ``scaling``, ``inv_freq``, ...) as :func:`sinpe.rope`.
    """
    outs, dtype, name, rotary = _rope_arguments(out, dtype, layout, head_dim, kwargs)
    cos, sin = rot.table_run(
        rotary, seq_len, offset, name, dtype, threads, backend, "sinpe.torch.rope", outs
    )
    return _pair(out, cos, sin, device)


def rope_at(
    positions: Any,
    head_dim: int,
    *,
    device: Device = None,
    dtype: TensorDType = None,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
    layout: str = "half",
    threads: int | None = None,
    backend: str = "auto",
    seq_len: int | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sinpe.rope_at` as tensors (``positions`` may be a tensor; the result goes to
    its device unless ``device`` says otherwise). ``dtype`` and ``out`` as for :func:`rope`."""
    outs, dtype, name, rotary = _rope_arguments(out, dtype, layout, head_dim, kwargs)
    if device is None and isinstance(positions, torch.Tensor):
        device = positions.device
    cos, sin = rot.table_at(
        rotary, _positions(positions), name, dtype, threads, backend, seq_len, outs
    )
    return _pair(out, cos, sin, device)


def rope_cache(
    seq_len: int,
    head_dim: int,
    *,
    device: Device = None,
    dtype: TensorDType = None,
    out: torch.Tensor | None = None,
    format: str = "vllm",
    offset: int = 0,
    threads: int | None = None,
    backend: str = "auto",
    **kwargs: Any,
) -> torch.Tensor:
    """:func:`sinpe.rope_cache` as a tensor. ``dtype``: default ``out``'s, else torch's
    default (``format="complex"``: its complex counterpart). ``out``: a CPU contiguous
    tensor of the cache's shape (real formats), filled and returned."""
    name = check.choice("format", format, _rope.CACHE_FORMATS)
    if name == "complex":
        if out is not None:
            real = tuple(f for f in _rope.CACHE_FORMATS if f != "complex")
            raise ValueError(f"out is for the real formats {real}, not 'complex'")
        if dtype is None:
            dtype = torch.complex128 if torch.get_default_dtype() == torch.float64 else None
            dtype = dtype or torch.complex64
        dtype = numpy_dtype(dtype)
        plane, complex_dtype = _rope.cache_dtypes(name, dtype)
        outs = None
    else:
        outs = _outs(out, 1)
        if outs is not None and name == "pairs":
            outs = (outs[0].reshape(outs[0].shape[0], -1),) if outs[0].ndim == 3 else outs
        plane, complex_dtype = _dtype_of(dtype, outs), None
    rotary = rot.resolve(head_dim, **_resolve_kwargs(kwargs))
    (table,) = rot.table_run(
        rotary, seq_len, offset, name, plane, threads, backend, "sinpe.torch.rope_cache", outs
    )
    if out is not None:
        return out
    return tensor(_rope.cache_table(table, name, complex_dtype), device)


def _resolve_kwargs(kwargs: dict) -> dict:
    allowed = ("base", "scaling", "max_position_embeddings", "inv_freq", "attention_factor")
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(f"unexpected keyword arguments {unknown}; allowed: {', '.join(allowed)}")
    return kwargs
