"""float16 and bfloat16: the converter of float64 values rounds once (to nearest, ties to
even), checked against a rounding reference in exact rational arithmetic; tables hold every
value the exact value correctly rounded (mpmath), on halfway cases found on purpose, where
the float32 route is shown to round twice and the float64 value rounded once to miss."""

import math
import os
import subprocess
import sys
import tracemalloc
from fractions import Fraction

import numpy as np
import oracle
import pytest

import sinpe
from sinpe._tables import backends
from sinpe._tables.checks import bfloat16
from sinpe._twin import half as _half

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

BF16 = bfloat16()
HALF_DTYPES = [np.dtype(np.float16)] + ([BF16] if BF16 is not None else [])
ids = [d.name for d in HALF_DTYPES]
half_dtypes = pytest.mark.parametrize("dtype", HALF_DTYPES, ids=ids)
FORMATS = {"float16": (10, -14, 15), "bfloat16": (7, -126, 127)}


def reference(value, dtype) -> float:
    """``value`` (a Fraction or float, exact) rounded to nearest-even in the format: a
    textbook implementation in rational arithmetic, independent of sinpe's."""
    mantissa_bits, min_exponent, max_exponent = FORMATS[dtype.name]
    x = Fraction(value)
    if x == 0:
        return math.copysign(0.0, float(value)) if isinstance(value, float) else 0.0
    sign = -1 if x < 0 else 1
    x = abs(x)
    e = math.floor(math.log2(x))
    while Fraction(2) ** e > x:  # fix float log2 near powers of two
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    spacing = Fraction(2) ** (max(e, min_exponent) - mantissa_bits)
    units = x / spacing
    low = math.floor(units)
    rest = units - low
    n = low + 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2) else low
    result = n * spacing
    largest = (2 - Fraction(2) ** -mantissa_bits) * Fraction(2) ** max_exponent
    if result > largest:
        return sign * math.inf
    return sign * float(result)


def sinpe_rounded(values, dtype):
    out = np.empty(len(values), dtype=dtype)
    _half.round_into(out, np.asarray(values, dtype=np.float64))
    return out.astype(np.float64)


def halfway_points(dtype, count, seed):
    """float64 values within a few float64 ulps of a halfway point of the format, both sides,
    over its normal and subnormal range."""
    mantissa_bits, min_exponent, max_exponent = FORMATS[dtype.name]
    rng = np.random.default_rng(seed)
    exponents = rng.integers(min_exponent - mantissa_bits, max_exponent, size=count)
    mantissas = rng.integers(0, 2**mantissa_bits, size=count)
    points = []
    for e, m in zip(exponents, mantissas):
        e = max(int(e), min_exponent)
        spacing = 2.0 ** (e - mantissa_bits)
        base = 2.0**e + int(m) * spacing if e > min_exponent else int(m) * spacing
        mid = base + spacing / 2
        for k in (-3, -1, 0, 1, 3):
            points.append(mid + k * math.ulp(mid))
    points = np.array(points)
    return np.concatenate([points, -points])


# --------------------------------------------------------------------------- the rounding


@half_dtypes
def test_rounding_matches_exact_rational_rounding(dtype):
    rng = np.random.default_rng(1)
    specials = [
        0.0,
        -0.0,
        1.0,
        1 + 2**-8 + 2**-30,
        65504.0,
        65519.99,
        65520.0,
        1e300,
        -1e300,
        2.0**-24,
        2.0**-25,
        3 * 2.0**-26,
        2.0**-133,
        2.0**-134,
        3 * 2.0**-135,
        1e-300,
        5e-324,
        3.4e38,
        3.3961776e38,
        3.3961775e38,
    ]
    magnitudes = rng.uniform(-140, 20, 4000)
    values = np.concatenate(
        [specials, rng.choice([-1, 1], 4000) * 2.0**magnitudes, halfway_points(dtype, 400, 2)]
    )
    ours = sinpe_rounded(values, dtype)
    expected = np.array([reference(float(v), dtype) for v in values])
    same = (ours == expected) | (np.isnan(ours) & np.isnan(expected))
    assert same.all(), values[~same][:5]
    assert np.array_equal(np.signbit(ours), np.signbit(expected))


