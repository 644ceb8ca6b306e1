"""Threads that never hurt: default threads against threads=1, side by side in one run, on a
quiet machine and beside a busy process this script starts itself; two Python threads at
once; first calls in fresh processes; how soon a signal ends a long call.

    python benchmarks/threads.py [--rounds N] [--first-calls N] [--signal-runs N]

Every row is the median of per-round ratios (default / threads=1, the two timed in turn in
each round), quartiles in brackets. The busy rows run with one `while True: pass` process
beside; a 2-core probe (two processes' time for the same loop against one's) says in each
quiet row whether the second core was ours (~1: it was; ~2: someone else had it). Targets
are those of the threads issue; exit 1 when one is missed.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

import sinpe
from sinpe._tables.threads import usable_cores
from sinpe.cli.bench import timed

LLAMA = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def table(n, d, offset=0):
    out = np.empty((n, d))

    def build(threads):
        return sinpe.sinusoidal_positional_encoding(n, d, offset=offset, out=out, threads=threads)

    return build


def rope(threads):
    return sinpe.rope(8192, 128, base=500000.0, scaling=LLAMA, dtype="float32", threads=threads)


BUSY_ROWS = {
    "2048 x 512 float64": table(2048, 512),
    "8192 x 1024 float64": table(8192, 1024),
    "rope 8192 x 128 float32": rope,
    "1 x 512 at offset 2^45": table(1, 512, 2**45),
}
QUIET_SIZES = [(1, 64), (16, 64), (128, 64), (512, 128), (1024, 256), (2048, 512), (8192, 1024)]


@contextmanager
def busy_process():
    """One process spinning on a core, as a training job or a browser would."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.3)  # let it take its core
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def paired(build, rounds):
    """Median and quartiles of default / threads=1, the two timed in turn each round."""
    build(1)
    build(None)
    ratios, one, default = [], [], []
    for _ in range(rounds):
        a = timed(build, 1)
        b = timed(build, None)
        one.append(a)
        default.append(b)
        ratios.append(b / a)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return statistics.median(one), statistics.median(default), statistics.median(ratios), q


SPIN = """
import time
start = time.perf_counter()
total = 0
for i in range(3_000_000):
    total += i
print(time.perf_counter() - start)
"""


