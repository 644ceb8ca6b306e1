"""Does ``sinpe.mlx.patch`` slow an MLX model? Paired rounds, medians: one RoPE call at the
shapes of decoding (1 new token) and of a prefill (512 tokens), mlx_lm's own module against
the ``ExactRoPE`` that replaces it, and a whole forward pass of a small model, original
against patched. Each round times both, in alternating order; the ratio is patched/original.

    python benchmarks/mlx_patch.py [--rounds 15]      # needs mlx, mlx-lm, torch, transformers
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))


def _time(call, repeat: int) -> float:
    import mlx.core as mx

    mx.eval(call())  # warm
    start = time.perf_counter()
    for _ in range(repeat):
        mx.eval(call())
    return (time.perf_counter() - start) / repeat


def _paired(a, b, rounds: int, repeat: int) -> tuple:
    """Median seconds of ``a`` and ``b`` and the median of the per-round ratios b/a."""
    times_a, times_b, ratios = [], [], []
    for k in range(rounds):
        first, second = (a, b) if k % 2 == 0 else (b, a)
        t1, t2 = _time(first, repeat), _time(second, repeat)
        ta, tb = (t1, t2) if k % 2 == 0 else (t2, t1)
        times_a.append(ta)
        times_b.append(tb)
        ratios.append(tb / ta)
    return statistics.median(times_a), statistics.median(times_b), statistics.median(ratios)


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    import engine_models
    import mlx.core as mx
    import numpy as np
    from mlx_lm.utils import load_model

    import sinpe.mlx as smlx

    rows = []
    with tempfile.TemporaryDirectory() as root:
        folder = engine_models.save("llama-3.1", Path(root, "m"))
        folder = engine_models.with_legacy_keys(folder, Path(root, "legacy"))
        original, _ = load_model(folder)
        patched, _ = load_model(folder)
        assert all(p.replaced for p in smlx.patch(patched, folder / "config.json"))
        own = original.model.layers[0].self_attn.rope
        exact = patched.model.layers[0].self_attn.rope
        for label, length, offset in (
            ("RoPE call, decode", 1, 4096),
            ("RoPE call, prefill", 512, 0),
        ):
            x = mx.array(np.random.default_rng(0).standard_normal((1, 16, length, 64)), mx.float32)
            rows.append(
                (
                    label,
                    *_paired(
                        lambda x=x, o=offset: own(x, offset=o),
                        lambda x=x, o=offset: exact(x, offset=o),
                        args.rounds,
                        args.repeat,
                    ),
                )
            )
        ids = mx.array([list(range(3, 3 + 256))])
        rows.append(
            (
                "forward, 256 tokens",
                *_paired(lambda: original(ids), lambda: patched(ids), args.rounds, args.repeat),
            )
        )
    print(f"mlx {mx.__version__}; {args.rounds} paired rounds of {args.repeat} calls; medians")
    print(f"{'':24} {'mlx_lm':>10} {'ExactRoPE':>10} {'ratio':>7}")
    for label, a, b, ratio in rows:
        print(f"{label:24} {a * 1e6:8.1f} us {b * 1e6:8.1f} us {ratio:7.2f}")
    return rows


if __name__ == "__main__":
    main()
