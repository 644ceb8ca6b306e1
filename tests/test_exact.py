"""The exact evaluator (``exact.h`` and its NumPy twin ``_twin/exact.py``) against mpmath,
where argument reduction is hardest, on both backends, bit for bit; and float64-only
frequencies and their per-frequency constants, twin against twin.

The evaluator's own bound is 0.5 ulp + 2**-65.3 (derived in ``exact.h``); these tests allow
0.5 ulp + 2**-62, and the tables built from it keep the 1e-15 contract (``test_accuracy``).
"""

import re
from pathlib import Path

import numpy as np
import oracle
import pytest
from oracle import CTX

import sinpe
from sinpe._exactmath import dd
from sinpe._tables import backends, plan
from sinpe._twin import frequencies as twin_frequencies
from sinpe._twin import turns

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

SLACK = 2.0**-62
needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")


def evaluate(backend, positions, w):
    """What the tables start from: a backend's evaluator plus the big-integer columns."""
    positions = np.asarray(positions, dtype=np.float64)
    frequencies = plan.prepare(np.asarray(w, dtype=np.float64))
    return plan.exact_values(backends.BACKENDS[backend], positions, frequencies)


def check_against_mpmath(positions, w):
    """Every value within 0.5 ulp + 2**-62 of the exact one, and identical on every backend."""
    exact = oracle.cos_sin(positions, w)
    results = {b: evaluate(b, positions, w) for b in backends.BACKENDS}
    for backend, got in results.items():
        ulp_half = np.spacing(np.abs(got)) / 2
        excess = np.abs(got - exact) - ulp_half
        worst = np.unravel_index(np.argmax(excess), excess.shape)
        assert excess.max() <= SLACK, (backend, positions[worst[0]], w[worst[2]], excess.max())
    first = next(iter(results.values()))
    for backend, got in results.items():
        assert np.array_equal(got, first), backend
    return first


def convergent_numerators(x, limit):
    """Numerators p of the continued-fraction convergents p/q of ``x`` with p < limit: then
    ``p / x`` is within 1/q of the integer q, i.e. ``p / x`` is nearly a whole number."""
    numerators = []
    h_prev, h = 0, 1
    k_prev, k = 1, 0
    value = x
    for _ in range(200):
        a = int(CTX.floor(value))
        h_prev, h = h, a * h + h_prev
        k_prev, k = k, a * k + k_prev
        if h >= limit:
            break
        if h > 0:
            numerators.append(h)
        frac = value - a
        if frac == 0:
            break
        value = 1 / frac
    return numerators


@pytest.mark.parametrize("w", [1.0, 10000.0 ** (-2 * 5 / 512), 10000.0 ** (-2 * 200 / 512)])
def test_positions_next_to_multiples_of_half_pi(w):
    """Integer positions p with p w within ~1e-15 (or closer) of a multiple of pi/2, built
    from the continued fraction of (pi/2)/w: the hardest reductions a table meets."""
    positions = convergent_numerators((CTX.pi / 2) / CTX.mpf(w), 2**53)
    positions = [p for p in positions if p > 4][-12:]
    distances = [
        abs(CTX.mpf(p) * CTX.mpf(w) - CTX.nint(CTX.mpf(p) * CTX.mpf(w) / (CTX.pi / 2)) * CTX.pi / 2)
        for p in positions
    ]
    assert min(distances) < 1e-15  # the cases really are hard
    result = check_against_mpmath([float(p) for p in positions], [w])
    smallest = np.abs(result).min()
    assert smallest < 1e-14  # a cosine or sine next to zero, still within the bound


@pytest.mark.parametrize(
    "positions",
    [
        [2.0**53 - 1, 2.0**53 - 2, 2.0**53 - 1000, -(2.0**53) + 1, 2.0**52 + 1, 2.0**52 - 0.5],
        [0.5, 1e-300, -0.25, 1234.5678, 3.0e15 + 0.5, -7.000000000000001],
        [0.0, -0.0, 1.0, 2.0, 3.0, 1e-7],
    ],
    ids=["next-to-2**53", "fractional-and-negative", "small"],
)
def test_positions_near_the_limits(positions):
    w = [1.0, 0.5, 10000.0 ** (-2 * 100 / 512), 1e-4, 3.0e-9, 7.5]
    check_against_mpmath(positions, w)


