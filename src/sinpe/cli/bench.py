"""``sinpe bench``, and the peers and timer it shares with ``benchmarks/ratios.py`` and the
pytest-benchmark suite: the textbook NumPy formula and the ``np.ones`` write limit."""

from __future__ import annotations

import math
import time

import numpy as np

from .._tables import backends
from .._tables import tables as api
from .._tables.threads import RUNTIME as THREAD_RUNTIME
from .._tables.threads import thread_limit
from .._version import __version__
from .arguments import AddCommand

SPREAD_WARNING = 0.20  # an interquartile range above this fraction of the median is warned of


def textbook(seq_len: int, d_model: int, dtype="float64") -> np.ndarray:
    """The tutorial formula, as most code writes it."""
    position = np.arange(seq_len, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = np.zeros((seq_len, d_model), dtype=dtype)
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return table


def ones(seq_len: int, d_model: int, dtype="float64") -> np.ndarray:
    """The physical limit: allocate the table and write every byte once."""
    return np.ones((seq_len, d_model), dtype=dtype)


def timed(fn, *args, min_seconds: float = 2e-3, **kwargs) -> float:
    """Seconds per call, calling often enough to last ``min_seconds``."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args, **kwargs)
        elapsed = time.perf_counter() - start
        if elapsed > min_seconds or calls >= 1 << 16:
            return elapsed / calls
        calls *= 4


# --------------------------------------------------------------------------- sinpe bench


def add_bench_arguments(command: AddCommand) -> None:
    """The ``bench`` subcommand and its arguments."""
    bench = command("bench", "side-by-side timings against the write limit")
    bench.add_argument(
        "--quick", action="store_true", help="two shapes and 5 rounds instead of three and 9"
    )


def bench_command(args) -> int:
    """``sinpe bench``: each contender timed in paired rounds, as a ratio to ``np.ones``."""
    import statistics

    shapes = [(128, 64), (2048, 512)] if args.quick else [(128, 64), (2048, 512), (8192, 1024)]
    rounds = 5 if args.quick else 9
    threads = thread_limit().threads
    print(
        f"sinpe {__version__}: backend {api.BACKEND}, {THREAD_RUNTIME}, "
        f"up to {threads} thread(s); float64, {rounds} paired rounds: median [quartiles]"
    )
    contenders = [
        ("np.ones (write limit)", ones),
        ("textbook NumPy", textbook),
        (
            "sinpe numpy path",
            lambda n, d: api.sinusoidal_positional_encoding(n, d, backend="numpy"),
        ),
    ]
    if "cython" in backends.BACKENDS:
        contenders.insert(
            1,
            (
                "sinpe cython",
                lambda n, d: api.sinusoidal_positional_encoding(n, d, backend="cython"),
            ),
        )
    print(f"{'table':>12}  {'contender':<24}{'time':>12}  {'/ np.ones':>9}  {'quartiles':>13}")
    spread = []
    for n, d in shapes:
        times: dict = {name: [] for name, _ in contenders}
        for _ in range(rounds):  # paired: every contender once per round
            for name, fn in contenders:
                times[name].append(timed(fn, n, d))
        limits = times["np.ones (write limit)"]
        for name, samples in times.items():
            ratios = [t / limit for t, limit in zip(samples, limits)]
            q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
            t = statistics.median(samples)
            print(
                f"{f'{n}x{d}':>12}  {name:<24}{t * 1e6:>10,.1f}us  {median:>9.2f}  "
                f"[{q1:.2f}, {q3:.2f}]"
            )
            if name != "np.ones (write limit)" and q3 - q1 > SPREAD_WARNING * median:
                spread.append(f"{n}x{d} {name}")
    if spread:
        print(
            f"warning: the interquartile range exceeds {SPREAD_WARNING:.0%} of the median for "
            f"{', '.join(spread)}: the machine is busy; measure again (or without --quick)"
        )
    return 0
