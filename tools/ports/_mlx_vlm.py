"""Beside the mlx-vlm glue (mlx-vlm.py), what is not the use of the kit: the model built from
config.json as mlx_vlm.utils.load_model builds it (get_model_and_args, ModelConfig.from_dict,
update_module_configs, apply_generation_config_defaults, Model), weights left unloaded."""

import copy

from mlx_vlm.utils import (
    apply_generation_config_defaults,
    get_model_and_args,
    update_module_configs,
)


def model_from_config(config: dict):
    """The mlx-vlm model of ``config`` (a dict, left unchanged), without its weights."""
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
    return arch.Model(apply_generation_config_defaults(model_config, config))
