"""Show that the kernel releases the GIL: two tables (threads=1 each) built by two Python
threads at once against the same two built one after the other.

    python benchmarks/gil.py [--rounds N]

Prints medians of interleaved rounds and exits 1 unless the threaded pair takes less than
0.8x the serial time (it would take ~1.0x if the kernel held the GIL). Needs 2+ cores.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from peers import GIL_SHAPE, two_tables_serial, two_tables_threaded  # noqa: E402

import sinpe  # noqa: E402
from sinpe._tables.threads import usable_cores  # noqa: E402


def seconds(fn):
    start = time.perf_counter()
    fn(*GIL_SHAPE)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    if sinpe.BACKEND != "cython":
        sys.exit("gil.py measures the compiled kernel; it is not built here")
    if usable_cores() < 2:
        sys.exit("gil.py needs at least 2 usable cores")
    serial, threaded = [], []
    seconds(two_tables_serial)  # warm caches and allocator
    for _ in range(args.rounds):
        serial.append(seconds(two_tables_serial))
        threaded.append(seconds(two_tables_threaded))
    s, t = statistics.median(serial), statistics.median(threaded)
    n, d, dtype = GIL_SHAPE
    print(f"two {n}x{d} {dtype} tables, threads=1 each, median of {args.rounds} rounds:")
    print(f"  one after the other: {s * 1e3:8.2f} ms")
    print(f"  two Python threads:  {t * 1e3:8.2f} ms   ratio {t / s:.2f} (1.0 = GIL held)")
    return 0 if t < 0.8 * s else 1


if __name__ == "__main__":
    sys.exit(main())
