"""What transformers 5.24 fills in for the RoPE keys a model's ``config.json`` leaves out: the
defaults of its config class, by ``model_type``. Data only; ``config.py`` reads it.

Read from transformers 5.24.0 in a throwaway virtual environment (the config classes built with
no arguments, and each model's ``XxxRotaryEmbedding.compute_default_rope_parameters``), never a
dependency. A model_type not listed here is read too, but a key it leaves out is an error
naming the key: sinpe never guesses a default.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FAMILIES", "COMPOSITE", "ALIASES", "Family"]


class Family(NamedTuple):
    """A config class's RoPE defaults."""

    theta: float  # rope_theta (per-layer families: the full-attention layers')
    head_dim: int | None  # the class's head_dim (None: hidden_size // num_attention_heads)
    hidden_size: int
    num_attention_heads: int
    max_position_embeddings: int | None
    # the class's partial_rotary_factor, and whether its *default* RoPE applies one: the
    # scaled types (linear, dynamic, yarn, longrope, llama3) always do, in every model
    partial_rotary_factor: float | None = None
    partial_in_default: bool = False
    # M-RoPE: the default mrope_section and whether the sections interleave (Qwen3-VL) or
    # follow one another (Qwen2-VL); None: the model has no M-RoPE (a section key is ignored)
    mrope: tuple | None = None
    # the rotary width comes from qk_rope_head_dim (its class default second): "forced" (a
    # head_dim key is ignored) or "default" (a head_dim key wins), as __post_init__ does
    rope_head_dim: tuple | None = None
    # rope_parameters when the config has neither rope_parameters nor rope_scaling
    rope_parameters: dict | None = None
    # the layer types that carry their own RoPE (Gemma 3/3n/4)
    layer_types: tuple = ()


_F = Family
_GEMMA_LAYERS = ("full_attention", "sliding_attention")
_CONTIGUOUS, _INTERLEAVED = False, True

FAMILIES: dict[str, Family] = {
    "llama": _F(10000.0, None, 4096, 32, 2048),
    "llama4_text": _F(500000.0, 128, 5120, 40, 131072),
    "mistral": _F(10000.0, None, 4096, 32, 131072),
    "mixtral": _F(1000000.0, None, 4096, 32, 131072),
    "qwen2": _F(10000.0, None, 4096, 32, 32768),
    "qwen2_moe": _F(10000.0, None, 2048, 16, 32768),
    "qwen3": _F(10000.0, 128, 4096, 32, 32768),
    "qwen3_moe": _F(10000.0, None, 2048, 32, 32768),
    "qwen3_next": _F(10000.0, 256, 2048, 16, 32768, 0.25, True),
    "qwen2_vl_text": _F(1000000.0, None, 8192, 64, 32768, mrope=((16, 24, 24), _CONTIGUOUS)),
    "qwen2_5_vl_text": _F(1000000.0, None, 8192, 64, 32768, mrope=((16, 24, 24), _CONTIGUOUS)),
    "qwen3_vl_text": _F(500000.0, 128, 4096, 32, 128000, mrope=((24, 20, 20), _INTERLEAVED)),
    "qwen3_vl_moe_text": _F(500000.0, None, 2048, 16, 128000, mrope=((24, 20, 20), _INTERLEAVED)),
    "qwen3_5_text": _F(10000.0, 256, 4096, 16, 32768, 0.25, True, ((11, 11, 10), _INTERLEAVED)),
    "qwen3_5_moe_text": _F(10000.0, 256, 2048, 16, 32768, 0.25, True, ((11, 11, 10), _INTERLEAVED)),
    "gemma": _F(10000.0, 256, 3072, 16, 8192),
    "gemma2": _F(10000.0, 256, 2304, 8, 8192),
    "gemma3_text": _F(1000000.0, 256, 2304, 8, 131072, layer_types=_GEMMA_LAYERS),
    "gemma3n_text": _F(1000000.0, 256, 2048, 8, 32768, layer_types=_GEMMA_LAYERS),
    "gemma4_text": _F(
        10000.0,
        256,
        2304,
        8,
        131072,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {
                "rope_type": "proportional",
                "partial_rotary_factor": 0.25,
                "rope_theta": 1000000.0,
            },
        },
        layer_types=_GEMMA_LAYERS,
    ),
    "phi": _F(10000.0, None, 2048, 32, 2048, 0.5, True),
    "phi3": _F(10000.0, None, 3072, 32, 4096, 1.0, True),
    "deepseek_v2": _F(10000.0, None, 4096, 32, 2048, rope_head_dim=("forced", 64)),
    "deepseek_v3": _F(10000.0, None, 7168, 128, 4096, rope_head_dim=("default", 64)),
    "minicpm3": _F(10000.0, None, 2560, 40, 32768, rope_head_dim=("forced", 32)),
    "pixtral": _F(10000.0, None, 1024, 16, None),
    "olmo": _F(10000.0, None, 4096, 32, 2048),
    "olmo2": _F(10000.0, None, 4096, 32, 2048),
    "glm": _F(10000.0, 128, 4096, 32, 131072, 0.5, True),
    "glm4": _F(10000.0, 128, 4096, 32, 131072, 0.5, True),
    "gpt_neox": _F(10000.0, None, 6144, 64, 2048, 0.25, True),
    "falcon": _F(10000.0, None, 4544, 71, 2048),
    "stablelm": _F(10000.0, None, 2560, 32, 4096, 0.25, True),
    "gpt_oss": _F(
        150000.0,
        64,
        2880,
        64,
        131072,
        rope_parameters={
            "rope_type": "yarn",
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 4096,
            "rope_theta": 150000.0,
        },
    ),
    "cohere": _F(500000.0, None, 8192, 64, 8192),
    "cohere2": _F(10000.0, None, 8192, 64, 8192),
    "starcoder2": _F(10000.0, None, 3072, 24, 4096),
    "granite": _F(10000.0, None, 4096, 32, 2048),
    "ernie4_5": _F(500000.0, 128, 1024, 16, 131072),
    "smollm3": _F(2000000.0, None, 2048, 16, 32768),
    "exaone4": _F(10000.0, None, 4096, 32, 2048),
    "seed_oss": _F(10000.0, 128, 4096, 80, 524288),
}

# Vision-language configs: the model_type of their text part (its text_config, or the top
# level where the file is flat, as Qwen2-VL's hub configs are).
COMPOSITE = {
    "qwen2_vl": "qwen2_vl_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "gemma3": "gemma3_text",
    "gemma3n": "gemma3n_text",
    "gemma4": "gemma4_text",
    "llama4": "llama4_text",
}

# model_types transformers reads as another one: Kimi-K2's configs are DeepSeek-V3's.
ALIASES = {"kimi_k2": "deepseek_v3"}
