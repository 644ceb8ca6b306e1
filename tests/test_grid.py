"""``sinpe.encode_grid``: per-axis encodings of a grid side by side, against the mpmath oracle
at fractional positions, with every column order, dtype and ``out``; and its refusals."""

import numpy as np
import oracle
import pytest

import sinpe
from sinpe import encode_grid

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them


def exact_grid(axes, widths, order):
    lengths = [len(a) for a in axes]
    rows = []
    for point in np.ndindex(*lengths):
        rows.append(
            np.concatenate(
                [
                    oracle.encoding([axes[k][point[k]]], widths[k], "hf-marian")[0]
                    for k in order
                    if widths[k]
                ]
            )
        )
    return np.array(rows).reshape(int(np.prod(lengths)), sum(widths))


@pytest.mark.parametrize(
    "axes, widths, order",
    [
        ([np.arange(3) / 1.5, np.arange(4) * 0.3], [8, 6], [1, 0]),  # fractional, unequal widths
        ([np.array([0.0, 2.5]), np.arange(3) / 7, np.array([-1.25, 1e6 + 0.5])], [4, 6, 5], None),
        ([np.arange(2.0), np.arange(3.0), np.arange(2.0)], [4, 6, 6], [0, 2, 1]),  # diffusers 3-D
        ([np.arange(5.0)], [7], None),  # one axis: encode itself
        ([np.arange(2.0), np.arange(3.0)], [0, 4], None),  # an axis without columns
    ],
)
def test_grid_values_are_exact(axes, widths, order):
    got = encode_grid(axes, widths, order=order)
    expected = exact_grid(axes, widths, order if order is not None else range(len(axes)))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)


def test_rows_run_in_c_order_and_blocks_follow_order():
    ys, xs = np.array([0.0, 10.0]), np.array([1.0, 2.0, 3.0])
    table = encode_grid([ys, xs], [4, 6], order=[1, 0])
    marian = dict(convention="hf-marian")
    for y in range(2):
        for x in range(3):
            row = table[y * 3 + x]
            np.testing.assert_array_equal(row[:6], sinpe.encode(xs[x], 6, **marian))
            np.testing.assert_array_equal(row[6:], sinpe.encode(ys[y], 4, **marian))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_dtypes_round_each_value_once(dtype):
    axes = [np.arange(3) / 3, np.arange(5) * 1.7]
    wide = encode_grid(axes, [8, 8], order=[1, 0])
    narrow = encode_grid(axes, [8, 8], order=[1, 0], dtype=dtype)
    assert narrow.dtype == dtype
    np.testing.assert_array_equal(narrow, wide.astype(dtype))


def test_out_is_filled_and_returned(backend):
    out = np.full((6, 10), np.nan)
    result = encode_grid([np.arange(2.0), np.arange(3.0)], [4, 6], out=out, backend=backend)
    assert result is out
    np.testing.assert_array_equal(out, encode_grid([np.arange(2.0), np.arange(3.0)], [4, 6]))


def test_other_conventions_and_bases():
    axes = [np.arange(3.0), np.array([0.5, 4.0])]
    got = encode_grid(axes, [5, 7], convention="vaswani", base=100.0)
    expected_x = sinpe.encode(axes[1], 7, convention="vaswani", base=100.0)
    expected_y = sinpe.encode(axes[0], 5, convention="vaswani", base=100.0)
    np.testing.assert_array_equal(got[:, :5], np.repeat(expected_y, 2, axis=0))
    np.testing.assert_array_equal(got[:, 5:], np.tile(expected_x, (3, 1)))


def test_empty_grids():
    assert encode_grid([np.arange(0.0), np.arange(3.0)], [4, 4]).shape == (0, 8)
    assert encode_grid([np.arange(2.0)], [0]).shape == (2, 0)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((np.arange(3.0), [4]), {}, TypeError, "axes must be a list"),
        (([], []), {}, ValueError, "at least one"),
        (([np.zeros((2, 2))], [4]), {}, ValueError, r"axes\[0\] must be 1-D"),
        (([[0.0, np.nan]], [4]), {}, ValueError, r"axes\[0\]: positions must be finite"),
        (([["a"]], [4]), {}, TypeError, r"axes\[0\]"),
        (([np.arange(2.0)], [4, 4]), {}, ValueError, "one width per axis"),
        (([np.arange(2.0)], [-1]), {}, ValueError, r"widths\[0\] must be >= 0"),
        (([np.arange(2.0)], [2.5]), {}, TypeError, r"widths\[0\] must be an integer"),
        (([np.arange(2.0)], 4), {}, TypeError, "widths must be a list"),
        (([np.arange(2.0), np.arange(2.0)], [2, 2]), {"order": [0, 0]}, ValueError, "order"),
        (([np.arange(2.0)], [2]), {"order": "0"}, TypeError, "order"),
        (([np.arange(2.0)], [2]), {"base": 0.0}, ValueError, "base"),
        (([np.arange(2.0)], [2]), {"convention": "nope"}, ValueError, "unknown convention"),
        (([np.arange(2.0)], [2]), {"dtype": np.int32}, TypeError, "dtype"),
        (([np.arange(2.0)], [2]), {"backend": "gpu"}, ValueError, "backend"),
    ],
)
def test_refusals_name_the_argument(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        encode_grid(*args, **kwargs)


def test_a_refused_call_leaves_out_untouched():
    out = np.full((2, 1008), 7.0)
    with pytest.raises(ValueError, match=r"widths\[1\]=1000: base=1e-300"):  # w past 2**900
        encode_grid([np.arange(2.0), np.arange(1.0)], [8, 1000], base=1e-300, out=out)
    with pytest.raises(ValueError, match="out is unusable"):
        encode_grid([np.arange(2.0)], [6], out=out)
    assert (out == 7.0).all()


def test_encode_2d_is_the_grid_of_two_integer_axes():
    got = sinpe.encode_2d(3, 5, 16)
    grid = encode_grid([np.arange(3.0), np.arange(5.0)], [8, 8], order=[1, 0])
    np.testing.assert_array_equal(got, grid)
    assert sinpe.encode_2d(2**40, 0, 8).shape == (0, 8)  # no axis of 2**40 is made
