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
from layouts import PRESETS

import sinpe
from sinpe import conventions
from sinpe import sinusoidal_positional_encoding as pe
from sinpe._tables import backends, plan
from sinpe._tables.checks import bfloat16

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

CONVENTIONS = [*PRESETS, conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.0)]
TABLE_DTYPES = [np.float32, np.float64, np.float16] + ([bfloat16()] if bfloat16() else [])
needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(
    seq_len=st.integers(0, 3000),
    d_model=st.integers(1, 80),
    offset=st.one_of(st.integers(0, 10**6), st.integers(0, 2**53 - 3001)),
    base=st.sampled_from([10000.0, 2.0, 10.0, 1e5, 1.5]),
    dtype=st.sampled_from(TABLE_DTYPES),
    convention=st.sampled_from(CONVENTIONS),
)
def test_backends_agree_on_generated_inputs(seq_len, d_model, offset, base, dtype, convention):
    kwargs = dict(offset=offset, base=base, dtype=dtype, convention=convention)
    a = pe(seq_len, d_model, backend="cython", **kwargs)
    b = pe(seq_len, d_model, backend="numpy", **kwargs)
    assert a.shape == b.shape == (seq_len, d_model) and a.dtype == b.dtype == np.dtype(dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert np.isfinite(a64).all() and np.abs(a64).max(initial=0) <= 1
    if a.itemsize >= 4:  # the contract only asks 1e-15 in float64
        assert np.abs(a64 - b64).max(initial=0) <= 1e-15
    # Same scheme, same rounding order: equal bit for bit.
    assert a.tobytes() == b.tobytes()


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


FILLER_TRACE = """
import math, sinpe
from sinpe._tables import backends as b
ran = []
for name, module in list(b.BACKENDS.items()):
    module.fill = lambda *a, _f=module.fill, _n=name: ran.append(_n) or _f(*a)
row = sinpe.sinusoidal_positional_encoding(2, 4)[1].tolist()
exact = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
print(sinpe.BACKEND, ",".join(ran), max(abs(a - b) for a, b in zip(row, exact)) < 1e-15)
"""


@pytest.mark.parametrize("forced", [True, False], ids=["SINPE_BACKEND=numpy", "unset"])
def test_environment_forces_numpy_backend(forced):
    """The filler that really runs is traced: with the variable, the NumPy one (and a right
    table); without it, the kernel wherever it was built."""
    env = {"SINPE_BACKEND": "numpy" if forced else ""}
    result = run_python(FILLER_TRACE, **env)
    assert result.returncode == 0, result.stderr
    expected = "numpy" if forced or "cython" not in backends.BACKENDS else "cython"
    assert result.stdout.split() == [expected, expected, "True"]


def test_environment_with_unknown_backend_fails_clearly():
    result = run_python("import sinpe", SINPE_BACKEND="fortran")
    assert result.returncode != 0
    assert "SINPE_BACKEND='fortran'" in result.stderr and "numpy" in result.stderr


@pytest.mark.skipif(
    os.environ.get("SINPE_REQUIRE_EXTENSION") != "1", reason="only where the kernel is required"
)
def test_required_kernel_is_present():
    """CI sets SINPE_REQUIRE_EXTENSION=1: a broken kernel must never pass on the fallback."""
    assert "cython" in backends.BACKENDS
    if os.environ.get("SINPE_BACKEND", "auto") != "numpy":
        assert sinpe.BACKEND == "cython"


@needs_kernel
def test_build_mode_is_the_one_asked_for():
    """CI runs the suite once on a SINPE_DEBUG_BUILD=1 build: prove the checks are really on
    there (a file-level directive once silently overrode setup.py), and off elsewhere."""
    debug = os.environ.get("SINPE_DEBUG_BUILD") == "1"
    assert backends.kernel.DEBUG is debug
    assert backends.kernel.BOUNDS_CHECKED is debug
    assert backends.kernel.C_ASSERTS is debug


@needs_kernel
def test_instruction_set_is_the_one_built_for():
    """CI runs the suite on SINPE_SIMD=sse2, =c and =avx512-emulated builds, and with
    SINPE_ISA forcing each level the CPU has, so the loops other CPUs run are tested here:
    prove each run really uses the level asked for (one probe, config.h, for every loop: the
    rotation, the evaluator, the half rounding)."""
    built = os.environ.get("SINPE_SIMD", "").strip().lower() or "auto"
    forced = os.environ.get("SINPE_ISA", "").strip().lower()
    kernel = backends.kernel
    if built == "avx512-emulated":
        assert kernel.EMULATED and kernel.CPU_ISA == "avx512"
    elif built != "auto":
        assert not kernel.EMULATED and kernel.CPU_ISA == built
    elif platform.machine() == "x86_64" and Path("/proc/cpuinfo").exists():
        flags = set(Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split())
        avx512 = {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags
        avx2 = {"avx2", "fma", "f16c"} <= flags
        best = "avx512bf16" if "avx512_bf16" in flags else "avx512"
        assert kernel.CPU_ISA == (best if avx512 and avx2 else "avx2" if avx2 else "sse2")
    names = kernel.ISA_NAMES
    if forced and forced != "auto" and forced in names:
        expected = names[min(names.index(forced), names.index(kernel.CPU_ISA))]
        assert kernel.ISA == expected, kernel.ISA_REASON
    else:
        assert kernel.ISA == kernel.CPU_ISA


def _debug_plan():
    filler = sinpe._tables.tables._table_filler(backends.kernel, conventions.VASWANI, 8, 10000.0)
    anchors = plan.exact_values(backends.kernel, np.array([0.0]), filler.frequencies)
    return filler, anchors


@pytest.mark.skipif(
    backends.kernel is None or not backends.kernel.DEBUG, reason="debug builds only"
)
def test_debug_build_checks_the_trusted_arguments():
    filler, anchors = _debug_plan()
    kernel = backends.kernel
    codes = np.zeros((1, 40), dtype=np.int64)
    good = dict(
        out0=np.empty((40, 8)),
        out1=None,
        anchors=anchors,
        values=np.zeros((1, 40)),  # each row's anchor position
        codes=codes,
        start=0,
        origin=0.0,
        threads=1,
    )
    kernel.fill(filler.plan, *good.values())
    for bad in (
        dict(out0=np.empty((40, 9))),
        dict(out0=np.empty((40, 8))[:, ::-1]),
        dict(out1=np.empty((40, 8))),
        dict(anchors=anchors[:, :, :2]),
        dict(codes=codes + 1024),  # names anchor 1, which is not there
        dict(codes=codes[:, :39]),
        dict(codes=None, values=None, start=1000),  # rows past 1023 need a second anchor
        dict(threads=0),
        dict(values=None),  # codes need each row's anchor position, also beside anchors
        dict(codes=None),  # values come with codes
        dict(anchors=None, values=None, codes=None, origin=2.0**53),
        dict(anchors=None, values=np.zeros((1, 40)), codes=codes + 1024),
    ):
        with pytest.raises(ValueError, match="debug"):
            kernel.fill(filler.plan, *{**good, **bad}.values())
    segments = filler.plan.segments.copy()
    segments[0, 4] = 7  # cos from column 7, step 2: past the row
    too_wide = kernel.Plan(filler.grid, filler.frequencies.table, segments, 8, 1, -1, 1.0)
    with pytest.raises(ValueError, match="debug"):
        kernel.fill(too_wide, *good.values())
    with pytest.raises(ValueError, match="debug"):
        kernel.exact_cos_sin(np.arange(5.0), filler.frequencies.table, np.empty((4, 2, 4)), 1)
