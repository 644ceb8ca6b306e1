"""``RotaryEmbedding``: an exact stand-in for a transformers 5.24 rotary-embedding module,
built from the model's ``RopeSpec`` (its layout, its position axes, its output dtype), with
transformers' per-call length rules.

Its forward is a lookup: each RoPE's compact cos/sin tables are made once, exactly, when the
module is built (up to ``max_positions``), and held as non-persistent buffers, so that a
compiled or CUDA-graph-captured model runs it with no host sync and no allocation that
depends on the data; a dtype change remakes them exactly. Length-dependent rope types
(dynamic, longrope) and fractional ids take the exact path of the positions asked for, as
transformers' own modules sync there too."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.compiler import is_compiling

from .._rope.config import rope_config
from .._rope.rope_types import ROPE_TYPES, frequency_count
from .._rope.rotary import format_names
from .._rope.spec import RopeSpec
from .._tables import checks as check
from ._tensors import numpy_dtype, tensor

__all__ = ["GROWTH_ROWS", "MAX_POSITIONS", "RotaryEmbedding"]

GROWTH_ROWS = 1 << 20  # a length-dependent RoPE's table grows to this before ids go direct
# the default table length: the trained length, at most this (Llama-4 Scout's 10.5M
# positions would be 5 GiB per dtype); max_positions= sets another
MAX_POSITIONS = 1 << 18
NO_LENGTH_POSITIONS = 8192  # the default for a config without max_position_embeddings
_LAYERS: weakref.WeakSet = weakref.WeakSet()  # every _Layer alive, for the fork handler
_CANDIDATES = threading.local()  # .on: patch() builds candidates, whose tables wait


def _after_fork_in_child() -> None:
    """A forked child gets fresh table locks: the fork may have come while another thread
    held one to grow a table, and that thread does not exist in the child. The tables kept
    are whole (a grown table is published in one assignment), so they stay."""
    for layer in list(_LAYERS):
        layer.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _two_sets(spec: RopeSpec) -> tuple:
    """``((None, L + 1), L)`` when the values take one set of frequencies up to length ``L``
    and one other set past it (longrope), found from the spec's length keys alone; ``((),
    0)`` when they take more (dynamic)."""
    key = spec.length_key
    first, last = key(1), key(2**53)
    lo, hi = 1, 2**53
    while hi - lo > 1:  # the last length of the first set
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if key(mid) == first else (lo, mid)
    if all(key(n) == last for n in (hi, hi + 1, 2 * hi, 2**40)):
        return (None, hi), lo
    return (), 0


class _Layer:
    """One RoPE (a config's, or one layer type's): for a length-dependent one, its exact
    compact tables by length key, dtype and device, each covering positions ``0 .. n - 1``,
    and transformers' ``dynamic_rope_update`` state; the gather every lookup runs."""

    def __init__(self, spec: RopeSpec):
        if spec.scaling is None or spec.head_dim is None:
            raise ValueError("a spec with a RoPE per layer type: pass one of its layers")
        self.spec = spec
        self.kind = spec.scaling["rope_type"]
        self.h = frequency_count(spec.head_dim)
        self.inv_freq, self.attention_scaling = spec.frequencies()
        self.original = spec.max_position_embeddings
        self.n_axes = spec.n_axes
        self.axial = self.record.axes > 1
        self.axes = None if spec.axes is None else torch.tensor(spec.axes)
        self.length_dependent = spec.length_dependent()  # dynamic, longrope
        # the lengths whose frequencies the lookup holds: one set; two where the values
        # switch once, past the trained length (longrope's short and long factors, picked per
        # call on the device, as transformers' torch.where does); none where they change
        # with every length (dynamic: the exact path)
        self.lengths: tuple = (None,)
        self.switch = 0  # the last length of the first set (two sets)
        if self.length_dependent:
            self.lengths, self.switch = _two_sets(spec)
        # transformers' dynamic_rope_update state: the length dynamic was last grown to
        self.max_seq_len_cached: int | None = self.original
        self.dynamic_length: int | None = None  # None: the original frequencies
        self.tables: dict = {}
        self.lock = threading.Lock()
        _LAYERS.add(self)
        # tables grow to cover positions below this; ids beyond it are computed as asked,
        # so that memory follows the number of ids, never the largest one
        self.growth_cap = max(2 * (self.original or 0), GROWTH_ROWS)

    @property
    def record(self):
        """The rope type's record: what its length does to the values."""
        return ROPE_TYPES[self.kind]

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
        if self.record.length_state != "grows":
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
        rescaled = self.record.length_state == "grows" and length is not None
        if direct or rescaled or lo < 0 or ids.is_floating_point() or hi >= self.growth_cap:
            # fractional, negative or far positions, or dynamic's re-derived base: exact,
            # the rows asked for only (the same bits a table would hold)
            flat = ids.detach().cpu().numpy().astype(np.float64)
            cos, sin = self.compact(flat, length, dtype)
            return tensor(cos, device), tensor(sin, device)
        table_cos, table_sin = self.table(length, dtype, device, hi + 1)
        index = ids.to(device=device, dtype=torch.long)
        axes = None if self.axes is None else self.axes.to(device)
        return self.gather(table_cos, table_sin, index, axes)

    def static_table(self, n: int, dtype: np.dtype, length=None):
        """Exact compact ``(cos, sin)`` CPU tensors of positions ``0 .. n - 1`` for the
        frequencies of ``length`` (one of ``lengths``)."""
        p = self._text_positions(np.arange(n, dtype=np.float64))
        cos, sin = self.compact(p, length, dtype)
        return tensor(cos), tensor(sin)

    def gather(self, table_cos, table_sin, index: torch.Tensor, axes):
        """Compact ``(cos, sin)`` rows of ``index`` (text ``(...)``; M-RoPE ``(3, ...)``; a
        grid ``(..., 2)``), each ``rows + (h,)``, recomposed across axes (``axes``: each
        column's axis, on the tables' device)."""
        if self.n_axes == 1:
            if torch.compiler.is_compiling():  # one fused kernel with what follows
                return table_cos[index], table_sin[index]
            rows = index.shape
            index = index.reshape(-1)
            # index_select: several times faster than advanced indexing on the CPU, eagerly
            cos = torch.index_select(table_cos, 0, index).reshape(*rows, self.h)
            sin = torch.index_select(table_sin, 0, index).reshape(*rows, self.h)
            return cos, sin
        per_axis = index.movedim(-1, 0) if self.axial else index  # (axes, rows...)
        rows = per_axis.shape[1:]
        per_row = per_axis.reshape(self.n_axes, -1)
        cos = torch.index_select(table_cos, 0, per_row[0])
        sin = torch.index_select(table_sin, 0, per_row[0])
        for a in range(1, self.n_axes):  # each column from its own axis's row
            cos = torch.where(axes == a, torch.index_select(table_cos, 0, per_row[a]), cos)
            sin = torch.where(axes == a, torch.index_select(table_sin, 0, per_row[a]), sin)
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


