"""How each model family's rotary module reads its config: one record per ``model_type``, data
only (``config.py`` reads it).

A record joins two parts. What transformers 5.24 itself shows is generated into
``family_defaults.py`` by ``tools/transformers_rope.py``: the configuration class's RoPE
defaults (its keys, its default mapping, what it fills into a mapping it is given, attribute
aliases, layer types) and the rules its class's source and probes show (output layout, whether
the default RoPE applies ``partial_rotary_factor``, where a legacy ``rope_scaling`` goes,
M-RoPE recomposition). The rules no probe shows are written here by hand, one line each, as
that family's transformers class does them. Every record is checked against transformers' own
modules by enumeration (``tests/data/transformers_rope.json``, ``tests/test_registry.py``). A
model_type with no record is read by the common rules, and refused where they might not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, cast

from .family_defaults import COMPOSITE as _GENERATED_COMPOSITE
from .family_defaults import DEFAULTS
from .rope_types import PUBLIC_TYPES

__all__ = ["ALIASES", "COMPOSITE", "FAMILIES", "HEAD_DIM_RULES", "Family"]

# How a family's rotary module finds the head dimension its RoPE rotates:
HEAD_DIM_RULES = (
    "head_dim",  # head_dim (or its alias), else hidden_size // num_attention_heads: the common rule
    "hidden",  # hidden_size // num_attention_heads, whatever head_dim says (Falcon's property)
    # qk_rope_head_dim, whatever head_dim says: the MLA configs whose __post_init__ forces it
    # (DeepSeek-V2/V3/V3.2, MiniCPM3, HY-V4, Kimi-Linear, ...; found in their source)
    "qk_rope_head_dim",
    "attention_head_dim",  # attention_head_dim, else 2 * hidden_size // num_attention_heads: Zamba2
)
_EMPTY: Mapping = MappingProxyType({})


class Family(NamedTuple):
    """One model family's RoPE: its class defaults and its rules."""

    # the configuration class's defaults: top-level keys, the default mapping (used when a
    # config has none), what it fills into a mapping it is given (per layer type, "" when
    # flat), attribute aliases (JetMoe's head_dim is kv_channels) and its layer types
    config: Mapping = _EMPTY
    mapping: Mapping = _EMPTY
    fill: Mapping = _EMPTY
    overrides: Mapping = _EMPTY  # keys a config's own top-level value sets in the default mapping
    fills: Mapping = _EMPTY  # keys a config's own top-level value fills into a given mapping
    aliases: Mapping = _EMPTY
    layer_types: tuple = ()
    # rules
    head_dim: str = "head_dim"
    partial_in_default: bool = False  # the default RoPE applies partial_rotary_factor
    partial_default: float | None = None  # ... with this default, where the mapping has none
    partial_keys: tuple = ("partial_rotary_factor",)  # config keys read for it, first found
    theta_keys: tuple = ("rope_theta",)  # config keys read for the base, first found
    # the module's output: "half" (cat(freqs, freqs)), "interleaved" (repeat_interleave),
    # "compact", "complex" (freqs_cis)
    layout: str = "half"
    # which query/key elements the attention rotates together, whatever the layout: "halves"
    # (x[i] with x[i + d/2]: rotate_half) or "pairs" (x[2i] with x[2i + 1]: GPT-J's
    # rotate_every_two, GLM, Cohere, DeepSeek's interleave); None: not known. rotation_key:
    # (config key, rotation when true, when false) where the config chooses (rope_interleave)
    rotation: str | None = None
    rotation_key: tuple | None = None
    sin_sign: int = 1  # -1: the attention turns by the negative angle (NanoChat's rotate_half)
    # the output's dtype: "x" (the input's), or a dtype name (OLMo's float32; freqs_cis's
    # complex64)
    output_dtype: str = "x"
    # M-RoPE recomposition ("contiguous": Qwen2-VL; "interleaved": Qwen3-VL) and its default
    # sections
    mrope: str | None = None
    sections: tuple | None = None
    # a flat rope_scaling mapping: "all" (every layer type takes it, or the one RoPE), the
    # layer types that do, "ignored" (the class keeps it aside: refused), None (the class
    # fails on it: refused)
    legacy: Any = "all"
    reads_types: bool = True  # the module reads rope_type (ESM's always rotates the default)
    # the attention multiplies its softmax scale by yarn_get_mscale(factor, mscale_all_dim)**2
    # for a scaled rope type (transformers' yarn_apply_mscale: DeepSeek-V2/V3, MiniCPM3, ...)
    softmax_mscale: bool = False
    # a layer type's own head-dimension key (Gemma 4: full_attention -> global_head_dim)
    layer_head_dims: Mapping = _EMPTY
    # a layer type's own base key in a config without a mapping (Gemma 3's legacy format)
    layer_theta_keys: Mapping = _EMPTY
    # rope_type renames the config class makes (Phi-3: yarn -> longrope; Pixtral's default is
    # axial); family types: (rope_type, key) -> the type it becomes when the key is set
    renames: Mapping = _EMPTY
    type_rules: Mapping = _EMPTY
    # type -> keys of its mapping the family's module never reads (accepted, listed in the spec)
    ignored_keys: Mapping = _EMPTY
    # the config's own original_max_position_embeddings wins over the mapping's (Phi-3)
    original_from_config: bool = False
    # partial_rotary_factor = rotary_dim / head_dim where rotary_dim is given (MiniMax-M2)
    rotary_dim_partial: bool = False
    # top-level keys the class reads in a way sinpe does not reproduce: refused when given
    refused_keys: tuple = ()
    refused: str | None = None  # known, and refused: why
    vision: bool = False  # a vision tower's config (refused unless its record says it is built)


