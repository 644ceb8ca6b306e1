"""Other libraries' conventions, encode, shift_matrix and encode_2d, against float64
transcriptions of each library's own formula (and the mpmath oracle for exactness)."""

import math

import numpy as np
import oracle
import pytest
import references as ref

import sinpe
from sinpe import conventions, encode, encode_2d, shift_matrix
from sinpe import sinusoidal_positional_encoding as pe

POSITIONS = np.array([0, 1, 2, 7, 100, 511, 4095], dtype=np.float64)
REFERENCES = {
    "vaswani": ref.vaswani,
    "tensor2tensor": ref.fairseq,
    "fairseq": ref.fairseq,
    "hf-marian": ref.marian,
    "diffusers": ref.diffusers_timestep,
}
WIDTHS = [2, 3, 4, 5, 8, 9, 64, 65]


@pytest.mark.parametrize("name", list(REFERENCES))
@pytest.mark.parametrize("d", WIDTHS)
def test_named_conventions_match_their_library(backend, name, d):
    if name == "diffusers" and d in (2, 3):
        # diffusers computes 0/0 = NaN for its single frequency; sinpe takes the limit w_0 = 1.
        table = pe(50, d, convention=name, backend=backend)
        p = np.arange(50.0)
        np.testing.assert_allclose(table[:, :2], np.stack([np.sin(p), np.cos(p)], 1), atol=1e-15)
        return
    expected = REFERENCES[name](np.arange(4096.0), d)
    table = pe(4096, d, convention=name, backend=backend)
    np.testing.assert_allclose(table, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        encode(POSITIONS, d, convention=name, backend=backend),
        expected[POSITIONS.astype(int)],
        rtol=0,
        atol=1e-12,
    )


@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("shift", [0.0, 1.0])
@pytest.mark.parametrize("scale", [1.0, 1000.0])
@pytest.mark.parametrize("d", [4, 7, 32, 320])
def test_diffusers_factory_matches(backend, flip, shift, scale, d):
    t = np.array([0.0, 1.0, 0.5, 17.25, 999.0, 981.0])
    conv = conventions.diffusers(flip_sin_to_cos=flip, downscale_freq_shift=shift, scale=scale)
    expected = ref.diffusers_timestep(t, d, flip, shift, scale)
    np.testing.assert_allclose(encode(t, d, convention=conv, backend=backend), expected, atol=1e-11)


def test_diffusers_undefined_frequencies_are_an_error():
    with pytest.raises(ValueError, match="downscale_freq_shift"):
        pe(3, 4, convention=conventions.diffusers(downscale_freq_shift=2.0))


def test_unknown_convention_lists_known_names():
    with pytest.raises(ValueError, match="vaswani.*tensor2tensor.*fairseq.*hf-marian"):
        pe(2, 4, convention="bert")
    with pytest.raises(TypeError, match="convention"):
        pe(2, 4, convention=None)


@pytest.mark.parametrize("name", ["tensor2tensor", "hf-marian", "diffusers", "vaswani"])
@pytest.mark.parametrize("offset", [0, 2**33 + 5, 2**52 + 3])
def test_conventions_keep_the_exactness_contract(backend, name, offset):
    d = 11
    table = pe(40, d, offset=offset, convention=name, backend=backend)
    exact = oracle.encoding([offset + r for r in (0, 17, 39)], d, name)
    assert np.abs(table[[0, 17, 39]] - exact).max() <= 1e-15
    cols = conventions.get(name).column_map(d)
    if cols.pad_col >= 0:
        assert not table[:, cols.pad_col].any()


