"""Are torch's CPU float32 angles correctly rounded? (issue 67's three one-off flakes)

Each engine forms its RoPE angles as float32 products ``position * frequency``: vLLM and
SGLang with ``torch.einsum("i,j -> ij", t, inv_freq)`` in ``_compute_cos_sin_cache``,
transformers 4.x with ``inv_freq_expanded @ position_ids_expanded`` (a K=1 batched matmul),
transformers 5.x with ``position_ids[..., None].float() * inv_freq``. A product of two float32
values is exact in float64 (24 + 24 bits), so its float64 value rounded to float32 is the
correctly rounded float32 product; this script calls each op many times and counts the
entries that are not that, with their distance in float32 ulps. It also checks that torch's
cos/sin of the same angles give the same bits on every call.

Run (one torch process; env vars such as ``ONEDNN_VERBOSE=1``, ``MKL_VERBOSE=1``,
``DNNL_MAX_CPU_ISA``, ``ATEN_CPU_CAPABILITY`` go on the command line)::

    python tools/gemm_rounding.py --repeats 10 --threads 1 2 4 --rows 4096 32768 131072 \
        --precisions highest --trig
    python tools/gemm_rounding.py --repeats 5 --threads 1 2 4 --rows 4096 131072 \
        --precisions high medium
    python tools/gemm_rounding.py --phi-calls 1000 --threads 1 2 4   # transformers' module
    /work/venv-vllm/bin/python tools/gemm_rounding.py --vllm-builds 50 --threads 1 2 4

Prints one JSON object: per op, threads and float32 matmul precision, the calls made, the
entries compared, how many were not correctly rounded, the largest distance in ulps, and
whether every call gave the same bits (with ``--phi-calls`` / ``--vllm-builds``: how many
outputs equal cos/sin of the correctly rounded angles). docs/engines.md has the results.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math

import numpy as np
import torch


def yarn_frequencies(
    dim: int,
    base: float,
    factor: float,
    original: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
) -> torch.Tensor:
    """YaRN's frequencies as vLLM's ``YaRNScalingRotaryEmbedding._compute_inv_freq`` forms
    them (float32 throughout): Qwen3-8B's 4x (128, 1e6, 4, 32768), gpt-oss (64, 150000,
    32, 4096)."""
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (factor * pos_freqs)

    def correction(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction(beta_fast)), 0)
    high = min(math.ceil(correction(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = (torch.arange(dim // 2, dtype=torch.float) - low) / (high - low)
    mask = 1 - torch.clamp(ramp, 0, 1)
    return interpolation * (1 - mask) + extrapolation * mask


def longrope_frequencies(dim: int = 96, base: float = 10000.0) -> torch.Tensor:
    """A Phi-3.5-like LongRoPE frequency set: base frequencies over per-pair factors from
    1 to about 60 (full float32 mantissas, which is what matters here)."""
    factors = torch.linspace(1.0, 60.0, dim // 2, dtype=torch.float) ** 1.07
    return 1.0 / (factors * base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))


FREQUENCIES = {
    "qwen3-8b-yarn-4x": lambda: yarn_frequencies(128, 1e6, 4.0, 32768),
    "gpt-oss-20b": lambda: yarn_frequencies(64, 150000.0, 32.0, 4096),
    "phi-3.5-like": longrope_frequencies,
}


def op_einsum(t, f):
    return torch.einsum("i,j -> ij", t, f)  # vLLM's and SGLang's _compute_cos_sin_cache


def op_mm(t, f):
    return t[:, None] @ f[None, :]  # a 2-D matmul with K = 1


def op_bmm(t, f):
    # transformers 4.x: inv_freq_expanded (B, D/2, 1) @ position_ids_expanded (B, 1, S), then .T
    return (f[None, :, None].expand(2, -1, 1) @ t[None, None, :].expand(2, 1, -1))[1].T


def op_broadcast(t, f):
    return t[:, None] * f  # transformers 5.x: position_ids[..., None].float() * inv_freq


OPS = {"einsum": op_einsum, "mm": op_mm, "bmm": op_bmm, "broadcast": op_broadcast}


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps between two arrays of non-negative float32 values."""
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def vllm_builds(builds: int, thread_counts: list) -> dict:
    """vLLM's own ``YaRNScalingRotaryEmbedding`` for tests/data/configs/qwen3-8b.yarn-4x.json
    (head 128, base 1e6, factor 4, 32768 original positions: 131,072 rows) built ``builds``
    times per thread count; each cache compared, bit for bit, with cos/sin of the correctly
    rounded float32 angles (its own frequencies, ``t * f`` in float64 rounded once) times its
    mscale, as vLLM multiplies them."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding.yarn_scaling_rope import (
        YaRNScalingRotaryEmbedding,
    )

    rows = {}
    digests = set()
    with set_current_vllm_config(VllmConfig()):
        for threads in thread_counts:
            torch.set_num_threads(threads)
            same = differ = 0
            for _ in range(builds):
                layer = YaRNScalingRotaryEmbedding(128, 128, 32768, 1e6, True, 4.0, torch.float32)
                cache = layer.cos_sin_cache
                f = layer._compute_inv_freq(layer.scaling_factor).numpy().astype(np.float64)
                t = np.arange(cache.shape[0], dtype=np.float64)
                angles = torch.from_numpy((t[:, None] * f[None, :]).astype(np.float32))
                expected = torch.cat((angles.cos() * layer.mscale, angles.sin() * layer.mscale), -1)
                if torch.equal(cache, expected):
                    same += 1
                else:
                    differ += 1
                digests.add(hashlib.sha256(cache.numpy().tobytes()).hexdigest()[:16])
            rows[threads] = {
                "builds": builds,
                "equal_to_correctly_rounded_angles": same,
                "differ": differ,
            }
    return {"torch": torch.__version__, "per_threads": rows, "distinct_caches": sorted(digests)}


def phi_calls(calls: int, thread_counts: list) -> dict:
    """transformers' rotary module of tests/data/configs/phi-3.5-mini-instruct.autoconfig-dump.json
    (LongRoPE, 48 pairs) called ``calls`` times per thread count, as ``sinpe engines`` calls
    it (a zero ``x``, 281 probe ids and the sequence's last, 131,071, which selects its long
    factors); each output compared, bit for bit, with cos/sin of the correctly rounded float32
    angles (its own ``inv_freq`` after the call) times its attention factor."""
    from pathlib import Path

    import transformers

    folder = Path(__file__).resolve().parents[1] / "tests/data/configs"
    config = transformers.AutoConfig.from_pretrained(
        folder / "phi-3.5-mini-instruct.autoconfig-dump.json"
    )
    module = transformers.models.phi3.modeling_phi3.Phi3RotaryEmbedding(config)
    ids = np.unique(np.r_[0:64, np.linspace(64, 131_000, 217).astype(np.int64)])
    ids = torch.tensor(np.append(ids, 131_071))[None]
    x = torch.zeros(1, 1, ids.shape[-1], 8)
    rows, digests = {}, set()
    for threads in thread_counts:
        torch.set_num_threads(threads)
        same = differ = worst = 0
        for _ in range(calls):
            with torch.no_grad():
                cos, sin = module(x, ids)
            f = module.inv_freq.numpy().astype(np.float64)
            angles = (ids[0].numpy().astype(np.float64)[:, None] * f).astype(np.float32)
            angles = torch.from_numpy(np.concatenate((angles, angles), -1))
            expected = (
                angles.cos() * module.attention_scaling,
                angles.sin() * module.attention_scaling,
            )
            if torch.equal(cos[0], expected[0]) and torch.equal(sin[0], expected[1]):
                same += 1
            else:
                differ += 1
                worst = max(worst, float((cos[0] - expected[0]).abs().max()))
            both = cos.numpy().tobytes() + sin.numpy().tobytes()
            digests.add(hashlib.sha256(both).hexdigest()[:16])
        rows[threads] = {
            "calls": calls,
            "equal_to_correctly_rounded_angles": same,
            "differ": differ,
            "largest_difference": worst,
        }
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "per_threads": rows,
        "distinct_outputs": sorted(digests),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rows", type=int, nargs="+", default=[4096, 32768, 131072])
    parser.add_argument("--precisions", nargs="+", default=["highest", "high", "medium"])
    parser.add_argument("--ops", nargs="+", default=list(OPS))
    parser.add_argument("--frequencies", nargs="+", default=list(FREQUENCIES))
    parser.add_argument("--trig", action="store_true", help="also check cos/sin's bits per call")
    parser.add_argument(
        "--vllm-builds",
        type=int,
        default=0,
        help="instead: build vLLM's Qwen3-8B YaRN 4x cache this many times per "
        "thread count (run with vLLM's venv)",
    )
    parser.add_argument(
        "--phi-calls",
        type=int,
        default=0,
        help="instead: call transformers' Phi-3.5 rotary module this many times "
        "per thread count on a 282-id read",
    )
    args = parser.parse_args()
    if args.phi_calls:
        print(json.dumps(phi_calls(args.phi_calls, args.threads)))
        return
    if args.vllm_builds:
        print(json.dumps(vllm_builds(args.vllm_builds, args.threads)))
        return

    results = []
    for name in args.frequencies:
        f = FREQUENCIES[name]().contiguous()
        f64 = f.numpy().astype(np.float64)
        for rows in args.rows:
            t = torch.arange(rows, dtype=torch.float)
            exact = (t.numpy().astype(np.float64)[:, None] * f64[None, :]).astype(np.float32)
            for op in args.ops:
                for precision in args.precisions:
                    torch.set_float32_matmul_precision(precision)
                    for threads in args.threads:
                        torch.set_num_threads(threads)
                        wrong = worst = 0
                        digests, trig_digests = set(), set()
                        for _ in range(args.repeats):
                            angles = OPS[op](t, f).contiguous().numpy()
                            distance = ulps(angles, exact)
                            wrong += int(np.count_nonzero(distance))
                            worst = max(worst, int(distance.max()))
                            digests.add(hashlib.sha256(angles.tobytes()).hexdigest()[:16])
                            if args.trig:
                                a = torch.from_numpy(angles)
                                trig = torch.cat((a.cos(), a.sin()), dim=-1).numpy()
                                trig_digests.add(hashlib.sha256(trig.tobytes()).hexdigest()[:16])
                        row = {
                            "frequencies": name,
                            "rows": rows,
                            "columns": f.numel(),
                            "op": op,
                            "precision": precision,
                            "threads": threads,
                            "calls": args.repeats,
                            "entries": args.repeats * exact.size,
                            "not_correctly_rounded": wrong,
                            "largest_ulps": worst,
                            "distinct_bytes": len(digests),
                        }
                        if args.trig:
                            row["distinct_trig_bytes"] = len(trig_digests)
                        results.append(row)
    torch.set_float32_matmul_precision("highest")
    summary = {
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "calls": sum(r["calls"] for r in results),
        "entries": sum(r["entries"] for r in results),
        "not_correctly_rounded": sum(r["not_correctly_rounded"] for r in results),
        "largest_ulps": max(r["largest_ulps"] for r in results),
        "nondeterministic": [
            r for r in results if r["distinct_bytes"] > 1 or r.get("distinct_trig_bytes", 1) > 1
        ],
        "wrong": [r for r in results if r["not_correctly_rounded"]],
    }
    print(json.dumps({"summary": summary, "results": results}))


if __name__ == "__main__":
    main()
