"""Narrow values the kernel could not decide (correct.h says "undecided" and keeps its own
rounding; fill.h counts them and keeps their inputs in a ring, ``undecided_log``).

- The cases found (tools/sweep_undecided.py's FOUND, decided by mpmath in
  tests/data/undecided_cases.json): the NumPy twin decides each and holds mpmath's bits;
  the kernel does not yet (correct.h's tiny path, |p w| < 2^-40, bounds its error by
  |y| 2^-96, so an exact halfway point of the factor or of factor * p * w with |p w| below
  about 2^-47 stays undecided, and below 2^-537 the kernel's own rounding of the tie is
  wrong): strict xfails, which fail once correct.h decides them.
- A bounded, derandomized search of the public domain (``rope_at`` with ``inv_freq`` and
  ``attention_factor``: positions to 2**53 and fractions, frequencies 2^-60 .. 2^6 with
  full mantissas, factors) finds no undecided value, both backends equal.
- The ring names the inputs of the last 64, most recent last, on both backends.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sinpe
from sinpe import _twin
from sinpe._tables import backends
from sinpe._tables.checks import bfloat16

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "tests" / "data" / "undecided_cases.json").read_text())["cases"]
BF16 = bfloat16()
NARROW = ["float32", "float16"] + (["bfloat16"] if BF16 is not None else [])
kernel = backends.kernel
needs_kernel = pytest.mark.skipif(kernel is None, reason="compiled kernel not built")
NOT_DECIDED = (
    "correct.h's tiny path cannot decide an exact halfway point of the factor or of "
    "factor * p * w (issue 67): the kernel counts it undecided (conftest fails the test)"
)


def _dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def _bits(values, name):
    """The stored bits of narrow values (float32: 4 bytes, the half types: 2)."""
    return np.asarray(values).astype(_dtype(name)).tobytes()


def _case_id(case):
    return f"{case['dtype']}-p{case['p']!r}-w{case['w']!r}-f{case['factor']!r}"


def test_the_cases_file_is_up_to_date():
    """tools/sweep_undecided.py --check-cases: the file is what the tool writes (mpmath)."""
    tool = ROOT / "tools" / "sweep_undecided.py"
    if not tool.exists():
        pytest.skip("tools/ is not beside the tests (an installed wheel's run)")
    result = subprocess.run(
        [sys.executable, str(tool), "--check-cases"], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_twin_decides_each_case_as_mpmath(case):
    if case["dtype"] == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    before = _twin.undecided()
    cos, sin, decided = _twin.correctly_rounded(case["p"], case["w"], case["factor"], case["dtype"])
    assert decided and _twin.undecided() == before
    want = (case["cos"], case["sin"])
    assert _bits([cos, sin], case["dtype"]) == _bits(want, case["dtype"]), (cos, sin, want)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_tables_hold_mpmaths_value_of_each_case(backend, case, request):
    """A table through the public API at the case's position, frequency and factor."""
    if case["dtype"] == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    if backend == "cython":
        request.applymarker(pytest.mark.xfail(strict=True, reason=NOT_DECIDED))
    cos, sin = sinpe.rope_at(
        [case["p"]],
        2,
        inv_freq=[case["w"]],
        attention_factor=case["factor"],
        dtype=_dtype(case["dtype"]),
        layout="compact",
        backend=backend,
    )
    want = (case["cos"], case["sin"])
    got = (cos[0, 0], sin[0, 0])
    assert _bits(got, case["dtype"]) == _bits(want, case["dtype"]), (got, want)


RING_SCRIPT = """
import json, numpy as np, sinpe
from sinpe._tables import backends
kernel = backends.kernel
# 70 positions (2k + 1) 2^-151, factor 2: each value a float32 halfway point to 2^-280
positions = [(2 * k + 1) * 2.0**-151 for k in range(70)]
sinpe.rope_at(positions, 2, inv_freq=[1.0], attention_factor=2.0, dtype=np.float32,
              backend="cython", threads=1)
print(json.dumps({"count": kernel.undecided(), "log": kernel.undecided_log(), "isa": kernel.ISA}))
"""