# HunYuan's "dynamic" with alpha is a fixed NTK-alpha base (compute_ntk_alpha_rope_parameters
# reads rope_theta, alpha and head_dim only: its checkpoints' YaRN keys change nothing)
_HUNYUAN = dict(
    type_rules=MappingProxyType({("dynamic", "alpha"): "ntk_alpha"}),
    ignored_keys=MappingProxyType(
        {"ntk_alpha": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim")}
    ),
)
# Phi3Config and Phi4MultimodalConfig rename "su" and "yarn" (under rope_type or type) to
# longrope before standardising (transformers 5.25; 5.24 standardised first and refused
# "su") and keep their own original length
_PHI = dict(
    renames=MappingProxyType({"su": "longrope", "yarn": "longrope"}), original_from_config=True
)
# Gemma 3's legacy format: the sliding layers' base is rope_local_base_freq
_LOCAL_BASE = MappingProxyType({"sliding_attention": "rope_local_base_freq"})
# GPTNeoXConfig reads rotary_pct and rotary_emb_base only (their older names)
_NEOX = dict(partial_keys=("rotary_pct",), theta_keys=("rotary_emb_base",))

# Ministral-3's and Mistral-4's YaRN mappings carry llama_4_scaling_beta, which their
# attention reads (a query scale that grows with the position, Llama 4's) and their rotary
# modules never do
_LLAMA4_SCALE = dict(
    ignored_keys=MappingProxyType({t: ("llama_4_scaling_beta",) for t in PUBLIC_TYPES}),
)


# The rules no probe shows, by model_type: each as that family's transformers class does it.
RULES: dict[str, dict] = {
    "ministral3": _LLAMA4_SCALE,
    "phi3": _PHI,
    "phi4_multimodal": _PHI,
    # PhimoeRotaryEmbedding: attention factor short_mscale / long_mscale by the length
    "phimoe": dict(type_rules=MappingProxyType({("longrope", "short_mscale"): "longrope_mscale"})),
    "hunyuan_v1_dense": _HUNYUAN,
    "hunyuan_v1_moe": _HUNYUAN,
    "gpt_neox": _NEOX,
    "gpt_neox_japanese": _NEOX,
    "falcon": dict(head_dim="hidden"),  # FalconConfig.head_dim is a property
    # PixtralVisionConfig's default rope type is axial; its tower is the one sinpe builds
    "pixtral": dict(renames=MappingProxyType({"default": "axial"}), vision=False),
    "gemma3_text": dict(layer_theta_keys=_LOCAL_BASE),
    "gemma3n_text": dict(layer_theta_keys=_LOCAL_BASE),
    "gemma4_text": dict(layer_head_dims=MappingProxyType({"full_attention": "global_head_dim"})),
    "minimax_m2": dict(rotary_dim_partial=True),
    # Zamba2Config.__post_init__ sets attention_head_dim = 2 * hidden_size // num_attention_heads
    "zamba2": dict(head_dim="attention_head_dim"),
    # Mistral4Config drops its partial factor when given rope_scaling (and regains it on reload)
    "mistral4": dict(legacy=None, **_LLAMA4_SCALE),
    # MellumConfig fills a top-level partial factor into scaled mappings, not default ones
    "mellum": dict(refused_keys=("partial_rotary_factor",)),
}


def _record(model_type: str) -> Family:
    generated = cast("dict[str, Any]", DEFAULTS.get(model_type, {}))
    rules = dict(generated.get("rules", {}))
    rules.pop("sections", None)
    sections = generated.get("rules", {}).get("sections")
    fields = {
        "config": MappingProxyType(dict(generated.get("config", {}))),
        "mapping": MappingProxyType(dict(generated.get("mapping", {}))),
        "fill": MappingProxyType(dict(generated.get("fill", {}))),
        "overrides": MappingProxyType(
            {k: tuple(v) for k, v in generated.get("overrides", {}).items()}
        ),
        "fills": MappingProxyType({k: tuple(v) for k, v in generated.get("fills", {}).items()}),
        "aliases": MappingProxyType(dict(generated.get("aliases", {}))),
        "layer_types": tuple(generated.get("layer_types", ())),
        "sections": None if sections is None else tuple(sections),
        **rules,
        **RULES.get(model_type, {}),
    }
    if fields.get("rotation_key") is not None:
        fields["rotation_key"] = tuple(fields["rotation_key"])
    if fields.get("legacy") is not None and not isinstance(fields["legacy"], str):
        fields["legacy"] = tuple(fields["legacy"])
    if generated.get("refused"):  # a module the enumeration could not probe
        fields["refused"] = generated["refused"]
    if generated.get("vision") and fields.get("vision", True):
        fields["vision"] = True
        fields["refused"] = (
            "a vision tower's config, whose rotary module recomposes its (height, width) grid "
            "in a way sinpe does not build (of the vision towers, sinpe builds Pixtral's)"
        )
    record = Family(**fields)
    if record.mrope == "unknown":
        record = record._replace(
            refused="its rotary module recomposes M-RoPE sections in a way sinpe does not "
            "reproduce (neither Qwen2-VL's contiguous nor Qwen3-VL's interleaved sections)"
        )
    return record


# Vision-language configs: the model_type of their text part (its text_config, or the top
# level where the file is flat, as Qwen2-VL's hub configs are).
COMPOSITE: dict[str, str] = dict(_GENERATED_COMPOSITE)
# model_types transformers reads as another one: Kimi-K2's configs are DeepSeek-V3's.
ALIASES = {"kimi_k2": "deepseek_v3"}
FAMILIES: dict[str, Family] = {t: _record(t) for t in sorted({*DEFAULTS, *RULES})}
