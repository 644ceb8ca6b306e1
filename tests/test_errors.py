"""Bad input: a clear TypeError/ValueError naming the argument; `out` left untouched."""

import numpy as np
import pytest

from sinpe import encode, frequencies
from sinpe import sinusoidal_positional_encoding as pe

BAD_INTEGERS = [1.0, 2.5, "3", None, True, False, b"4", [4], np.float64(3.0), 1j]


@pytest.mark.parametrize("name", ["seq_len", "d_model", "offset"])
@pytest.mark.parametrize("value", BAD_INTEGERS)
def test_non_integers_are_type_errors(backend, name, value):
    args = {"seq_len": 4, "d_model": 4, "offset": 0, name: value}
    with pytest.raises(TypeError, match=name):
        pe(args.pop("seq_len"), args.pop("d_model"), backend=backend, **args)


def test_numpy_integers_are_accepted(backend):
    table = pe(np.int64(3), np.int32(4), offset=np.uint8(2), backend=backend)
    assert np.array_equal(table, pe(3, 4, offset=2, backend=backend))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"seq_len": -1}, "seq_len"),
        ({"d_model": 0}, "d_model"),
        ({"d_model": -3}, "d_model"),
        ({"offset": -1}, "offset"),
        ({"offset": 2**53}, "2\\*\\*53"),
        ({"offset": 2**53 - 4, "seq_len": 5}, "2\\*\\*53"),
        ({"offset": 10**30}, "2\\*\\*53"),
        ({"base": 0.0}, "base"),
        ({"base": -2.0}, "base"),
        ({"base": float("inf")}, "base"),
        ({"base": float("nan")}, "base"),
        ({"base": 10**400}, "base"),
        ({"backend": "fortran"}, "backend"),
        ({"backend": "CYTHON"}, "backend"),
        ({"threads": 0}, "threads"),
        ({"convention": "nope"}, "convention"),
    ],
)
def test_out_of_range_values_are_value_errors(kwargs, name):
    args = {"seq_len": 4, "d_model": 4, **kwargs}
    with pytest.raises(ValueError, match=name):
        pe(args.pop("seq_len"), args.pop("d_model"), **args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": "10000"},
        {"base": None},
        {"base": True},
        {"threads": 1.0},
        {"backend": None},
        {"convention": 3},
    ],
)
def test_wrong_types(kwargs):
    with pytest.raises((TypeError, ValueError)) as info:
        pe(4, 4, **kwargs)
    assert next(iter(kwargs)) in str(info.value)


@pytest.mark.parametrize("dtype", [np.int32, "int16", np.complex128, "nope", object, np.longdouble])
def test_unsupported_dtypes(dtype):
    with pytest.raises(TypeError, match="dtype must be float64, float32, float16 or bfloat16"):
        pe(4, 4, dtype=dtype)


def bad_outs():
    base = np.zeros((6, 8))
    read_only = np.zeros((6, 8))
    read_only.flags.writeable = False
    return [
        (np.zeros((6, 9)), "shape"),
        (np.zeros((5, 8)), "shape"),
        (np.zeros((8, 6)).T, "C-contiguous"),
        (np.zeros((6, 16))[:, ::2], "C-contiguous"),
        (read_only, "read-only"),
        (np.zeros(48), "shape"),
        (base.astype(np.int64), "dtype"),
    ]


@pytest.mark.parametrize("index", range(7))
def test_bad_out_is_rejected_and_untouched(backend, index):
    out, reason = bad_outs()[index]
    before = out.copy()
    with pytest.raises(ValueError, match=f"out.*{reason}"):
        pe(6, 8, out=out, backend=backend)
    assert np.array_equal(out, before)


@pytest.mark.parametrize("out_dtype", [np.float32, np.float64])
def test_out_gives_the_dtype_and_a_conflicting_dtype_is_rejected(backend, out_dtype):
    out = np.full((6, 8), 7, dtype=out_dtype)
    assert pe(6, 8, out=out, backend=backend) is out
    assert np.array_equal(out, pe(6, 8, dtype=out_dtype, backend=backend))
    other = np.float64 if out_dtype is np.float32 else np.float32
    before = out.copy()
    with pytest.raises(ValueError, match="out is unusable: dtype"):
        pe(6, 8, out=out, dtype=other, backend=backend)
    assert np.array_equal(out, before)


def test_out_must_be_an_array():
    with pytest.raises(TypeError, match="out"):
        pe(2, 2, out=[[0.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("d_model, base", [(0, 10000.0), (-1, 10000.0), (4, 0.0), (4, "x")])
def test_frequencies_validate(d_model, base):
    with pytest.raises((TypeError, ValueError)):
        frequencies(d_model, base=base)


@pytest.mark.parametrize("value", [None, 3, b"numpy", ["numpy"], True])
def test_backend_of_the_wrong_type_is_a_type_error(value):
    for call in (lambda: pe(2, 4, backend=value), lambda: encode([1], 4, backend=value)):
        with pytest.raises(TypeError, match="backend must be one of 'auto', 'cython', 'numpy'"):
            call()
