"""pytest-benchmark: two tables (threads=1 each) built one after the other vs by two Python
threads at once. The threaded pair takes clearly less time only because the kernel releases
the GIL; ``python benchmarks/gil.py`` prints the ratio from interleaved rounds."""

import numpy as np
import pytest
from peers import GIL_SHAPE, two_tables_serial, two_tables_threaded

from sinpe._tables import backends

pytestmark = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")


@pytest.mark.parametrize(
    "build",
    [two_tables_serial, two_tables_threaded],
    ids=["one-after-the-other", "two-python-threads"],
)
def test_two_tables(benchmark, build):
    benchmark.group = "GIL release: two {}x{} {} tables, threads=1 each".format(*GIL_SHAPE)
    first, second = benchmark(build, *GIL_SHAPE)
    assert first.shape == GIL_SHAPE[:2] and np.array_equal(first, second)