@pytest.mark.parametrize("name", ["vaswani", "tensor2tensor", "hf-marian", "diffusers"])
def test_encode_equals_table_rows_for_integer_positions(backend, name):
    """Bit for bit, every convention: a position's row does not depend on the call."""
    positions = [0, 5, 3, 2**40 + 1, 77, 1023, 1024, 2**53 - 1]
    rows = encode(positions, 10, convention=name, backend=backend)
    for r, p in enumerate(positions):
        assert np.array_equal(rows[r], pe(1, 10, offset=p, convention=name, backend=backend)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encode_fractional_and_negative_positions_are_exact(backend, dtype):
    positions = np.array([-2.5, -1e9 - 0.125, 0.3, 1e15 + 0.5, -(2.0**52) + 0.5])
    d = 9
    got = encode(positions, d, dtype=dtype, backend=backend).astype(np.float64)
    bound = 1e-15 if dtype == np.float64 else 6e-8
    assert np.abs(got - oracle.encoding(positions.tolist(), d)).max() <= bound


def test_encode_out_and_empty(backend):
    out = np.empty((3, 4))
    assert encode([1, 2, 3], 4, out=out, backend=backend) is out
    assert encode([], 4, backend=backend).shape == (0, 4)
    assert encode(np.zeros((0, 3)), 4, backend=backend).shape == (0, 3, 4)


@pytest.mark.parametrize("shape", [(), (1,), (3, 2), (2, 1, 3)])
def test_encode_keeps_the_shape_of_positions(backend, shape):
    """NumPy's habit: positions.shape + (d_model,), a scalar included; each entry is the
    row of that position, and those rows are exact (mpmath)."""
    positions = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 7.25 - 3
    table = encode(positions, 7, backend=backend)
    assert table.shape == shape + (7,)
    flat = table.reshape(-1, 7)
    exact = oracle.encoding(positions.reshape(-1).tolist(), 7)
    np.testing.assert_allclose(flat, exact, rtol=0, atol=1e-15)
    if shape == ():
        assert np.array_equal(table, encode([positions.item()], 7, backend=backend)[0])


def test_encode_out_takes_the_shape_of_positions(backend):
    out = np.empty((2, 3, 4), dtype=np.float32)
    assert encode(np.ones((2, 3)), 4, out=out, backend=backend) is out
    assert np.array_equal(out[1, 2], encode(1, 4, dtype=np.float32, backend=backend))
    with pytest.raises(ValueError, match="out is unusable: shape"):
        encode(np.ones((2, 3)), 4, out=np.empty((6, 4)), backend=backend)


@pytest.mark.parametrize(
    "positions, error",
    [
        ([[1, 2], [3]], TypeError),  # ragged: not an array of numbers
        (["a", "b"], TypeError),
        ("12", TypeError),
        (None, TypeError),
        ([True, False], TypeError),
        ([1 + 2j], TypeError),
        ([float("nan")], ValueError),
        ([float("inf")], ValueError),
        ([2**53], ValueError),
        ([-(2**53)], ValueError),
        ([2.0**60], ValueError),
        ([object()], TypeError),
    ],
)
def test_encode_rejects_bad_positions(positions, error):
    with pytest.raises(error, match="positions"):
        encode(positions, 4)


@pytest.mark.parametrize("k", [1, 5, -3, 1000, 2**40 + 1])
@pytest.mark.parametrize("d", [2, 8, 64])
def test_shift_matrix_moves_rows_by_k(k, d):
    shift = shift_matrix(k, d)
    for offset in (0, 12, 2**45 + 7):
        if offset + k < 0:
            continue
        rows = pe(20, d, offset=offset)
        shifted = pe(20, d, offset=offset + k)
        assert np.abs(rows @ shift.T - shifted).max() <= 1e-12


def test_shift_matrix_is_orthogonal_and_composes():
    a, b = shift_matrix(3, 16), shift_matrix(4, 16)
    np.testing.assert_allclose(a @ a.T, np.eye(16), atol=1e-15)
    np.testing.assert_allclose(a @ b, shift_matrix(7, 16), atol=1e-15)


@pytest.mark.parametrize(
    "args, error",
    [
        ((1, 7), ValueError),
        ((1.0, 8), TypeError),
        ((True, 8), TypeError),
        ((2**53, 8), ValueError),
        ((1, 0), ValueError),
    ],
)
def test_shift_matrix_rejects(args, error):
    with pytest.raises(error):
        shift_matrix(*args)


@pytest.mark.parametrize("height, width, d", [(14, 14, 64), (3, 5, 8), (1, 7, 4), (8, 2, 768)])
def test_encode_2d_matches_mae(height, width, d):
    got = encode_2d(height, width, d)
    assert got.shape == (height * width, d)
    np.testing.assert_allclose(got, ref.mae_grid(height, width, d), rtol=0, atol=1e-13)


@pytest.mark.parametrize(
    "args, error",
    [
        ((2, 2, 6), ValueError),
        ((2, 2, 2), ValueError),
        ((-1, 2, 8), ValueError),
        ((2, 2.0, 8), TypeError),
    ],
)
def test_encode_2d_rejects(args, error):
    with pytest.raises(error):
        encode_2d(*args)


def test_encode_2d_empty_grid():
    assert encode_2d(0, 5, 8).shape == (0, 8)


@pytest.mark.parametrize(
    "convention, d_model, count",
    [("vaswani", 9, 5), ("hf-marian", 9, 5), ("tensor2tensor", 9, 4), ("diffusers", 8, 4)],
)
def test_frequencies_of_any_convention_are_within_one_ulp(convention, d_model, count):
    """Each convention's public frequencies are within 1 ulp of its exact rule (mpmath)."""
    w = sinpe.frequencies(d_model, convention=convention, base=100.0)
    assert w.shape == (count,)
    h = count
    for i, value in enumerate(w):
        if convention in ("vaswani", "hf-marian"):
            exact = oracle.power_rule(100.0, 2, i, d_model)
        elif convention == "tensor2tensor":
            exact = oracle.power_rule(100.0, 1, i, max(h - 1, 1))
        else:  # diffusers: max_period 10000, shift 1
            exact = oracle.power_rule(10000.0, 1, i, h - 1)
        assert abs(value - exact) <= math.ulp(float(exact)), (i, value)
