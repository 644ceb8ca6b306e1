"""``rope_config``: a model's RoPE read from its config as transformers 5.24 reads it, by the
family records of ``families.py`` (class defaults, head-dimension rule, where
``partial_rotary_factor`` applies, per-layer placement, output layout, M-RoPE recomposition,
family rope types) into a ``RopeSpec`` (``spec.py``), whose methods make the tables. Reading
only: every key that can change a value is applied as the record says, or refused."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

from .._files import reading, sources
from .._tables import checks
from .._tables.types import Config
from . import rope_types
from . import rotary as rot
from .families import ALIASES, COMPOSITE, FAMILIES, Family
from .spec import Frozen, RopeSpec

__all__ = ["RopeSpec", "rope_config", "load_config", "MAX_CONFIG_BYTES"]

MAX_CONFIG_BYTES = 16 << 20  # a config.json is a few kB; a bigger file is not one
_COMMON = Family()
# config keys some family's record reads to find its rotary width or base: a config whose
# family sinpe does not know is refused when it carries one (which rule it follows is unknown)
_FAMILY_KEYS = (
    "qk_rope_head_dim",
    "rotary_dim",
    "attention_head_dim",
    "global_head_dim",
    "rotary_pct",
    "rotary_emb_base",
    "rope_local_base_freq",
)


# --------------------------------------------------------------------------- reading


class Digits(str):
    """An integer of more digits than any config needs, kept as its text: the key that
    reads it refuses it by name (Python's own limit would name no key and no file)."""

    def __repr__(self) -> str:
        return f"a {len(self.lstrip('-'))}-digit integer"


def _integer(text: str):
    return int(text) if len(text) <= 400 else Digits(text)


def load_config(config) -> dict:
    """A config as a dict: a path to a JSON file or to the model's folder (its config.json),
    a Hugging Face Hub id (``sources.config_file``), a mapping, or an object with to_dict()."""
    if isinstance(config, (str, os.PathLike)):
        path = sources.config_file(os.fspath(config))
        try:  # through the reading room: a regular file only (a FIFO would block open())
            return reading.read_json(
                path, what="config", max_bytes=MAX_CONFIG_BYTES, parse_int=_integer
            )
        except OSError as exc:
            raise checks.unreadable(path, exc, "config ") from None
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
    """One config's text part and its family record; errors name the key."""

    def __init__(self, data: dict):
        model_type = data.get("model_type")
        text = data.get("text_config")
        top = FAMILIES.get(model_type) if isinstance(model_type, str) else None
        if top is not None and top.refused is not None:
            way_out = isinstance(text, Mapping) or model_type in COMPOSITE
            raise ValueError(
                f"model_type {model_type!r}: {top.refused}"
                + ("; for its text model's RoPE, pass the config's text_config" if way_out else "")
            )
        if isinstance(text, Mapping):
            text = dict(text)
            model_type = text.get("model_type") or COMPOSITE.get(model_type)  # type: ignore[arg-type]
            self.where = "text_config."
        elif text is not None:
            raise ValueError(f"config key 'text_config' must be an object, got {text!r:.60}")
        else:
            text = data
            model_type = COMPOSITE.get(model_type, model_type)  # type: ignore[arg-type]
            self.where = ""
        if model_type is not None and not isinstance(model_type, str):
            raise ValueError(f"config key 'model_type' must be a string, got {model_type!r:.60}")
        model_type = ALIASES.get(model_type, model_type)  # type: ignore[arg-type]
        self.text = text
        self.model_type = model_type
        self.known = model_type in FAMILIES
        self.family: Family = FAMILIES.get(model_type, _COMMON)  # type: ignore[arg-type]
        for key in self.family.refused_keys:
            if text.get(key) is not None:
                raise ValueError(
                    f"the config has {self.where}{key}, which model_type {model_type!r}'s "
                    "configuration class (transformers 5.24) applies to some rope types and not "
                    f"others: write it inside the rope mapping (rope_parameters) instead"
                )
        if not self.known:
            found = [key for key in _FAMILY_KEYS if text.get(key) is not None]
            if found:
                raise ValueError(
                    f"the config has {self.where}{found[0]}, which changes the rotary width or "
                    f"base in the families that read it, and {self.unknown()}: which rule it "
                    "follows is unknown; add the model's model_type, or call sinpe.rope with "
                    "the rotary width"
                )

    def unknown(self) -> str:
        if self.model_type is None:
            return "the config has no model_type"
        return f"model_type {self.model_type!r} is not one sinpe knows"

    def given(self, key: str):
        """The config's own value (through the class's attribute alias), or None."""
        alias = self.family.aliases.get(key)
        value = self.text.get(alias) if alias else None
        return self.text.get(key) if value is None else value

    def value(self, key: str, default=None):
        """The config's value, else its class's default."""
        value = self.given(key)
        if value is None:
            alias = self.family.aliases.get(key)
            value = self.family.config.get(alias) if alias else None
            if value is None:
                value = self.family.config.get(key)
        return default if value is None else value

    def first(self, keys):
        for key in keys:
            value = self.given(key)
            if value is not None:
                return value
        return None

    def need(self, key: str):
        """The config's value, else the family's default; never a guess."""
        value = self.value(key)
        if value is not None:
            return value
        raise ValueError(
            f"the config has no {self.where}{key} and {self.unknown()} (or its class has no "
            f"default for it): add {key} to the config"
        )

    def integer(self, key: str, value) -> int:
        finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
        if isinstance(value, bool) or not finite or value != int(value):
            raise ValueError(f"config key {self.where}{key} must be an integer, got {value!r:.60}")
        if value < 1:
            raise ValueError(f"config key {self.where}{key} must be >= 1, got {value!r}")
        return int(value)

    def positive(self, key: str, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(
                f"config key {self.where}{key} must be a finite number > 0, got {value!r:.60}"
            )
        if not 0 < value < math.inf:
            raise ValueError(
                f"config key {self.where}{key} must be a finite number > 0, got {value!r}"
            )
        return float(value)


# --------------------------------------------------------------------------- widths


def _layer_head_dim(reader: _Reader, layer_type: str) -> int | None:
    """A layer type's own head dimension: the family's key for it (Gemma 4's
    global_head_dim), or transformers' per_layer_config override of its layers."""
    key = reader.family.layer_head_dims.get(layer_type)
    if key is not None and reader.text.get(key) is not None:
        return reader.integer(key, reader.text[key])
    overrides = reader.text.get("per_layer_config")
    names = reader.text.get("layer_types") or ()
    if isinstance(overrides, Mapping) and isinstance(names, (list, tuple)):
        for index, name in enumerate(names):
            found = overrides.get(str(index), overrides.get(index))
            if name == layer_type and isinstance(found, Mapping) and "head_dim" in found:
                return reader.integer("per_layer_config.head_dim", found["head_dim"])
    if key is not None:
        raise ValueError(
            f"the config has no {reader.where}{key} for its {layer_type} layers: add {key}"
        )
    return None


def _head_dim(reader: _Reader, layer_type: str | None) -> int:
    """The head dimension the rotary width is taken from, by the family's rule."""
    rule = reader.family.head_dim
    if layer_type is not None:
        found = _layer_head_dim(reader, layer_type)
        if found is not None:
            return found
    if rule == "qk_rope_head_dim":
        return reader.integer("qk_rope_head_dim", reader.need("qk_rope_head_dim"))
    if rule == "head_dim":
        head_dim = reader.value("head_dim")
        if head_dim is not None:
            return reader.integer("head_dim", head_dim)
    if rule == "attention_head_dim" and reader.text.get("attention_head_dim") is not None:
        return reader.integer("attention_head_dim", reader.text["attention_head_dim"])
    hidden = reader.integer("hidden_size", reader.need("hidden_size"))
    heads = reader.integer("num_attention_heads", reader.need("num_attention_heads"))
    return (2 if rule == "attention_head_dim" else 1) * hidden // heads


# --------------------------------------------------------------------------- mappings


def _copy(mapping):
    return {
        key: (dict(value) if isinstance(value, Mapping) else value)
        for key, value in dict(mapping).items()
    }


def _by_layer(mapping: Mapping) -> bool:
    """Whether every value of ``mapping`` is a mapping or ``None`` (nested by layer type)."""
    return all(isinstance(value, Mapping) or value is None for value in mapping.values())


def _raw_mapping(reader: _Reader):
    """The config's rope mapping as given (``rope_scaling``, else ``rope_parameters``), or
    ``None``; refused where not an object, or where the class does not read rope_scaling."""
    text, family = reader.text, reader.family
    legacy = text.get("rope_scaling")
    if legacy is not None and not isinstance(legacy, Mapping):
        raise ValueError(
            f"config key {reader.where}rope_scaling must be an object, got {legacy!r:.60}"
        )
    if legacy and family.legacy in (None, "ignored"):
        why = (
            "keeps it aside and rotates by rope_parameters"
            if family.legacy == "ignored"
            else "cannot read it"
        )
        raise ValueError(
            f"the config has {reader.where}rope_scaling, and model_type {reader.model_type!r}'s "
            f"configuration class (transformers 5.24) {why}: write it as rope_parameters"
        )
    raw = legacy or text.get("rope_parameters")
    if raw is not None and not isinstance(raw, Mapping):
        raise ValueError(
            f"config key {reader.where}rope_parameters must be an object, got {raw!r:.60}"
        )
    return raw


def _layer_names(reader: _Reader, per_layer_default: bool) -> set:
    """The layer types a nested mapping may name: the family's, the config's layer_types
    (refused unless a list of strings) and, where it is nested, the class default's."""
    names = set(reader.family.layer_types)
    given = reader.text.get("layer_types")
    if given is not None:
        if not isinstance(given, (list, tuple)) or not all(isinstance(n, str) for n in given):
            raise ValueError(f"config key {reader.where}layer_types must be a list of strings")
        names |= set(given)
    if per_layer_default:
        names |= set(reader.family.mapping)
    return names


def _flat_per_layer(reader: _Reader, raw: dict) -> dict:
    """A flat (legacy) mapping in a config with a RoPE per layer type, placed as the class
    places it (every layer type, or the ones it names); refused where it cannot read one."""
    family = reader.family
    if family.legacy is None:
        raise ValueError(
            f"the config has one flat rope mapping, but model_type {reader.model_type!r} has a "
            f"RoPE per layer type ({', '.join(sorted(family.mapping))}) and transformers 5.24 "
            "cannot read a flat one for it: write rope_parameters nested by layer type"
        )
    layers = _copy(family.mapping)
    if family.legacy == "all":  # every layer type takes it (its base from the class's fill)
        return {name: dict(raw) for name in layers}
    for name in family.legacy:  # the class updates these layers' defaults with it
        layers[name] = {**(layers.get(name) or {"rope_type": rope_types.DEFAULT}), **raw}
    return layers


def _mappings(reader: _Reader):
    """``(nested, mappings, own)``: the config's rope mapping placed per layer type where
    the family has them (``{None: mapping}`` when flat), before any default is filled in;
    ``own``: whether the config had a mapping (else the class's default is used)."""
    raw = _raw_mapping(reader)
    default = reader.family.mapping
    per_layer_default = bool(default) and _by_layer(default)
    names = _layer_names(reader, per_layer_default)
    if not raw:
        mappings = _copy(default) if per_layer_default else {None: dict(default)}
        return per_layer_default, mappings, False
    raw = _copy(raw)
    nested = [key for key in raw if key in names]
    if nested:
        return True, {key: raw[key] for key in nested}, True
    if _by_layer(raw):
        raise ValueError(
            f"config key {reader.where}rope_parameters is nested by layer type ("
            + ", ".join(map(str, raw))
            + ") but the config's layer_types do not name them"
        )
    if not per_layer_default:
        return False, {None: raw}, True
    return True, _flat_per_layer(reader, raw), True


def _from_config(reader: _Reader, key: str, layer_type, own: bool, missing: bool) -> bool:
    """Whether the config's top-level value of ``key`` goes into the mapping: into the class's
    default mapping where the class lets it (its default does not fix the key), into a given
    mapping that lacks the key where the class fills it (the common rule, for a family sinpe
    has no record of)."""
    family = reader.family
    if not reader.known:
        return missing
    if not own:
        return key in family.overrides.get(layer_type or "", ())
    return missing and key in family.fills.get(layer_type or "", ())


def _theta(reader: _Reader, params: dict, layer_type, own: bool) -> float:
    family = reader.family
    theta = params.pop("rope_theta", None)
    if _from_config(reader, "rope_theta", layer_type, own, theta is None):
        key = family.layer_theta_keys.get(layer_type)
        found = reader.given(key) if key else None
        if found is None:
            found = reader.first(family.theta_keys)
        if found is not None:
            theta = found
    if theta is None:
        theta = family.fill.get(layer_type or "", {}).get("rope_theta")
    if theta is None:
        theta = reader.need("rope_theta")
    return reader.positive("rope_theta", theta)


def _partial(reader: _Reader, params: dict, layer_type, own: bool, head_dim_of):
    family = reader.family
    partial = params.pop("partial_rotary_factor", None)
    if _from_config(reader, "partial_rotary_factor", layer_type, own, partial is None):
        found = reader.first(family.partial_keys)
        if found is not None:
            partial = found
    if partial is None and family.rotary_dim_partial and reader.given("rotary_dim") is not None:
        partial = reader.integer("rotary_dim", reader.given("rotary_dim")) / head_dim_of()
    if partial is None:
        partial = family.fill.get(layer_type or "", {}).get("partial_rotary_factor")
    if partial is None:
        return None
    if isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise ValueError(f"partial_rotary_factor must be a number in (0, 1], got {partial!r:.60}")
    return float(partial)


def _spec(reader: _Reader, params: dict, layer_type: str | None, own: bool) -> RopeSpec:
    """One RoPE (a flat mapping, or one layer type's) standardised as transformers does and
    resolved by the family's record."""
    params = dict(params)
    rope_type, record = _rope_type(reader, params)
    theta = _theta(reader, params, layer_type, own)
    head_dim = _head_dim(reader, layer_type)
    partial = _partial(reader, params, layer_type, own, lambda: head_dim)
    max_position = reader.value("max_position_embeddings")
    if max_position is not None:
        max_position = reader.integer("max_position_embeddings", max_position)
    _original_length(reader, params, record, max_position)
    width = _rotary_width(reader, params, record, head_dim, partial)
    _mrope_sections(reader, params)
    if record.needs_model_length(params) and max_position is None:
        reader.need("max_position_embeddings")
    ignored = tuple(k for k in reader.family.ignored_keys.get(rope_type, ()) if k in params)
    for key in ignored:
        del params[key]
    scaling = {"rope_type": rope_type, **params}
    family_keys = frozenset(record.required) if not record.public else frozenset()
    # parsed here, not in a helper: the stacklevel of parse's warning counts this frame
    parsed = rope_types.parse(scaling, max_position, width, family_keys=family_keys)
    spec = _build(reader, scaling, parsed, width, theta, max_position, layer_type)
    return dataclasses.replace(spec, ignored_keys=ignored) if ignored else spec


def _rope_type(reader: _Reader, params: dict) -> tuple[str, rope_types.RopeType]:
    """The mapping's rope type (popped from ``params``) and its record: refused names, aliases,
    the family's renames and type rules applied; refused where the family reads no type."""
    family = reader.family
    rope_type = params.pop("rope_type", None) or params.pop("type", None) or rope_types.DEFAULT
    params.pop("type", None)
    if not isinstance(rope_type, str):
        raise ValueError(f"rope_type must be a string, got {rope_type!r:.60}")
    rope_type = rope_types.ALIASES.get(rope_type, rope_type)
    rope_type = family.renames.get(rope_type, rope_type)
    if rope_type in rope_types.REFUSED:
        raise ValueError(rope_types.REFUSED[rope_type])
    if not family.reads_types and not rope_types.is_plain(rope_type):
        raise ValueError(
            f"the config's rope mapping has rope_type {rope_type!r}, and model_type "
            f"{reader.model_type!r}'s rotary module reads no rope type (it always rotates the "
            "default frequencies): remove the mapping"
        )
    for (name, key), target in family.type_rules.items():
        if rope_type == name and params.get(key):
            rope_type = target
    return rope_type, rope_types.lookup(rope_type, family.type_rules.values())


def _original_length(reader: _Reader, params: dict, record, max_position: int | None) -> None:
    """Set ``original_max_position_embeddings`` in ``params`` where the type copies it: the
    config class's own field, else the model's length where the mapping has none."""
    original = "original_max_position_embeddings"
    if record.copies_original:
        if reader.family.original_from_config and reader.value(original) is not None:
            params[original] = reader.value(original)  # the config class's own field wins
        elif original not in params:
            if max_position is None:
                reader.need("max_position_embeddings")
            params[original] = max_position


def _rotary_width(reader: _Reader, params: dict, record, head_dim: int, partial) -> int:
    """The rotary width: ``head_dim`` times the partial rotary factor where the family applies
    it (a key of its own in ``params`` for a type that reads it); at least 2, and even unless
    the type reads an odd width as transformers does (GLM-4-MoE's class defaults: 42 x 0.5 =
    21, eleven frequencies ``base**(-2i/21)``, tables 22 wide)."""
    family = reader.family
    width = head_dim
    in_default = record.partial_as_default
    if in_default and partial is None and family.partial_in_default:
        partial = family.partial_default
    if "partial_rotary_factor" in record.optional:  # a key of its own (proportional)
        params["partial_rotary_factor"] = 1.0 if partial is None else partial
    elif partial is not None and partial != 1:
        if in_default and not reader.known:
            raise ValueError(
                f"the config has partial_rotary_factor={partial!r} with rope_type 'default', and "
                "transformers' default RoPE applies it in some models (Phi-3, GLM, GPT-NeoX, "
                "StableLM, Qwen3-Next) and ignores it in others (Llama, Mistral, Qwen2): "
                f"{reader.unknown()}; call sinpe.rope with the rotary width"
            )
        if not in_default or family.partial_in_default:
            width = int(head_dim * partial)
    if (width % 2 and not record.odd_width) or width < 2:
        raise ValueError(
            f"model_type {reader.model_type!r}: head dimension {head_dim} (partial_rotary_factor "
            f"{partial!r}) gives a rotary width of {width}: head_dim must be even (rope_type "
            f"{record.name!r} has no odd form), the rotary width at least 2"
        )
    return width


def _mrope_sections(reader: _Reader, params: dict) -> None:
    """M-RoPE's keys in ``params`` by the family's rule (its sections, contiguous or
    interleaved); refused where the family reads none, or is unknown."""
    family = reader.family
    sections = params.pop("mrope_section", None)
    interleaved = params.pop("mrope_interleaved", None)
    paired = params.pop("mrope_paired", None)
    if family.mrope is not None:
        sections = list(sections or family.sections or ())
        params["mrope_section"] = sections
        params["mrope_interleaved"] = family.mrope == "interleaved"  # the model's own rule
        if family.mrope == "paired":
            params["mrope_paired"] = True
    elif sections is not None or interleaved is not None or paired is not None:
        if reader.known:
            raise ValueError(
                f"the config has mrope_section, which model_type {reader.model_type!r}'s rotary "
                "module does not read (transformers ignores it there): remove it"
            )
        raise ValueError(
            "the config has mrope_section, and models recompose M-RoPE sections in "
            f"different ways: {reader.unknown()} (Qwen2-VL and Qwen2.5-VL: contiguous; "
            "Qwen3-VL and Qwen3.5: interleaved; ERNIE-4.5-VL: paired); pass the mapping to "
            "sinpe.rope_at with mrope_interleaved or mrope_paired set as your model does"
        )


def _build(
    reader: _Reader,
    scaling: dict,
    parsed: rope_types.RopeScaling,
    width: int,
    theta: float,
    max_position: int | None,
    layer_type: str | None,
) -> RopeSpec:
    """The ``RopeSpec`` of a parsed mapping: its rotary module, layout and softmax scale."""
    family = reader.family
    rotary = rot.from_scaling(width, theta, parsed)
    return RopeSpec(
        width,
        theta,
        Frozen({k: v for k, v in parsed.mapping().items() if k != "max_position_embeddings"}),
        max_position,
        None,
        layer_type,
        reader.model_type,
        family.layout if reader.known else None,
        rotary.axes,
        family.output_dtype,
        _softmax_scale(family, scaling, parsed.mapping()),
        rotation=_rotation(reader),
        sin_sign=family.sin_sign,
        _rotary=rotary,
    )


def _rotation(reader: _Reader) -> str | None:
    """Which query/key elements the model's attention rotates together: the family's rule,
    or the config key that chooses it (DeepSeek-V3's ``rope_interleave``)."""
    if not reader.known:
        return None
    family = reader.family
    if family.rotation_key is not None:
        key, when_true, when_false = family.rotation_key
        value = reader.given(key)
        if value is not None:
            if not isinstance(value, bool):
                raise ValueError(
                    f"config key {reader.where}{key} must be true or false, got {value!r:.60}"
                )
            return when_true if value else when_false
    return family.rotation


def _softmax_scale(family, given: dict, parsed: Mapping) -> float:
    """transformers' ``yarn_apply_mscale``: for a scaled rope type with a nonzero
    ``mscale_all_dim``, the softmax scale times ``yarn_get_mscale(factor, mscale_all_dim)**2``
    (``0.1 * m * ln(factor) + 1``, 1 for a factor up to 1), in the families that apply it."""
    mscale_all_dim = given.get("mscale_all_dim") or 0
    if (
        not family.softmax_mscale
        or rope_types.is_plain(parsed.get("rope_type"))
        or not mscale_all_dim
    ):
        return 1.0
    factor = float(given.get("factor") or parsed.get("factor") or 1.0)
    mscale = 1.0 if factor <= 1 else 0.1 * float(mscale_all_dim) * math.log(factor) + 1.0
    return mscale * mscale


def rope_config(config: Config, *, layer_type: str | None = None) -> RopeSpec:
    """A model's RoPE, read from its config as transformers 5.24 reads it.

    Parameters
    ----------
    config : str, os.PathLike, mapping or object with ``to_dict()``
        A ``config.json`` path, its parsed mapping, or a transformers config. A nested
        ``text_config`` (vision-language models) is read for the text model; for a vision
        tower, pass ``config["vision_config"]``.
    layer_type : str, optional
        For a config with a RoPE per layer type (Gemma 3 and 4, OLMo-3: ``"full_attention"``,
        ``"sliding_attention"``), that layer type's spec.

    Returns
    -------
    RopeSpec
        Its ``head_dim`` is the rotary width (``partial_rotary_factor``, ``qk_rope_head_dim``
        and the other family rules applied), its ``layout`` the model module's output layout;
        ``.rope()``, ``.rope_at()``, ``.rope_cache()`` and ``.frequencies()`` make its tables.
        A key the config leaves out takes transformers 5.24's class default for the
        ``model_type``; a key that changes a value is applied as the model's family record
        says, or refused naming the key.

    Examples
    --------
    >>> import sinpe
    >>> spec = sinpe.rope_config({"model_type": "llama", "hidden_size": 4096,
    ...     "num_attention_heads": 32, "rope_theta": 500000.0})
    >>> spec.head_dim, spec.base, dict(spec.scaling)
    (128, 500000.0, {'rope_type': 'default'})
    """
    reader = _Reader(load_config(config))
    if reader.family.refused is not None:
        raise ValueError(f"model_type {reader.model_type!r}: {reader.family.refused}")
    nested, raw, own = _mappings(reader)
    if not nested:
        if layer_type is not None:
            raise ValueError(
                "layer_type is for configs with a RoPE per layer type; this one has one RoPE"
            )
        return _spec(reader, raw[None], None, own)
    layers = {
        name: (None if params is None else _spec(reader, params, name, own))
        for name, params in raw.items()
    }
    names = tuple(sorted(layers))
    max_position = reader.value("max_position_embeddings")
    spec = RopeSpec(
        None,
        None,
        None,
        max_position,
        names,
        None,
        reader.model_type,
        reader.family.layout if reader.known else None,
        None,
        reader.family.output_dtype,
        rotation=_rotation(reader),
        sin_sign=reader.family.sin_sign,
        _layers=layers,
    )
    return spec if layer_type is None else spec.layer(layer_type)
