"""A random sweep for narrow values correct.h cannot decide (not run in CI: hours of work).

Tables through the public API (``sinpe.rope`` with ``inv_freq`` and ``attention_factor``,
``layout="compact"``: every value once), at random positions, frequencies and factors of
its documented domain, each instruction set in its own process (``SINPE_ISA``), one
thread; the kernel's ``undecided()`` count and ``undecided_log()`` ring (fill.h) are read
at the end of each process. Each call draws:

- positions: ``offset .. offset + rows - 1``, ``offset`` log-uniform in [0, 2**53 - rows];
- frequencies: half the calls a RoPE rule ``base**(-2i/d)`` with ``base`` log-uniform in
  [2, 1e9] and a random linear factor in [1, 64] (the frequencies models use), half
  log-uniform doubles in [2**-60, 2**6] (the rest of the domain ``inv_freq`` takes);
- factor: 1 for half the calls (every plain table), else log-uniform in [0.1, 10].

Values that are ``p w`` with few significant bits, or factors on a halfway point, are
not what this sweep draws (their full mantissas make an exact halfway case impossible):
tests/test_undecided.py searches that structured part of the domain.

    python tools/sweep_undecided.py --values 1e9               # every dtype, every ISA here
    python tools/sweep_undecided.py --values 1e8 --isa c --dtype float16 --seed 3

Prints one JSON line per (ISA, dtype): values swept, seconds, values per second, the count
and the ring; ``--out FILE`` also writes them all as a JSON list. An undecided value is
to be decided with mpmath (tools/hard_cases.py's ``halfway_distance``) and kept in
tests/data/undecided_cases.json with tests/test_undecided.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

DTYPES = ("float32", "float16", "bfloat16")
ROWS, HEAD_DIM = 8192, 256  # one call: 8192 x 128 cos and as many sin values


def _draw(rng: np.random.Generator) -> tuple[int, np.ndarray, float]:
    """offset, inv_freq (HEAD_DIM // 2 values), attention factor of one call."""
    h = HEAD_DIM // 2
    offset = int(min(2.0 ** rng.uniform(0, 53), 2.0**53 - ROWS))
    if rng.random() < 0.5:
        base = 2.0 ** rng.uniform(1, np.log2(1e9))
        w = base ** (-2.0 * np.arange(h) / HEAD_DIM) / rng.uniform(1, 64)
    else:
        w = 2.0 ** rng.uniform(-60, 6, h)
    factor = 1.0 if rng.random() < 0.5 else float(2.0 ** rng.uniform(np.log2(0.1), np.log2(10)))
    return offset, w, factor


def child(isa: str, dtype_name: str, values: int, seed: int) -> dict:
    """The sweep in this process (SINPE_ISA set by the parent): its report."""
    import sinpe
    from sinpe._tables import backends
    from sinpe._tables.checks import bfloat16

    kernel = backends.kernel
    if kernel is None or kernel.ISA != isa:
        raise SystemExit(f"asked for ISA {isa}, the kernel runs {getattr(kernel, 'ISA', None)}")
    dtype = bfloat16() if dtype_name == "bfloat16" else np.dtype(dtype_name)
    sinpe.set_cache_limit(0)  # every call's frequencies are new: keep no plan
    rng = np.random.default_rng([seed, DTYPES.index(dtype_name), kernel.ISA_NAMES.index(isa)])
    per_call = 2 * ROWS * (HEAD_DIM // 2)
    calls = -(-values // per_call)
    before = kernel.undecided()
    start = time.perf_counter()
    for _ in range(calls):
        offset, w, factor = _draw(rng)
        sinpe.rope(
            ROWS,
            HEAD_DIM,
            offset=offset,
            inv_freq=w,
            attention_factor=factor,
            dtype=dtype,
            layout="compact",
            threads=1,
            backend="cython",
        )
    seconds = time.perf_counter() - start
    swept = calls * per_call
    return {
        "isa": isa,
        "dtype": dtype_name,
        "seed": seed,
        "values": swept,
        "seconds": round(seconds, 1),
        "values_per_second": round(swept / seconds),
        "undecided": kernel.undecided() - before,
        "ring": kernel.undecided_log(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=float, default=1e9, help="per dtype and ISA")
    parser.add_argument("--dtype", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--isa", nargs="+", default=None, help="default: every one this CPU runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the reports here (JSON list)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.isa[0], args.dtype[0], int(args.values), args.seed)))
        return 0
    from sinpe._tables import backends

    names = backends.kernel.ISA_NAMES
    isas = args.isa or list(names[: names.index(backends.kernel.CPU_ISA) + 1])
    reports = []
    for isa in isas:
        for dtype_name in args.dtype:
            command = [sys.executable, __file__, "--child", "--isa", isa, "--dtype", dtype_name]
            command += ["--values", str(int(args.values)), "--seed", str(args.seed)]
            env = {**os.environ, "SINPE_ISA": isa}
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                return done.returncode
            report = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(report), flush=True)
            reports.append(report)
            if args.out:  # after each, so that a stopped sweep keeps what it did
                with open(args.out, "w") as f:
                    json.dump(reports, f, indent=1)
    return 1 if any(r["undecided"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
