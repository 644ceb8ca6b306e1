"""sinpe for PyTorch: exact RoPE tables as tensors, and modules that stand in for a model's
rotary embedding (transformers) or positional embedding (diffusers' Flux, HunyuanVideo, Wan).

``import sinpe`` never imports this module or torch; ``import sinpe.torch`` needs torch
(``pip install 'sinpe[torch]'``). Every value is the exact float64 value rounded once to the
tensor's dtype by the kernel (float16 and bfloat16 included: no float32 detour), shared with
NumPy without a copy on the CPU.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref

import numpy as np

try:
    import torch
    from torch import nn
except ImportError as exc:  # pragma: no cover - exercised where torch is absent
    raise ImportError(
        "sinpe.torch needs PyTorch, which is not installed: pip install 'sinpe[torch]' "
        "(or any torch 2 build)"
    ) from exc

from ._front import checks as check
from ._front import rope as _rope
from ._front.config import RopeSpec, rope_config

__all__ = [
    "FluxPosEmbed",
    "RotaryEmbedding",
    "grid_ids",
    "patch",
    "rope",
    "rope_at",
    "rope_cache",
]

_TORCH_DTYPES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.complex128: "complex128",
    torch.complex64: "complex64",
}


def _numpy_dtype(dtype, default="float64"):
    """A torch dtype (or any NumPy spelling) as the NumPy dtype sinpe writes."""
    if dtype is None:
        dtype = default
    if isinstance(dtype, torch.dtype):
        if dtype not in _TORCH_DTYPES:
            raise TypeError(
                f"dtype must be torch.float64, float32, float16 or bfloat16, got {dtype}"
            )
        dtype = _TORCH_DTYPES[dtype]
    if dtype in ("complex64", "complex128"):
        return np.dtype(dtype)
    return check.dtype(dtype)


def _tensor(array: np.ndarray, device=None) -> torch.Tensor:
    """``array`` as a tensor sharing its memory (bfloat16 through its bits), on ``device``."""
    if array.dtype.name == "bfloat16":
        tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    else:
        tensor = torch.from_numpy(array)
    return tensor if device is None else tensor.to(device)


def _positions(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return value


# --------------------------------------------------------------------------- functions


def rope(seq_len, head_dim, *, device=None, dtype=None, **kwargs):
    """:func:`sinpe.rope` as tensors: ``(cos, sin)`` on ``device``; ``dtype`` a torch dtype
    (default float64) or any NumPy spelling."""
    cos, sin = _rope.rope(seq_len, head_dim, dtype=_numpy_dtype(dtype), **kwargs)
    return _tensor(cos, device), _tensor(sin, device)


def rope_at(positions, head_dim, *, device=None, dtype=None, **kwargs):
    """:func:`sinpe.rope_at` as tensors (``positions`` may be a tensor)."""
    cos, sin = _rope.rope_at(_positions(positions), head_dim, dtype=_numpy_dtype(dtype), **kwargs)
    return _tensor(cos, device), _tensor(sin, device)


def rope_cache(seq_len, head_dim, *, device=None, dtype=None, format="vllm", **kwargs):
    """:func:`sinpe.rope_cache` as a tensor (``format="complex"``: complex128 by default)."""
    numpy_dtype = None if dtype is None else _numpy_dtype(dtype)
    table = _rope.rope_cache(seq_len, head_dim, format=format, dtype=numpy_dtype, **kwargs)
    return _tensor(table, device)


# --------------------------------------------------------------------------- transformers


GROWTH_ROWS = 1 << 20  # a table grows to at least this many rows before ids go direct
_LAYERS = weakref.WeakSet()  # every _Layer alive, for the fork handler


def _after_fork_in_child() -> None:
    """A forked child gets fresh table locks: the fork may have come while another thread
    held one to grow a table, and that thread does not exist in the child. The tables kept
    are whole (a grown table is published in one assignment), so they stay."""
    for layer in list(_LAYERS):
        layer.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Layer:
    """One RoPE (a config's, or one layer type's) and its exact compact tables, by dtype,
    device and frequency set, each covering positions ``0 .. n - 1``."""

    def __init__(self, spec: RopeSpec):
        self.spec = spec
        self.kind = spec.scaling["rope_type"]
        self.sections = spec.scaling.get("mrope_section")
        self.interleaved = bool(spec.scaling.get("mrope_interleaved"))
        self.h = spec.head_dim // 2
        inv_freq, self.attention_scaling = spec.frequencies()
        self.inv_freq = inv_freq
        self.original = spec.max_position_embeddings
        self.omp = spec.scaling.get("original_max_position_embeddings")
        # transformers' dynamic_rope_update state
        self.max_seq_len_cached = self.original
        self.dynamic_length = None  # None: the original frequencies
        self.tables = {}
        self.lock = threading.Lock()
        _LAYERS.add(self)
        # tables grow to cover positions below this; ids beyond it are computed as asked,
        # so that memory follows the number of ids, never the largest one
        self.growth_cap = max(2 * (self.original or 0), GROWTH_ROWS)
        self.n_axes = spec.n_axes
        self.axial = spec.scaling["rope_type"] == "axial"
        self.axes = None if spec.axes is None else torch.tensor(spec.axes)

    def length(self, seq_len: int):
        """The length the frequencies are made for at this call, as transformers'
        ``dynamic_rope_update`` decides it (dynamic keeps state between calls)."""
        if self.kind == "longrope":
            return self.omp + 1 if seq_len > self.omp else None
        if self.kind != "dynamic":
            return None
        if seq_len > self.max_seq_len_cached:  # growth
            self.dynamic_length = seq_len
            self.max_seq_len_cached = seq_len
        if seq_len < self.original and self.max_seq_len_cached > self.original:  # reset
            self.dynamic_length = None
            self.max_seq_len_cached = self.original
        return self.dynamic_length

    def table(self, length, dtype: np.dtype, device, n_needed: int):
        """Compact ``(cos, sin)`` tensors covering at least ``n_needed`` positions."""
        key = (length, dtype.name, str(device))
        found = self.tables.get(key)
        if found is not None and found[0].shape[0] >= n_needed:
            return found
        with self.lock:  # one thread grows a table; the others wait, then read it
            found = self.tables.get(key)
            if found is None or found[0].shape[0] < n_needed:
                grown = max(self.original or 0, 2 * found[0].shape[0] if found else 0)
                n = max(n_needed, min(grown, self.growth_cap))
                cos, sin = self._compact(np.arange(n, dtype=np.float64)[None], length, dtype)
                found = (_tensor(cos, device), _tensor(sin, device))
                self.tables = {**self.tables, key: found}
        return found

    def _compact(self, positions: np.ndarray, length, dtype: np.dtype):
        """Exact compact cos, sin at ``(1, n)`` positions for the frequencies of ``length``
        (``None``: the trained length), every position axis at the same positions (the
        recomposition happens after)."""
        p = positions.reshape(-1)
        if self.n_axes > 1:
            p = np.stack([p] * self.n_axes, axis=-1 if self.axial else 0)
        seq_len = 1 if length is None else int(length)
        return self.spec.rope_at(p, layout="compact", dtype=dtype, seq_len=seq_len)

    # torch.compile runs around it, not through it: the tables are NumPy and the kernel's
    @torch.compiler.disable
    def __call__(self, position_ids: torch.Tensor, dtype: np.dtype, device):
        """``(cos, sin)`` for ``position_ids`` (text ``(..., )``; M-RoPE ``(3, ...)``;
        axial ``(N, 2)``) in the half layout."""
        ids = position_ids
        if self.sections is not None and ids.ndim == 2:  # text ids of an M-RoPE model
            ids = ids[None].expand(3, -1, -1)
        if ids.numel() == 0:
            lo = hi = 0
        else:
            lo, hi = int(ids.min()), int(ids.max())  # the one host sync, as transformers'
        length = self.length(hi + 1)
        direct = lo < 0 or ids.is_floating_point() or hi >= self.growth_cap
        if direct or (self.kind == "dynamic" and length is not None):
            # fractional, negative or far positions, or dynamic's re-derived base: exact,
            # the rows asked for only (the same bits a table would hold)
            flat = ids.detach().cpu().numpy().astype(np.float64).reshape(1, -1)
            cos, sin = self._compact(flat, length, dtype)
            cos = _tensor(cos, device).reshape(*ids.shape, self.h)
            sin = _tensor(sin, device).reshape(*ids.shape, self.h)
        else:
            table_cos, table_sin = self.table(length, dtype, device, hi + 1)
            index = ids.to(device=device, dtype=torch.long).reshape(-1)
            # index_select: several times faster than advanced indexing on the CPU
            cos = torch.index_select(table_cos, 0, index).reshape(*ids.shape, self.h)
            sin = torch.index_select(table_sin, 0, index).reshape(*ids.shape, self.h)
        if self.sections is not None:  # frequency i at its section's axis
            cos, sin = (self._recompose(t, axis=0) for t in (cos, sin))
        elif self.kind == "axial":
            cos, sin = (self._recompose(t, axis=-2) for t in (cos, sin))
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)

    def _recompose(self, table: torch.Tensor, axis: int) -> torch.Tensor:
        axes = self.axes.to(table.device)
        parts = table.unbind(axis)
        out = parts[0]
        for a in range(1, len(parts)):
            out = torch.where(axes == a, parts[a], out)
        return out


class RotaryEmbedding(nn.Module):
    """An exact stand-in for a transformers 5.24 rotary-embedding module.

    ``RotaryEmbedding(config, *, layer_type=None, device=None)``: ``config`` as
    :func:`sinpe.rope_config` takes it (a path, a mapping, a transformers config) or a
    ``RopeSpec``. ``forward(x, position_ids)`` returns ``(cos, sin)`` of the shape, layout,
    device and dtype (``x.dtype``) the replaced module returns, each value the exact one
    rounded once; ``forward(x, position_ids, layer_type)`` for per-layer configs (Gemma 3/4),
    as theirs. ``position_ids``: ``(batch, seq)`` token ids; M-RoPE ``(3, batch, seq)`` (2-D
    ids are text, as there); axial ``(N, 2)``.

    Values come from exact tables made once per dtype and device, up to
    ``max_position_embeddings`` positions, and grown (doubling) when a larger position
    arrives, up to ``max(2 * max_position_embeddings, 2**20)`` rows: they hold ``positions x
    head_dim/2 x 2`` values each, and never more than twice the largest position seen. Ids
    beyond that cap (up to 2**53) are computed as asked, the same bits a table would hold,
    in memory that follows the number of ids. A forked child gets fresh locks. ``dynamic``
    and ``longrope`` follow transformers' ``dynamic_rope_update`` per call. The tables are
    not buffers: checkpoints never touch them and ``model.to(dtype)`` cannot cast them;
    ``inv_freq`` is a non-persistent buffer, as transformers'. ``clear()`` frees the tables.
    """

    def __init__(self, config, *, layer_type=None, device=None):
        super().__init__()
        spec = config if isinstance(config, RopeSpec) else rope_config(config)
        if layer_type is not None:
            spec = spec.layer(layer_type)
        self.spec = spec
        self.config = config
        names = spec.layer_types or (None,)
        self._layers = {
            name: _Layer(spec if name is None else spec.layer(name))
            for name in names
            if name is None or spec._layers[name] is not None
        }
        self.layer_types = spec.layer_types
        self.max_seq_len_cached = self.original_max_seq_len = spec.max_position_embeddings
        if spec.layer_types is None:
            layer = self._layers[None]
            self.rope_type = layer.kind
            self.attention_scaling = layer.attention_scaling
            self.register_buffer(
                "inv_freq",
                torch.tensor(layer.inv_freq, dtype=torch.float32, device=device),
                persistent=False,
            )
        else:
            self.rope_type = {name: layer.kind for name, layer in self._layers.items()}
            for name, layer in self._layers.items():
                setattr(self, f"{name}_attention_scaling", layer.attention_scaling)
                self.register_buffer(
                    f"{name}_inv_freq",
                    torch.tensor(layer.inv_freq, dtype=torch.float32, device=device),
                    persistent=False,
                )

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type=None):
        if self.layer_types is not None:
            if layer_type not in self._layers:
                raise ValueError(
                    f"layer_type must be one of {tuple(self._layers)}, got {layer_type!r}"
                )
        elif layer_type is not None:
            raise ValueError("this RoPE has one table for every layer: pass no layer_type")
        dtype = _numpy_dtype(x.dtype)
        return self._layers[layer_type](position_ids, dtype, x.device)

    def clear(self) -> None:
        """Free every table (they are made again on the next call)."""
        for layer in self._layers.values():
            layer.tables = {}

    def extra_repr(self) -> str:
        spec = self.spec
        if spec.layer_types:
            return f"layer_types={spec.layer_types}"
        return (
            f"head_dim={spec.head_dim}, base={spec.base:g}, rope_type={spec.scaling['rope_type']!r}"
        )


# The rotary modules patch() replaces (each tested against its transformers model): their
# forward(x, position_ids[, layer_type]) returns what RotaryEmbedding returns.
KNOWN_MODULES = (
    "LlamaRotaryEmbedding",
    "MistralRotaryEmbedding",
    "Qwen2RotaryEmbedding",
    "Qwen3RotaryEmbedding",
    "Phi3RotaryEmbedding",
    "Gemma3RotaryEmbedding",
    "DeepseekV3RotaryEmbedding",
    "Qwen2VLRotaryEmbedding",
    "Qwen2_5_VLRotaryEmbedding",
    "Qwen3VLTextRotaryEmbedding",
    "PixtralVisionRotaryEmbedding",
)


def patch(model) -> list:
    """Replace every rotary-embedding module of a transformers ``model`` in place with a
    :class:`RotaryEmbedding` of its own config; returns the names it replaced. A module
    named ``...RotaryEmbedding`` of a class sinpe does not know is left alone and named in
    a warning."""
    replaced, unknown = [], []
    for name, module in list(model.named_modules()):
        kind = type(module).__name__
        if not kind.endswith("RotaryEmbedding") or isinstance(module, RotaryEmbedding):
            continue
        if kind not in KNOWN_MODULES or getattr(module, "config", None) is None:
            unknown.append(f"{name} ({kind})")
            continue
        buffers = [b for b in module.buffers()]
        device = buffers[0].device if buffers else None
        new = RotaryEmbedding(module.config.to_dict(), device=device)
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, new)
        replaced.append(name)
    if unknown:
        warnings.warn(
            "sinpe.torch.patch left these rotary modules alone (classes it does not know): "
            + ", ".join(unknown),
            RuntimeWarning,
            stacklevel=2,
        )
    return replaced


# --------------------------------------------------------------------------- diffusers


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
        if ids.ndim != 2 or ids.shape[-1] != len(self.axes_dim):
            raise ValueError(
                f"ids must have shape (N, {len(self.axes_dim)}), got {tuple(ids.shape)}"
            )
        positions = ids.detach().float().cpu().numpy().astype(np.float64).T
        positions = check.positions(np.ascontiguousarray(positions))
        cos, sin = _rope.rope_blocks(
            positions, self.axes_dim, base=float(self.theta), dtype=np.float32
        )
        return _tensor(cos, ids.device), _tensor(sin, ids.device)


def grid_ids(*sizes, device=None) -> torch.Tensor:
    """``(prod(sizes), len(sizes))`` float32 ids of a grid (first axis slowest): what
    HunyuanVideo and Wan rotate, e.g. ``grid_ids(frames, height, width)``."""
    axes = [torch.arange(check.integer("sizes", n, 0), dtype=torch.float32) for n in sizes]
    grid = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([g.reshape(-1) for g in grid], dim=-1).to(device)
