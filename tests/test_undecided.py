"""Narrow values the kernel could not decide (correct.h says "undecided" and keeps its own
rounding; fill.h counts them and keeps their inputs in a ring, ``undecided_log``).

- The cases found (tools/sweep_undecided.py's FOUND, decided by mpmath in
  tests/data/undecided_cases.json): both backends decide each and hold mpmath's bits.
  correct.h's tiny path (|p w| < 2^-40) bounds its error by |y| 2^-96, so an exact
  halfway point of the factor (cos) or of factor * p * w (sin), or a product of three
  doubles within about x^2 of one, used to stay undecided, and below |p w| ~ 2^-537 the
  kernel's own rounding of the apparent tie was wrong (1e-200 cases): its step 5 now
  decides them exactly (the factor against the halfway point; factor * p * w as an exact
  integer, its distance against x^2/6).
- The same through the public API (``sinpe.rope``), kernel == twin == mpmath, and
  Hypothesis's search of exact halfway points at tiny arguments.
- A bounded, derandomized search of the public domain (``rope_at`` with ``inv_freq`` and
  ``attention_factor``: positions to 2**53 and fractions, frequencies 2^-60 .. 2^6 with
  full mantissas, factors) finds no undecided value, both backends equal.
- The ring names the inputs of the last 64, most recent last, on both backends (the
  kernel's with step 5 off, ``_kernel._set_exact_tiny``, in a child process).
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import mpmath
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


def _dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def _bits(values, name):
    """The stored bits of narrow values (float32: 4 bytes, the half types: 2)."""
    return np.asarray(values).astype(_dtype(name)).tobytes()


def _mpmath(p, w, factor, name):
    """factor cos(p w) and factor sin(p w) rounded once to the type by mpmath, at a precision
    that holds their distance from a halfway point (x^2 relative, x = |p w| tiny; the
    oracle's 320 bits do not hold it at 1e-200), ties impossible but at p w = 0 (checked)."""
    mantissa, min_exponent, max_exponent = {
        "float32": (23, -126, 127),
        "float16": (10, -14, 15),
        "bfloat16": (7, -126, 127),
    }[name]
    ctx = mpmath.MPContext()
    ctx.prec = 300 + 3 * max(0, -math.frexp(abs(p * w) or 1.0)[1])
    arg = ctx.mpf(p) * ctx.mpf(w)
    out = []
    for v in (ctx.mpf(factor) * ctx.cos(arg), ctx.mpf(factor) * ctx.sin(arg)):
        if v == 0:
            out.append(math.copysign(0.0, p * w * factor))
            continue
        step = ctx.ldexp(ctx.mpf(1), max(ctx.frexp(v)[1] - 1, min_exponent) - mantissa)
        scaled = abs(v) / step
        tie_gap = abs(scaled - ctx.floor(scaled) - ctx.mpf(0.5))
        assert arg == 0 or tie_gap > ctx.ldexp(1, 40 - ctx.prec)  # p w = 0: the factor
        value = float(ctx.nint(scaled) * step)  # ties (p w = 0 only) to even
        value = math.inf if value >= 2.0 ** (max_exponent + 1) else value
        out.append(value if v > 0 else -value)
    return out[0], out[1]


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


@needs_kernel
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_kernel_decides_each_case_as_mpmath(case):
    if case["dtype"] == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    before = kernel.undecided()
    cos, sin, decided = kernel.correctly_rounded(
        case["p"], case["w"], case["factor"], case["dtype"]
    )
    assert decided and kernel.undecided() == before
    want = (case["cos"], case["sin"])
    assert _bits([cos, sin], case["dtype"]) == _bits(want, case["dtype"]), (cos, sin, want)


# sinpe.rope(2, 2, inv_freq=[1e-200], attention_factor=1 + 3 * 2**-m): row 1's cos is the
# factor times 1 - 1e-400 / 2, just below the halfway point the factor is; the kernel used
# to round the apparent tie to even (1 + 2^-(m-2) for float32 at m = 24), mpmath's value
# is the one below (1 + 2^-(m-1)). Row 0 is the factor itself, rounded to even.
PUBLIC_TIES = [("float32", 24), ("float16", 11), ("bfloat16", 8)]


@pytest.mark.parametrize(("dtype", "m"), PUBLIC_TIES, ids=[d for d, _ in PUBLIC_TIES])
def test_rope_at_a_tiny_frequency_and_a_halfway_factor(backend, dtype, m):
    """kernel == twin == mpmath through sinpe.rope (1e-200: x^2/2 below any double-double)."""
    if dtype == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    factor = 1 + 3 * 2.0**-m
    cos, sin = sinpe.rope(
        2, 2, inv_freq=[1e-200], attention_factor=factor, dtype=_dtype(dtype), backend=backend
    )
    want_cos = [_mpmath(float(p), 1e-200, factor, dtype)[0] for p in (0, 1)]
    assert want_cos == [1 + 2.0 ** -(m - 2), 1 + 2.0 ** -(m - 1)]  # mpmath: the one below
    assert _bits(cos[:, 0], dtype) == _bits(want_cos, dtype), (cos, want_cos)
    assert _bits(cos[:, 1], dtype) == _bits(want_cos, dtype)
    assert not np.asarray(sin, dtype=np.float64).any()


# A B = 2^104 + 4 (A, B below 2^53): factor * p * w = H (1 + 2^-102) for p = A,
# w = B 2^-(104 + k), factor = H 2^k, H = 1 + 3 * 2^-24 a float32 halfway point, |p w| ~ 2^-k.
# The exact quantity is not H yet within far less than x^2/6 of it for k < 50: the sine
# falls below H (1 + 2^-23), above it for k >= 50 (1 + 2^-22, the even one). k = 45..53
# straddle correct.h's bracket (the kernel used to leave them undecided).
_A, _B = 4503599761588226, 4503599493152770


@pytest.mark.parametrize("k", [41, 45, 48, 49, 50, 51, 53, 60])
def test_a_product_of_three_doubles_just_above_a_halfway_point(backend, k):
    assert _A * _B == 2**104 + 4
    p, w, factor = float(_A), _B * 2.0 ** -(104 + k), (1 + 3 * 2.0**-24) * 2.0**k
    want = _mpmath(p, w, factor, "float32")
    assert want[1] == (1 + 2.0**-23 if k < 50 else 1 + 2.0**-22)
    if backend == "cython":
        got = kernel.correctly_rounded(p, w, factor, "float32")
    else:
        got = _twin.correctly_rounded(p, w, factor, "float32")
    assert got[2] and (got[0], got[1]) == want, (got, want)
    cos, sin = sinpe.rope_at(
        [p], 2, inv_freq=[w], attention_factor=factor, dtype=np.float32, backend=backend
    )
    assert (float(cos[0, 0]), float(sin[0, 0])) == want


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_tables_hold_mpmaths_value_of_each_case(backend, case):
    """A table through the public API at the case's position, frequency and factor."""
    if case["dtype"] == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
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
kernel._set_exact_tiny(False)  # correct.h's step 5 off: these stay undecided, as before it
# 70 positions (2k + 1) 2^-151, factor 2: each value a float32 halfway point to 2^-280
positions = [(2 * k + 1) * 2.0**-151 for k in range(70)]
sinpe.rope_at(positions, 2, inv_freq=[1.0], attention_factor=2.0, dtype=np.float32,
              backend="cython", threads=1)
print(json.dumps({"count": kernel.undecided(), "log": kernel.undecided_log(), "isa": kernel.ISA}))
"""


@needs_kernel
def test_the_ring_names_the_last_64_undecided_inputs():
    """In a child process (conftest.py would fail a test that makes them here), with
    correct.h's step 5 off (nothing else makes an undecided value on purpose): 70
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
