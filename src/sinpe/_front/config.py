"""``rope_config``: a model's RoPE read from its config as transformers 5.24 reads it, into a
``RopeSpec`` whose methods make the tables. Reading only: the tables are ``rope.py``'s."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..rope_scaling import ROPE_TYPES, warn_ignored
from . import rope as _rope
from .families import ALIASES, COMPOSITE, FAMILIES, Family

__all__ = ["RopeSpec", "rope_config", "MAX_CONFIG_BYTES"]

MAX_CONFIG_BYTES = 16 << 20  # a config.json is a few kB; a bigger file is not one
_TYPES_WITH_ORIGINAL = ("llama3", "yarn", "longrope")
# what a RopeSpec's scaling keeps: the keys sinpe.rope reads (rope_theta is its base)
_SCALING_KEYS = {
    key
    for required, optional in ROPE_TYPES.values()
    for key in (*required, *optional, "max_position_embeddings")
} | {"mrope_section", "mrope_interleaved"}


class _Frozen(Mapping):
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
        return (_Frozen, (self._items,))


@dataclass(frozen=True)
class RopeSpec:
    """A model's RoPE as :func:`rope_config` read it: frozen data, and the table methods.

    Attributes
    ----------
    head_dim : int or None
        The rotary width (``partial_rotary_factor`` and ``qk_rope_head_dim`` applied), what
        :func:`sinpe.rope` takes as ``head_dim``; ``None`` for a config with a RoPE per layer
        type (then see ``layer_types``).
    base : float or None
        ``rope_theta``.
    scaling : mapping or None
        ``rope_type`` and its keys, as :func:`sinpe.rope` takes them (read-only).
    max_position_embeddings : int or None
    layer_types : tuple of str or None
        For a config with a RoPE per layer type (Gemma 3 and 4): the types, each given by
        :meth:`layer` or ``rope_config(config, layer_type=...)``; ``None`` otherwise.
    layer_type : str or None
        The layer type this spec is for, if any.
    model_type : str or None
        The ``model_type`` whose defaults filled what the config left out.
    """

    head_dim: int | None
    base: float | None
    scaling: Mapping | None
    max_position_embeddings: int | None = None
    layer_types: tuple | None = None
    layer_type: str | None = None
    model_type: str | None = None
    _layers: Mapping | None = field(default=None, repr=False, compare=False)

    def layer(self, layer_type: str) -> RopeSpec:
        """The spec of one layer type of a per-layer config."""
        if self.layer_types is None:
            raise ValueError("this config has one RoPE for every layer: it has no layer types")
        if not isinstance(layer_type, str) or layer_type not in self.layer_types:
            raise ValueError(f"layer_type must be one of {self.layer_types}, got {layer_type!r}")
        found = self._layers[layer_type]
        if found is None:
            raise ValueError(
                f"layer type {layer_type!r} has no RoPE (its rope_parameters entry is null)"
            )
        return found

    def _table_arguments(self) -> dict:
        if self.layer_types is not None:
            raise ValueError(
                "this config has a RoPE per layer type ("
                + ", ".join(self.layer_types)
                + "): take one with spec.layer(name) or rope_config(config, layer_type=name)"
            )
        return dict(
            head_dim=self.head_dim,
            base=self.base,
            scaling=dict(self.scaling),
            max_position_embeddings=self.max_position_embeddings,
        )

    def rope(
        self,
        seq_len: int,
        *,
        offset=0,
        layout="half",
        dtype=np.float64,
        threads=None,
        backend="auto",
    ):
        """:func:`sinpe.rope` of this model: ``cos, sin`` for positions ``offset ..``."""
        return _rope.rope(
            seq_len,
            **self._table_arguments(),
            offset=offset,
            layout=layout,
            dtype=dtype,
            threads=threads,
            backend=backend,
        )

    def rope_at(self, positions, *, layout="half", dtype=np.float64, threads=None, backend="auto"):
        """:func:`sinpe.rope_at` of this model (M-RoPE: positions ``(3, ...)``; axial:
        ``(..., 2)``)."""
        return _rope.rope_at(
            positions,
            **self._table_arguments(),
            layout=layout,
            dtype=dtype,
            threads=threads,
            backend=backend,
        )

    def rope_cache(
        self, seq_len: int, *, format="vllm", offset=0, dtype=None, threads=None, backend="auto"
    ):
        """:func:`sinpe.rope_cache` of this model."""
        return _rope.rope_cache(
            seq_len,
            **self._table_arguments(),
            format=format,
            offset=offset,
            dtype=dtype,
            threads=threads,
            backend=backend,
        )

    def frequencies(self, seq_len: int | None = None):
        """``(inv_freq, attention_factor)`` (:func:`sinpe.rope_frequencies`) at the current
        length ``seq_len`` (``None``: within the trained length)."""
        return _rope.rope_frequencies(**self._table_arguments(), seq_len=seq_len)


# --------------------------------------------------------------------------- reading


def _load(config) -> dict:
    """A config as a dict: a path to a JSON file, a mapping, or an object with to_dict()."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block open()
            raise ValueError(f"config {path!r} is not a regular file")
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"cannot read config {path!r}: {exc.strerror or exc}") from None
        if len(data) > MAX_CONFIG_BYTES:
            raise ValueError(
                f"config {path!r} is larger than {MAX_CONFIG_BYTES >> 20} MiB: not a config.json"
            )
        try:
            config = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"config {path!r} is not valid JSON ({exc})") from None
        except RecursionError:
            raise ValueError(f"config {path!r} is nested too deeply to be a config.json") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config {path!r} must hold a JSON object")
        return dict(config)
    if isinstance(config, Mapping):
        return dict(config)
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        result = to_dict()
        if isinstance(result, Mapping):
            return dict(result)
    raise TypeError(
        "config must be a path to a config.json, a mapping, or an object with to_dict() "
        f"(a transformers config), got {type(config).__name__}"
    )


