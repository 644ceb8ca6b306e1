"""pytest-benchmark: one group per table shape; peers side by side.

pytest benchmarks/ --benchmark-only            # measure
pytest benchmarks/ --benchmark-disable         # run each once (CI: they cannot rot)
"""

import pytest
from peers import SHAPES, ones, shape_id, sinpe_cython, sinpe_numpy, textbook, torch_tutorial

from sinpe._tables import backends

needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")
shapes = pytest.mark.parametrize("shape", SHAPES, ids=shape_id)


def run(benchmark, shape, fn, **kwargs):
    benchmark.group = shape_id(shape)
    table = benchmark(fn, *shape, **kwargs)
    assert table.shape == shape[:2] and str(table.dtype) == shape[2]


@shapes
def test_np_ones_limit(benchmark, shape):
    run(benchmark, shape, ones)


@needs_kernel
@shapes
def test_sinpe_cython_default_threads(benchmark, shape):
    run(benchmark, shape, sinpe_cython)


@needs_kernel
@shapes
def test_sinpe_cython_one_thread(benchmark, shape):
    run(benchmark, shape, sinpe_cython, threads=1)


@shapes
def test_sinpe_numpy_path(benchmark, shape):
    run(benchmark, shape, sinpe_numpy)


@shapes
def test_textbook_numpy(benchmark, shape):
    run(benchmark, shape, textbook)


@shapes
def test_torch_tutorial(benchmark, shape):
    build = torch_tutorial()
    if build is None:
        pytest.skip("torch not installed (optional: pip install torch==2.13.0)")
    benchmark.group = shape_id(shape)
    table = benchmark(build, *shape)
    assert tuple(table.shape) == shape[:2]
