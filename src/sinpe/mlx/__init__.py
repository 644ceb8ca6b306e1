"""sinpe for MLX models (mlx_lm): ``check(model, config)`` judges each RoPE module against the
exact table of the model's config, in ``sinpe check``'s words; ``patch(model, config)``
replaces each module that reads the config by ``ExactRoPE``, sinpe's correctly rounded
table with the module's own rotation. ``import sinpe`` never imports this package or mlx;
``import sinpe.mlx`` needs mlx (``pip install 'sinpe[mlx]'``)."""

from __future__ import annotations

try:
    import mlx.core  # noqa: F401
except ImportError as exc:  # one line saying what to install
    raise ImportError(
        "mlx and mlx-lm: pip install 'sinpe[mlx]' (mlx[cpu] on Linux, mlx on macOS)"
    ) from exc

from ._check import LayerReport, check, check_folder
from ._exact import ExactRoPE, PatchReport, patch

__all__ = ["ExactRoPE", "LayerReport", "PatchReport", "check", "check_folder", "patch"]
