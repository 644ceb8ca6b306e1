"""``RotaryEmbedding``: an exact stand-in for a transformers 5.24 rotary-embedding module,
built from the model's ``RopeSpec`` (its layout, its position axes, its output dtype), with
transformers' per-call length rules. Tables are exact and compact, one per dtype, device and
frequency set, grown on demand under a lock that a forked child gets fresh."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

import numpy as np
import torch
from torch import nn

from .._front.config import rope_config
from .._front.spec import RopeSpec
from ._tensors import numpy_dtype, tensor

__all__ = ["GROWTH_ROWS", "RotaryEmbedding"]

GROWTH_ROWS = 1 << 20  # a table grows to at least this many rows before ids go direct
_LAYERS: weakref.WeakSet = weakref.WeakSet()  # every _Layer alive, for the fork handler


def _after_fork_in_child() -> None:
    """A forked child gets fresh table locks: the fork may have come while another thread
    held one to grow a table, and that thread does not exist in the child. The tables kept
    are whole (a grown table is published in one assignment), so they stay."""
    for layer in list(_LAYERS):
        layer.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Layer:
    """One RoPE (a config's, or one layer type's): its exact compact tables by length key,
    dtype and device, each covering positions ``0 .. n - 1``, and transformers'
    ``dynamic_rope_update`` state."""

    def __init__(self, spec: RopeSpec):
        if spec.scaling is None or spec.head_dim is None:
            raise ValueError("a spec with a RoPE per layer type: pass one of its layers")
        self.spec = spec
        self.kind = spec.scaling["rope_type"]
        self.h = spec.head_dim // 2
        self.inv_freq, self.attention_scaling = spec.frequencies()
        self.original = spec.max_position_embeddings
        self.n_axes = spec.n_axes
        self.axial = spec.n_axes > 1 and spec.scaling["rope_type"] == "axial"
        self.axes = None if spec.axes is None else torch.tensor(spec.axes)
        # transformers' dynamic_rope_update state: the length dynamic was last grown to
        self.max_seq_len_cached: int | None = self.original
        self.dynamic_length: int | None = None  # None: the original frequencies
        self.tables: dict = {}
        self.lock = threading.Lock()
        _LAYERS.add(self)
        # tables grow to cover positions below this; ids beyond it are computed as asked,
        # so that memory follows the number of ids, never the largest one
        self.growth_cap = max(2 * (self.original or 0), GROWTH_ROWS)

    def __getstate__(self):  # copies and pickles: a lock of their own
        state = dict(self.__dict__)
        del state["lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()
        _LAYERS.add(self)

    def current_length(self, seq_len: int) -> int | None:
        """The length the frequencies are made for at this call, as transformers'
        ``dynamic_rope_update`` decides it (dynamic keeps state between calls; longrope
        picks its factors by this call's length; ``None``: the trained length)."""
        if self.kind != "dynamic":
            return seq_len
        if seq_len > (self.max_seq_len_cached or 0):  # growth
            self.dynamic_length = seq_len
            self.max_seq_len_cached = seq_len
        if self.original and seq_len < self.original < (self.max_seq_len_cached or 0):  # reset
            self.dynamic_length = None
            self.max_seq_len_cached = self.original
        return self.dynamic_length

    def _text_positions(self, p: np.ndarray) -> np.ndarray:
        """Positions ``p`` on every axis (a text token's), in the shape the spec takes."""
        if self.n_axes == 1:
            return p
        return np.stack([p] * self.n_axes, axis=-1 if self.axial else 0)

    def compact(self, positions: np.ndarray, length, dtype: np.dtype):
        """Exact compact cos, sin at ``positions`` (the spec's shape: M-RoPE's axes first, a
        grid's last) for the frequencies of ``length``."""
        seq_len = 1 if length is None else int(length)
        return self.spec.rope_at(positions, layout="compact", dtype=dtype, seq_len=seq_len)

    def table(self, length, dtype: np.dtype, device, n_needed: int):
        """Compact ``(cos, sin)`` tensors covering at least ``n_needed`` positions."""
        key = (self.spec.length_key(length), dtype.name, str(device))
        found = self.tables.get(key)
        if found is not None and found[0].shape[0] >= n_needed:
            return found
        with self.lock:  # one thread grows a table; the others wait, then read it
            found = self.tables.get(key)
            if found is None or found[0].shape[0] < n_needed:
                grown = max(self.original or 0, 2 * found[0].shape[0] if found else 0)
                n = max(n_needed, min(grown, self.growth_cap))
                p = self._text_positions(np.arange(n, dtype=np.float64))
                cos, sin = self.compact(p, length, dtype)
                found = (tensor(cos, device), tensor(sin, device))
                self.tables = {**self.tables, key: found}
        return found

    def _ids(self, position_ids: torch.Tensor) -> torch.Tensor:
        ids = position_ids
        if self.n_axes > 1 and not self.axial and ids.ndim == 2:  # text ids of an M-RoPE model
            ids = ids[None].expand(self.n_axes, -1, -1)
        if ids.dtype == torch.bool or ids.is_complex():
            raise TypeError(f"position_ids must be integers or floats, got {ids.dtype}")
        return ids

    def values(self, position_ids: torch.Tensor, dtype: np.dtype, device, direct=False):
        """Compact ``(cos, sin)`` for ``position_ids`` (text ``(...)``; M-RoPE ``(3, ...)``;
        a grid ``(..., 2)``), each ``rows + (h,)``, recomposed across axes; ``direct``:
        computed at these positions only (no table)."""
        ids = self._ids(position_ids)
        if ids.numel() == 0:
            lo = hi = 0
        else:
            lo, hi = int(ids.min()), int(ids.max())  # the one host sync, as transformers'
        length = self.current_length(hi + 1)
        rescaled = self.kind == "dynamic" and length is not None
        if direct or rescaled or lo < 0 or ids.is_floating_point() or hi >= self.growth_cap:
            # fractional, negative or far positions, or dynamic's re-derived base: exact,
            # the rows asked for only (the same bits a table would hold)
            flat = ids.detach().cpu().numpy().astype(np.float64)
            cos, sin = self.compact(flat, length, dtype)
            return tensor(cos, device), tensor(sin, device)
        table_cos, table_sin = self.table(length, dtype, device, hi + 1)
        index = ids.to(device=device, dtype=torch.long)
        if self.n_axes == 1:
            rows = index.shape
            index = index.reshape(-1)
            # index_select: several times faster than advanced indexing on the CPU
            cos = torch.index_select(table_cos, 0, index).reshape(*rows, self.h)
            sin = torch.index_select(table_sin, 0, index).reshape(*rows, self.h)
            return cos, sin
        per_axis = index.movedim(-1, 0) if self.axial else index  # (axes, rows...)
        rows = per_axis.shape[1:]
        per_row = per_axis.reshape(self.n_axes, -1)
        axes = self.axes.to(device)  # type: ignore[union-attr,unused-ignore]  # multi-axis: set
        cos = sin = None
        for a in range(self.n_axes):
            c = torch.index_select(table_cos, 0, per_row[a])
            s = torch.index_select(table_sin, 0, per_row[a])
            cos = c if cos is None else torch.where(axes == a, c, cos)
            sin = s if sin is None else torch.where(axes == a, s, sin)
        return cos.reshape(*rows, self.h), sin.reshape(*rows, self.h)


def _layout(cos: torch.Tensor, sin: torch.Tensor, layout: str):
    """The module's output from compact cos/sin in the model's layout."""
    if layout == "half":
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    if layout == "interleaved":
        return torch.repeat_interleave(cos, 2, dim=-1), torch.repeat_interleave(sin, 2, dim=-1)
    if layout == "complex":
        return torch.complex(cos, sin)
    return cos, sin


_LAYOUTS = ("half", "interleaved", "compact", "complex")
_TORCH = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


class RotaryEmbedding(nn.Module):
    """An exact stand-in for a transformers 5.24 rotary-embedding module.

    ``RotaryEmbedding(config, *, layer_type=None, device=None)``: ``config`` as
    :func:`sinpe.rope_config` takes it (a path, a mapping, a transformers config) or a
    ``RopeSpec``; ``layout`` (``"half"``, ``"interleaved"``, ``"compact"``, ``"complex"``)
    overrides the family's, and is needed where sinpe has no record of the model's family.
    It returns what the model's own module returns, in the model's layout
    (``spec.layout``: rotate-half, interleaved (Cohere), compact (gpt-oss) or complex
    ``freqs_cis`` (Llama 4, DeepSeek-V2)) and dtype (``x.dtype``, or the module's own:
    OLMo's float32, ``freqs_cis``'s complex64), each value the exact one rounded once; a
    config sinpe cannot read exactly is refused, never approximated.

    Values come from exact tables made once per dtype and device, up to
    ``max_position_embeddings`` positions, and grown (doubling) when a larger position
    arrives, up to ``max(2 * max_position_embeddings, 2**20)`` rows: they hold ``positions x
    head_dim/2 x 2`` values each, and never more than twice the largest position seen. Ids
    beyond that cap (up to 2**53) are computed as asked, the same bits a table would hold,
    in memory that follows the number of ids. A forked child gets fresh locks. ``dynamic``
    and ``longrope`` follow transformers' ``dynamic_rope_update`` per call. The tables are
    not buffers: checkpoints never touch them and ``model.to(dtype)`` cannot cast them;
    ``inv_freq`` (and ``original_inv_freq``; per layer type ``<type>_inv_freq``) are
    non-persistent float32 buffers, as transformers'. ``clear()`` frees the tables.
    """

    def __init__(
        self,
        config: Any,
        *,
        layer_type: str | None = None,
        device: Any = None,
        layout: str | None = None,
    ) -> None:
        super().__init__()
        spec = config if isinstance(config, RopeSpec) else rope_config(config)
        if layer_type is not None:
            spec = spec.layer(layer_type)
        self.spec = spec
        self.config = config
        self._layers = {}
        for name in spec.layer_types or (None,):
            try:
                self._layers[name] = _Layer(spec if name is None else spec.layer(name))
            except ValueError:  # a layer type with no RoPE (a null mapping)
                continue
        self.layer_types = spec.layer_types
        self.max_seq_len_cached = self.original_max_seq_len = spec.max_position_embeddings
        first = next(iter(self._layers.values()))
        chosen = layout if layout is not None else first.spec.layout
        if chosen is None or chosen not in _LAYOUTS:
            if layout is None:
                raise ValueError(
                    f"model_type {spec.model_type!r} has no family record: what its rotary "
                    "module returns is unknown; pass layout= one of " + ", ".join(_LAYOUTS)
                )
            raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r:.60}")
        self.layout: str = chosen
        self.output_dtype = first.spec.output_dtype
        if spec.layer_types is None:
            self.rope_type = first.kind
            self.attention_scaling = first.attention_scaling
        else:
            self.rope_type = {name: layer.kind for name, layer in self._layers.items()}
        for name, layer in self._layers.items():
            prefix = "" if name is None else f"{name}_"
            if name is not None:
                setattr(self, f"{prefix}attention_scaling", layer.attention_scaling)
            w = torch.tensor(layer.inv_freq, dtype=torch.float32, device=device)
            self.register_buffer(f"{prefix}inv_freq", w, persistent=False)
            self.register_buffer(f"{prefix}original_inv_freq", w.clone(), persistent=False)

    def _layer(self, layer_type) -> _Layer:
        if self.layer_types is not None:
            if layer_type not in self._layers:
                raise ValueError(
                    f"layer_type must be one of {tuple(self._layers)}, got {layer_type!r}"
                )
        elif layer_type is not None:
            raise ValueError("this RoPE has one table for every layer: pass no layer_type")
        return self._layers[layer_type]

    def _dtype(self, x: torch.Tensor) -> np.dtype:
        if self.layout == "complex":
            return np.dtype(np.float32)  # freqs_cis of float32 angles: complex64
        if self.output_dtype != "x":
            return numpy_dtype(_TORCH.get(self.output_dtype, torch.float32))
        return numpy_dtype(x.dtype)

    # torch.compile runs around it, not through it: the tables are NumPy and the kernel's
    @torch.compiler.disable
    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None
    ) -> Any:
        """The model's rotary values at ``position_ids``, exact.

        Parameters
        ----------
        x : torch.Tensor
            Only its dtype and device are read (as transformers' modules do).
        position_ids : torch.Tensor
            ``(batch, seq)`` token ids; M-RoPE ``(3, batch, seq)`` (2-D ids are text, as
            there); a vision grid ``(N, 2)``. Integers (floats: fractional positions, exact).
        layer_type : str, optional
            For per-layer configs (Gemma 3/4, OLMo-3): the layer type, as their modules take.

        Returns
        -------
        (cos, sin) or torch.Tensor
            ``(cos, sin)`` each ``position_ids.shape + (width,)`` in the model's layout and
            dtype, on ``x``'s device; a complex ``freqs_cis`` for complex-layout models.
        """
        layer = self._layer(layer_type)
        cos, sin = layer.values(position_ids, self._dtype(x), x.device)
        return _layout(cos, sin, self.layout)

    def probe(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None
    ) -> Any:
        """What :meth:`forward` returns, computed at these positions only (no table is made
        or grown, no length state changes): what ``patch()`` compares."""
        layer = self._layer(layer_type)
        state = (layer.max_seq_len_cached, layer.dynamic_length)
        try:
            cos, sin = layer.values(position_ids, self._dtype(x), x.device, direct=True)
        finally:
            layer.max_seq_len_cached, layer.dynamic_length = state
        return _layout(cos, sin, self.layout)

    def clear(self) -> None:
        """Free every table (they are made again on the next call)."""
        for layer in self._layers.values():
            layer.tables = {}

    def extra_repr(self) -> str:
        spec = self.spec
        if spec.layer_types:
            return f"layer_types={spec.layer_types}, layout={self.layout!r}"
        return (
            f"head_dim={spec.head_dim}, base={spec.base:g}, "
            f"rope_type={dict(spec.scaling or {}).get('rope_type')!r}"
            f", layout={self.layout!r}"
        )