def test_float16_matches_numpys_single_rounding():
    """NumPy's float64 -> float16 cast rounds once: the same bits as sinpe's rounding."""
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [
            rng.choice([-1, 1], 20000) * 2.0 ** rng.uniform(-30, 17, 20000),
            halfway_points(np.dtype(np.float16), 500, 4),
        ]
    )
    out = np.empty(values.shape, np.float16)
    with np.errstate(over="ignore"):
        _half.round_into(out, values)
        expected = values.astype(np.float16)
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))


def test_the_float32_route_rounds_twice():
    """The issue's example and its float16 twin: through float32 lands on the wrong neighbour."""
    f16 = np.dtype(np.float16)
    x = 1 + 2**-11 + 2**-40  # just above a float16 halfway point; float32 rounds it onto it
    assert sinpe_rounded([x], f16)[0] == 1 + 2**-10 == reference(x, f16)
    assert float(np.float32(x).astype(np.float16)) == 1.0
    if BF16 is not None:
        y = 1 + 2**-8 + 2**-30
        assert sinpe_rounded([y], BF16)[0] == 1.0078125 == reference(y, BF16)
        # through float32 first (what ml_dtypes' own float64 astype did before 0.7)
        assert float(np.array([np.float32(y)]).astype(BF16)[0]) == 1.0


# --------------------------------------------------------------------------- tables


def half_ulp(value: float, dtype) -> float:
    mantissa_bits, min_exponent, _ = FORMATS[dtype.name]
    e = math.floor(math.log2(abs(value))) if value else min_exponent
    return 2.0 ** (max(e, min_exponent) - mantissa_bits - 1)


