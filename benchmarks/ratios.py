"""Print sinpe's time as a ratio of np.ones (the write limit) and of the textbook formula,
its float16/bfloat16 tables as a ratio of its float32 table of the same shape, and what the
correct rounding of narrow tables costs (each with its test / without).

    python benchmarks/ratios.py [--rounds N] [--isa avx512bf16,avx512,avx2]

Each round times every contender once per shape, interleaved, so machine noise hits them
alike; the table reports medians over rounds. Targets are those of the performance issues.
The last table times the instruction-set rows (one thread) once per instruction set named
by --isa (default: the best this CPU runs, and avx2 below it), switching sets within each
round, so both columns come from the same rounds.
"""

import argparse
import datetime
import functools
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from peers import ones, sinpe_cython, sinpe_numpy, textbook  # noqa: E402

import sinpe  # noqa: E402

THREADED = sinpe.THREAD_RUNTIME != "none"
from sinpe._tables.threads import usable_cores  # noqa: E402
from sinpe.cli.bench import timed  # noqa: E402

# (seq_len, d_model, dtype, threads, target ratio vs np.ones)
TARGETS = [
    (1, 128, "float64", None, 2.0),
    (128, 64, "float64", None, 4.0),
    (2048, 512, "float64", None, 2.0),
    (2048, 512, "float32", None, 2.0),
    (8192, 1024, "float64", 1, 1.35),
    (32768, 1024, "float64", None, 1.1),
]
# Half precision against sinpe's own float32 table of the same shape and thread count, new
# tables and into a preallocated out (np.ones fills 2-byte values from cache far below what
# any exact value costs, so it is no limit for them). bfloat16 rows need ml_dtypes.
HALF_TARGETS = [
    (n, d, dtype, threads, 1.25)
    for n, d in ((2048, 512), (8192, 1024))
    for threads in (1, None)
    for dtype in ("float16", "bfloat16")
]
try:
    import ml_dtypes  # noqa: F401  (registers the bfloat16 dtype with NumPy)
except ImportError:
    HALF_TARGETS = [row for row in HALF_TARGETS if row[2] != "bfloat16"]


QUIET_SCALING = 1.8


def rounds_parser(doc):
    """A ratio script's parser: its docstring's first line, and ``--rounds``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    return parser


def exit_without_kernel(script):
    """Exit with a message where the compiled kernel ``script`` measures is not built."""
    if sinpe.BACKEND != "cython":
        sys.exit(f"{script} measures the compiled kernel; it is not built here")


def once(fn, *args):
    """Seconds of one call of ``fn(*args)``."""
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def scaling_probe():
    """Two timers for a cache-resident table (2 MB, stays in L3), one and two threads: their
    per-round ratio is ~2 when both cores are ours and well below when the VM's second core is
    shared or stolen; then that row's ratios are the host's, not sinpe's."""
    out = sinpe_cython(1024, 512, "float32", threads=1)
    one = functools.partial(timed, sinpe_cython_into, out, threads=1)
    two = functools.partial(timed, sinpe_cython_into, out, threads=2)
    return one, two


def sinpe_cython_into(out, threads):
    sinpe.sinusoidal_positional_encoding(
        *out.shape, dtype=out.dtype, out=out, backend="cython", threads=threads
    )


def measure(rounds):
    rows = []
    for n, d, dtype, threads, target in TARGETS:
        contenders = {
            "ones": functools.partial(timed, ones, n, d, dtype),
            "sinpe": functools.partial(timed, sinpe_cython, n, d, dtype, threads=threads),
        }
        if THREADED:  # in the same rounds, right after sinpe: what the 2nd core gave
            contenders["probe 1"], contenders["probe 2"] = scaling_probe()
        contenders["numpy"] = functools.partial(timed, sinpe_numpy, n, d, dtype)
        contenders["textbook"] = functools.partial(timed, textbook, n, d, dtype)
        samples = {name: [] for name in contenders}
        for fn in contenders.values():
            fn()  # warm caches and allocator
        for _ in range(rounds):
            for name, fn in contenders.items():
                samples[name].append(fn())
        med = {name: statistics.median(v) for name, v in samples.items()}
        # Paired: sinpe against the np.ones run of the same round, so a slow phase of the
        # machine (or of the allocator) hits both sides of each ratio.
        paired = [s / o for s, o in zip(samples["sinpe"], samples["ones"])]
        scaling = None
        if THREADED:
            scaling = statistics.median(
                a / b for a, b in zip(samples["probe 1"], samples["probe 2"])
            )
        rows.append((n, d, dtype, threads, target, med, paired, scaling))
    return rows


