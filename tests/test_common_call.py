"""The common table call (plain ints, no ``out``, arguments seen before) takes a shorter
path: the same checks, the same errors word for word, the same bits as the general path."""

import numpy as np
import pytest

import sinpe
from sinpe import conventions
from sinpe import sinusoidal_positional_encoding as pe
from sinpe._tables import tables


def _general(seq_len, d_model, **kwargs):
    """The same table through the general path (an ``out`` of the table's dtype)."""
    dtype = np.dtype(kwargs.get("dtype") or np.float64)
    return pe(seq_len, d_model, out=np.empty((seq_len, d_model), dtype=dtype), **kwargs)


@pytest.mark.parametrize("dtype", [None, "float64", np.float32, np.dtype(np.float16)])
@pytest.mark.parametrize(
    "seq_len, d_model, offset",
    [(1, 128, 0), (1, 1, 0), (3, 7, 0), (24, 64, 1000), (1, 9, 1023), (1024, 8, 0), (1025, 8, 0)]
    + [(2, 16, 1023), (5, 4096, 3), (1, 8193, 0), (4, 2**20, 0)],
)
def test_same_bits_as_the_general_path(backend, dtype, seq_len, d_model, offset):
    kwargs = dict(offset=offset, dtype=dtype, backend=backend)
    first = pe(seq_len, d_model, **kwargs)  # resolves the arguments
    again = pe(seq_len, d_model, **kwargs)  # the common call's path
    general = _general(seq_len, d_model, **kwargs)
    assert first.dtype == again.dtype == general.dtype
    assert again.shape == (seq_len, d_model) and again.flags.c_contiguous
    assert np.array_equal(first, general) and np.array_equal(again, general)
    assert again.tobytes() == general.tobytes()


@pytest.mark.parametrize("convention", ["tensor2tensor", "hf-marian", conventions.VASWANI])
@pytest.mark.parametrize("base", [10000.0, 500000.0, 2.0])
def test_same_bits_for_each_convention_and_base(backend, convention, base):
    for _ in range(2):
        table = pe(9, 13, base=base, convention=convention, offset=5, backend=backend, threads=1)
    assert table.tobytes() == _general(9, 13, base=base, convention=convention, offset=5).tobytes()


def _raised(call):
    with pytest.raises((TypeError, ValueError, MemoryError)) as info:
        call()
    return type(info.value), str(info.value)


BAD_CALLS = [
    dict(seq_len=1.0),
    dict(seq_len=True),
    dict(seq_len=-1),
    dict(d_model=0),
    dict(d_model=np.float64(4.0)),
    dict(offset=-1),
    dict(offset=2**53),
    dict(offset=2**53 - 1, seq_len=2),
    dict(base=0.0),
    dict(base=-1.0),
    dict(base=float("nan")),
    dict(base=float("inf")),
    dict(base=True),
    dict(base="10000"),
    dict(base=1e-300, d_model=1000),
    dict(threads=0),
    dict(threads=True),
    dict(threads=1.0),
    dict(dtype="int32"),
    dict(dtype=[np.float64]),
    dict(backend="fortran"),
    dict(backend=None),
    dict(convention="nope"),
    dict(convention=None),
    dict(out=np.empty((2, 128), dtype=np.float32)),
    dict(out=np.empty((1, 128))[:, ::2]),
]


@pytest.mark.parametrize("bad", BAD_CALLS, ids=lambda bad: repr(bad)[:40])
def test_warm_calls_raise_as_cold_ones(bad):
    """Each bad argument raises the same error, word for word, before and after the good
    call it differs from has been made (and resolved) many times."""
    good = dict(seq_len=1, d_model=128, dtype=None, backend="auto", convention="vaswani")
    call = {**good, **bad}
    sinpe.clear_cache()
    cold = _raised(lambda: pe(**call))
    width = call["d_model"] if type(call["d_model"]) is int and call["d_model"] > 0 else 128
    for _ in range(3):
        pe(**good)
        pe(**{**good, "d_model": width})
    assert _raised(lambda: pe(**call)) == cold


def test_a_str_subclass_is_taken_by_its_value(backend):
    """``numpy.str_`` arguments (equal to, and hashing as, the plain str) are taken alike,
    first call or later: a backend, a convention and a dtype name."""
    args = dict(backend=np.str_(backend), convention=np.str_("vaswani"), dtype=np.str_("float32"))
    expected = pe(3, 10, dtype="float32", backend=backend)
    for _ in range(2):
        assert pe(3, 10, **args).tobytes() == expected.tobytes()
    with pytest.raises(ValueError, match="backend must be one of"):
        pe(3, 10, backend=np.str_("fortran"))


def test_resolved_arguments_are_bounded_and_cleared(monkeypatch):
    sinpe.clear_cache()
    assert not tables._RESOLVED
    monkeypatch.setattr(tables, "_MAX_RESOLVED", 3)
    for dtype in (None, "f8", "float64", np.float64, "d", "double", np.dtype("f8")):
        pe(1, 4, dtype=dtype)
        pe(1, 4, convention=conventions.diffusers(scale=2.0))  # a Convention: not kept
        assert 0 < len(tables._RESOLVED) <= 3
        assert all(type(convention) is str for _, _, convention in tables._RESOLVED)
    sinpe.clear_cache()
    assert not tables._RESOLVED
