"""Limits kept before any work: every request's memory is known and refused at once when the
process could never hold it, widths have a documented bound, out= arrays NumPy allows
(unaligned ones included) are filled correctly, and no argument the Python side lets
through reaches C integer arithmetic that could overflow."""

import json
import os
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import sinpe
from sinpe._rope.rope import MAX_HEAD_DIM
from sinpe._tables import backends, checks
from sinpe._twin import frequencies as twin_frequencies

# the kernel's own tests; `pool`: the thread pool, processes and memory limits, code no
# instruction-set cap changes (the capped builds skip them, every other build runs them)
pytestmark = [pytest.mark.compiled, pytest.mark.pool]

CONFIGS = Path(__file__).parent / "data" / "configs"
TIB = 1 << 40
# the Python side's allocations while refusing: the traced peak, never the request's size
REFUSAL_PEAK = 16 << 20


def refused_at_once(call, error=MemoryError, match=None):
    """``call()`` raises ``error`` (matching ``match``) having allocated next to nothing and
    made no cache entry: the refusal came before the work."""
    misses = sinpe.cache_info().misses
    tracemalloc.start()
    try:
        with pytest.raises(error, match=match) as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < REFUSAL_PEAK, f"{peak} bytes allocated before the refusal"
    assert sinpe.cache_info().misses == misses, "work was done before the refusal"
    return str(info.value)


# --------------------------------------------------------------------------- memory

