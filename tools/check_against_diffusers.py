"""diffusers' own positional functions against sinpe.compat.diffusers, side by side.

Run by hand in a throwaway virtual environment, never in CI (diffusers is not a dependency):

    python3.11 -m venv /tmp/df && /tmp/df/bin/pip install diffusers==0.42.0 torch==2.13.0
    /tmp/df/bin/python tools/check_against_diffusers.py

Each case calls both with the same arguments and compares type, dtype, shape and values. The
values differ by diffusers' float32 steps only (its float32 grids, frequencies and angles,
float32 sin/cos), so values agree to 1e-6 and the largest difference is printed. Run of
2026-12-01: every type, dtype and shape the same; values within 4e-7.
"""

import os
import sys
import warnings

import numpy as np
import torch
from diffusers.models import embeddings as theirs
from diffusers.models.transformers.transformer_flux import FluxPosEmbed

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from sinpe.compat import diffusers as ours  # noqa: E402

warnings.filterwarnings("ignore")


def same(name, a, b):
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    problems = []
    for x, y in zip(a, b):
        if type(x) is not type(y) or x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
            problems.append(
                f"{type(x).__name__} {x.dtype} {tuple(x.shape)} against "
                f"{type(y).__name__} {y.dtype} {tuple(y.shape)}"
            )
            continue
        x, y = x.numpy(), y.numpy()
        err = np.abs(x - y).max() if x.size else 0.0
        if not err <= 1e-6:
            problems.append(f"values differ by {err:.3g}")
    verdict = "ok" if not problems else "DIFF " + "; ".join(problems)
    print(f"{name:60s} {verdict} (max diff {err:.2g})")


def main():
    pos32 = torch.arange(7, dtype=torch.float32) * 1.5
    pos64 = torch.arange(7, dtype=torch.float64) * 1.5
    same(
        "get_1d_sincos_pos_embed_from_grid(16, f32)",
        ours.get_1d_sincos_pos_embed_from_grid(16, pos32),
        theirs.get_1d_sincos_pos_embed_from_grid(16, pos32),
    )
    same(
        "get_1d_sincos_pos_embed_from_grid(16, f32, flip, dtype=f32)",
        ours.get_1d_sincos_pos_embed_from_grid(
            16, pos32, flip_sin_to_cos=True, dtype=torch.float32
        ),
        theirs.get_1d_sincos_pos_embed_from_grid(
            16, pos32, flip_sin_to_cos=True, dtype=torch.float32
        ),
    )
    same(
        "get_1d_sincos_pos_embed_from_grid(16, f64, dtype=f32)",
        ours.get_1d_sincos_pos_embed_from_grid(16, pos64, dtype=torch.float32),
        theirs.get_1d_sincos_pos_embed_from_grid(16, pos64, dtype=torch.float32),
    )
    for args in [(64, 8), (32, (4, 6)), (48, 5)]:
        same(
            f"get_2d_sincos_pos_embed{args}",
            ours.get_2d_sincos_pos_embed(*args),
            theirs.get_2d_sincos_pos_embed(*args),
        )
    same(
        "get_2d_sincos_pos_embed(32, 6, cls, 2, 2.0, 8)",
        ours.get_2d_sincos_pos_embed(32, 6, True, 2, 2.0, 8),
        theirs.get_2d_sincos_pos_embed(32, 6, True, 2, 2.0, 8),
    )
    same(
        "get_3d_sincos_pos_embed(64, (6, 4), 3)",
        ours.get_3d_sincos_pos_embed(64, (6, 4), 3),
        theirs.get_3d_sincos_pos_embed(64, (6, 4), 3),
    )
    grid = torch.stack(torch.meshgrid(torch.arange(3.0), torch.arange(5.0), indexing="xy"))
    same(
        "get_2d_sincos_pos_embed_from_grid(16, grid)",
        ours.get_2d_sincos_pos_embed_from_grid(16, grid),
        theirs.get_2d_sincos_pos_embed_from_grid(16, grid),
    )
    for kwargs in [
        {},
        dict(use_real=True),
        dict(use_real=True, repeat_interleave_real=False),
        dict(linear_factor=2.0, ntk_factor=3.0),
        dict(freqs_dtype=torch.float64),
        dict(theta=500.0, use_real=True),
    ]:
        for pos in (9, pos32, np.arange(5, dtype=np.float64) * 0.25):
            label = f"get_1d_rotary_pos_embed(16, {type(pos).__name__}, {kwargs})"
            same(
                label,
                ours.get_1d_rotary_pos_embed(16, pos, **kwargs),
                theirs.get_1d_rotary_pos_embed(16, pos, **kwargs),
            )
    for kwargs in [{}, dict(use_real=False)]:
        same(
            f"get_2d_rotary_pos_embed(32, crops, (4, 6), {kwargs})",
            ours.get_2d_rotary_pos_embed(32, ((0, 0), (4, 6)), (4, 6), **kwargs),
            theirs.get_2d_rotary_pos_embed(32, ((0, 0), (4, 6)), (4, 6), **kwargs),
        )
    same(
        "get_2d_rotary_pos_embed(32, ((1, 2), (9, 11)), (4, 6))",
        ours.get_2d_rotary_pos_embed(32, ((1, 2), (9, 11)), (4, 6)),
        theirs.get_2d_rotary_pos_embed(32, ((1, 2), (9, 11)), (4, 6)),
    )
    same(
        "get_3d_rotary_pos_embed(64, crops, (3, 5), 4)",
        ours.get_3d_rotary_pos_embed(64, ((0, 0), (3, 5)), (3, 5), 4),
        theirs.get_3d_rotary_pos_embed(64, ((0, 0), (3, 5)), (3, 5), 4),
    )
    same(
        "get_3d_rotary_pos_embed(48, ..., slice, max (6, 8))",
        ours.get_3d_rotary_pos_embed(48, None, (3, 5), 4, grid_type="slice", max_size=(6, 8)),
        theirs.get_3d_rotary_pos_embed(48, None, (3, 5), 4, grid_type="slice", max_size=(6, 8)),
    )
    ids = torch.cat(
        [torch.zeros(4, 3), torch.tensor([[0, i, j] for i in range(3) for j in range(4)])]
    )
    flux = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(ids)
    mine = tuple(
        torch.cat(parts, dim=-1)
        for parts in zip(
            *[
                ours.get_1d_rotary_pos_embed(d, ids[:, k], use_real=True, freqs_dtype=torch.float64)
                for k, d in enumerate([16, 56, 56])
            ]
        )
    )
    same("FluxPosEmbed(10000, [16, 56, 56]) per axis", mine, flux)


if __name__ == "__main__":
    main()