class _Reader:
    """One config's text part and its family, with errors that name the key."""

    def __init__(self, data: dict):
        model_type = data.get("model_type")
        text = data.get("text_config")
        if isinstance(text, Mapping):
            text = dict(text)
            model_type = text.get("model_type") or COMPOSITE.get(model_type)
            self.where = "text_config."
        elif text is not None and not isinstance(text, Mapping):
            raise ValueError(f"config key 'text_config' must be an object, got {text!r:.60}")
        else:
            text = data
            model_type = COMPOSITE.get(model_type, model_type)
            self.where = ""
        if model_type is not None and not isinstance(model_type, str):
            raise ValueError(f"config key 'model_type' must be a string, got {model_type!r:.60}")
        model_type = ALIASES.get(model_type, model_type)
        self.text = text
        self.model_type = model_type
        self.family: Family | None = FAMILIES.get(model_type)

    def value(self, key: str, default=None):
        value = self.text.get(key)
        return default if value is None else value

    def need(self, key: str, family_default):
        """The config's value, else the family's; never a guess."""
        value = self.text.get(key)
        if value is not None:
            return value
        if self.family is not None and family_default is not None:
            return family_default
        known = (
            f"model_type {self.model_type!r} is not one sinpe knows the defaults of"
            if self.model_type
            else "the config has no model_type"
        )
        raise ValueError(
            f"the config has no {self.where}{key} and {known}: add {key} to the config"
        )

    def integer(self, key: str, value) -> int:
        finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
        if isinstance(value, bool) or not finite or value != int(value):
            raise ValueError(f"config key {self.where}{key} must be an integer, got {value!r:.60}")
        if value < 1:
            raise ValueError(f"config key {self.where}{key} must be >= 1, got {value!r}")
        return int(value)


def _head_dim(reader: _Reader, layer_type: str | None) -> int:
    """The head dimension the rotary width is taken from, as the config class sets it."""
    family = reader.family
    if layer_type == "full_attention" and reader.model_type == "gemma4_text":
        return reader.integer("global_head_dim", reader.value("global_head_dim", 512))
    if family is not None and family.rope_head_dim is not None:
        rule, default = family.rope_head_dim
        rope_dim = reader.integer("qk_rope_head_dim", reader.value("qk_rope_head_dim", default))
        if rule == "forced" or reader.value("head_dim") is None:
            return rope_dim
    if reader.model_type != "falcon":  # Falcon's head_dim is a property: hidden // heads
        head_dim = reader.value("head_dim", family.head_dim if family else None)
        if head_dim is not None:
            return reader.integer("head_dim", head_dim)
    hidden = reader.integer(
        "hidden_size", reader.need("hidden_size", family and family.hidden_size)
    )
    heads = reader.integer(
        "num_attention_heads",
        reader.need("num_attention_heads", family and family.num_attention_heads),
    )
    return hidden // heads


def _max_position(reader: _Reader) -> int | None:
    family = reader.family
    value = reader.value(
        "max_position_embeddings", family.max_position_embeddings if family else None
    )
    return None if value is None else reader.integer("max_position_embeddings", value)