HUGE_REQUESTS = {
    "table": (lambda: sinpe.sinusoidal_positional_encoding(2**20, 2**20), 8 * TIB),
    "float16 table": (
        lambda: sinpe.sinusoidal_positional_encoding(2**21, 2**20, dtype="float16"),
        4 * TIB,
    ),
    "one wide row": (lambda: sinpe.sinusoidal_positional_encoding(1, 2**42), 32 * TIB),
    "encode": (lambda: sinpe.encode(np.zeros(1024), 2**32), 32 * TIB),
    "rope": (lambda: sinpe.rope(2**34, 128), 32 * TIB),
    "rope_at": (lambda: sinpe.rope_at(np.zeros(2**18), 2**16), TIB // 4),
    "broadcast positions": (lambda: sinpe.encode(np.broadcast_to(3.0, (2**30, 2**10)), 2), 8 * TIB),
    "rope_cache": (lambda: sinpe.rope_cache(2**34, 128), 16 * TIB),
    "frequencies": (lambda: sinpe.frequencies(2**64), 2**66),
    "shift_matrix": (lambda: sinpe.shift_matrix(1, 2**20), 8 * TIB),
    "encode_2d": (lambda: sinpe.encode_2d(2**16, 2**16, 2**10), 32 * TIB),
}


@pytest.mark.parametrize("name", list(HUGE_REQUESTS))
def test_a_request_larger_than_memory_is_refused_before_the_work(name):
    """More than physical memory (and than any RLIMIT): a MemoryError naming the bytes it
    needs and the limit, raised before anything is computed or allocated."""
    call, needed = HUGE_REQUESTS[name]
    message = refused_at_once(call)
    assert "needs" in message and "bytes" in message and "allows" in message, message
    stated = int(message.split(" bytes, its scratch included")[0].rsplit("(", 1)[1])
    assert needed <= stated <= needed + checks.SCRATCH_BYTES + 2**20, message


@pytest.mark.parametrize("shape", [(2**40, 2**30), (2**31, 2**31)], ids=str)
def test_a_table_no_array_can_hold_is_refused_before_the_work(shape):
    """Past NumPy's largest array (or memory): refused at once, as a ValueError or a
    MemoryError, before anything is computed."""
    refused_at_once(lambda: sinpe.sinusoidal_positional_encoding(*shape), (MemoryError, ValueError))


def test_the_limit_is_the_smallest_of_memory_and_the_rlimits():
    limit, source = checks.memory_limit()
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    caps = [physical] + [
        soft
        for soft in (resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
        if soft != resource.RLIM_INFINITY
    ]
    assert limit == min(caps) and source in ("physical memory", "RLIMIT_AS", "RLIMIT_DATA")


def _limited(code: str, limit_name: str, nbytes: int) -> subprocess.CompletedProcess:
    def limit():
        which = getattr(resource, limit_name)
        resource.setrlimit(which, (nbytes, resource.getrlimit(which)[1]))

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


@pytest.mark.skipif(
    os.environ.get("SINPE_SANITIZED") == "1", reason="ASan maps terabytes of shadow memory"
)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
@pytest.mark.parametrize("limit_name", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_under_a_memory_limit_fail_at_once_or_stay_within_it(limit_name):
    """Under a 1.5 GB limit: a 4 GiB table is refused before any work, naming the limit and
    the bytes; a one-row table 2**26 wide (128 MiB of float16) is built, its scratch bounded
    by a block of frequencies, not the width."""
    code = """
import sinpe
misses = sinpe.cache_info().misses
try:
    sinpe.sinusoidal_positional_encoding(4, 2**28, dtype="float32")
except MemoryError as exc:
    print("MemoryError", sinpe.cache_info().misses - misses, "|", exc)
table = sinpe.sinusoidal_positional_encoding(1, 2**26, dtype="float16")
print(table.shape, table.dtype, table[0, 1])
"""
    result = _limited(code, limit_name, 1500 << 20)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith("MemoryError 0 |"), first  # no cache miss: no work was done
    assert f"({4 * 2**28 * 4 + checks.SCRATCH_BYTES} bytes" in first and limit_name in first
    assert second == "(1, 67108864) float16 1.0"


# --------------------------------------------------------------------------- widths


def test_a_rotary_width_beyond_the_bound_is_refused_at_once():
    """The published Llama-3.1 config with head_dim 2**31 (which once ran 23 GB into the OOM
    killer): refused naming the bound, before anything is made; the bound itself works."""
    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    config["head_dim"] = 2**31
    message = refused_at_once(lambda: sinpe.rope_config(config).rope(8), ValueError)
    assert "head_dim=2147483648" in message and "2**16" in message, message
    for call in (
        lambda: sinpe.rope(8, MAX_HEAD_DIM + 2),
        lambda: sinpe.rope_at([3], 2**40),
        lambda: sinpe.rope_frequencies(2**25),
    ):
        refused_at_once(call, ValueError, "head_dim")
    cos, sin = sinpe.rope(2, MAX_HEAD_DIM, base=500000.0, scaling=config["rope_scaling"])
    assert cos.shape == (2, MAX_HEAD_DIM) and cos[0].min() == 1.0


@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_frequency_indices_that_would_overflow_are_refused(backend):
    """``frequencies(2**64)`` once reached the kernel's power_vector at index 2**63 - 1,
    which overflowed and returned uninitialised memory: both twins refuse such indices."""
    if backend not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    module = backends.get(backend)
    out = np.empty(1)
    for first in (2**62, 2**63 - 1):
        with pytest.raises((ValueError, OverflowError)):
            module.power_vector(out, first, 2.3, 0.0, 2.0, 8.0, 1.0)
    module.power_vector(out, 2**62 - 1, 2.3, 0.0, 2.0, 2.0**62, 1.0)  # the last index kept
    assert np.isfinite(out[0])


@pytest.mark.parametrize("backend", ["cython", "numpy"])
@pytest.mark.parametrize("base", [0.0, -5.0, -0.0, float("inf"), float("nan"), -float("inf")])
def test_the_logarithm_refuses_what_has_no_finite_real_logarithm(backend, base):
    if backend not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    with pytest.raises(ValueError, match="finite base > 0"):
        backends.get(backend).log_dd(base)
    assert twin_frequencies.log_dd(2.0)[0] == backends.get(backend).log_dd(2.0)[0]


# --------------------------------------------------------------------------- alignment


def unaligned(shape, dtype):
    """A writable C-contiguous array of ``shape`` one byte off its dtype's alignment."""
    dtype = np.dtype(dtype)
    raw = np.zeros(int(np.prod(shape)) * dtype.itemsize + 1, dtype=np.uint8)
    out = raw[1:].view(dtype).reshape(shape)
    assert not out.flags.aligned and out.flags.c_contiguous and out.flags.writeable
    return out


DTYPES = ["float64", "float32", "float16"] + (["bfloat16"] if checks.bfloat16() else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("convention", ["vaswani", "tensor2tensor", "fairseq", "hf-marian"])
def test_unaligned_out_is_filled_as_an_aligned_one(backend, dtype, convention):
    """NumPy allows an out= one byte off alignment (a view into a byte buffer): it is filled
    with the bits an aligned array gets, by every store of every width (odd widths and the
    vector tails included); the kernel stores through memcpy, never a misaligned pointer."""
    dtype = checks.dtype(dtype)
    for n, d in ((33, 40), (17, 7), (5, 130)):
        out = unaligned((n, d), dtype)
        got = sinpe.sinusoidal_positional_encoding(
            n, d, out=out, offset=3, convention=convention, backend=backend
        )
        want = sinpe.sinusoidal_positional_encoding(
            n, d, dtype=dtype, offset=3, convention=convention, backend=backend
        )
        assert got is out and np.array_equal(got.view(np.uint8), want.view(np.uint8))
        positions = np.array([[0.5, 7.0, 2.0**40 + 3], [1.0, -3.25, 9.0]])
        out = unaligned(positions.shape + (d,), dtype)
        got = sinpe.encode(positions, d, out=out, convention=convention, backend=backend)
        want = sinpe.encode(positions, d, dtype=dtype, convention=convention, backend=backend)
        assert got is out and np.array_equal(got.view(np.uint8), want.view(np.uint8))
