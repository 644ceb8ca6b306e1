"""The two fillers are twins: identical tables on generated inputs, and the backend switches."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sinpe
import sinpe._api as api
from sinpe import conventions
from sinpe import sinusoidal_positional_encoding as pe

CONVENTIONS = [
    "vaswani",
    "tensor2tensor",
    "hf-marian",
    "diffusers",
    conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.0),
]
needs_kernel = pytest.mark.skipif("cython" not in api._FILLERS, reason="kernel not built")


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(
    seq_len=st.integers(0, 3000),
    d_model=st.integers(1, 80),
    offset=st.one_of(st.integers(0, 10**6), st.integers(0, 2**53 - 3001)),
    base=st.sampled_from([10000.0, 2.0, 10.0, 1e5, 1.5]),
    dtype=st.sampled_from([np.float32, np.float64]),
    convention=st.sampled_from(CONVENTIONS),
)
def test_backends_agree_on_generated_inputs(seq_len, d_model, offset, base, dtype, convention):
    kwargs = dict(offset=offset, base=base, dtype=dtype, convention=convention)
    a = pe(seq_len, d_model, backend="cython", **kwargs)
    b = pe(seq_len, d_model, backend="numpy", **kwargs)
    assert a.shape == b.shape == (seq_len, d_model) and a.dtype == b.dtype == np.dtype(dtype)
    assert np.isfinite(a).all() and np.abs(a).max(initial=0) <= 1
    # Same scheme, same rounding order: equal bit for bit (the contract only asks 1e-15).
    assert np.abs(a.astype(np.float64) - b).max(initial=0) <= 1e-15
    assert np.array_equal(a, b)


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(
    positions=st.lists(
        st.one_of(
            st.integers(-(2**53) + 1, 2**53 - 1),
            st.floats(-(2.0**53) + 1, 2.0**53 - 1, allow_subnormal=True),
            st.sampled_from([0.0, -0.0, 0.5, 1e-300, 2.0**52 + 0.5]),
        ),
        max_size=40,
    ),
    d_model=st.integers(1, 70),
    base=st.one_of(st.sampled_from([10000.0, 2.0, 1e5]), st.floats(1e-3, 1e12)),
    dtype=st.sampled_from([np.float32, np.float64]),
    convention=st.sampled_from(CONVENTIONS),
)
def test_encode_backends_agree_on_generated_positions(positions, d_model, base, dtype, convention):
    a = sinpe.encode(
        positions, d_model, base=base, dtype=dtype, convention=convention, backend="cython"
    )
    b = sinpe.encode(
        positions, d_model, base=base, dtype=dtype, convention=convention, backend="numpy"
    )
    assert a.shape == b.shape == (len(positions), d_model) and a.dtype == b.dtype
    assert np.isfinite(a).all() and np.abs(a).max(initial=0) <= 1
    assert np.array_equal(a, b)


@needs_kernel
@pytest.mark.parametrize("n_rows", [1, 16, 17, 100, 1025, 20000])
def test_thread_counts_give_identical_tables(n_rows):
    one = pe(n_rows, 40, threads=1)
    for threads in (2, 3, 8):
        assert np.array_equal(pe(n_rows, 40, threads=threads), one)


def run_python(code, **env):
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_environment_forces_numpy_backend():
    result = run_python(
        "import sinpe, numpy as np; print(sinpe.BACKEND);"
        "print(np.array_equal(sinpe.sinusoidal_positional_encoding(9, 4), "
        "sinpe.sinusoidal_positional_encoding(9, 4, backend='numpy')))",
        SINPE_BACKEND="numpy",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["numpy", "True"]


def test_environment_with_unknown_backend_fails_clearly():
    result = run_python("import sinpe", SINPE_BACKEND="fortran")
    assert result.returncode != 0
    assert "SINPE_BACKEND='fortran'" in result.stderr and "numpy" in result.stderr


@pytest.mark.skipif(
    os.environ.get("SINPE_REQUIRE_EXTENSION") != "1", reason="only where the kernel is required"
)
def test_required_kernel_is_present():
    """CI sets SINPE_REQUIRE_EXTENSION=1: a broken kernel must never pass on the fallback."""
    assert "cython" in api._FILLERS
    if os.environ.get("SINPE_BACKEND", "auto") != "numpy":
        assert sinpe.BACKEND == "cython"


@pytest.mark.parametrize("cap", ["1", "2", " 1 "])
def test_environment_caps_threads(cap):
    result = run_python(
        "import sinpe._api as api; "
        "print(api.MAX_THREADS, api._threads(None, 1 << 30), api._threads(64, 1 << 30))",
        SINPE_NUM_THREADS=cap,
    )
    assert result.returncode == 0, result.stderr
    limit = min(int(cap), len(os.sched_getaffinity(0))) if api.HAVE_OPENMP else 1
    assert result.stdout.split() == [str(limit)] * 3


@pytest.mark.parametrize("cap", ["0", "-2", "two", "1.5"])
def test_environment_with_bad_thread_cap_fails_clearly(cap):
    result = run_python("import sinpe", SINPE_NUM_THREADS=cap)
    assert result.returncode != 0
    assert (
        "SINPE_NUM_THREADS must be an integer >= 1" in result.stderr and repr(cap) in result.stderr
    )


def test_threads_none_stays_serial_below_the_parallel_size():
    assert api._threads(None, api.PARALLEL_MIN_ELEMENTS - 1) == 1
    assert api._threads(None, api.PARALLEL_MIN_ELEMENTS) == api.MAX_THREADS


@needs_kernel
def test_build_mode_is_the_one_asked_for():
    """CI runs the suite once on a SINPE_DEBUG_BUILD=1 build: prove the checks are really on
    there (a file-level directive once silently overrode setup.py), and off elsewhere."""
    debug = os.environ.get("SINPE_DEBUG_BUILD") == "1"
    assert api._kernel.DEBUG is debug
    assert api._kernel.BOUNDS_CHECKED is debug
    assert api._kernel.C_ASSERTS is debug


@needs_kernel
def test_hot_loop_is_the_one_built_for():
    """CI runs the suite on SINPE_SIMD=sse2 and =c builds too, so the loops that only older or
    non-x86 CPUs run are tested here: prove each build really runs the loop it was capped at."""
    asked = os.environ.get("SINPE_SIMD", "").strip().lower() or "auto"
    if asked != "auto":
        assert api._kernel.SIMD == asked
    elif platform.machine() == "x86_64" and Path("/proc/cpuinfo").exists():
        has_avx2 = " avx2" in Path("/proc/cpuinfo").read_text()
        assert api._kernel.SIMD == ("avx2" if has_avx2 else "sse2")


@pytest.mark.skipif(api._kernel is None or not api._kernel.DEBUG, reason="debug builds only")
def test_debug_build_checks_the_trusted_arguments():
    columns, key, sizes, (coarse, mid, fine) = api._plan(conventions.VASWANI, 8, 10000.0, 40)
    good = dict(
        out=np.empty((40, 8)),
        coarse=coarse,
        mid=mid,
        fine=fine,
        sin_col=0,
        cos_col=1,
        step=2,
        n_sin=4,
        n_cos=4,
        pad_col=-1,
        threads=1,
    )
    api._kernel.fill_table(**good)
    for bad in (
        dict(out=np.empty((4000, 8))),
        dict(n_sin=5),
        dict(step=3),
        dict(pad_col=8),
        dict(threads=0),
        dict(fine=coarse[:, :, :2]),
    ):
        with pytest.raises(ValueError, match="debug"):
            api._kernel.fill_table(**{**good, **bad})
