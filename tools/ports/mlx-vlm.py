"""mlx-vlm 0.7.10 (MLX, CPU): the model built from config.json as mlx_vlm.utils.load_model builds
it (get_model_and_args, ModelConfig.from_dict, update_module_configs,
apply_generation_config_defaults, Model), weights left unloaded, and the first rotary module of
its language model (mlx_vlm/models/rope_utils.py, initialize_rope: nn.RoPE, Llama3RoPE, YarnRoPE,
SuScaledRoPE) called on queries as the model's attention calls it, rope(x, offset)."""

import copy

import mlx.core as mx
from _runs import rotate_by_runs
from mlx_vlm.utils import (
    apply_generation_config_defaults,
    get_model_and_args,
    update_module_configs,
)

from sinpe.testing import Rotates


def candidate(config: dict):
    config = copy.deepcopy(config)
    arch, _ = get_model_and_args(config)
    for key, default in (
        ("text_config", config.pop("llm_config", {})),
        ("vision_config", {}),
        ("audio_config", {}),
    ):
        config.setdefault(key, default)
    model_config = update_module_configs(
        arch.ModelConfig.from_dict(config),
        arch,
        config,
        ["text", "vision", "perceiver", "projector", "audio"],
    )
    model = arch.Model(apply_generation_config_defaults(model_config, config))
    rope = next(
        m
        for path, m in model.named_modules()
        if "vision" not in path
        and "audio" not in path
        and ("RoPE" in type(m).__name__ or "Rotary" in type(m).__name__)
    )

    def apply(q, offset):  # the attention's call: queries (batch, heads, length, head_dim)
        return rope(mx.array(q)[None, None], offset=offset)[0, 0]

    return Rotates(
        rotate_by_runs(apply), "interleaved" if getattr(rope, "traditional", False) else "half"
    )
