"""First calls: each contender's first table in a fresh process, import excluded.

    python benchmarks/first_call.py [--runs N] [--shapes 2048x512,512x768,8192x1024]

Most users build a table once (model init, a script, the command line), so the first call is
the one they wait for. Every sample is a new interpreter that imports everything first, then
times one call; contenders and shapes are interleaved run by run, so machine noise hits them
alike. The table reports medians over runs and each contender's ratio to np.ones' first call
of the same shape and dtype (the allocate-and-write limit, also a first call).
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

# name -> (dtype, statement building the table; `n`, `d` are set)
CONTENDERS = {
    "np.ones f64": ("float64", "np.ones((n, d))"),
    "np.ones f32": ("float32", "np.ones((n, d), dtype=np.float32)"),
    "sinpe f64": ("float64", "sinpe.sinusoidal_positional_encoding(n, d)"),
    "sinpe f32": ("float32", "sinpe.sinusoidal_positional_encoding(n, d, dtype='float32')"),
    "textbook f64": ("float64", "textbook(n, d)"),
    "torch f32": ("float32", "torch_build(n, d, 'float32')"),
}
SETUP = """
import sys, time
sys.path.insert(0, {here!r})
import numpy as np
import sinpe
from sinpe.cli.bench import textbook
from peers import torch_tutorial
torch_build = torch_tutorial() if {torch} else None
n, d = {n}, {d}
start = time.perf_counter()
table = {statement}
elapsed = time.perf_counter() - start
assert table.shape[0] == n
print(elapsed)
"""


def has_torch() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    return probe.returncode == 0


def first_call(statement: str, n: int, d: int, torch: bool) -> float:
    code = SETUP.format(here=str(HERE), torch=torch, n=n, d=d, statement=statement)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(result.stdout.strip().splitlines()[-1])


PROBE = """
import time
import sinpe
out = sinpe.sinusoidal_positional_encoding(1024, 512, dtype="float32")
def best(threads):
    times = []
    for _ in range(30):
        start = time.perf_counter()
        sinpe.sinusoidal_positional_encoding(1024, 512, dtype="float32", out=out, threads=threads)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]
ratios = [best(1) / best(2) for _ in range(3)]
print(sorted(ratios)[1])
"""


def two_core_probe() -> float:
    """One thread's time over two threads' for a warm, cache-resident table, in a process of
    its own: ~2 when both cores are ours, near 1 when the VM's second core is someone else's
    (``ratios.py`` has the same probe)."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    )
    return float(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per cell (>= 1)")
    parser.add_argument("--shapes", default="2048x512,512x768,8192x1024")
    parser.add_argument("--json", help="also write the raw samples here")
    args = parser.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    torch = has_torch()
    names = [name for name in CONTENDERS if torch or not name.startswith("torch")]
    samples = {(shape, name): [] for shape in shapes for name in names}
    probes = []
    for _ in range(max(args.runs, 1)):
        probes.append(two_core_probe())
        for shape in shapes:
            for name in names:
                statement = CONTENDERS[name][1]
                samples[shape, name].append(first_call(statement, *shape, torch))
    import sinpe

    print(
        "2-core probe (1 thread / 2 threads, one per round): median "
        f"{statistics.median(probes):.2f}, range {min(probes):.2f}-{max(probes):.2f} "
        "(~2: both cores were ours)"
    )
    print(f"sinpe {sinpe.__version__}, backend {sinpe.BACKEND}, median of {args.runs} fresh")
    print("processes per cell, import excluded; ratio = first call / np.ones' first call")
    print(f"{'table':>10}  {'contender':<14}{'first call':>12}  {'/ np.ones':>9}  {'/ sinpe':>8}")
    for shape in shapes:
        medians = {name: statistics.median(samples[shape, name]) for name in names}
        for name in names:
            dtype = CONTENDERS[name][0]
            ones = medians["np.ones f64" if dtype == "float64" else "np.ones f32"]
            mine = medians["sinpe f64" if dtype == "float64" else "sinpe f32"]
            print(
                f"{'x'.join(map(str, shape)):>10}  {name:<14}{medians[name] * 1e3:>10.2f}ms"
                f"  {medians[name] / ones:>9.2f}  {medians[name] / mine:>8.2f}"
            )
    if args.json:
        raw = {f"{'x'.join(map(str, s))} {name}": v for (s, name), v in samples.items()}
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