def measure_half(rounds):
    rows = []
    for n, d, dtype, threads, target in HALF_TARGETS:
        outs = {dt: np.empty((n, d), dtype=dt) for dt in ("float32", dtype)}

        contenders = {
            "f32": functools.partial(timed, sinpe_cython, n, d, "float32", threads=threads),
            "half": functools.partial(timed, sinpe_cython, n, d, dtype, threads=threads),
            "f32 out": functools.partial(timed, sinpe_cython_into, outs["float32"], threads),
            "half out": functools.partial(timed, sinpe_cython_into, outs[dtype], threads),
        }
        samples = {name: [] for name in contenders}
        for fn in contenders.values():
            fn()
        for _ in range(rounds):
            for name, fn in contenders.items():
                samples[name].append(fn())
        med = {name: statistics.median(v) for name, v in samples.items()}
        fresh_ratio = [h / f for h, f in zip(samples["half"], samples["f32"])]
        out_ratio = [h / f for h, f in zip(samples["half out"], samples["f32 out"])]
        rows.append((n, d, dtype, threads, target, med, fresh_ratio, out_ratio))
    return rows


# The correct-rounding test of narrow tables (fill.h, "Narrow types"): each narrow table
# with it / without it (_set_checked(False): the float64 value rounded once), one thread,
# into a preallocated out; the NumPy twin's at the smaller shape.
CHECK_TARGET = 1.05
CHECK_SHAPES = ((2048, 512), (8192, 1024))


def check_cases():
    """(seq_len, d_model, dtype, backend) of the correct-rounding table's rows."""
    from sinpe._tables.checks import bfloat16

    dtypes = ["float32", "float16"] + (["bfloat16"] if bfloat16() is not None else [])
    cases = [(n, d, dt, "cython") for n, d in CHECK_SHAPES for dt in dtypes]
    return cases + [(2048, 512, dt, "numpy") for dt in dtypes]


