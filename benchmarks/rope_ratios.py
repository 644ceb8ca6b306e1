"""RoPE and block-convention speed as ratios measured side by side, and the float32 drift.

    python benchmarks/rope_ratios.py [--rounds N]

Rows (warm, the targets of the RoPE issue): Llama-3.1 RoPE 8192 x 128 float32 in the "half"
and "compact" layouts against two np.ones of the same bytes (one thread and default threads),
PyTorch's LlamaRotaryEmbedding computation against sinpe on one thread (when torch is
installed), and the block conventions at 2048 x 768 float64 on one thread against np.ones.
Each round times every contender of a row once, interleaved; ratios are medians of per-round
ratios (quartiles in brackets); "2-core scaling" is ratios.py's probe in the same rounds (~2:
both cores were ours).

Then the drift table: cos/sin as LlamaRotaryEmbedding computes them (float32 angle; torch when
installed, else the same float32 arithmetic in NumPy) and as sinpe does (float32 output),
each against the exact value (mpmath) for sinpe's float64 inverse frequencies.
"""

import datetime
import functools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from peers import (  # noqa: E402
    LLAMA31_ROPE,
    ROPE_SHAPE,
    float32_llama_rope,
    ones,
    ones_pair,
    sinpe_rope,
    torch_llama_rope,
)
from ratios import (  # noqa: E402
    cpu_name,
    exit_without_kernel,
    quartiles,
    rounds_parser,
    scaling_probe,
)

import sinpe  # noqa: E402

THREADED = sinpe.THREAD_RUNTIME != "none"
from sinpe.cli.bench import timed  # noqa: E402

N, HEAD_DIM = ROPE_SHAPE
DRIFT_POSITIONS = [100, 8191, 32767, 131071, 2**20]


def rows():
    """(name, {contender: timer}, numerator, denominator, target): ratio = num / den."""
    table = functools.partial
    result = []
    for layout, width in (("half", HEAD_DIM), ("compact", HEAD_DIM // 2)):
        for threads in (1, None):
            result.append(
                (
                    f"rope {N} x {HEAD_DIM} llama3 float32 {layout}, "
                    f"{'one thread' if threads else 'default threads'}",
                    {
                        "ones": table(timed, ones_pair, N, width),
                        "sinpe": table(
                            timed, sinpe_rope, N, HEAD_DIM, layout=layout, threads=threads
                        ),
                    },
                    "sinpe",
                    "ones",
                    1.5,
                )
            )
    forward = torch_llama_rope()
    if forward is not None:
        result.append(
            (
                f"PyTorch LlamaRotaryEmbedding / sinpe, {N} x {HEAD_DIM} float32 half",
                {
                    "sinpe": table(timed, sinpe_rope, N, HEAD_DIM),
                    "torch": table(timed, forward, N, HEAD_DIM),
                },
                "torch",
                "sinpe",
                None,  # a speed-up: at least 3
            )
        )
    for convention in ("vaswani", "fairseq", "hf-marian"):
        result.append(
            (
                f"{convention} 2048 x 768 float64",
                {
                    "ones": table(timed, ones, 2048, 768, "float64"),
                    "sinpe": table(
                        timed,
                        sinpe.sinusoidal_positional_encoding,
                        2048,
                        768,
                        convention=convention,
                        backend="cython",
                        threads=1,
                    ),
                },
                "sinpe",
                "ones",
                1.6 if convention != "vaswani" else None,
            )
        )
    return result


def measure(rounds):
    out = []
    for name, contenders, num, den, target in rows():
        if THREADED:  # what the second core gave, in the same rounds (see ratios.py)
            contenders["probe 1"], contenders["probe 2"] = scaling_probe()
        for fn in contenders.values():
            fn()  # warm caches and the allocator
        samples = {k: [] for k in contenders}
        for _ in range(rounds):
            for k, fn in contenders.items():
                samples[k].append(fn())
        paired = [a / b for a, b in zip(samples[num], samples[den])]
        scaling = None
        if THREADED:
            scaling = statistics.median(
                a / b for a, b in zip(samples.pop("probe 1"), samples.pop("probe 2"))
            )
        med = {k: statistics.median(v) for k, v in samples.items()}
        out.append((name, med, paired, num, den, target, scaling))
    return out


def drift():
    import numpy as np
    from mpmath import mp

    mp.prec = 320
    inv_freq, factor = sinpe.rope_frequencies(HEAD_DIM, scaling=LLAMA31_ROPE)
    forward = torch_llama_rope()
    lines = []
    for p in DRIFT_POSITIONS:
        exact_cos = np.array([float(mp.cos(mp.mpf(p) * mp.mpf(float(w)))) for w in inv_freq])
        exact_sin = np.array([float(mp.sin(mp.mpf(p) * mp.mpf(float(w)))) for w in inv_freq])
        if forward is not None:  # positions 0..p: the row of position p
            cos, sin = forward(p + 1, HEAD_DIM)
            usual_cos = cos[0, -1, : HEAD_DIM // 2].numpy()
            usual_sin = sin[0, -1, : HEAD_DIM // 2].numpy()
        else:
            usual_cos, usual_sin = (v[0] for v in float32_llama_rope([p], inv_freq))
        ours_cos, ours_sin = sinpe.rope_at(
            [p], HEAD_DIM, scaling=LLAMA31_ROPE, layout="compact", dtype="float32"
        )
        usual = max(np.abs(usual_cos - exact_cos).max(), np.abs(usual_sin - exact_sin).max())
        ours = max(np.abs(ours_cos - exact_cos).max(), np.abs(ours_sin - exact_sin).max())
        lines.append((p, usual, ours))
    return "torch" if forward is not None else "NumPy float32", lines


def main(argv=None):
    args = rounds_parser(__doc__).parse_args(argv)
    exit_without_kernel("rope_ratios.py")
    results = measure(args.rounds)
    print(
        f"sinpe {sinpe.__version__}, {datetime.date.today()}, {cpu_name()}, "
        f"{args.rounds} interleaved rounds"
    )
    print()
    print("| row | times (median) | ratio (quartiles) | target | 2-core scaling |")
    print("|---|---|---|---|---|")
    failed = 0
    for name, med, paired, num, _, target, scaling in results:
        ratio, text = quartiles(paired)
        if num == "torch":
            verdict, ok = "at least 3", ratio >= 3
        elif target is None:
            verdict, ok = "(reference)", True
        else:
            verdict, ok = f"<= {target}", ratio <= target
        failed += not ok
        times = ", ".join(f"{k} {v * 1e6:,.0f} us" for k, v in med.items())
        judged = target is not None or num == "torch"
        mark = (" ok" if ok else " MISSED") if judged else ""
        probe = "-" if scaling is None else f"{scaling:.2f}"
        print(f"| {name} | {times} | {text} | {verdict}{mark} | {probe} |")
    source, lines = drift()
    print()
    print("Llama-3.1 RoPE (head_dim 128), largest |error| of cos/sin at position p, float32:")
    print()
    print(f"| position | usual float32 computation ({source}) | sinpe float32 |")
    print("|---|---|---|")
    for p, usual, ours in lines:
        print(f"| {p} | {usual:.2e} | {ours:.2e} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
