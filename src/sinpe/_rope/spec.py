"""``RopeSpec``: a model's RoPE as ``rope_config`` read it, frozen, with the methods that make
its tables. The spec holds its resolved ``Rotary`` (the parsed scaling, the width, which axis
each frequency reads): a table never parses the config again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .._tables import checks as check
from .._tables.checks import F64
from .._tables.types import DTypeLike, Positions
from . import rope as _rope
from . import rotary as rot
from .rotary import Rotary

__all__ = ["RopeSpec", "Frozen", "OUTPUT_LAYOUTS"]

# what a model's rotary module returns: cos/sin as cat(freqs, freqs) (rotate_half), each
# value twice in place (Cohere), the frequencies once (gpt-oss), or complex freqs_cis (Llama 4)
OUTPUT_LAYOUTS = rot.format_names("spec")


class Frozen(Mapping):
    """A read-only mapping (list values as tuples) that pickles and compares as a dict."""

    def __init__(self, items=()):
        self._items = {
            key: tuple(value) if isinstance(value, list) else value
            for key, value in dict(items).items()
        }

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __hash__(self):
        return hash(tuple(sorted(self._items.items())))

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self) == dict(other)

    def __repr__(self):
        return repr(self._items)

    def __reduce__(self):
        return (Frozen, (self._items,))


@dataclass(frozen=True)
class RopeSpec:
    """A model's RoPE as :func:`rope_config` read it: frozen data, and the table methods.

    Attributes
    ----------
    head_dim : int or None
        The rotary width (``partial_rotary_factor``, ``qk_rope_head_dim`` and the other
        family rules applied), what :func:`sinpe.rope` takes as ``head_dim``; ``None`` for a
        config with a RoPE per layer type (then see ``layer_types``).
    base : float or None
        ``rope_theta`` (the base the family's rule makes of it: HunYuan's NTK alpha is in the
        frequencies, not here).
    scaling : mapping or None
        ``rope_type`` and its keys, as :func:`sinpe.rope` takes them (read-only); a family
        type (``ntk_alpha``, ``longrope_mscale``) is named as such.
    max_position_embeddings : int or None
    layer_types : tuple of str or None
        For a config with a RoPE per layer type (Gemma 3 and 4, OLMo-3): the types, each given
        by :meth:`layer` or ``rope_config(config, layer_type=...)``; ``None`` otherwise.
    layer_type : str or None
        The layer type this spec is for, if any.
    model_type : str or None
        The ``model_type`` whose record and defaults were read.
    layout : str or None
        What the model's rotary module returns: ``"half"`` (``cat(freqs, freqs)``),
        ``"interleaved"`` (each value twice in place: Cohere), ``"compact"`` (gpt-oss) or
        ``"complex"`` (``freqs_cis``: Llama 4, DeepSeek-V2); ``None`` where sinpe has no
        record of the model's family (its module's layout is not known).
    axes : tuple of int or None
        The position axis each frequency reads (M-RoPE: 0, 1, 2 for T, H, W; a vision grid:
        0, 1 for height, width), in frequency order; ``None``: one axis.
    output_dtype : str
        The dtype of the model module's output: ``"x"`` (its input's, as most), or a dtype
        name (OLMo's modules return float32; ``freqs_cis`` is complex64).
    softmax_scale : float
        What the model's attention multiplies its softmax scale (``head_dim ** -0.5``) by:
        ``yarn_get_mscale(factor, mscale_all_dim) ** 2`` for a scaled rope type in the
        families whose attention applies transformers' ``yarn_apply_mscale`` (DeepSeek-V2,
        V3 and V3.2, MiniCPM3, Mistral-4, LongCat-Flash, GLM-4-MoE-Lite, HY-V4, ...); 1.0
        elsewhere. An engine that rotates with this spec must apply it too.
    rotation : str or None
        Which query/key elements the model's attention rotates together, whatever its module
        returns: ``"halves"`` (element ``i`` with ``i + head_dim / 2``: Llama, NeoX's
        ``rotate_half``) or ``"pairs"`` (``2i`` with ``2i + 1``: GPT-J's
        ``rotate_every_two``, GLM, Cohere, ERNIE, DeepSeek-V3 with ``rope_interleave``,
        HY-V4 from transformers 5.25, every ``freqs_cis`` model). Found by running the
        rotation function each family's attention calls; ``None`` where sinpe has no record
        of the family. An engine that rotates with this spec must pair the same elements.
    sin_sign : int
        ``1``, or ``-1`` where the model's attention turns by the negative angle (NanoChat's
        ``rotate_half`` flips its signs: ``x[i] cos + x[i + h] sin``): an engine that rotates
        with this spec multiplies the sin table by it.
    ignored_keys : tuple of str
        Keys of the config's rope mapping that the family's rotary module provably never
        reads for this type (HunYuan's checkpoints carry YaRN keys beside their NTK alpha):
        accepted, and listed here, since they cannot change a value.
    """

    head_dim: int | None
    base: float | None
    scaling: Mapping | None
    max_position_embeddings: int | None = None
    layer_types: tuple | None = None
    layer_type: str | None = None
    model_type: str | None = None
    layout: str | None = "half"
    axes: tuple | None = None
    output_dtype: str = "x"
    softmax_scale: float = 1.0
    ignored_keys: tuple = ()
    rotation: str | None = "halves"
    sin_sign: int = 1
    _rotary: Rotary | None = field(default=None, repr=False, compare=False)
    _layers: Mapping | None = field(default=None, repr=False, compare=False)

    def layer(self, layer_type: str) -> RopeSpec:
        """The spec of one layer type of a per-layer config."""
        if self.layer_types is None:
            raise ValueError("this config has one RoPE for every layer: it has no layer types")
        if not isinstance(layer_type, str) or layer_type not in self.layer_types:
            raise ValueError(f"layer_type must be one of {self.layer_types}, got {layer_type!r}")
        found = self._layers[layer_type] if self._layers is not None else None
        if found is None:
            raise ValueError(
                f"layer type {layer_type!r} has no RoPE (its rope_parameters entry is null)"
            )
        return found

    def _one(self) -> Rotary:
        if self.layer_types is not None:
            raise ValueError(
                "this config has a RoPE per layer type ("
                + ", ".join(self.layer_types)
                + "): take one with spec.layer(name) or rope_config(config, layer_type=name)"
            )
        assert self._rotary is not None  # rope_config builds every spec with its Rotary
        return self._rotary

    @property
    def n_axes(self) -> int:
        """How many position axes a position holds (1; M-RoPE 3; a vision grid 2)."""
        return self._one().n_axes

    def rope(
        self,
        seq_len: int,
        *,
        offset: int = 0,
        layout: str = "half",
        dtype: DTypeLike = np.float64,
        threads: int | None = None,
        backend: str = "auto",
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`sinpe.rope` of this model: ``cos, sin`` for positions ``offset ..``."""
        name = check.choice("layout", layout, _rope.LAYOUTS)
        dtype = check.dtype(dtype) or F64
        return rot.table_run(
            self._one(), seq_len, offset, name, dtype, threads, backend, "spec.rope"
        )

    def rope_at(
        self,
        positions: Positions,
        *,
        layout: str = "half",
        dtype: DTypeLike = np.float64,
        threads: int | None = None,
        backend: str = "auto",
        seq_len: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`sinpe.rope_at` of this model (M-RoPE: positions ``(3, ...)``; a vision
        grid: ``(..., 2)``); ``seq_len``: the current length of ``dynamic`` and
        ``longrope`` (default ``max(positions) + 1``)."""
        name = check.choice("layout", layout, _rope.LAYOUTS)
        dtype = check.dtype(dtype) or F64
        return rot.table_at(self._one(), positions, name, dtype, threads, backend, seq_len)

    def rope_cache(
        self,
        seq_len: int,
        *,
        format: str = "vllm",
        offset: int = 0,
        dtype: DTypeLike = None,
        threads: int | None = None,
        backend: str = "auto",
    ) -> np.ndarray:
        """:func:`sinpe.rope_cache` of this model."""
        name = check.choice("format", format, _rope.CACHE_FORMATS)
        dtype, complex_dtype = _rope.cache_dtypes(name, dtype)
        (table,) = rot.table_run(
            self._one(), seq_len, offset, name, dtype, threads, backend, "spec.rope_cache"
        )
        return _rope.cache_table(table, name, complex_dtype)

    def frequencies(self, seq_len: int | None = None) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` (:func:`sinpe.rope_frequencies`) at the current
        length ``seq_len`` (``None``: within the trained length)."""
        if seq_len is not None:
            seq_len = check.integer("seq_len", seq_len, 0)
        inv_freq, attention_factor = rot.frequencies(self._one(), seq_len)
        return inv_freq.copy(), attention_factor  # the cached vector stays read-only

    def length_key(self, seq_len: int | None) -> object:
        """What of the current length ``seq_len`` changes the values (``None``: nothing):
        equal keys, equal tables."""
        return rot.length_of(self._one(), seq_len)

    def length_dependent(self) -> bool:
        """Whether the values change with the current length (``dynamic``, ``longrope``)."""
        rotary = self._one()
        return rot.length_of(rotary, None) != rot.length_of(rotary, 2**53)


RopeSpec.__module__ = "sinpe"  # its public home: pickles name sinpe.RopeSpec
