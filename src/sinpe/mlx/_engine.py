"""MLX-LM's reading of a config (``sinpe engines``): mlx_lm builds the twin's model as
``mlx_lm.utils.load_model`` does (its config read by ``load_config``, the class and its
arguments chosen by ``_get_classes``; no weights: the RoPE modules hold none),
and ``sinpe.mlx.check`` judges each distinct RoPE module, called at the core's probe positions up to
the length asked for."""

from __future__ import annotations

from .._check.steps import step
from ._check import check

__all__ = ["read"]


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each distinct RoPE module's verdict against ``original``."""
    from mlx_lm import utils

    with step("mlx_lm.utils.load_config"):
        config = utils.load_config(folder)
    with step("mlx_lm.utils._get_classes"):
        model_class, args_class = utils._get_classes(config=config)
    with step(f"building {model_class.__module__}.Model"):
        model = model_class(args_class.from_dict(config))
    reports = check(model, original, length=length)
    layers = [
        (f"{r.cls} x{r.rotary_dim} ({r.names[0]}: {len(r.names)} layers)", r.judgment)
        for r in reports
    ]
    return layers, (), None
