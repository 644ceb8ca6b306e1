"""Narrow tables correctly rounded: every float32, float16 and bfloat16 value (complex64's
parts too) is the exact value rounded once, the same bits as rounding mpmath's value, on the
hard cases of ``tools/hard_cases.py`` (values within 2^-52 of a halfway point of the type,
positions near multiples of pi/2, a search of the 131072 x 128 float32 table), through
every function that writes a table, on both backends and every instruction set; and on
random entries with an attention factor. See ``fill.h`` ("Narrow types") and
``correct.h``."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import oracle
import pytest
from written import written

import sinpe
from sinpe import _twin
from sinpe._tables import backends
from sinpe._tables.checks import bfloat16

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

BF16 = bfloat16()
NARROW = ["float32", "float16"] + (["bfloat16"] if BF16 is not None else [])
ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "tests" / "data" / "hard_cases.json").read_text())["cases"]
kernel = backends.kernel


def isas():
    if kernel is None:
        return []
    names = kernel.ISA_NAMES
    return list(names[: names.index(kernel.CPU_ISA) + 1])


def bits(x: float) -> bytes:
    return np.float64(x).tobytes()


def cases_of(dtype):
    """The hard cases that concern ``dtype``: its own halfway cases and the search's, and
    every case near a multiple of pi/2 (hard for every type)."""
    return [c for c in CASES if c.get("dtype", dtype) == dtype]


_EXPECTED: dict = {}


def expected(case, dtype):
    key = (case["p"], case["w"], dtype)
    if key not in _EXPECTED:
        _EXPECTED[key] = oracle.cos_sin_narrow([case["p"]], [case["w"]], dtype)[0, :, 0]
    return _EXPECTED[key]


def check(case, dtype, backend, where=""):
    want_cos, want_sin = expected(case, dtype)
    for name, c, s in written(case, dtype, backend):
        for got, want, what in ((c, want_cos, "cos"), (s, want_sin, "sin")):
            if got is None:
                continue
            got = float(np.asarray(got).astype(np.float64))
            assert bits(got) == bits(want), (
                f"{where}{name} {what}({case['p']!r} * {case['w']!r}) in {dtype}: "
                f"{got!r}, correctly rounded {want!r}"
            )


@pytest.mark.parametrize("dtype", NARROW)
def test_hard_cases(backend, dtype):
    for case in cases_of(dtype):
        check(case, dtype, backend)


@pytest.mark.skipif(kernel is None, reason="compiled kernel not built")
@pytest.mark.parametrize("dtype", NARROW)
def test_hard_cases_on_every_instruction_set(dtype):
    before = kernel.ISA
    try:
        for name in isas():
            kernel._set_isa(name)
            sinpe.clear_cache()
            for case in cases_of(dtype):
                check(case, dtype, "cython", f"[{name}] ")
    finally:
        kernel._set_isa(before)
        sinpe.clear_cache()


def test_the_hard_cases_are_hard():
    """Each halfway case is within 2^-52 of a halfway point (so a float64 value within its
    error bound cannot round it), the pi cases go down to 1e-16, and rounding the float64
    value once misses a good share of them: what the recomputation is there for."""
    kinds = {c["kind"] for c in CASES}
    assert kinds == {"built", "pi", "search"}
    for c in CASES:
        if c["kind"] != "pi":
            assert c["distance"] < 2.0**-50
    assert min(c["magnitude"] for c in CASES if c["kind"] == "pi") < 1e-15
    for dtype in NARROW:
        assert len([c for c in CASES if c.get("dtype") == dtype]) >= 40
    missed = 0
    for c in CASES:
        if c["kind"] == "built":
            x = oracle.mpf(c["p"]) * oracle.mpf(c["w"])
            exact = oracle.CTX.sin(x) if c["value"] == "sin" else oracle.CTX.cos(x)
            missed += oracle.narrow(oracle.mpf(float(exact)) + 0, c["dtype"]) != oracle.narrow(
                exact, c["dtype"]
            )
    assert missed >= 10  # even the correctly rounded float64 value, rounded again, misses


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("factor", [1.0, 1.37, 0.1])
def test_random_entries_with_a_factor(backend, dtype, factor):
    """Random positions (integer, far, fractional, negative) and frequencies, with an
    attention factor: every entry of rope_at is mpmath's value times the factor, rounded once."""
    rng = np.random.default_rng(33)
    positions = np.concatenate(
        [
            rng.integers(0, 2**20, 30).astype(np.float64),
            rng.integers(2**40, 2**53, 10).astype(np.float64),
            rng.uniform(-1e4, 1e4, 10),
        ]
    )
    w = 10000.0 ** -rng.uniform(0, 1, 6)
    cos, sin = sinpe.rope_at(
        positions,
        12,
        inv_freq=w,
        layout="compact",
        dtype=dtype,
        attention_factor=factor,
        backend=backend,
    )
    want = oracle.cos_sin_narrow(positions, w, dtype, factor)
    assert np.array_equal(cos.astype(np.float64), want[:, 0])
    assert np.array_equal(sin.astype(np.float64), want[:, 1])


