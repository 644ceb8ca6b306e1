"""Concurrency, the GIL and memory: identical answers under threads, the kernel runs without
the GIL, and thousands of calls leave resident memory flat."""

import gc
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import sinpe
from sinpe import conventions
from sinpe._tables import backends, tables

needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")


def workload():
    """Mixed shapes, offsets, dtypes, conventions and entry points; many share cache keys."""
    calls = []
    for i in range(48):
        n = [1, 7, 16, 17, 300, 2049, 5000][i % 7]
        d = [1, 6, 33, 128, 512][i % 5]
        kwargs = dict(
            offset=[0, 5, 2**40 + i, 2**53 - 6000][i % 4],
            dtype=[np.float64, np.float32, np.float16][i % 3],
            convention=[
                "vaswani",
                "tensor2tensor",
                "hf-marian",
                conventions.diffusers(flip_sin_to_cos=bool(i % 2)),
            ][i % 4],
            backend=sinpe.BACKEND if i % 3 else "numpy",
            threads=[None, 1, 2][i % 3],
        )
        calls.append((sinpe.sinusoidal_positional_encoding, (n, d), kwargs))
        if i % 4 == 0:
            calls.append((sinpe.encode, (np.arange(n) * 0.37 - 3.0, d), {"base": 500.0 + i}))
        if i % 6 == 0:
            calls.append((sinpe.shift_matrix, (i - 20, 2 * d), {}))
        if i % 3 == 1:  # RoPE: runs and scattered positions, scalings with their own caches
            scaling = [
                None,
                {"rope_type": "linear", "factor": 2.0},
                {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256 + i},
            ][i // 3 % 3]
            rope_kwargs = dict(
                scaling=scaling,
                layout=["half", "interleaved", "compact"][i % 3],
                dtype=kwargs["dtype"],
                backend=kwargs["backend"],
            )
            calls.append((sinpe.rope, (n, 2 * d), dict(rope_kwargs, offset=kwargs["offset"])))
            calls.append((sinpe.rope_at, (np.arange(n) * 3 + i, 2 * d), rope_kwargs))
    return calls


def clear_caches():
    sinpe.clear_cache()
    assert sinpe.cache_info().entries == 0


@pytest.mark.parametrize("cold", [True, False], ids=["cold-caches", "warm-caches"])
def test_eight_threads_get_the_serial_answers(cold):
    calls = workload()
    serial = [f(*args, **kwargs) for f, args, kwargs in calls]
    if cold:  # the threads race to fill the caches
        clear_caches()
    order = list(range(len(calls))) * 4
    np.random.default_rng(0).shuffle(order)
    barrier = threading.Barrier(8)

    def run(worker):
        barrier.wait()
        return [(k, calls[k][0](*calls[k][1], **calls[k][2])) for k in order[worker::8]]

    with ThreadPoolExecutor(8) as pool:
        results = [item for batch in pool.map(run, range(8)) for item in batch]
    assert len(results) == len(order)
    for k, result in results:
        tables = result if isinstance(result, tuple) else (result,)  # rope: (cos, sin)
        expected = serial[k] if isinstance(serial[k], tuple) else (serial[k],)
        for table, answer in zip(tables, expected):
            assert table.dtype == answer.dtype, calls[k]
            assert table.tobytes() == answer.tobytes(), calls[k]


def test_threads_filling_their_own_out_buffers():
    outs = [np.empty((4096, 96), dtype=np.float32) for _ in range(8)]
    expected = [
        sinpe.sinusoidal_positional_encoding(4096, 96, offset=1000 * i, dtype=np.float32)
        for i in range(8)
    ]

    def run(i):
        for _ in range(5):
            sinpe.sinusoidal_positional_encoding(
                4096, 96, offset=1000 * i, dtype=np.float32, out=outs[i]
            )
        return i

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(run, range(8))) == list(range(8))
    for out, want in zip(outs, expected):
        assert np.array_equal(out, want)


def _cached_arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _cached_arrays(item)


def test_caches_hold_only_read_only_arrays():
    sinpe.clear_cache()
    sinpe.sinusoidal_positional_encoding(100, 16, offset=7)
    sinpe.sinusoidal_positional_encoding(100, 16)
    sinpe.rope(50, 16)
    kept = [
        a
        for entry in sinpe._tables.cache._CACHE._entries.values()
        for a in _cached_arrays(entry[0])
    ]
    assert len(kept) >= 8
    for array in kept:
        assert not array.flags.writeable
    filler = tables._table_filler(backends.DEFAULT, conventions.VASWANI, 16, 10000.0)
    with pytest.raises(ValueError):  # nor can the flag be turned back on through the buffer
        filler.grid.flags.writeable = True
    assert not filler.grid.base.flags.writeable
    w = sinpe.frequencies(16)  # a copy: the cached vector is not handed out
    assert w.flags.writeable and all(w.base is not a and w is not a for a in kept)


