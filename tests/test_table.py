"""The seed constraints and the everyday contract of sinusoidal_positional_encoding."""

import os

import numpy as np
import pytest

import sinpe
from sinpe import sinusoidal_positional_encoding as pe
from sinpe._tables import backends

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them


def textbook(seq_len, d_model, base=10000.0, offset=0):
    """The tutorial formula (float64), odd widths included."""
    position = np.arange(offset, offset + seq_len, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-np.log(base) / d_model))
    table = np.zeros((seq_len, d_model))
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return table


@pytest.mark.parametrize("d_model", [1, 2, 3, 8, 127, 128])
def test_row_zero_is_exactly_0_1(backend, d_model):
    row = pe(5, d_model, backend=backend)[0]
    expected = np.tile([0.0, 1.0], d_model)[:d_model]
    assert np.array_equal(row, expected)
    assert not np.signbit(row[0::2]).any()


def test_shape_dtype_layout(backend):
    table = pe(37, 10, backend=backend)
    assert table.shape == (37, 10) and table.dtype == np.float64
    assert table.flags.c_contiguous and table.flags.writeable
    positions = np.arange(37)[:, None]
    w = sinpe.frequencies(10)
    np.testing.assert_allclose(table[:, 0::2], np.sin(positions * w), rtol=0, atol=1e-14)
    np.testing.assert_allclose(table[:, 1::2], np.cos(positions * w), rtol=0, atol=1e-14)


def test_frequencies_fall_and_first_is_one():
    w = sinpe.frequencies(512)
    assert w.shape == (256,) and w.dtype == np.float64
    assert w[0] == 1.0
    assert np.all(np.diff(w) < 0)
    assert abs(w[-1] - 10000.0 ** (-510 / 512)) < 1e-18


@pytest.mark.parametrize("shape", [(1, 1), (1, 128), (50, 7), (128, 64), (1000, 33), (300, 512)])
def test_agrees_with_textbook_formula_on_small_tables(backend, shape):
    np.testing.assert_allclose(pe(*shape, backend=backend), textbook(*shape), rtol=0, atol=1e-13)


def test_values_in_unit_range_and_unit_pairs(backend):
    table = pe(3000, 64, backend=backend)
    assert np.all(np.abs(table) <= 1.0)
    norms = table[:, 0::2] ** 2 + table[:, 1::2] ** 2
    np.testing.assert_allclose(norms, 1.0, rtol=0, atol=4e-15)


def test_rows_are_a_fixed_rotation_of_each_other(backend):
    table = pe(200, 16, backend=backend)
    k = 7
    w = sinpe.frequencies(16)
    s, c = table[:-k, 0::2], table[:-k, 1::2]
    sk, ck = np.sin(k * w), np.cos(k * w)
    np.testing.assert_allclose(table[k:, 0::2], s * ck + c * sk, atol=1e-15 * 4)
    np.testing.assert_allclose(table[k:, 1::2], c * ck - s * sk, atol=1e-15 * 4)


@pytest.mark.parametrize("offset", [1, 17, 4096, 10**6, 2**45 + 3])
def test_offset_is_a_window_of_the_bigger_table(backend, offset):
    """Bit for bit: the rows at an offset are the rows of a longer table starting earlier
    (and of one from 0 where that is small)."""
    window = pe(40, 12, offset=offset, backend=backend)
    earlier = offset - min(offset, 1500)
    assert np.array_equal(
        window, pe(offset - earlier + 40, 12, offset=earlier, backend=backend)[offset - earlier :]
    )
    if offset < 5000:
        assert np.array_equal(window, pe(offset + 40, 12, backend=backend)[offset:])


def test_base_changes_frequencies(backend):
    table = pe(10, 6, base=100.0, backend=backend)
    w = 100.0 ** (-np.arange(0, 6, 2) / 6)
    np.testing.assert_allclose(table[:, 0::2], np.sin(np.arange(10)[:, None] * w), atol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype("f4"), "f4", "single"])
def test_float32_spellings(backend, dtype):
    table = pe(64, 16, dtype=dtype, backend=backend)
    assert table.dtype == np.float32
    assert np.array_equal(table, pe(64, 16, backend=backend).astype(np.float32))


@pytest.mark.parametrize("offset", [0, 2**30 + 3, 2**52])
@pytest.mark.parametrize("d_model", [1, 7, 512])
def test_float32_is_the_float64_table_rounded_once(backend, offset, d_model):
    # The compiled float32 loop skips the [-1, 1] clamp (a value within 8.5e-16 of a sine
    # rounds to the same float32 either way); this pins that it changes nothing.
    f64 = pe(2048, d_model, offset=offset, backend=backend)
    f32 = pe(2048, d_model, offset=offset, dtype=np.float32, backend=backend)
    assert np.array_equal(f32, f64.astype(np.float32))
    assert np.abs(f32).max() <= 1


@pytest.mark.parametrize("dtype", [float, "float64", np.float64, "d", "double"])
def test_float64_spellings(backend, dtype):
    assert pe(3, 4, dtype=dtype, backend=backend).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_is_filled_and_returned(backend, dtype):
    out = np.full((33, 10), np.nan, dtype=dtype)
    result = pe(33, 10, out=out, offset=5, dtype=dtype, backend=backend)
    assert result is out
    assert np.array_equal(out, pe(33, 10, offset=5, dtype=dtype, backend=backend))


def test_empty_tables(backend):
    assert pe(0, 8, backend=backend).shape == (0, 8)
    out = np.empty((0, 3))
    assert pe(0, 3, out=out, backend=backend) is out


def test_frequencies_are_copies_of_a_cached_read_only_vector():
    """Each call returns a writable copy (torch.from_numpy takes it without a warning); a
    write to it changes no later call, table or frequency vector."""
    w = sinpe.frequencies(768)
    first = w.copy()
    assert w is not sinpe.frequencies(768) and w.flags.writeable
    table = sinpe.sinusoidal_positional_encoding(4, 768)
    w[:] = 2.0
    assert np.array_equal(sinpe.frequencies(768), first)
    assert np.array_equal(sinpe.sinusoidal_positional_encoding(4, 768), table)
    spec = sinpe.rope_config({"hidden_size": 64, "num_attention_heads": 1, "rope_theta": 5e5})
    for call in (lambda: sinpe.rope_frequencies(64, base=5e5), spec.frequencies):
        inv_freq, _ = call()
        kept = inv_freq.copy()
        inv_freq[:] = 0.0
        assert np.array_equal(call()[0], kept)


def test_backend_constant_is_truthful(monkeypatch):
    """sinpe.BACKEND names the backend whose filler really runs for backend='auto'."""
    forced = os.environ.get("SINPE_BACKEND", "").strip().lower() == "numpy"
    assert sinpe.BACKEND == ("cython" if backends.kernel is not None and not forced else "numpy")
    ran = []
    for name, module in backends.BACKENDS.items():
        original = module.fill
        monkeypatch.setattr(
            module, "fill", lambda *a, _f=original, _n=name: ran.append(_n) or _f(*a)
        )
    sinpe.clear_cache()
    pe(3, 8)
    assert ran == [sinpe.BACKEND]
