"""The table call's fixed cost: a 1 x 128 table (and 128 x 64) against np.ones of the same
shape and dtype, in paired rounds; with --against COMMIT, that commit's public table
functions (its ``_tables/tables.py``, loaded beside today's) in the same rounds.

    taskset -c 0 python benchmarks/fixed_cost.py [--rounds N] [--against COMMIT]

Each round times every contender once (calls repeated for ``--sample-ms`` of this thread's
CPU time, ``time.thread_time``: a shared or overloaded machine's preemptions are not counted,
as wall-clock samples of a few microseconds' calls would), interleaved, so what noise is left
hits them alike; each ratio is the median of per-round ratios (quartiles in brackets).
Two spellings of the call: the defaults (``sinusoidal_positional_encoding(1, 128)``, against
``np.ones((1, 128))``) and ratios.py's (``dtype="float64", backend="cython"``, against
``np.ones((1, 128), dtype="float64")``). Target: at most 2.0 for 1 x 128.
"""

import datetime
import functools
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from ratios import cpu_name, exit_without_kernel, quartiles, rounds_parser  # noqa: E402

import sinpe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = 2.0
SHAPES = [(1, 128), (128, 64)]


def git(*args):
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def tables_at(commit):
    """That commit's ``sinpe._tables.tables`` module, loaded beside today's (it imports
    today's other modules: a commit whose tables.py needs others of its time fails here)."""
    source = git("show", f"{commit}:src/sinpe/_tables/tables.py")
    with tempfile.TemporaryDirectory(prefix="sinpe-fixed-cost-") as folder:
        path = Path(folder) / "tables.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("sinpe._tables.tables_then", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def cpu_timed(fn, seconds):
    """This thread's CPU seconds per call of ``fn``, calling it for at least ``seconds``."""
    calls = 16
    while True:
        start = time.thread_time()
        for _ in range(calls):
            fn()
        elapsed = time.thread_time() - start
        if elapsed >= seconds:
            return elapsed / calls
        calls *= 2 if elapsed > seconds / 4 else 8


def contenders(n, d, then, seconds):
    """{name: timer} for one shape: np.ones and sinpe in both spellings (and ``then``'s)."""
    calls = {
        "np.ones": functools.partial(np.ones, (n, d)),
        "np.ones dtype=": functools.partial(np.ones, (n, d), dtype="float64"),
    }
    versions = {"now": sinpe.sinusoidal_positional_encoding}
    if then is not None:
        versions["then"] = then.sinusoidal_positional_encoding
    for label, table in versions.items():
        calls[f"{label} defaults"] = functools.partial(table, n, d)
        calls[f"{label} dtype=, backend="] = functools.partial(
            table, n, d, dtype="float64", backend="cython"
        )
    return {name: functools.partial(cpu_timed, call, seconds) for name, call in calls.items()}


def main(argv=None):
    parser = rounds_parser(__doc__)
    parser.add_argument("--against", default=None, help="a commit to compare with")
    parser.add_argument("--sample-ms", type=float, default=20.0, help="CPU ms per sample")
    args = parser.parse_args(argv)
    exit_without_kernel("fixed_cost.py")
    then = tables_at(args.against) if args.against else None
    head = git("rev-parse", "--short", "HEAD")
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "src") else ""
    print(
        f"sinpe {sinpe.__version__} at {head}{dirty}"
        + (f", against {args.against}'s tables.py" if then else "")
        + f"; {datetime.date.today()}, {cpu_name()}, numpy {np.__version__}, "
        f"{args.rounds} interleaved rounds of {args.sample_ms:g} CPU ms (thread time) per "
        "sample: medians, and ratios as the median of per-round ratios (quartiles in brackets)\n"
    )
    print("| table | call | time | / np.ones | target |")
    print("|---|---|---|---|---|")
    failed = 0
    for n, d in SHAPES:
        timers = contenders(n, d, then, args.sample_ms / 1000)
        for fn in timers.values():
            fn()  # warm caches and allocator
        samples = {name: [] for name in timers}
        for _ in range(args.rounds):
            for name, fn in timers.items():
                samples[name].append(fn())
        for name in samples:
            if name.startswith("np.ones"):
                continue
            ones = samples["np.ones dtype=" if "dtype=" in name else "np.ones"]
            ratio, text = quartiles([a / b for a, b in zip(samples[name], ones)])
            verdict = "-"
            if (n, d) == SHAPES[0] and name.startswith("now"):
                ok = ratio <= TARGET
                failed += not ok
                verdict = f"<= {TARGET} {'ok' if ok else 'MISSED'}"
            median = statistics.median(samples[name]) * 1e6
            print(f"| {n} x {d} float64 | {name} | {median:.2f} us | {text} | {verdict} |")
        for name in ("np.ones", "np.ones dtype="):
            median = statistics.median(samples[name]) * 1e6
            print(f"| {n} x {d} float64 | {name} | {median:.2f} us | 1 | - |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
