"""Inside real programs: the caches stay bounded, and pickled objects keep their hash in
another process (threads, forks and signals: ``test_threads.py``). A script runs in a
subprocess under a timeout, so a hang fails the test instead of stopping the suite."""

import os
import pickle

import numpy as np
import pytest
from subprocesses import run_script

import sinpe
from sinpe import conventions

# the kernel's own tests; `pool`: the thread pool, processes and memory limits, code no
# instruction-set cap changes (the capped builds skip them, every other build runs them)
pytestmark = [pytest.mark.compiled, pytest.mark.pool]

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")


# --------------------------------------------------------------------------- caches


@pytest.mark.skipif(
    os.environ.get("SINPE_SANITIZED") == "1", reason="ASan keeps freed memory (quarantine)"
)
@linux_only
def test_a_huge_width_leaves_no_memory_behind():
    """A width whose tables exceed the bound is computed without being kept: after the table
    is dropped, resident memory is back within a few MiB, and the cache is within its bound."""
    result = run_script(
        """
import gc, os, sinpe
def resident():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
sinpe.sinusoidal_positional_encoding(1, 8)
gc.collect()
before = resident()
table = sinpe.sinusoidal_positional_encoding(1, 10**7)
assert abs(table[0, 1] - 1.0) < 1e-15
del table
gc.collect()
info = sinpe.cache_info()
print((resident() - before) / 2**20, info.nbytes <= info.limit, info.limit)
"""
    )
    grown, bounded, limit = result.stdout.split()
    assert bounded == "True" and int(limit) == 64 << 20
    assert float(grown) < 64 + 8, grown  # the bound plus allocator slack (273 MiB before)


def test_the_cache_bound_is_kept_and_adjustable():
    previous = sinpe.set_cache_limit(1 << 20)
    try:
        for d_model in range(64, 64 + 40 * 8, 8):
            sinpe.sinusoidal_positional_encoding(2048, d_model)
            info = sinpe.cache_info()
            assert info.nbytes <= 1 << 20 and info.limit == 1 << 20
        sinpe.set_cache_limit(0)
        assert sinpe.cache_info().nbytes == 0
        table = sinpe.sinusoidal_positional_encoding(100, 16)  # still right, nothing kept
        assert sinpe.cache_info().entries == 0
        sinpe.set_cache_limit(previous)
        assert np.array_equal(table, sinpe.sinusoidal_positional_encoding(100, 16))
    finally:
        sinpe.set_cache_limit(previous)
    assert sinpe.cache_info().limit == previous


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("64M", TypeError)])
def test_bad_cache_limits_name_the_argument(bad, error):
    with pytest.raises(error, match="nbytes"):
        sinpe.set_cache_limit(bad)


def test_clear_cache_frees_everything():
    sinpe.sinusoidal_positional_encoding(300, 96, offset=5)
    sinpe.encode([1.5, 2.5], 33)
    assert sinpe.cache_info().entries > 0
    sinpe.clear_cache()
    info = sinpe.cache_info()
    assert info.entries == 0 and info.nbytes == 0


def test_plans_are_reused_across_nearby_lengths():
    """601 lengths from 1000 to 1600 share one plan: one frequency vector, one filler (its
    constants and grid) and one set of anchors past the first 1024 rows are made; every
    other lookup hits."""
    sinpe.clear_cache()
    for seq_len in range(1000, 1601):
        sinpe.sinusoidal_positional_encoding(seq_len, 64)
    info = sinpe.cache_info()
    assert info.misses == 3 and info.entries == 3 and info.hits == 600 + 575


# --------------------------------------------------------------------------- pickling


PRESETS = [
    conventions.VASWANI,
    conventions.TENSOR2TENSOR,
    conventions.HF_MARIAN,
    conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.5, scale=2.0),
]


@pytest.mark.parametrize("seed", ["1", "2"])
def test_pickled_conventions_keep_their_hash_in_another_process(seed):
    """Unpickled where strings hash differently (a spawn worker), a convention equals the
    preset and hashes like it, so it finds the same cache entries."""
    blob = pickle.dumps(PRESETS).hex()
    result = run_script(
        f"""
import pickle
from sinpe import conventions
presets = [conventions.VASWANI, conventions.TENSOR2TENSOR, conventions.HF_MARIAN,
           conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.5, scale=2.0)]
loaded = pickle.loads(bytes.fromhex({blob!r}))
print(all(a == b and hash(a) == hash(b) and len({{a, b}}) == 1
          for a, b in zip(loaded, presets)))
""",
        PYTHONHASHSEED=seed,
    )
    assert result.stdout.strip() == "True"


def test_conventions_copy_and_pickle_into_equal_objects():
    import copy

    for preset in PRESETS:
        for clone in (pickle.loads(pickle.dumps(preset)), copy.deepcopy(preset)):
            assert clone == preset and hash(clone) == hash(preset)


def test_cached_results_survive_pickling():
    table = sinpe.sinusoidal_positional_encoding(5, 8, dtype="float32")
    assert np.array_equal(pickle.loads(pickle.dumps(table)), table)
    assert pickle.loads(pickle.dumps(sinpe.thread_limit())) == sinpe.thread_limit()
    assert pickle.loads(pickle.dumps(sinpe.cache_info())) == sinpe.cache_info()