def _raw_parameters(reader: _Reader):
    """Whether the config has a RoPE per layer type, and its rope mapping (rope_scaling wins
    over rope_parameters, as in transformers): per layer type, or flat; before defaults."""
    text, family = reader.text, reader.family
    raw = text.get("rope_scaling") or text.get("rope_parameters")
    if raw is not None and not isinstance(raw, Mapping):
        raise ValueError(
            f"config key {reader.where}rope_scaling / rope_parameters must be an object, "
            f"got {raw!r:.60}"
        )
    if not raw and family is not None and family.rope_parameters is not None:
        raw = family.rope_parameters
    raw = {
        key: (dict(value) if isinstance(value, Mapping) else value)
        for key, value in (raw or {}).items()
    }
    if reader.model_type in ("gemma3_text", "gemma3n_text"):
        return True, _gemma3_layers(reader, raw)
    names = text.get("layer_types") or (family.layer_types if family else ())
    if not isinstance(names, (list, tuple)):
        raise ValueError(f"config key {reader.where}layer_types must be a list of strings")
    nested = [key for key in raw if key in names]
    if nested:
        return True, {key: raw[key] for key in nested}
    if (
        raw
        and "rope_type" not in raw
        and "type" not in raw
        and all(isinstance(value, Mapping) or value is None for value in raw.values())
    ):
        raise ValueError(
            f"config key {reader.where}rope_parameters is nested by layer type ("
            + ", ".join(raw)
            + ") but the config's layer_types do not name them"
        )
    return False, raw


def _gemma3_layers(reader: _Reader, raw: dict) -> dict:
    """Gemma 3/3n: a RoPE per layer type, from the new format or the legacy keys (rope_scaling
    for the full-attention layers, rope_local_base_freq for the sliding ones)."""
    text = reader.text
    legacy = text.get("rope_scaling")
    if legacy or not any(key in raw for key in ("full_attention", "sliding_attention")):
        layers = {
            "sliding_attention": {"rope_type": "default"},
            "full_attention": {"rope_type": "default", **(dict(legacy) if legacy else {})},
        }
    else:
        layers = {key: (dict(raw[key]) if raw.get(key) is not None else None) for key in raw}
        for key in ("full_attention", "sliding_attention"):
            if layers.get(key) is None:
                layers[key] = {"rope_type": "default"}
    layers["full_attention"].setdefault("rope_theta", reader.value("rope_theta", 1000000.0))
    layers["sliding_attention"].setdefault(
        "rope_theta", reader.value("rope_local_base_freq", 10000.0)
    )
    return layers