@pytest.mark.parametrize(
    "w",
    [
        [1e-300, 2.0**-1074, 3e-200],
        [2.0**31, 2.0**32, 2.0**32 * 1.5],
        [2.0**100, 2.0**500, 2.0**900],
    ],
    ids=["tiny", "fast-limit", "huge"],
)
def test_tiny_and_huge_frequencies(w):
    """Tiny products (cos = 1, sin = p w rounded once), the 2**32 hand-over to the exact
    big-integer path, and frequencies up to the 2**900 limit."""
    positions = [1.0, 3.0, 2.0**53 - 1, -12345.678, 0.5]
    result = check_against_mpmath(positions, w)
    if w[0] < 1e-100:
        assert (result[:, 0] == 1.0).all()
        assert result[0, 1, 0] == w[0]  # sin(w) rounds to w itself


def test_random_positions_and_frequencies():
    rng = np.random.default_rng(11)
    positions = np.concatenate(
        [rng.integers(0, 2**53, 24).astype(np.float64), rng.uniform(-1e6, 1e6, 8)]
    )
    w = np.concatenate([10.0 ** rng.uniform(-8, 0, 10), 10.0 ** rng.uniform(0, 9, 4)])
    check_against_mpmath(list(positions), list(w))


def test_the_public_paths_use_the_evaluator_exactly():
    """encode at hard positions, a far offset and shift_matrix: within 1e-15 of mpmath."""
    p = float(convergent_numerators(CTX.pi / 2, 2**53)[-1])
    row = sinpe.encode([p], 2)[0]
    assert abs(row[0] - float(CTX.sin(CTX.mpf(p)))) <= 1e-15
    assert abs(row[1] - float(CTX.cos(CTX.mpf(p)))) <= 1e-15
    far = sinpe.sinusoidal_positional_encoding(3, 4, offset=int(p) - 1)
    assert abs(far[1, 0] - float(CTX.sin(CTX.mpf(p)))) <= 1e-15
    shift = sinpe.shift_matrix(int(p), 2)
    assert abs(shift[0, 1] - float(CTX.sin(CTX.mpf(p)))) <= 1e-15


# --------------------------------------------------------------------------- frequencies


@pytest.mark.parametrize(
    "count, base, numerator, denominator, scale",
    [
        (2048, 10000.0, 2, 4096.0, 1.0),
        (384, 10000.0, 2, 768.0, 1.0),
        (500, 1.5, 1, 255.7, -2.5),
        (300, 1e300, 2, 383.0, 1000.0),
        (64, 0.5, 2, 1.0, 1e-5),
    ],
)
def test_frequencies_are_correctly_rounded(count, base, numerator, denominator, scale):
    """Computed in float64 only, yet the nearest double to the exact value on these grids
    (the contract is 1 ulp; the error before the one rounding is below 2**-89)."""
    from sinpe._tables.frequencies import frequency_vector

    w = frequency_vector(count, base, numerator, denominator, scale)
    for i in range(count):
        exact = oracle.power_rule(base, numerator, i, denominator, scale)
        assert w[i] == float(exact), (i, w[i], exact)


def test_no_extended_precision_in_the_package():
    """No long double, float128 or long-double libm call anywhere in the installed sources."""
    package = Path(sinpe.__file__).parent
    python = re.compile(r"\b(np|numpy)\.(longdouble|float128|longfloat)\b")
    c = re.compile(r"\b(sinl|cosl|expl|logl|powl)\s*\(|^\s*(static\s+)?(const\s+)?long double\b")
    for path in sorted(package.rglob("*.py")):
        assert not python.search(path.read_text()), path.name
    for path in sorted(package.rglob("*.h")):
        for line in path.read_text().splitlines():
            assert not c.search(line), (path.name, line)