def test_the_evaluators_agree_and_decide(backend):
    """The kernel's double-double evaluator (correct.h) and the twin's big integers give
    the same bits and decide every hard case (conftest.py fails a test during which either
    count moves)."""
    for case in CASES:
        for dtype in NARROW:
            for factor in (1.0, 1.37):
                twin = _twin.correctly_rounded(case["p"], case["w"], factor, dtype)
                assert twin[2]
                if kernel is not None:
                    got = kernel.correctly_rounded(case["p"], case["w"], factor, dtype)
                    assert got[2]
                    assert bits(got[0]) == bits(twin[0]) and bits(got[1]) == bits(twin[1])


def test_the_hard_cases_file_is_up_to_date():
    """tools/hard_cases.py --check: the file is what the tool writes (the search included)."""
    tool = ROOT / "tools" / "hard_cases.py"
    if not tool.exists():
        pytest.skip("tools/ is not beside the tests (an installed wheel's run)")
    result = subprocess.run(
        [sys.executable, str(tool), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_wide_tables_match_the_oracle_where_the_test_flags(backend):
    """A 2048 x 64 float32 table: every entry the exact value rounded once (the float64
    table's value rounded once differs from it at the entries the test flags only)."""
    table = sinpe.sinusoidal_positional_encoding(2048, 64, dtype=np.float32, backend=backend)
    full = sinpe.sinusoidal_positional_encoding(2048, 64, backend=backend)
    differ = np.argwhere(table.astype(np.float64) != full.astype(np.float32).astype(np.float64))
    w = sinpe.frequencies(64)
    for r, c in differ.tolist():
        want = oracle.cos_sin_narrow([r], [w[c // 2]], "float32")[0, 1 - c % 2, 0]
        assert float(table[r, c]) == want
    rng = np.random.default_rng(4)
    for r, c in zip(rng.integers(0, 2048, 200).tolist(), rng.integers(0, 64, 200).tolist()):
        want = oracle.cos_sin_narrow([r], [w[c // 2]], "float32")[0, 1 - c % 2, 0]
        assert math.copysign(1, float(table[r, c])) == math.copysign(1, want)
        assert float(table[r, c]) == want


@pytest.mark.parametrize("dtype", NARROW)
def test_without_the_test_the_hard_cases_round_the_wrong_way(backend, dtype):
    """The float64 value rounded once (the test switched off, as before 0.4) misses hard
    cases on every instruction set: what the recomputation corrects."""
    module = kernel if backend == "cython" else _twin
    names = isas() if backend == "cython" else [None]
    before = module._set_checked(False)
    isa_before = kernel.ISA if backend == "cython" else None
    try:
        for name in names:
            if name is not None:
                kernel._set_isa(name)
            sinpe.clear_cache()
            missed = 0
            for case in cases_of(dtype):
                want_cos, want_sin = expected(case, dtype)
                c, s = sinpe.rope_at(
                    [case["p"]],
                    2,
                    inv_freq=[case["w"]],
                    layout="compact",
                    dtype=dtype,
                    backend=backend,
                )
                missed += bits(float(np.asarray(c[0, 0]).astype(np.float64))) != bits(want_cos)
                missed += bits(float(np.asarray(s[0, 0]).astype(np.float64))) != bits(want_sin)
            # measured: 29 (float32), 3 (float16), 16 (bfloat16) on every set
            assert missed >= {"float32": 10, "float16": 2, "bfloat16": 5}[dtype], (name, missed)
    finally:
        module._set_checked(before)
        if isa_before is not None:
            kernel._set_isa(isa_before)
        sinpe.clear_cache()
