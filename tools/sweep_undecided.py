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
added to FOUND below: ``--write-cases`` decides each with mpmath and writes
tests/data/undecided_cases.json, which tests/test_undecided.py reads (``--check-cases``:
exit 1 if the file is not what it would write).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

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


# The undecided values found (the inputs the ring names), each kept in CASES_FILE decided by
# mpmath: (p, w, factor, dtype, where it came from). correct.h's tiny path (|p w| < 2^-40)
# bounds its error by |y| 2^-96, so an exact halfway point of factor * p * w (sin) or of
# the factor (cos) with |p w| below about 2^-47 was undecided, and below 2^-537 (cos) the
# double-double loses the correction entirely and the kernel's own rounding was the tie's
# (wrong for the 1e-200 cases). Its step 5 decides them all exactly since commit 90c52d2;
# tests/test_undecided.py checks that the kernel, the twin and mpmath agree on each.
FOUND = [
    (-(2.0**-149), 0.5, 1.0, "float32", "test_backends.py's encode test, 2026-12-05"),
    (2.0**-149, 0.5, 1.0, "float32", "the same, positive"),
    (1.0, 2.0**-60, 1 + 2.0**-24, "float32", "cos: a halfway factor"),
    (3.0, 2.0**-60, 1 + 2.0**-11, "float16", "cos: a halfway factor"),
    (2.0, 2.0**-60, 1 + 2.0**-8, "bfloat16", "cos: a halfway factor"),
    (1.0, 257 * 2.0**-70, 1.0, "bfloat16", "sin: p w a halfway point"),
    (1.0, (2**24 + 1) * 2.0**-80, 1.0, "float32", "sin: p w a halfway point"),
    (1.0, 1e-200, 1 + 3 * 2.0**-24, "float32", "cos: a halfway factor, x^2 underflows"),
    (1.0, 1e-200, 1 + 3 * 2.0**-11, "float16", "cos: a halfway factor, x^2 underflows"),
    (1.0, 1e-200, 1 + 3 * 2.0**-8, "bfloat16", "cos: a halfway factor, x^2 underflows"),
]
CASES_FILE = Path(__file__).resolve().parent.parent / "tests" / "data" / "undecided_cases.json"
_FORMATS = {"float32": (23, -126, 127), "float16": (10, -14, 15), "bfloat16": (7, -126, 127)}


def decide(p: float, w: float, factor: float, dtype_name: str) -> tuple[float, float]:
    """factor cos(p w) and factor sin(p w) rounded once to the type by mpmath, at a precision
    that holds the deviation from the halfway point (x^2 relative, x = |p w| tiny), checked."""
    import mpmath

    mantissa, min_exponent, max_exponent = _FORMATS[dtype_name]
    x = abs(p * w) if p * w else 1.0
    prec = 200 + 3 * max(0, -math.frexp(x)[1])  # x^2 / 2 resolved with 100+ bits to spare
    ctx = mpmath.MPContext()
    ctx.prec = prec
    arg = ctx.mpf(p) * ctx.mpf(w)
    out = []
    for v in (ctx.mpf(factor) * ctx.cos(arg), ctx.mpf(factor) * ctx.sin(arg)):
        if v == 0:
            out.append(math.copysign(0.0, p * w * factor))
            continue
        _, e = ctx.frexp(v)
        step = ctx.ldexp(ctx.mpf(1), max(e - 1, min_exponent) - mantissa)
        scaled = abs(v) / step
        below = ctx.floor(scaled)
        # no tie: the value is transcendental; its distance to the halfway point is seen
        assert abs(scaled - below - ctx.mpf(0.5)) > ctx.ldexp(1, 40 - prec), (p, w, factor)
        n = below + (1 if scaled - below > 0.5 else 0)
        value = float(n * step)
        value = math.inf if value >= 2.0 ** (max_exponent + 1) else value
        out.append(value if v > 0 else -value)
    return out[0], out[1]


def cases() -> dict:
    """The contents of CASES_FILE."""
    rows = []
    for p, w, factor, dtype_name, source in FOUND:
        c, s = decide(p, w, factor, dtype_name)
        rows.append(
            {
                "p": p,
                "w": w,
                "factor": factor,
                "dtype": dtype_name,
                "cos": c,
                "sin": s,
                "source": source,
            }
        )
    return {"tool": "tools/sweep_undecided.py --write-cases", "cases": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=float, default=1e9, help="per dtype and ISA")
    parser.add_argument("--dtype", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--isa", nargs="+", default=None, help="default: every one this CPU runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the reports here (JSON list)")
    parser.add_argument("--write-cases", action="store_true", help=f"rewrite {CASES_FILE.name}")
    parser.add_argument("--check-cases", action="store_true", help="exit 1 if it is stale")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_cases or args.check_cases:
        text = json.dumps(cases(), indent=1) + "\n"
        if args.write_cases:
            CASES_FILE.write_text(text)
            return 0
        return 0 if CASES_FILE.exists() and CASES_FILE.read_text() == text else 1
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
