"""Accuracy against the mpmath oracle: <= 1e-15 (float64) and <= 6e-8 (float32) everywhere."""

import math

import numpy as np
import oracle
import pytest

import sinpe
from sinpe import sinusoidal_positional_encoding as pe

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

F64_BOUND = 1e-15
F32_BOUND = 6e-8


@pytest.mark.parametrize("d_model", [1, 2, 3, 64, 127, 512, 768, 1000])
def test_frequencies_within_one_ulp(d_model):
    w = sinpe.frequencies(d_model)
    for i in range(0, len(w), max(1, len(w) // 40)):
        exact = oracle.frequency(i, d_model)
        assert abs(w[i] - float(exact)) <= math.ulp(w[i]), (d_model, i)


@pytest.mark.parametrize("base", [2.0, 500.0, 1e6])
def test_frequencies_other_bases_within_one_ulp(base):
    w = sinpe.frequencies(96, base=base)
    for i in range(len(w)):
        assert abs(w[i] - float(oracle.frequency(i, 96, base))) <= math.ulp(w[i])


def check(table, offset, d_model, rows, bound):
    exact = oracle.encoding([offset + r for r in rows], d_model)
    error = np.abs(table[rows].astype(np.float64) - exact).max()
    assert error <= bound, (offset, d_model, error)
    return error


OFFSETS = [0, 1000, 2**31 - 5, 2**31 + 12345, 2**40 + 7, 2**52 + 1, 2**53 - 64]


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("d_model", [5, 64, 257])
def test_float64_bound_small_and_huge_positions(backend, offset, d_model):
    table = pe(64, d_model, offset=offset, backend=backend)
    check(table, offset, d_model, list(range(0, 64, 5)) + [63], F64_BOUND)


@pytest.mark.parametrize("seq_len", [1, 2, 3])
def test_the_last_positions_below_2_53(backend, seq_len):
    """Rows that end exactly at 2**53 - 1 (few rows: each its own anchor)."""
    offset = 2**53 - seq_len
    table = pe(seq_len, 7, offset=offset, backend=backend)
    assert table.shape == (seq_len, 7)
    check(table, offset, 7, list(range(seq_len)), F64_BOUND)


@pytest.mark.parametrize("offset", [0, 2**24 + 1, 2**45, 2**53 - 300])
def test_float32_bound_at_every_scale(backend, offset):
    table = pe(300, 33, offset=offset, dtype=np.float32, backend=backend)
    check(table, offset, 33, [0, 1, 150, 299], F32_BOUND)


def test_textbook_formula_is_not_good_enough_at_long_positions():
    """The reason for the machinery: np.sin(p * w) misses the exact value badly at large p."""
    offset, d_model = 2**40 + 12345, 8
    w = sinpe.frequencies(d_model)
    naive = np.sin(np.float64(offset) * w)
    exact = oracle.encoding([offset], d_model)[0, 0::2]
    assert np.abs(naive - exact).max() > 1e-8  # a hundred million times the bound
    assert np.abs(pe(1, d_model, offset=offset)[0, 0::2] - exact).max() <= F64_BOUND


# Every regime of the anchor grid (p = 1024 n + 16 j + k) and of the work split: one row, a
# partial fine run, a full one, one past it, a full anchor span, one past it, many chunks
# with a ragged tail.
REGIME_ROWS = [1, 2, 15, 16, 17, 1023, 1024, 1025, 5000, 70001]


@pytest.mark.parametrize("n_rows", REGIME_ROWS)
@pytest.mark.parametrize("offset", [0, 3, 1021])
def test_every_grid_regime_is_exact(backend, n_rows, offset):
    table = pe(n_rows, 18, offset=offset, backend=backend, threads=2)
    edges = {0, n_rows - 1}
    for boundary in (16, 1024, 2048, 32768 // 18 // 16 * 16):  # fine run, anchor, chunk
        for multiple in range(boundary, offset + n_rows + 1, boundary * 7 or 1):
            edges |= {multiple - offset - 1, multiple - offset}
    rows = sorted(r for r in edges if 0 <= r < n_rows)[:60]
    check(table, offset, 18, rows, F64_BOUND)


def test_long_table_random_rows(backend):
    rng = np.random.default_rng(7)
    table = pe(40000, 31, offset=123456789, backend=backend)
    check(table, 123456789, 31, sorted(rng.choice(40000, 40, replace=False).tolist()), F64_BOUND)