@pytest.mark.parametrize(
    "script",
    [
        "gen_constants.py",
        "gen_exact_constants.py",
        "gen_frequency_constants.py",
        "gen_correct_constants.py",
    ],
)
def test_generated_constants_are_up_to_date(script):
    tool = Path(__file__).resolve().parent.parent / "tools" / script
    if not tool.exists():
        pytest.skip("tools/ is not beside the tests (an installed wheel's run)")
    import subprocess
    import sys

    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _generated_frequency_rules(rng, count):
    """(base, numerator, denominator, scale, length) over the whole domain of the rule: bases
    from 1e-300 to 1e300 and just above 1, odd denominators and scales from the smallest
    subnormal to the largest double (results that underflow, overflow or tie in the
    subnormal range), lengths across the 2**13 block of the method."""
    rules = [
        (10000.0, 2, 512.0, 1.0, 256),
        (2.0, 2, 1.0, 1000.0, 1200),  # subnormal results, an exact tie at i = 539
        (1.0000001, 1, 3.0, 1.0, 20000),  # three blocks
        (1e300, 1, 0.01, 1.0, 50),  # the step saturates
        (0.5, 2, 7.0, 1e-300, 3000),
        (500000.0, 2, 128.0, 1e308, 64),  # overflow to inf
        (1e-300, 1, 1.0, 1.0, 10),
        (10000.0, 2, 512.0, 0.0, 10),
        (2.0, 2, 1.0, 5e-324, 2000),
        (10000.0, 2, 64.0, -3.5, 40),
    ]
    for _ in range(count):
        if rng.random() < 0.5:
            base = float(np.exp(rng.uniform(-690, 690)))
        else:
            base = float(1.0 + rng.random())
        denominator = float(rng.choice([rng.integers(1, 5000), rng.uniform(1e-3, 1e4)]))
        scale = float(rng.choice([1.0, rng.uniform(-10, 10), 2.0 ** rng.uniform(-1074, 1023)]))
        numerator, length = int(rng.integers(1, 5)), int(rng.integers(0, 9000))
        rules.append((base, numerator, denominator, scale, length))
    return rules


@needs_kernel
def test_compiled_frequencies_are_the_numpy_bits():
    """``frequencies.h`` (the compiled backend's frequencies) and ``_twin/frequencies.py`` give
    the same bits: logarithm, step, exp and the one rounding, on 210 generated rules."""
    kernel = backends.kernel
    for base, numerator, denominator, scale, length in _generated_frequency_rules(
        np.random.default_rng(11), 200
    ):
        log_base = twin_frequencies.log_dd(base)
        assert kernel.log_dd(base) == log_base, base
        compiled = np.empty(length)
        kernel.power_vector(compiled, 0, *log_base, float(numerator), denominator, scale)
        twin = np.empty(length)
        twin_frequencies.power_vector(twin, 0, *log_base, float(numerator), denominator, scale)
        rule = (base, numerator, denominator, scale, length)
        assert np.array_equal(compiled.view(np.uint64), twin.view(np.uint64)), rule
        # any range of indices is bit for bit the slice of the whole vector, on both twins
        first = length // 3
        for module in (kernel, twin_frequencies):
            part = np.empty(length - first - length // 5)
            module.power_vector(part, first, *log_base, float(numerator), denominator, scale)
            assert np.array_equal(
                part.view(np.uint64), twin[first : first + part.size].view(np.uint64)
            )


def test_frequency_constants_are_the_big_integer_ones():
    """The vectorised w/(2 pi) triple (exact products, certified renormalisation) is bit for
    bit the one exact big-integer arithmetic defines, across the whole range of w."""
    rng = np.random.default_rng(5)
    w = np.concatenate(
        [
            2.0 ** rng.uniform(-720, 31.9, 3000) * rng.choice([-1.0, 1.0], 3000),
            sinpe.frequencies(4096),
            sinpe.frequencies(383, base=500000.0),
            [0.0, 2.0**-1074, 2.0**-700, 2.0**-701, 1.0, 2.0**31, 2.0**32, 2.0**100],
        ]
    )
    table = plan.prepare(w).table
    for i, wi in enumerate(w):
        if abs(wi) < turns.FAST_W_LIMIT:
            expected = turns._turns_per_radian(float(wi))
            got = tuple(table[turns.ROW_C0 : turns.ROW_C2 + 1, i])
            assert got == expected, (wi, got, expected)
            c0_hi, c0_lo = dd.split(table[turns.ROW_C0, i])
            assert (table[turns.ROW_C0_HI, i], table[turns.ROW_C0_LO, i]) == (c0_hi, c0_lo)
        else:
            assert not table[1:, i].any()