@half_dtypes
@pytest.mark.parametrize("offset", [0, 1000, 2**40 + 3, 2**53 - 40])
def test_tables_are_correctly_rounded(backend, dtype, offset):
    """Each value is the exact value (mpmath) rounded once to the format; the float64
    table's value rounded once agrees but for values within 1e-15 of a halfway point."""
    kwargs = dict(offset=offset, backend=backend)
    table = sinpe.sinusoidal_positional_encoding(40, 9, dtype=dtype, **kwargs)
    full = sinpe.sinusoidal_positional_encoding(40, 9, **kwargs)
    assert table.dtype == dtype and table.shape == (40, 9)
    rows = list(range(0, 40, 3))
    w = sinpe.frequencies(9)
    exact = oracle.cos_sin_narrow([offset + r for r in rows], w, dtype)
    for k, r in enumerate(rows):
        for c in range(9):
            got = float(table[r, c])
            assert got == exact[k, 1 - c % 2, c // 2], (offset + r, c)
            if abs(got - reference(float(full[r, c]), dtype)) > 0:
                assert abs(float(full[r, c]) - got) >= half_ulp(got, dtype) - 1e-15


@half_dtypes
def test_halfway_cases_on_purpose(backend, dtype):
    """Positions whose sine lies within a few float64 ulps of a halfway point of the format:
    each value is the exact one correctly rounded (mpmath), where the float64 value rounded
    once goes the wrong way in many of them, and the float32 route in many more."""
    mantissa_bits = FORMATS[dtype.name][0]
    rng = np.random.default_rng(5)
    targets = []
    for _ in range(300):
        e = -int(rng.integers(1, 6))
        m = int(rng.integers(0, 2**mantissa_bits))
        targets.append(2.0**e + (m + 0.5) * 2.0 ** (e - mantissa_bits))  # a halfway point
    centres = np.arcsin(np.array(targets))  # sin(p) lands within ~1e-16 of the point
    # and a few float64 ulps of p either side, so that most values are not the point itself
    positions = np.concatenate([centres + k * np.spacing(centres) for k in (-2, -1, 0, 1, 2)])
    targets = targets * 5
    got = sinpe.encode(positions, 2, dtype=dtype, backend=backend)[:, 0].astype(np.float64)
    full = sinpe.encode(positions, 2, backend=backend)[:, 0]
    float32_route = sinpe.encode(positions, 2, dtype=np.float32, backend=backend)[:, 0]
    float32_route = float32_route.astype(dtype).astype(np.float64)
    exact = oracle.cos_sin_narrow(positions, [1.0], dtype)[:, 1, 0]
    wrong_once = wrong_route = 0
    for p, value, value64, via32, target, want in zip(
        positions, got, full, float32_route, targets, exact
    ):
        true = oracle.cos_sin([p], [1.0])[0, 1, 0]
        assert abs(true - target) < 2e-15  # really next to a halfway point
        assert value == want, (p, value, want)
        wrong_once += reference(float(value64), dtype) != value
        wrong_route += via32 != value
    assert wrong_once > 50  # the float64 value rounded once: the wrong neighbour, often
    assert wrong_route > 100  # float64 -> float32 -> half: more often still


@half_dtypes
def test_every_table_function_writes_half_precision(backend, dtype):
    f64 = dict(backend=backend)
    cases = [
        (
            sinpe.sinusoidal_positional_encoding(50, 12, dtype=dtype, **f64),
            sinpe.sinusoidal_positional_encoding(50, 12, **f64),
        ),
        (
            sinpe.encode([[0.5, 7], [1e9, -3]], 10, dtype=dtype, **f64),
            sinpe.encode([[0.5, 7], [1e9, -3]], 10, **f64),
        ),
        (
            sinpe.rope(30, 16, offset=5000, dtype=dtype, **f64)[1],
            sinpe.rope(30, 16, offset=5000, **f64)[1],
        ),
        (
            sinpe.rope_at([3, 1e6 + 0.5], 8, layout="compact", dtype=dtype, **f64)[0],
            sinpe.rope_at([3, 1e6 + 0.5], 8, layout="compact", **f64)[0],
        ),
        (sinpe.encode_2d(3, 4, 8, dtype=dtype), sinpe.encode_2d(3, 4, 8)),
    ]
    for half, full in cases:
        assert half.dtype == dtype and half.shape == full.shape
        expected = np.empty(full.shape, dtype)
        _half.round_into(expected, full)  # rounded once from the float64 table
        assert np.array_equal(half.view(np.uint16), expected.view(np.uint16))
    sinpe.sinusoidal_positional_encoding(50, 12, dtype=dtype, **f64)


@half_dtypes
def test_out_arrays_of_half_precision(backend, dtype):
    out = np.zeros((20, 6), dtype)
    result = sinpe.sinusoidal_positional_encoding(20, 6, out=out, backend=backend)
    assert result is out
    expected = sinpe.sinusoidal_positional_encoding(20, 6, dtype=dtype, backend=backend)
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))
    with pytest.raises(ValueError, match="dtype"):
        sinpe.sinusoidal_positional_encoding(20, 6, out=out, dtype=np.float32)


def test_the_kernel_writes_half_precision_without_a_full_float64_table():
    if "cython" not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    sinpe.sinusoidal_positional_encoding(4096, 1024, dtype=np.float16, backend="cython")
    tracemalloc.start()
    try:
        table = sinpe.sinusoidal_positional_encoding(4096, 1024, dtype=np.float16, backend="cython")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < table.nbytes + (1 << 20)  # 8 MiB table; a float64 one would be 32 MiB


def test_bfloat16_without_ml_dtypes_says_how_to_install():
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import sinpe\n"
        "try:\n"
        "    sinpe.sinusoidal_positional_encoding(2, 4, dtype='bfloat16')\n"
        "except TypeError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    assert "pip install 'sinpe[bfloat16]'" in result.stdout, result.stderr
    assert sinpe.sinusoidal_positional_encoding(2, 4, dtype="float16").dtype == np.float16