def measure_check(rounds):
    from sinpe import _twin
    from sinpe._tables import backends
    from sinpe._tables.checks import bfloat16

    kernel = backends.kernel
    rows = []
    for n, d, dtype, backend in check_cases():
        module = kernel if backend == "cython" else _twin
        out = np.empty((n, d), dtype=bfloat16() if dtype == "bfloat16" else dtype)

        fill = functools.partial(
            sinpe.sinusoidal_positional_encoding,
            n,
            d,
            dtype=out.dtype,
            out=out,
            backend=backend,
            threads=1,
        )
        paired, times = [], {True: [], False: []}
        before = module._set_checked(True)
        try:
            for checked in (True, False):
                module._set_checked(checked)
                fill()
            for _ in range(rounds if backend == "cython" else max(3, rounds // 3)):
                sample = {}
                for checked in (True, False):
                    module._set_checked(checked)
                    sample[checked] = timed(fill)
                    times[checked].append(sample[checked])
                paired.append(sample[True] / sample[False])
        finally:
            module._set_checked(before)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((n, d, dtype, backend, med, paired))
    return rows


# (label, numerator, denominator, target) on one thread; each a function of the round number
# (the new-width row takes a width no earlier round or set used)
def _isa_rows():
    from sinpe._tables.checks import bfloat16

    def table(n, d, dtype):
        return lambda r: sinpe_cython(n, d, dtype, threads=1)

    def over_float32(n, d, dtype, target):
        return (
            f"{n} x {d} {dtype} / float32 table",
            table(n, d, dtype),
            table(n, d, "float32"),
            target,
        )

    def over_ones(n, d, dtype, target):
        def write_limit(r):
            return np.ones((n, d), dtype=dtype)

        return f"{n} x {d} {dtype} / np.ones", table(n, d, dtype), write_limit, target

    rows = [over_float32(2048, 512, "float16", 1.25)]
    if bfloat16() is not None:
        rows += [
            over_float32(2048, 512, "bfloat16", 1.25),
            over_float32(8192, 1024, "bfloat16", 1.0),
        ]
    rows += [
        over_ones(2048, 512, "float32", 1.8),
        over_ones(2048, 512, "float64", 1.25),
        (
            "rope(8192, 128, float32, compact) / float32 table 8192 x 128",
            lambda r: sinpe.rope(8192, 128, dtype="float32", layout="compact", threads=1),
            table(8192, 128, "float32"),
            1.0,
        ),
        (
            "a new width 2048 x d float64 (d from 601) / np.ones",
            lambda r: sinpe_cython(2048, r, "float64", threads=1),
            lambda r: np.ones((2048, r)),
            2.0,
        ),
    ]
    return rows


def measure_isa(rounds, isas):
    """{isa: [(label, target, paired ratios)]}: every row on every set, sets alternating
    within each round."""
    from sinpe._tables import backends

    kernel = backends.kernel
    before = kernel.ISA
    rows = _isa_rows()
    ratios = {isa: [[] for _ in rows] for isa in isas}
    width = 601
    try:
        for isa in isas:  # warm each set's code and the allocator
            kernel._set_isa(isa)
            for _, num, den, _ in rows:
                num(600), den(600)
        for _ in range(rounds):
            for isa in isas:
                kernel._set_isa(isa)
                for k, (_, num, den, _) in enumerate(rows):
                    width += 2  # a width never seen (only the last row reads it)
                    a = timed(num, width)
                    b = timed(den, width)
                    ratios[isa][k].append(a / b)
    finally:
        kernel._set_isa(before)
    return {isa: [(r[0], r[3], ratios[isa][k]) for k, r in enumerate(rows)] for isa in isas}


def quartiles(paired):
    ratio = statistics.median(paired)
    low, _, high = statistics.quantiles(paired, n=4) if len(paired) > 1 else [ratio] * 3
    return ratio, f"**{ratio:.2f}** ({low:.2f}-{high:.2f})"


def main(argv=None):
    parser = rounds_parser(__doc__)
    parser.add_argument(
        "--isa",
        default=None,
        help="instruction sets of the last table, comma-separated (default: the best this "
        "CPU runs, and the levels down to avx2 when that is avx512 or avx512bf16)",
    )
    args = parser.parse_args(argv)
    exit_without_kernel("ratios.py")
    from sinpe._tables import backends

    kernel = backends.kernel
    if args.isa is None:
        names = kernel.ISA_NAMES
        best = names.index(kernel.CPU_ISA)
        # the best, and every level from avx512 down to avx2 below it
        isas = [kernel.CPU_ISA] + [
            name
            for name in names[names.index("avx2") : best][::-1]
            if best >= names.index("avx512")
        ]
    else:
        isas = [name.strip() for name in args.isa.split(",") if name.strip()]
        unknown = [name for name in isas if name not in kernel.ISA_NAMES]
        lacking = [
            name
            for name in isas
            if name in kernel.ISA_NAMES
            and kernel.ISA_NAMES.index(name) > kernel.ISA_NAMES.index(kernel.CPU_ISA)
        ]
        if unknown or lacking:
            sys.exit(
                f"--isa: {', '.join(unknown + lacking)}: use instruction sets this CPU runs "
                f"({', '.join(kernel.ISA_NAMES[: kernel.ISA_NAMES.index(kernel.CPU_ISA) + 1])})"
            )
    rows = measure(args.rounds)
    print(
        f"sinpe {sinpe.__version__} ({sinpe.BACKEND}, {sinpe.THREAD_RUNTIME}), "
        f"{datetime.date.today()}, {cpu_name()}, {usable_cores()} cores, "
        f"{args.rounds} interleaved rounds: medians, and sinpe / ones as the median of per-round "
        "ratios (quartiles in brackets)"
    )
    scalings = [row[-1] for row in rows if row[-1] is not None]
    if scalings:
        quiet = min(scalings) >= QUIET_SCALING
        print(
            "2-core scaling: a 1024 x 512 float32 fill on one thread / on two, in the same "
            f"rounds as each row; {min(scalings):.2f} at worst "
            f"({'quiet' if quiet else 'NOT quiet: the second core was shared'}; "
            f"~2 = both cores ours, quiet = {QUIET_SCALING} or more in every row)"
        )
    print()
    print(
        "| table | threads | np.ones | sinpe | sinpe / ones | target | 2-core scaling "
        "| NumPy path / ones | textbook / ones | textbook / sinpe | textbook / NumPy path |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for n, d, dtype, threads, target, med, paired, scaling in rows:
        ratio, spread = quartiles(paired)
        ok = ratio <= target
        failed += not ok
        print(
            f"| {n} x {d} {dtype} | {threads or 'default'} | {med['ones'] * 1e6:,.1f} us "
            f"| {med['sinpe'] * 1e6:,.1f} us | {spread} "
            f"| <= {target} {'ok' if ok else 'MISSED'} "
            f"| {'-' if scaling is None else f'{scaling:.2f}'} "
            f"| {med['numpy'] / med['ones']:.1f} | {med['textbook'] / med['ones']:.1f} "
            f"| {med['textbook'] / med['sinpe']:.1f} | {med['textbook'] / med['numpy']:.1f} |"
        )
    print()
    print(
        "| half table | threads | sinpe float32 | sinpe half | half / float32 (new tables) "
        "| float32 out= | half out= | half / float32 (out=) | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n, d, dtype, threads, target, med, fresh_ratio, out_ratio in measure_half(args.rounds):
        (a, a_text), (b, b_text) = quartiles(fresh_ratio), quartiles(out_ratio)
        ok = max(a, b) <= target
        failed += not ok
        verdict = f"<= {target} {'ok' if ok else 'MISSED'}"
        print(
            f"| {n} x {d} {dtype} | {threads or 'default'} | {med['f32'] * 1e6:,.1f} us "
            f"| {med['half'] * 1e6:,.1f} us | {a_text} | {med['f32 out'] * 1e6:,.1f} us "
            f"| {med['half out'] * 1e6:,.1f} us | {b_text} | {verdict} |"
        )
    print()
    print(
        'Correct rounding (fill.h, "Narrow types"): each narrow table with its test / without '
        f"(the float64 value rounded once), one thread, out=, {kernel.ISA}; median of per-round "
        "ratios (quartiles)"
    )
    print()
    print("| table | backend | with the test | without | with / without | target |")
    print("|---|---|---|---|---|---|")
    for n, d, dtype, backend, med, paired in measure_check(args.rounds):
        ratio, text = quartiles(paired)
        if backend == "cython":
            ok = ratio <= CHECK_TARGET
            failed += not ok
            verdict = f"<= {CHECK_TARGET} {'ok' if ok else 'MISSED'}"
        else:
            verdict = "stated"
        print(
            f"| {n} x {d} {dtype} | {backend} | {med[True] * 1e6:,.1f} us "
            f"| {med[False] * 1e6:,.1f} us | {text} | {verdict} |"
        )
    print()
    by_isa = measure_isa(args.rounds, isas)
    print(
        "Instruction sets, one thread, sets alternating within each round"
        + (" (EMULATED by SIMDe: not a speed)" if kernel.EMULATED else "")
        + ": median of per-round ratios (quartiles)"
    )
    print()
    print("| ratio | " + " | ".join(isas) + " | target |")
    print("|---|" + "---|" * len(isas) + "---|")
    for k, (label, target, _) in enumerate(by_isa[isas[0]]):
        cells, verdict = [], "ok"
        for isa in isas:
            ratio, text = quartiles(by_isa[isa][k][2])
            cells.append(text)
            if isa == isas[0] and ratio > target:
                verdict, failed = "MISSED", failed + 1
        print(f"| {label} | " + " | ".join(cells) + f" | <= {target} {verdict} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
