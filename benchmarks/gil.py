"""Show that the kernel releases the GIL: two tables (threads=1 each) built by two Python
threads at once against the same two built one after the other.

    python benchmarks/gil.py [--rounds N]

Prints medians of interleaved rounds and exits 1 unless the threaded pair takes less than
0.8x the serial time (it would take ~1.0x if the kernel held the GIL). Needs 2+ cores.
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from peers import GIL_SHAPE, two_tables_serial, two_tables_threaded  # noqa: E402
from ratios import exit_without_kernel, once, rounds_parser  # noqa: E402

from sinpe._tables.threads import usable_cores  # noqa: E402


def main(argv=None):
    args = rounds_parser(__doc__).parse_args(argv)
    exit_without_kernel("gil.py")
    if usable_cores() < 2:
        sys.exit("gil.py needs at least 2 usable cores")
    serial, threaded = [], []
    once(two_tables_serial, *GIL_SHAPE)  # warm caches and allocator
    for _ in range(args.rounds):
        serial.append(once(two_tables_serial, *GIL_SHAPE))
        threaded.append(once(two_tables_threaded, *GIL_SHAPE))
    s, t = statistics.median(serial), statistics.median(threaded)
    n, d, dtype = GIL_SHAPE
    print(f"two {n}x{d} {dtype} tables, threads=1 each, median of {args.rounds} rounds:")
    print(f"  one after the other: {s * 1e3:8.2f} ms")
    print(f"  two Python threads:  {t * 1e3:8.2f} ms   ratio {t / s:.2f} (1.0 = GIL held)")
    return 0 if t < 0.8 * s else 1


if __name__ == "__main__":
    sys.exit(main())