def probe():
    """Two processes' time for a fixed Python loop, against one's: ~1 when both cores are
    ours, ~2 when the second is someone else's (independent of sinpe's own threads)."""
    run = [sys.executable, "-c", SPIN]
    alone = float(subprocess.run(run, capture_output=True, text=True).stdout)
    pair = [subprocess.Popen(run, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    together = max(float(p.communicate()[0]) for p in pair)
    return together / alone


def line(name, one, default, ratio, q, target, ok, extra=""):
    verdict = f"{target} {'ok' if ok else 'MISSED'}"
    return (
        f"| {name} | {one * 1e6:,.1f} us | {default * 1e6:,.1f} us "
        f"| **{ratio:.2f}** ({q[0]:.2f}-{q[2]:.2f}) | {verdict} |{extra}"
    )


def two_python_threads(rounds):
    """Two tables built by two Python threads at once against one after the other. The two
    threads live for the whole measurement (a barrier starts each round), so only the
    builds are timed, not the making of threads."""
    outs = [np.empty((2048, 512)), np.empty((8192, 1024))]

    def build(i):
        sinpe.sinusoidal_positional_encoding(*outs[i].shape, out=outs[i])

    start, end = threading.Barrier(3), threading.Barrier(3)
    stop = []

    def worker(i):
        while True:
            start.wait()
            if stop:
                return
            build(i)
            end.wait()

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in (0, 1)]
    for w in workers:
        w.start()

    def together():
        t = time.perf_counter()
        start.wait()
        end.wait()
        return time.perf_counter() - t

    def serial():
        t = time.perf_counter()
        build(0)
        build(1)
        return time.perf_counter() - t

    serial()
    together()
    ratios = [together() / serial() for _ in range(4 * rounds)]
    stop.append(True)
    start.wait()
    return statistics.median(ratios)


FIRST = """
import time, sinpe
start = time.perf_counter()
sinpe.sinusoidal_positional_encoding(2048, 512, threads={threads})
print(time.perf_counter() - start)
"""


def first_calls(runs):
    """Median first 2048 x 512 call in fresh processes, default threads and threads=1."""
    times = {None: [], 1: []}
    for i in range(runs):
        for threads in (None, 1) if i % 2 == 0 else (1, None):
            out = subprocess.run(
                [sys.executable, "-c", FIRST.format(threads=threads)],
                capture_output=True,
                text=True,
                check=True,
            )
            times[threads].append(float(out.stdout))
    return statistics.median(times[None]), statistics.median(times[1])


SIGNAL = """
import os, signal, sys, threading, time, numpy as np, sinpe
backend, rows = sys.argv[1], int(sys.argv[2])
positions = np.random.default_rng(0).integers(0, 2**40, rows)
sent = []
def send():
    time.sleep(0.3)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=send, daemon=True).start()
try:
    sinpe.rope_at(positions, 128, layout="compact", backend=backend)
    print("nan")
except KeyboardInterrupt:
    print(time.perf_counter() - sent[0])
"""


def signal_delay(backend, rows, runs=3):
    delays = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", SIGNAL, backend, str(rows)], capture_output=True, text=True
        )
        delays.append(float(out.stdout.strip() or "nan"))
    return max(delays)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--first-calls", type=int, default=9)
    parser.add_argument("--signal-runs", type=int, default=3)
    args = parser.parse_args(argv)
    if sinpe.BACKEND != "cython" or sinpe.THREAD_RUNTIME == "none":
        sys.exit("threads.py measures the compiled kernel's threads; they are not built here")
    if usable_cores() < 2:
        sys.exit("threads.py needs at least 2 usable cores")
    failed = 0
    print(f"sinpe {sinpe.__version__}, {sinpe.THREAD_RUNTIME}, {usable_cores()} cores, ", end="")
    print(f"{args.rounds} paired rounds per row (medians of default / threads=1)")
    print()
    print("| with a busy process beside | threads=1 | default | default / threads=1 | target |")
    print("|---|---|---|---|---|")
    with busy_process():
        for name, build in BUSY_ROWS.items():
            one, default, ratio, q = paired(build, args.rounds)
            ok = ratio <= 1.25
            failed += not ok
            print(line(name, one, default, ratio, q, "<= 1.25", ok))
    print()
    print(
        "| quiet machine | threads=1 | default | default / threads=1 | target "
        "| 2-core probe (~1: both cores ours) |"
    )
    print("|---|---|---|---|---|---|")
    for n, d in QUIET_SIZES:
        scaling = probe()
        one, default, ratio, q = paired(table(n, d), args.rounds)
        if (n, d) == (8192, 1024):
            target, ok = "<= 0.625 (1.6x faster)", ratio <= 0.625
        else:
            target, ok = "<= 1.05", ratio <= 1.05
        failed += not ok
        print(line(f"{n} x {d} float64", one, default, ratio, q, target, ok, f" {scaling:.2f} |"))
    print()
    ratio = two_python_threads(args.rounds)
    ok = ratio <= 1.0
    failed += not ok
    print(
        f"two Python threads (2048 x 512 and 8192 x 1024, default threads) / one after the "
        f"other: **{ratio:.2f}** (<= 1.0 {'ok' if ok else 'MISSED'})"
    )
    default, one = first_calls(args.first_calls)
    ok = default <= 1.1 * one
    failed += not ok
    print(
        f"first 2048 x 512 call, fresh processes (median of {args.first_calls}): default "
        f"{default * 1e3:.2f} ms, threads=1 {one * 1e3:.2f} ms: **{default / one:.2f}** "
        f"(<= 1.1 {'ok' if ok else 'MISSED'})"
    )
    if hasattr(signal, "SIGINT") and os.name == "posix":
        for backend, rows in (("cython", 3_000_000), ("numpy", 120_000)):
            delay = signal_delay(backend, rows, args.signal_runs)
            ok = delay <= 0.2
            failed += not ok
            print(
                f"Ctrl-C during a long rope_at ({backend}): KeyboardInterrupt {delay * 1e3:.1f} ms "
                f"after the signal at worst of {args.signal_runs} "
                f"(<= 200 ms {'ok' if ok else 'MISSED'})"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