_LAYOUTS = format_names("torch")
_TORCH = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
_NAMES = {dtype: name for name, dtype in _TORCH.items()}


class RotaryEmbedding(nn.Module):
    """An exact stand-in for a transformers 5.24 rotary-embedding module.

    ``RotaryEmbedding(config, *, layer_type=None, device=None, layout=None,
    max_positions=None)``: ``config`` as :func:`sinpe.rope_config` takes it (a path, a
    mapping, a transformers config) or a ``RopeSpec``; ``layout`` (``"half"``,
    ``"interleaved"``, ``"compact"``, ``"complex"``) overrides the family's, and is needed
    where sinpe has no record of the model's family. It returns what the model's own module
    returns, in the model's layout (``spec.layout``: rotate-half, interleaved (Cohere),
    compact (gpt-oss) or complex ``freqs_cis`` (Llama 4, DeepSeek-V2)) and dtype
    (``x.dtype``, or the module's own: OLMo's float32, ``freqs_cis``'s complex64), each value
    the exact one rounded once; a config sinpe cannot read exactly is refused, never
    approximated.

    **Tables.** Each RoPE's compact cos/sin tables for positions ``0 .. max_positions - 1``
    are made when the module is built, on ``device``, exactly, and held as non-persistent
    buffers: ``.to(device)`` moves them, ``state_dict`` holds none of them, and a dtype
    change (``.half()``, ``.to(torch.bfloat16)``) remakes them exactly in the new dtype
    (casting would round twice). ``max_positions`` defaults to the config's
    ``max_position_embeddings``, at most ``MAX_POSITIONS`` (2**18; 8192 without one); they
    hold ``2 x max_positions x head_dim/2 x itemsize`` bytes per RoPE (``table_bytes``;
    Llama-3.1 in float32: 64 MiB), refused before any work past the process's memory
    limit. A forward whose ``x`` has another dtype (autocast) makes that dtype's tables once.

    **Forward** is a lookup (``index_select``), then the model's layout: no host sync and no
    allocation that depends on the values, so ``torch.compile(fullgraph=True)``,
    ``torch.export`` and CUDA graphs take it. A negative id, or one at or past
    ``max_positions``, is never wrapped or clamped: on the CPU in eager mode it is computed
    exactly (ids up to 2**53); compiled, exported or on a GPU it raises in the gather's own
    bounds check, on the device (Inductor's indirect-indexing check, CUDA's device-side
    assert; a negative id is first sent past the end, where a compiled gather would wrap
    it): build with a larger ``max_positions=``.
    Length-dependent rope types (``dynamic``, ``longrope``) follow transformers'
    ``dynamic_rope_update`` per call, and fractional (float) ids are computed exactly: both
    read the ids' largest value, as transformers' own modules do, so they run eagerly (a
    graph break under ``torch.compile``; ``fullgraph=True`` refuses them, as it refuses
    transformers' own dynamic modules). A forked child gets fresh locks. ``inv_freq`` (and
    ``original_inv_freq``; per layer type ``<type>_inv_freq``) are non-persistent float32
    buffers, as transformers'. ``clear()`` frees the tables (remade on the next eager call).
    """

    _compiled_path: str | None = None  # (a module pickled by sinpe 0.4.0 has none)

    def __init__(
        self,
        config: Any,
        *,
        layer_type: str | None = None,
        device: Any = None,
        layout: str | None = None,
        max_positions: int | None = None,
    ) -> None:
        super().__init__()
        spec = config if isinstance(config, RopeSpec) else rope_config(config)
        if layer_type is not None:
            spec = spec.layer(layer_type)
        if max_positions is not None:
            max_positions = check.integer("max_positions", max_positions, 1)
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
            if layer.axes is not None:
                axes = layer.axes.to(device=device)
                self.register_buffer(f"{prefix}column_axes", axes, persistent=False)
        # the table length of each RoPE whose values do not depend on the length
        self.max_positions = max_positions or min(
            spec.max_position_embeddings or NO_LENGTH_POSITIONS, MAX_POSITIONS
        )
        self._static = [name for name, layer in self._layers.items() if layer.lengths]
        self._table_names: frozenset = frozenset()  # the table buffers held now
        self._compiled_path = self._common_path()
        if not getattr(_CANDIDATES, "on", False):  # patch() makes them once it has chosen
            self._make_tables(self._fixed_dtype() or "float32", device)

    def _common_path(self) -> str | None:
        """What the compiled forward of the common module (one RoPE, one set of frequencies,
        one position axis, not complex) reads of it, as one string (Dynamo guards on every
        Python value a compiled forward reads): ``"<layout>"`` or ``"<layout>/<fixed
        dtype>"``; None for any other module (the general path)."""
        layer = next(iter(self._layers.values()))
        if self.layer_types is not None or layer.lengths != (None,) or layer.n_axes != 1:
            return None
        if self.layout == "complex":  # (torch.complex: a guard of its own)
            return None
        fixed = self._fixed_dtype()
        return self.layout if fixed is None else f"{self.layout}/{fixed}"

    # ------------------------------------------------------------------ tables

    def _fixed_dtype(self) -> str | None:
        """The tables' dtype when the output's does not follow ``x`` (None: it does)."""
        if self.layout == "complex":
            return "float32"  # freqs_cis of float32 angles: complex64
        return None if self.output_dtype == "x" else self.output_dtype

    def _table_name(self, layer_type, dtype: str, part: str, long: bool = False) -> str:
        """A table buffer's name: ``[<layer type>_]<cos|sin>[_long]_<dtype>``."""
        prefix = "" if layer_type is None else f"{layer_type}_"
        return f"{prefix}{part}{'_long' if long else ''}_{dtype}"

    @property
    def table_bytes(self) -> int:
        """The bytes the tables held now take (every RoPE, every dtype)."""
        return sum(getattr(self, name).nbytes for name in self._table_names)

    def _make_tables(self, dtype: str, device) -> None:
        """Each length-independent RoPE's exact compact tables in ``dtype``, on ``device``,
        registered as non-persistent buffers (their memory checked first)."""
        if not self._static or any(
            self._table_name(name, dtype, "cos") in self._table_names for name in self._static
        ):
            return
        n = self.max_positions
        itemsize = np.dtype(numpy_dtype(dtype)).itemsize
        nbytes = sum(
            2 * n * layer.h * itemsize * len(layer.lengths)
            for layer in (self._layers[name] for name in self._static)
        )
        check.reserve(
            2 * nbytes,  # the NumPy tables and the tensors moved from them
            f"sinpe.torch's {dtype} tables of {n} positions (max_positions={n})",
        )
        names = set(self._table_names)
        for name in self._static:
            layer = self._layers[name]
            for length in layer.lengths:
                cos, sin = layer.static_table(n, numpy_dtype(dtype), length)
                for part, values in (("cos", cos), ("sin", sin)):
                    buffer_name = self._table_name(name, dtype, part, long=length is not None)
                    self.register_buffer(buffer_name, values.to(device), persistent=False)
                    names.add(buffer_name)
        self._table_names = frozenset(names)

    def _drop_tables(self, dtype: str | None = None) -> None:
        for buffer_name in self._table_names:
            if dtype is None or buffer_name.endswith(f"_{dtype}"):
                del self._buffers[buffer_name]
        self._table_names = frozenset(name for name in self._table_names if name in self._buffers)

    def _apply(self, fn, recurse=True):
        """``.to()``, ``.cuda()``, ``.half()``...: the buffers move; a table whose dtype a
        cast changed is made again, exactly, in the new dtype (its own when the module's
        output dtype is fixed), never rounded from the old one."""
        result = super()._apply(fn, recurse)
        for dtype in sorted({name.rsplit("_", 1)[1] for name in self._table_names}):
            sample = getattr(self, self._table_name(self._static[0], dtype, "cos"))
            cast = _NAMES.get(sample.dtype)
            if cast != dtype:
                target = self._fixed_dtype() or (cast if cast is not None else dtype)
                self._drop_tables(dtype)
                self._make_tables(target, sample.device)
        return result

    def clear(self) -> None:
        """Free every table (made again, exactly, on the next eager call)."""
        for layer in self._layers.values():
            layer.tables = {}
        self._drop_tables()

    # ------------------------------------------------------------------ forward

    def _layer(self, layer_type) -> _Layer:
        if self.layer_types is not None:
            if layer_type not in self._layers:
                raise ValueError(
                    f"layer_type must be one of {tuple(self._layers)}, got {layer_type!r}"
                )
        elif layer_type is not None:
            raise ValueError("this RoPE has one table for every layer: pass no layer_type")
        return self._layers[layer_type]

    def _dtype(self, x: torch.Tensor) -> str:
        """The tables' dtype for ``x`` (a name: no NumPy inside a compiled forward)."""
        fixed = self._fixed_dtype()
        if fixed is not None:
            return fixed
        if x.dtype not in _NAMES:
            raise TypeError(f"x must be float64, float32, float16 or bfloat16, got {x.dtype}")
        return _NAMES[x.dtype]

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
            there); a vision grid ``(N, 2)``. Integers (floats: fractional positions, exact,
            eager only).
        layer_type : str, optional
            For per-layer configs (Gemma 3/4, OLMo-3): the layer type, as their modules take.

        Returns
        -------
        (cos, sin) or torch.Tensor
            ``(cos, sin)`` each ``position_ids.shape + (width,)`` in the model's layout and
            dtype, on ``x``'s device; a complex ``freqs_cis`` for complex-layout models.
        """
        path = self._compiled_path
        if path is not None and layer_type is None and is_compiling():
            found = self._compiled_lookup(path, x, position_ids)
            if found is not None:
                return found
        layer = self._layer(layer_type)
        dtype = self._dtype(x)
        if not layer.lengths or position_ids.is_floating_point():
            cos, sin = self._exact(layer, position_ids, dtype, x.device)
        else:
            cos, sin = self._lookup(layer, layer_type, position_ids, dtype, x.device)
        return _layout(cos, sin, self.layout)

    def _compiled_lookup(self, path: str, x: torch.Tensor, position_ids: torch.Tensor):
        """The common module's compiled forward (None: the general one decides): what
        ``_lookup`` and ``_layout`` do, read through tensor methods and one attribute, so
        that Dynamo guards on little besides the tensors (``torch.<name>`` costs a guard)."""
        layout, _, fixed = path.partition("/")
        kind = str(position_ids.dtype)  # "torch.int64": a constant while compiling
        if kind in ("torch.bool", "torch.complex64", "torch.complex128") or (
            position_ids.is_floating_point()
        ):
            return None
        dtype = fixed or str(x.dtype).rpartition(".")[2]
        table_cos = self._buffers.get(f"cos_{dtype}")
        table_sin = self._buffers.get(f"sin_{dtype}")
        if table_cos is None or table_sin is None:
            return None
        index = position_ids.long().to(table_cos.device)
        # an id at or past the end raises in the gather's bounds check; a negative one is
        # sent past the end, where the gather would wrap it
        index = index.masked_fill(index < 0, table_cos.shape[0])
        cos, sin = table_cos[index].to(x.device), table_sin[index].to(x.device)
        if layout == "half":
            repeats = (1,) * (cos.dim() - 1) + (2,)
            return cos.repeat(repeats), sin.repeat(repeats)
        if layout == "interleaved":
            return cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
        return cos, sin  # compact

    @torch.compiler.disable  # reads the ids' values, as transformers' dynamic modules do
    def _exact(self, layer: _Layer, position_ids, dtype: str, device):
        return layer.values(position_ids, numpy_dtype(dtype), device)

    def _lookup(self, layer: _Layer, layer_type, position_ids, dtype: str, device):
        """The rows of the tables: no host sync (but the CPU's free range check in eager
        mode), no allocation that depends on the values."""
        ids = layer._ids(position_ids)
        cos_name = self._table_name(layer_type, dtype, "cos")
        if cos_name not in self._table_names:
            if torch.compiler.is_compiling():
                raise RuntimeError(
                    f"sinpe.torch: no {dtype} table was made: run the module once without "
                    f"compiling with x of {dtype}, or .to({dtype}) it, before compiling"
                )
            self._table_for(dtype, device)
        table_cos = getattr(self, cos_name)
        table_sin = getattr(self, self._table_name(layer_type, dtype, "sin"))
        n = table_cos.shape[0]
        index = ids.to(device=table_cos.device, dtype=torch.long)
        if not torch.compiler.is_compiling() and index.device.type == "cpu":
            if index.numel() and (int(index.min()) < 0 or int(index.max()) >= n):
                return layer.values(position_ids, numpy_dtype(dtype), device, direct=True)
        else:  # checked on the device by the gather itself (Inductor's and CUDA's bounds
            # checks: an id at or past max_positions raises); a negative id is sent past the
            # end so that it raises too, where the compiled gather would wrap it
            index = torch.where(index < 0, n, index)
        axes = None
        if layer.n_axes > 1:
            axes = getattr(self, f"{'' if layer_type is None else layer_type + '_'}column_axes")
        cos, sin = layer.gather(table_cos, table_sin, index, axes)
        if len(layer.lengths) == 2:  # the long factors past the trained length, per call
            long_cos = getattr(self, self._table_name(layer_type, dtype, "cos", long=True))
            long_sin = getattr(self, self._table_name(layer_type, dtype, "sin", long=True))
            cos_long, sin_long = layer.gather(long_cos, long_sin, index, axes)
            past = index.max() + 1 > layer.switch  # a tensor: no host sync
            cos, sin = torch.where(past, cos_long, cos), torch.where(past, sin_long, sin)
        return cos.to(device), sin.to(device)

    def _table_for(self, dtype: str, device) -> None:
        """Eager mode: make ``dtype``'s tables (once), beside the tables held now."""
        with next(iter(self._layers.values())).lock:  # fork-safe: the layers' handler
            held = next(iter(self._table_names), None)
            where = getattr(self, held).device if held is not None else device
            self._make_tables(dtype, where)

    def probe(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None
    ) -> Any:
        """What :meth:`forward` returns, computed at these positions only (no table is made
        or grown, no length state changes): what ``patch()`` compares."""
        layer = self._layer(layer_type)
        state = (layer.max_seq_len_cached, layer.dynamic_length)
        try:
            dtype = numpy_dtype(self._dtype(x))
            cos, sin = layer.values(position_ids, dtype, x.device, direct=True)
        finally:
            layer.max_seq_len_cached, layer.dynamic_length = state
        return _layout(cos, sin, self.layout)

    def extra_repr(self) -> str:
        spec = self.spec
        if spec.layer_types:
            head = f"layer_types={spec.layer_types}, layout={self.layout!r}"
        else:
            head = (
                f"head_dim={spec.head_dim}, base={spec.base:g}, "
                f"rope_type={dict(spec.scaling or {}).get('rope_type')!r}"
                f", layout={self.layout!r}"
            )
        return f"{head}, max_positions={self.max_positions}"
