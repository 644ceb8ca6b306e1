"""Hostile arguments: every public function, every argument, thrown every kind of Python value.

Each call either returns a correct table (right shape and dtype, finite, in [-1, 1], the same
on both backends) or raises TypeError/ValueError (naming the argument), OverflowError or
MemoryError, without allocating much first: the traced peak is bounded, so a huge ``d_model``
with ``seq_len=0`` or a huge ``offset`` can never build a giant frequency vector before it answers.
"""

import functools
import inspect
import tracemalloc
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sinpe
from sinpe import compat, conventions
from sinpe._tables import tables

HUGE = [2**40, 2**53 - 1, 2**53, 2**63 - 1, 2**63, 2**64, 2**1000, -(2**63), -(2**1000)]
HOSTILE = [
    None,
    "",
    "5",
    "auto",
    "float64",
    b"5",
    bytearray(b"5"),
    True,
    False,
    np.bool_(True),
    [],
    [5],
    (5,),
    {5},
    {"a": 5},
    object(),
    len,
    5j,
    Fraction(1, 3),
    Decimal("5"),
    np.int8(5),
    np.int64(5),
    np.uint64(2**63),
    np.float16(2.5),
    np.float32(5),
    np.float64(5.0),
    np.longdouble(5),
    np.array(5),
    np.array(5.0),
    np.array([5]),
    np.array("5"),
    np.zeros((2, 2)),
    np.float64("nan"),
    float("nan"),
    float("inf"),
    -float("inf"),
    -0.0,
    0.0,
    0,
    -1,
    1,
    2,
    5.5,
    1e-320,
    1e308,
    -1e308,
    5e-324,
    np.float32,
    np.float64,
    np.int64,
    "float32",
    "f4",
    ">f8",
    "c16",
    "cython",
    "numpy",
    "vaswani",
    "fairseq",
    "diffusers",
    conventions.TENSOR2TENSOR,
    *HUGE,
]
values = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(-(2**70), 2**70).filter(lambda v: abs(v) < 50 or abs(v) > 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.lists(st.integers(-5, 5), max_size=4),
)


# Each public entry point with valid small arguments; one argument at a time is replaced.
try:  # imported here, not in a traced call: its import alone allocates ~50 MB
    import torch
except ImportError:
    torch = None


def _fairseq_table(**kwargs):
    """fairseq's table as NumPy (get_embedding returns a torch tensor, as fairseq does)."""
    if torch is None:
        pytest.skip("get_embedding returns a torch tensor: needs torch")
    return compat.fairseq.get_embedding(**kwargs).numpy()


