"""pytest-benchmark: grid encodings (``sinpe.encode_grid`` and the compat functions built on
it) beside ``np.ones`` of the same shape and the formula diffusers and MAE use.

pytest benchmarks/test_grid.py --benchmark-only
"""

import numpy as np
import pytest
from peers import diffusers_2d_formula

import sinpe
from sinpe.compat import diffusers

GRID = "grid 64x64x1152 float64 (DiT-XL/2 at 512 px)"
VIDEO = "video 13x(30x45)x1152 float64"


def test_grid_np_ones(benchmark):
    benchmark.group = GRID
    benchmark(np.ones, (64 * 64, 1152))


def test_grid_encode_2d(benchmark):
    benchmark.group = GRID
    benchmark(sinpe.encode_2d, 64, 64, 1152)


def test_grid_compat_diffusers(benchmark):
    benchmark.group = GRID
    benchmark(diffusers.get_2d_sincos_pos_embed, 1152, 64, output_type="np")


def test_grid_diffusers_formula(benchmark):
    benchmark.group = GRID
    benchmark(diffusers_2d_formula, 1152, 64)


@pytest.mark.parametrize("contender", ["np.ones", "compat.diffusers"])
def test_video(benchmark, contender):
    benchmark.group = VIDEO
    if contender == "np.ones":
        benchmark(np.ones, (13, 30 * 45, 1152))
    else:
        benchmark(diffusers.get_3d_sincos_pos_embed, 1152, (45, 30), 13, output_type="np")