@needs_kernel
def test_the_ring_names_the_last_64_undecided_inputs():
    """In a child process (conftest.py would fail a test that makes them here): 70
    undecided values, and the kernel's ring holds the inputs of the last 64, p, w, factor,
    dtype and ISA, most recent last (fill.h)."""
    result = subprocess.run(
        [sys.executable, "-c", RING_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["count"] == 70
    want = [
        {
            "p": (2 * k + 1) * 2.0**-151,
            "w": 1.0,
            "factor": 2.0,
            "dtype": "float32",
            "isa": got["isa"],
        }
        for k in range(6, 70)
    ]
    assert got["log"] == want


def test_the_rings_keep_the_last_64():
    """Both rings hold at most 64 entries, most recent last (the twin's here: the kernel's
    cannot be filled on purpose without failing the test)."""
    from sinpe._twin import correct

    saved, count = list(correct._undecided_log), correct._undecided
    try:
        for i in range(70):
            correct._undecided_log.append(
                {"p": float(i), "w": 1.0, "factor": 1.0, "dtype": "float32", "isa": "numpy"}
            )
        log = _twin.undecided_log()
        assert [e["p"] for e in log] == [float(i) for i in range(6, 70)]
    finally:
        correct._undecided_log.clear()
        correct._undecided_log.extend(saved)
        correct._undecided = count


def _draw_domain(seed: int):
    """positions (integers to 2**53, fractions), inv_freq (full mantissas, 2^-60 .. 2^6) and
    a factor, from one seed: every value drawn by NumPy, so that Hypothesis's constants
    (2**-149 and the like) never make the structured halfway cases this search is not for."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    positions = np.where(
        rng.random(n) < 0.7,
        np.floor(2.0 ** rng.uniform(0, 53, n)),
        rng.uniform(-1e6, 1e6, n),
    ) * rng.choice([-1.0, 1.0], n)
    inv_freq = 2.0 ** rng.uniform(-60, 6, int(rng.integers(1, 20)))
    factor = 1.0 if rng.random() < 0.5 else float(2.0 ** rng.uniform(-3.3, 3.3))
    return positions, inv_freq, factor


@settings(max_examples=120, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from(NARROW))
def test_a_search_of_the_domain_finds_no_undecided_value(seed, dtype):
    """Every narrow value of random tables decided (conftest.py fails the test if either
    count moves; the count is read here too), the two backends' bits equal."""
    positions, inv_freq, factor = _draw_domain(seed)
    before = (_twin.undecided(), kernel.undecided() if kernel is not None else 0)
    tables = {}
    for backend in backends.BACKENDS:
        cos, sin = sinpe.rope_at(
            positions,
            2 * inv_freq.size,
            inv_freq=inv_freq,
            attention_factor=factor,
            dtype=_dtype(dtype),
            layout="compact",
            backend=backend,
        )
        tables[backend] = cos.tobytes() + sin.tobytes()
    after = (_twin.undecided(), kernel.undecided() if kernel is not None else 0)
    assert after == before
    assert len(set(tables.values())) == 1


@needs_kernel
@pytest.mark.xfail(strict=True, reason=NOT_DECIDED)
@settings(max_examples=20, derandomize=True, deadline=None, database=None)
@given(
    dtype=st.sampled_from(NARROW),
    odd=st.integers(0, 2**22),
    shift=st.integers(48, 70),
    cos_case=st.booleans(),
)
def test_exact_halfway_points_at_tiny_arguments_are_decided(dtype, odd, shift, cos_case):
    """The structured part of the domain: a factor on a halfway point of the type (cos), or
    factor * p * w on one (sin), with |p w| < 2^-47: the kernel decides each, as the twin."""
    mantissa = {"float32": 23, "float16": 10, "bfloat16": 7}[dtype]
    halfway = (2 ** (mantissa + 1) + 2 * (odd % 2**mantissa) + 1) * 2.0 ** -(mantissa + 1)
    if cos_case or dtype == "float16":  # factor on a halfway point in [1, 2), p w = 2^-shift
        p, w, factor = 1.0, 2.0**-shift, halfway
    else:  # p w = halfway * 2^-shift, factor 1 (below float16's range: not for it)
        p, w, factor = 1.0, halfway * 2.0**-shift, 1.0
    got = kernel.correctly_rounded(p, w, factor, dtype)
    want = _twin.correctly_rounded(p, w, factor, dtype)
    assert want[2]
    assert (got[0], got[1]) == (want[0], want[1]) and got[2], (p, w, factor, dtype, got, want)