def _spec(reader: _Reader, params: dict, layer_type: str | None, top_theta) -> RopeSpec:
    """One RoPE (a flat mapping, or one layer type's) standardised as transformers does."""
    family, model_type = reader.family, reader.model_type
    params = dict(params)
    rope_type = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    if not isinstance(rope_type, str):
        raise ValueError(f"rope_type must be a string, got {rope_type!r:.60}")
    if model_type == "phi3" and rope_type == "yarn":
        rope_type = "longrope"  # Phi-3's older name, as Phi3Config renames it
    if rope_type == "su":
        raise ValueError(
            "rope_type 'su' is Phi-3's first name for 'longrope'; transformers 5.24 refuses it "
            "(it never copies original_max_position_embeddings for it): write 'longrope'"
        )
    if rope_type == "mrope":
        rope_type = "default"
    if model_type == "pixtral" and rope_type == "default":
        rope_type = "axial"  # PixtralVisionConfig's default_rope_type
    theta = params.pop("rope_theta", None)
    if theta is None:
        theta = top_theta
    if theta is None:
        theta = reader.need("rope_theta", family and family.theta)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0 < theta < math.inf:
        raise ValueError(f"rope_theta must be a finite number > 0, got {theta!r:.60}")
    partial = params.pop("partial_rotary_factor", None)
    if partial is None:
        partial = reader.value("partial_rotary_factor", family and family.partial_rotary_factor)
    if model_type == "gpt_neox" and partial is None:
        partial = reader.value("rotary_pct")
    max_position = _max_position(reader)
    if rope_type in _TYPES_WITH_ORIGINAL:
        if model_type == "phi3":  # Phi3Config's own field wins over the mapping's
            params["original_max_position_embeddings"] = reader.value(
                "original_max_position_embeddings", 4096
            )
        elif "original_max_position_embeddings" not in params:
            if max_position is None:
                reader.need("max_position_embeddings", None)
            params["original_max_position_embeddings"] = max_position
    head_dim = _head_dim(reader, layer_type)
    width = head_dim
    if partial is not None and not (isinstance(partial, (int, float)) and 0 < partial <= 1):
        raise ValueError(f"partial_rotary_factor must be a number in (0, 1], got {partial!r:.60}")
    if rope_type == "proportional":
        params["partial_rotary_factor"] = 1.0 if partial is None else partial
    elif partial is not None and partial != 1:
        applies = rope_type not in ("default", "axial") or (
            family is not None and family.partial_in_default
        )
        if rope_type in ("default", "axial") and family is None:
            raise ValueError(
                f"the config has partial_rotary_factor={partial!r} with rope_type 'default', and "
                "transformers' default RoPE applies it in some models (Phi-3, GLM, GPT-NeoX, "
                "StableLM, Qwen3-Next) and ignores it in others (Llama, Mistral, Qwen2): "
                f"model_type {model_type!r} is not one sinpe knows; call sinpe.rope with the "
                "rotary width"
            )
        if applies:
            width = int(head_dim * partial)
            if width % 2 or width < 2:
                raise ValueError(
                    f"head_dim {head_dim} * partial_rotary_factor {partial!r} gives a rotary "
                    f"width of {width}; sinpe builds even widths of at least 2"
                )
    if family is not None and family.mrope is not None:
        sections, interleaved = family.mrope
        params["mrope_section"] = params.get("mrope_section") or list(sections)
        params["mrope_interleaved"] = interleaved  # the model's own rule, whatever the key says
    elif "mrope_section" in params:
        if family is None:
            raise ValueError(
                "the config has mrope_section, and models recompose M-RoPE sections in "
                f"different ways: model_type {model_type!r} is not one sinpe knows (Qwen2-VL and "
                "Qwen2.5-VL: contiguous; Qwen3-VL and Qwen3.5: interleaved); pass the mapping "
                "to sinpe.rope_at with mrope_interleaved set as your model does"
            )
        ignored = [key for key in ("mrope_section", "mrope_interleaved") if key in params]
        warn_ignored(rope_type, ignored, where=f"the config ({model_type})")  # as transformers
        for key in ignored:
            params.pop(key)
    needs_length = rope_type == "dynamic" or (
        rope_type in ("yarn", "longrope") and params.get("factor") is None
    )
    if needs_length and max_position is None:
        reader.need("max_position_embeddings", None)
    scaling = {"rope_type": rope_type}
    scaling.update((key, value) for key, value in params.items() if key in _SCALING_KEYS)
    ignored = sorted(str(key) for key in params if key not in _SCALING_KEYS)
    if ignored:
        warn_ignored(rope_type, ignored, where=f"the config's rope mapping ({model_type})")
    # every key checked now, by sinpe.rope's own checks (errors name the key), not at first use
    _rope._arguments(width, theta, scaling, max_position)
    return RopeSpec(
        width, float(theta), _Frozen(scaling), max_position, None, layer_type, model_type
    )


def rope_config(config, *, layer_type: str | None = None) -> RopeSpec:
    """A model's RoPE, read from its config as transformers 5.24 reads it.

    Parameters
    ----------
    config : str, os.PathLike, mapping or object with ``to_dict()``
        A ``config.json`` path, its parsed mapping, or a transformers config. A nested
        ``text_config`` (vision-language models) is read for the text model; for a vision
        tower, pass ``config["vision_config"]``.
    layer_type : str, optional
        For a config with a RoPE per layer type (Gemma 3 and 4: ``"full_attention"``,
        ``"sliding_attention"``), that layer type's spec.

    Returns
    -------
    RopeSpec
        Its ``head_dim`` is the rotary width (``partial_rotary_factor``, ``qk_rope_head_dim``
        and Gemma 4's ``global_head_dim`` applied); ``.rope()``, ``.rope_at()``,
        ``.rope_cache()`` and ``.frequencies()`` make its tables. A key the config leaves out
        takes transformers 5.24's default for the ``model_type`` where sinpe knows the type;
        otherwise the call fails naming the key.

    Examples
    --------
    >>> import sinpe
    >>> spec = sinpe.rope_config({"model_type": "llama", "hidden_size": 4096,
    ...     "num_attention_heads": 32, "rope_theta": 500000.0})
    >>> spec.head_dim, spec.base, dict(spec.scaling)
    (128, 500000.0, {'rope_type': 'default'})
    """
    reader = _Reader(_load(config))
    nested, raw = _raw_parameters(reader)
    top_theta = reader.value("rope_theta")
    if reader.model_type == "gpt_neox" and top_theta is None:
        top_theta = reader.value("rotary_emb_base")
    if not nested:
        if layer_type is not None:
            raise ValueError(
                "layer_type is for configs with a RoPE per layer type; this one has one RoPE"
            )
        return _spec(reader, raw, None, top_theta)
    layers = {
        name: (None if params is None else _spec(reader, params, name, top_theta))
        for name, params in raw.items()
    }
    names = tuple(sorted(layers))
    spec = RopeSpec(None, None, None, _max_position(reader), names, None, reader.model_type, layers)
    return spec if layer_type is None else spec.layer(layer_type)