def test_cached_tables_start_where_the_kernel_expects_them():
    """64-byte aligned (no AVX2 load splits a cache line) at a fixed page offset (the kernel
    places each thread's anchor product at its fine rows' offset); odd widths included."""
    from sinpe._tables.plan import TABLE_PLACEMENT

    assert TABLE_PLACEMENT % 64 == 0
    for d_model in (1, 2, 128, 7, 512, 33):
        grid = tables._table_filler(backends.DEFAULT, conventions.VASWANI, d_model, 10000.0).grid
        assert grid.ctypes.data % 4096 == TABLE_PLACEMENT
        assert grid.flags.c_contiguous and grid.dtype == np.float64


@needs_kernel
def test_the_kernel_runs_without_the_gil():
    """While a thread is inside one kernel call, the main thread runs Python: it sees that
    call's output half written (its first row done, a later row of the same call not yet).
    Holding the GIL, the call would be atomic to Python: its output seen only before or after.
    An order of events, never a duration (a call too short to catch is simply made again)."""
    from sinpe._exactmath.constants import ANCHOR_BYTES

    d_model = 8192  # 4096 frequencies: one block, each row's anchor evaluated by the filler
    rows = max(1024, ANCHOR_BYTES // (16 * d_model // 2))  # the rows of one kernel call
    probes = range(rows // 64, rows, rows // 64)
    seen = 0
    for attempt in range(20):
        positions = np.random.default_rng(attempt).integers(0, 2**40, rows).astype(np.float64)
        out = np.full((rows, d_model), np.nan)
        worker = threading.Thread(
            target=sinpe.encode, args=(positions, d_model), kwargs={"out": out}
        )
        worker.start()
        while worker.is_alive() and not seen:
            if out[0, 0] == out[0, 0] and any(out[k, 0] != out[k, 0] for k in probes):
                seen = attempt + 1
        worker.join()
        if seen:
            break
    assert seen, "the main thread never ran Python during a kernel call"
    expected = sinpe.encode(positions, d_model)
    assert np.array_equal(out, expected)


def resident_bytes():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    os.environ.get("SINPE_SANITIZED") == "1", reason="ASan keeps freed memory (quarantine)"
)
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_thousands_of_calls_leave_memory_flat():
    outs = {dt: np.empty((257, 130), dtype=dt) for dt in (np.float32, np.float64)}

    def burst(n):
        for i in range(n):
            dtype = (np.float32, np.float64)[i % 2]
            backend = sinpe.BACKEND if i % 4 else "numpy"
            out = outs[dtype] if i % 3 == 0 else None
            sinpe.sinusoidal_positional_encoding(
                257, 130, offset=i % 5, dtype=dtype, out=out, backend=backend
            )
            sinpe.sinusoidal_positional_encoding(3, 8, threads=2, backend=backend)
            sinpe.encode([i, 0.5], 12, dtype=dtype, backend=backend)
            sinpe.rope(40, 16, offset=i, dtype=(dtype, np.float16)[i % 2], backend=backend)
            sinpe.rope_at([i, 0.5], 16, layout="compact", backend=backend)
            try:  # error paths must not leak either
                sinpe.sinusoidal_positional_encoding(
                    257, 130, out=outs[np.float32], dtype=np.float64
                )
            except ValueError:
                pass

    burst(300)  # caches, allocator pools and the interpreter settle
    gc.collect()
    before = resident_bytes()
    burst(3000)
    gc.collect()
    grown = resident_bytes() - before
    # 3000 leaked 257x130 tables would be ~800 MB; allow allocator noise only.
    assert grown < 8 << 20, f"resident memory grew by {grown / 2**20:.1f} MiB"


@needs_kernel
@pytest.mark.skipif(not hasattr(sys, "_is_gil_enabled"), reason="CPython 3.13+ only")
def test_free_threaded_python_keeps_the_gil_off():
    """On a free-threaded CPython the GIL stays off after importing the kernel (it declares
    Py_mod_gil = Py_MOD_GIL_NOT_USED); on a regular build the GIL is simply on."""
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED") and os.environ.get("PYTHON_GIL") != "1":
        assert not sys._is_gil_enabled()
    else:
        assert sys._is_gil_enabled()


def test_nothing_global_changes_after_import():
    """After import only the caches change: every module-level name of the package keeps its
    object (and the mutable ones their contents) across a full mixed workload."""
    import importlib

    modules = [
        importlib.import_module(f"sinpe.{m}")
        for m in ("_tables.tables", "_tables.plan", "_rope.rope", "_twin.exact", "_twin.fill")
        + ("_twin.frequencies", "conventions", "_rope.rope_types")
    ]
    modules.append(sinpe)

    # bounded caches of their own: the conventions' tokens, the keys already warned of and
    # the table call's resolved arguments
    caches = {
        ("sinpe.conventions", "_TOKENS"),
        ("sinpe._rope.rope_types", "_WARNED"),
        ("sinpe._tables.tables", "_RESOLVED"),
    }

    def snapshot():
        state = {}
        for module in modules:
            for name, value in vars(module).items():
                mutable = isinstance(value, (dict, list, set, tuple))
                contents = (
                    repr(value) if mutable and (module.__name__, name) not in caches else None
                )
                state[module.__name__, name] = (id(value), contents)
        return state

    before = snapshot()
    for f, args, kwargs in workload():
        f(*args, **kwargs)
    assert snapshot() == before