def every_argument(function, leave=(), **given):
    """``function`` with ``given`` and every other argument of its signature at its default,
    so that each argument it takes is fuzzed, one added later too (``leave`` names those kept
    out, with the reason beside)."""
    parameters = inspect.signature(function).parameters.values()
    defaults = {
        p.name: p.default
        for p in parameters
        if p.default is not p.empty and p.name not in leave and p.kind is not p.VAR_KEYWORD
    }
    return function, {**defaults, **given}


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
# compat: every argument but output_type and device (those hand over to torch; the NumPy
# results are checked here)
TORCH_HANDOVER = ("output_type", "device")
CALLS = {
    "sinusoidal_positional_encoding": every_argument(
        sinpe.sinusoidal_positional_encoding, seq_len=5, d_model=6, dtype=np.float64
    ),
    "encode": every_argument(sinpe.encode, positions=[0, 1.5, -3], d_model=6, dtype=np.float64),
    "encode_2d": every_argument(sinpe.encode_2d, height=2, width=3, d_model=8),
    "encode_grid": every_argument(
        sinpe.encode_grid, axes=[[0, 1.5], [2, 3, 4]], widths=[4, 6], order=[1, 0], dtype=np.float64
    ),
    "compat.diffusers.get_2d_sincos_pos_embed": every_argument(
        functools.partial(compat.diffusers.get_2d_sincos_pos_embed, output_type="np"),
        TORCH_HANDOVER,
        embed_dim=8,
        grid_size=(2, 3),
        cls_token=True,
        extra_tokens=1,
    ),
    "compat.diffusers.get_3d_sincos_pos_embed": every_argument(
        functools.partial(compat.diffusers.get_3d_sincos_pos_embed, output_type="np"),
        TORCH_HANDOVER,
        embed_dim=16,
        spatial_size=(3, 2),
        temporal_size=2,
    ),
    "compat.diffusers.get_timestep_embedding": every_argument(
        compat.diffusers.get_timestep_embedding, timesteps=[0.0, 1.5], embedding_dim=6
    ),
    "compat.diffusers.get_1d_sincos_pos_embed_from_grid": every_argument(
        functools.partial(compat.diffusers.get_1d_sincos_pos_embed_from_grid, output_type="np"),
        TORCH_HANDOVER,
        embed_dim=6,
        pos=[0.5, 2.0],
    ),
    "compat.mae.get_2d_sincos_pos_embed": every_argument(
        compat.mae.get_2d_sincos_pos_embed, embed_dim=8, grid_size=3
    ),
    "compat.fairseq.get_embedding": (
        _fairseq_table,
        dict(num_embeddings=5, embedding_dim=6, padding_idx=None),
    ),
    "compat.tensor2tensor.get_timing_signal_1d": every_argument(
        compat.tensor2tensor.get_timing_signal_1d, length=4, channels=6
    ),
    "compat.transformers.marian_sinusoidal_weight": every_argument(
        compat.transformers.marian_sinusoidal_weight, num_positions=4, embedding_dim=5
    ),
    "shift_matrix": every_argument(sinpe.shift_matrix, k=3, d_model=6),
    "frequencies": every_argument(sinpe.frequencies, d_model=6),
    "set_cache_limit": (lambda nbytes: frequencies_under_cache_limit(nbytes), dict(nbytes=1 << 20)),
    "rope": every_argument(sinpe.rope, seq_len=5, head_dim=6, scaling=YARN),
    "rope_at": every_argument(
        sinpe.rope_at, positions=[0, 1.5, -3], head_dim=6, layout="interleaved", dtype=np.float32
    ),
    "rope_frequencies": every_argument(
        sinpe.rope_frequencies, head_dim=6, scaling={"type": "linear", "factor": 2}
    ),
    "diffusers": (
        lambda d_model=7, **kw: sinpe.sinusoidal_positional_encoding(
            5, d_model, convention=conventions.diffusers(**kw)
        ),
        dict(flip_sin_to_cos=True, downscale_freq_shift=1.0, scale=1.0, max_period=10000),
    ),
}


def frequencies_under_cache_limit(nbytes):
    """Set the cache bound, answer one call under it, put the bound back."""
    previous = sinpe.set_cache_limit(nbytes)
    try:
        return sinpe.frequencies(6)
    finally:
        sinpe.set_cache_limit(previous)


CASES = [(name, argument) for name, (_, kwargs) in CALLS.items() for argument in kwargs]
ALLOWED = (TypeError, ValueError, OverflowError, MemoryError)
PEAK_BYTES = 16 << 20  # every valid table here is tiny; a giant intermediate would show


def check_result(name, result, kwargs):
    if name.startswith("rope"):
        first, second = result
        if name == "rope_frequencies":
            assert first.ndim == 1 and (first >= 0).all() and second > 0
            return
        spec = ("head_dim", "base", "scaling", "max_position_embeddings", "inv_freq")
        factor = sinpe.rope_frequencies(
            **{key: kwargs[key] for key in spec}, attention_factor=kwargs["attention_factor"]
        )[1]
        for table in (first, second):
            assert table.dtype == np.dtype(kwargs["dtype"] or np.float64)
            assert np.isfinite(table).all() and np.abs(table).max(initial=0) <= factor
        twin = CALLS[name][0](**{**kwargs, "backend": "numpy"})
        assert np.array_equal(first, twin[0]) and np.array_equal(second, twin[1])
        return
    assert isinstance(result, np.ndarray)
    assert np.isfinite(result).all()
    if name in ("frequencies", "set_cache_limit"):
        assert result.ndim == 1 and (result >= 0).all()
        return
    assert np.abs(result).max(initial=0) <= 1
    backend = kwargs.get("backend")
    if name in ("sinusoidal_positional_encoding", "encode") and backend != "numpy":
        kwargs = {**kwargs, "backend": "numpy"}
        if isinstance(kwargs.get("out"), np.ndarray):
            kwargs["out"] = None
        twin = CALLS[name][0](**kwargs)
        assert np.array_equal(result, twin)


