"""mlx-vlm 0.7.10 (MLX, CPU): the first rotary module of the language model mlx-vlm builds from
config.json (_mlx_vlm.py: as mlx_vlm.utils.load_model builds it; mlx_vlm/models/rope_utils.py,
initialize_rope: nn.RoPE, Llama3RoPE, YarnRoPE, SuScaledRoPE) called on queries as the model's
attention calls it, rope(x, offset)."""

import mlx.core as mx
from _mlx_vlm import model_from_config
from _runs import rotate_by_runs

from sinpe.testing import Rotates


def candidate(config: dict):
    rope = next(
        m
        for path, m in model_from_config(config).named_modules()
        if "vision" not in path
        and "audio" not in path
        and ("RoPE" in type(m).__name__ or "Rotary" in type(m).__name__)
    )

    def apply(q, offset):  # the attention's call: queries (batch, heads, length, head_dim)
        return rope(mx.array(q)[None, None], offset=offset)[0, 0]

    layout = "interleaved" if getattr(rope, "traditional", False) else "half"
    return Rotates(rotate_by_runs(apply), layout)
