"""pytest-benchmark: the paths that are not warm repeats, each group beside its peer.

- a width not seen before (every round starts with ``sinpe.clear_cache()``);
- one row at a far offset (incremental decoding);
- ``encode`` of 2048 integer positions below 2**40, and of 256 diffusion timesteps.

pytest benchmarks/test_cold.py --benchmark-only
"""

import numpy as np
import pytest
from peers import diffusers_timesteps, textbook_at

import sinpe
from sinpe._tables import backends

needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")
ROUNDS = 30
POSITIONS = np.random.default_rng(0).integers(0, 2**40, 2048)
TIMESTEPS = np.random.default_rng(1).uniform(0, 1000, 256)
DIFFUSERS = sinpe.conventions.diffusers()


def cold(benchmark, group, fn, *args, **kwargs):
    benchmark.group = group
    return benchmark.pedantic(fn, args=args, kwargs=kwargs, setup=sinpe.clear_cache, rounds=ROUNDS)


@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_new_width(benchmark, backend):
    if backend not in backends.BACKENDS:
        pytest.skip("kernel not built")
    table = cold(
        benchmark,
        "new width 2048x512",
        sinpe.sinusoidal_positional_encoding,
        2048,
        512,
        backend=backend,
    )
    assert table.shape == (2048, 512)


def test_new_width_ones(benchmark):
    cold(benchmark, "new width 2048x512", np.ones, (2048, 512))


@needs_kernel
def test_far_offset(benchmark):
    benchmark.group = "1x512 at offset 2**45"
    table = benchmark(sinpe.sinusoidal_positional_encoding, 1, 512, offset=2**45 - 12345)
    assert table.shape == (1, 512)


def test_far_offset_ones(benchmark):
    benchmark.group = "1x512 at offset 2**45"
    benchmark(np.ones, (1, 512))


@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_encode_positions(benchmark, backend):
    if backend not in backends.BACKENDS:
        pytest.skip("kernel not built")
    benchmark.group = "encode 2048 positions < 2**40 x 512"
    table = benchmark(sinpe.encode, POSITIONS, 512, backend=backend)
    assert table.shape == (2048, 512)


def test_encode_positions_textbook(benchmark):
    benchmark.group = "encode 2048 positions < 2**40 x 512"
    benchmark(textbook_at, POSITIONS, 512)


@needs_kernel
def test_encode_timesteps(benchmark):
    benchmark.group = "256 diffusion timesteps x 320"
    table = benchmark(sinpe.encode, TIMESTEPS, 320, convention=DIFFUSERS)
    assert np.abs(table - diffusers_timesteps(TIMESTEPS, 320)).max() < 1e-9


def test_encode_timesteps_diffusers(benchmark):
    benchmark.group = "256 diffusion timesteps x 320"
    benchmark(diffusers_timesteps, TIMESTEPS, 320)