def call(name, argument, value):
    function, defaults = CALLS[name]
    kwargs = {**defaults, argument: value}
    tracemalloc.start()
    try:
        with warnings.catch_warnings():  # a hostile mapping's unknown keys: said, then ignored
            warnings.filterwarnings("ignore", "scaling for rope_type", UserWarning)
            result = function(**kwargs)
    except ALLOWED as exc:
        peak = tracemalloc.get_traced_memory()[1]
        if isinstance(exc, (TypeError, ValueError)) and not isinstance(exc, MemoryError):
            message = str(exc)
            named = argument in message or (argument == "max_period" and "base" in message)
            assert named, f"{name}({argument}={value!r:.60}) raised without naming it: {message}"
        # a MemoryError too: every request's memory is checked before anything is allocated
        assert peak < PEAK_BYTES, f"{name}({argument}={value!r:.60}) allocated {peak} first"
        return None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"{name}({argument}={value!r:.60}) allocated {peak} bytes"
    check_result(name, result, kwargs)
    return result


@pytest.mark.parametrize("name, argument", CASES, ids=[f"{n}-{a}" for n, a in CASES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values)
def test_any_value_for_any_argument(name, argument, value):
    call(name, argument, value)


@pytest.mark.parametrize("name, argument", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_every_listed_hostile_value(name, argument):
    for value in HOSTILE:
        call(name, argument, value)


@pytest.mark.parametrize("d_model", [10**15, 2**40, 2**59, 2**62, 2**200])
def test_huge_width_with_no_rows_answers_at_once(d_model):
    """An empty table of any representable width comes back at once; a width no array can
    have is a ValueError naming d_model. Nothing proportional to d_model is built."""
    tracemalloc.start()
    try:
        try:
            tables = [sinpe.sinusoidal_positional_encoding(0, d_model), sinpe.encode([], d_model)]
        except ValueError as exc:
            assert f"d_model={d_model}" in str(exc)
            assert d_model * 8 >= 2**63  # only where NumPy cannot represent the shape
            tables = []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(table.shape == (0, d_model) for table in tables)
    assert peak < 1 << 16


@pytest.mark.parametrize("offset", [2**53, 2**64, 10**100])
def test_huge_offset_is_refused_before_any_work(offset, monkeypatch):
    def no_tables(*args):
        raise AssertionError("tables were built for an offset that must be refused")

    monkeypatch.setattr(tables, "_table_filler", no_tables)
    with pytest.raises(ValueError, match="below 2\\*\\*53"):
        sinpe.sinusoidal_positional_encoding(4, 8, offset=offset)


def test_rejected_call_leaves_out_untouched():
    out = np.full((5, 6), 7.0)
    for bad in (
        dict(base=-1.0),
        dict(offset=2**53),
        dict(threads=0),
        dict(dtype=np.float32),
        dict(convention="nope"),
        dict(backend="fortran"),
        dict(base=float("nan")),
        dict(convention=conventions.diffusers(scale=1e300)),
    ):
        with pytest.raises((TypeError, ValueError)):
            sinpe.sinusoidal_positional_encoding(5, 6, out=out, **bad)
        assert (out == 7.0).all(), bad


@pytest.mark.parametrize(
    "base", [5e-324, 1e-300, 2.0**-899, 1e300, 1.7976931348623157e308, 0.5, 1.0, 1.0000001]
)
def test_extreme_bases_give_exact_tables_or_a_clear_error(backend, base):
    """Accepted bases keep the accuracy contract; refused ones say why (frequency > 2**900)."""
    positions = [0, 1, 2**40 + 3, 2**53 - 1]
    try:
        table = sinpe.encode(positions, 9, base=base, backend=backend)
    except ValueError as exc:
        assert "base=" in str(exc) and "2**900" in str(exc)
        assert base < 2.0**-900  # only bases whose frequencies reach 1/base are refused
        return
    w = sinpe.frequencies(9, base=base)
    assert np.isfinite(w).all() and w.max() <= 2.0**900
    np.testing.assert_allclose(table, oracle.encoding(positions, 9, base=base), rtol=0, atol=1e-15)
