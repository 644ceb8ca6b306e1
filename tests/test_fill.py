"""The one filler (``fill.h`` and its twin ``_twin/fill.py``): a value at a position never
depends on the call, every layout is data for the same loop, the two backends agree bit for
bit on generated layouts, and memory stays bounded by what the call asks for."""

import tracemalloc

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layouts import PRESETS, random_layout

import sinpe
from sinpe import conventions
from sinpe import sinusoidal_positional_encoding as pe
from sinpe._exactmath.constants import FREQUENCY_BLOCK, GRID_SPAN
from sinpe._tables import backends, plan
from sinpe._tables.checks import bfloat16

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

CONVENTIONS = [
    *PRESETS,
    conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.0, scale=3.0),
]
DTYPES = [np.float64, np.float32, np.float16] + ([bfloat16()] if bfloat16() else [])
needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")
POSITIONS = st.one_of(
    st.integers(0, 5000),
    st.integers(0, 2**53 - 1),
    st.sampled_from([1023, 1024, 1025, 2**53 - 1, 2**52, 2**40 - 1]),
)


def bits(array):
    return array.view(np.uint8)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    p=POSITIONS,
    before=st.integers(0, 3000),
    d_model=st.integers(1, 40),
    convention=st.sampled_from(CONVENTIONS),
    dtype=st.sampled_from(DTYPES),
)
def test_a_value_at_a_position_never_depends_on_the_call(
    backend, p, before, d_model, convention, dtype
):
    """encode([p])[0] == the one-row table at offset p == row p - k of a table at offset
    k, bit for bit, for every convention and dtype (and whatever threads the table used)."""
    k = max(p - before, 0)
    kwargs = dict(convention=convention, dtype=dtype, backend=backend)
    row = sinpe.encode([p], d_model, **kwargs)[0]
    alone = pe(1, d_model, offset=p, **kwargs)[0]
    window = pe(p - k + 1, d_model, offset=k, threads=2, **kwargs)[p - k]
    assert bits(row).tobytes() == bits(alone).tobytes() == bits(window).tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("layout", ["half", "interleaved", "compact"])
def test_rope_values_never_depend_on_the_call(backend, dtype, layout):
    """rope rows at an offset, rope_at at the same positions in any order and grouping, and
    rope_at of one position: the same bits."""
    positions = np.array([3, 1023, 1024, 2**40 + 17, 5, 2**53 - 1, 700, 2**20 + 1])
    kwargs = dict(layout=layout, dtype=dtype, backend=backend)
    at = sinpe.rope_at(positions, 32, **kwargs)
    for r, p in enumerate(positions.tolist()):
        one = sinpe.rope_at([p], 32, **kwargs)
        run = sinpe.rope(2, 32, offset=max(p - 1, 0), **kwargs)
        for got, alone, in_run in zip(at, one, run):
            assert bits(got[r]).tobytes() == bits(alone[0]).tobytes()
            assert bits(got[r]).tobytes() == bits(in_run[min(p, 1)]).tobytes()


def test_anchors_evaluated_in_the_filler_or_beforehand_are_the_same(backend):
    """Positions sharing anchors are evaluated once each beforehand; mostly distinct ones
    are evaluated by the filler itself, row by row: the same bits either way."""
    rng = np.random.default_rng(3)
    scattered = rng.integers(0, 2**45, 300)  # every row its own anchor: the filler evaluates
    runs = np.concatenate([np.arange(p, p + 50) for p in scattered[:6]])  # few anchors
    for positions in (scattered, runs, rng.uniform(-1e6, 1e6, 200)):
        together = sinpe.encode(positions, 24, backend=backend)
        one_by_one = np.array([sinpe.encode([p], 24, backend=backend)[0] for p in positions])
        assert np.array_equal(together, one_by_one)


@pytest.mark.parametrize("d_model", [7, 600])
def test_wide_rows_planned_in_blocks_give_the_same_bits(backend, monkeypatch, d_model):
    """A row wider than FREQUENCY_BLOCK frequencies is filled a block of frequencies at a
    time, each block with only the grid rows its positions need: the same table."""
    whole = pe(70, d_model, offset=1000, backend=backend)
    whole_at = sinpe.encode([0.5, 3, 2**40 + 9], d_model, backend=backend)
    sinpe.clear_cache()
    monkeypatch.setattr(plan, "FREQUENCY_BLOCK", 4)
    try:
        assert np.array_equal(pe(70, d_model, offset=1000, backend=backend), whole)
        assert np.array_equal(sinpe.encode([0.5, 3, 2**40 + 9], d_model, backend=backend), whole_at)
    finally:
        sinpe.clear_cache()


def _peak_beyond_the_table(d_model, backend):
    sinpe.clear_cache()
    tracemalloc.start()
    try:
        row = pe(1, d_model, offset=2**40 + 5, dtype=np.float16, backend=backend)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sinpe.clear_cache()
    return row, peak - row.nbytes


def test_a_huge_width_asks_for_no_more_than_the_table(backend):
    """One row of 2**22 columns (2**21 frequencies, past FREQUENCY_BLOCK): beyond the table,
    only a block of frequencies' constants, grid rows and anchor at a time (a full grid would
    be 2.7 GB, the frequency vector and its constants 150 MiB): the same few MiB as for a
    row half as wide. And the values are exact."""
    d_model = 2**22
    assert d_model // 2 > FREQUENCY_BLOCK
    row, beyond = _peak_beyond_the_table(d_model, backend)
    _, beyond_half = _peak_beyond_the_table(d_model // 2, backend)
    assert beyond < 24 << 20 and abs(beyond - beyond_half) < 4 << 20, (beyond, beyond_half)
    columns = [0, 1, 2, 3, 2 * FREQUENCY_BLOCK + 1, d_model - 2, d_model - 1]
    w = sinpe.frequencies(d_model)
    exact = oracle.cos_sin([2**40 + 5], [w[c // 2] for c in columns])[0]
    expected = [exact[1 - c % 2, i] for i, c in enumerate(columns)]  # sin at even columns
    assert np.abs(row[0, columns].astype(np.float64) - expected).max() <= 2.0**-11 + 1e-15


# --------------------------------------------------------------------------- layouts as data


@pytest.mark.parametrize("seed", range(60))
def test_generated_layouts_hold_the_exact_values(seed):
    """Any layout is data for the one loop: on every backend, each value it places is factor
    * the exact cos/sin of its own axis's position (mpmath, a sample row), and the zero
    column stays zero. (That both backends write the same bits is tests/test_twin.py's.)
    Everything, the layout's width, planes, factor and dtype too, is drawn from the seed."""
    rng = np.random.default_rng(seed)
    h, planes = int(rng.integers(2, 41)), int(rng.integers(1, 3))
    factor = float(rng.choice([1.0, 0.75, 1.3]))
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    layout = random_layout(rng, h, planes, 2)
    w = sinpe.frequencies(2 * h)
    n = int(rng.integers(1, 60))
    positions = np.stack(
        [
            rng.integers(0, 3000, n).astype(np.float64),
            np.where(rng.random(n) < 0.3, rng.uniform(-50, 50, n), rng.integers(0, 2**45, n)),
        ]
    )
    r = int(rng.integers(0, n))
    tolerance = {8: 1e-15, 4: 6e-8, 2: 2.0**-7}[np.dtype(dtype).itemsize] * max(1.0, factor)
    for backend in backends.BACKENDS.values():
        filler = plan.make_filler(backend, w, factor, layout, ("test", seed))
        outs = [np.full((n, layout.width), 9.0, dtype=dtype) for _ in range(planes)]
        plan.fill_at(filler, (outs[0], outs[1] if planes == 2 else None), positions, None)
        for s in layout.segments:
            exact = oracle.cos_sin([positions[s.axis, r]], w[s.first : s.first + s.count], factor)
            for kind, place in ((0, s.cos), (1, s.sin)):
                for i in range(min(s.count, place.count)):
                    for col in (place.col + i * place.step, place.col + i * place.step + place.dup):
                        got = float(outs[place.plane][r, col])
                        assert abs(got - exact[0][kind, i]) <= tolerance
        if layout.pad_col >= 0:
            assert not outs[0][:, layout.pad_col].astype(np.float64).any()


def test_the_grid_span_is_the_anchor_spacing():
    """The anchors, 1024 positions apart, are the only exact evaluations a long table
    needs besides the grid: a table of 3 * 1024 + 1 rows from 0 reads four anchors."""
    filler = sinpe._tables.tables._table_filler(backends.DEFAULT, conventions.VASWANI, 8, 1e4)
    sinpe.clear_cache()
    pe(3 * GRID_SPAN + 1, 8)
    kept = [key for key in sinpe._tables.cache._CACHE._entries if key[0] == "anchors"]
    assert [key[2] for key in kept] == [4]
    assert filler.grid.shape == (80, 2, 4)


def test_layout_check_refuses_a_column_written_twice():
    """The layout check (run once per new layout) finds every overlap: two places, a
    place and its own dup copy, a place and the pad column; disjoint strided places pass."""
    Layout, Place, Segment = plan.Layout, plan.Place, plan.Segment

    def layout(cos, sin, pad=-1, width=16):
        return Layout(width, 1, (Segment(0, 4, 0, cos, sin),), pad)

    layout(Place(0, 0, 2, 0, 4), Place(0, 1, 2, 0, 4)).check(4)  # interleaved: fine
    layout(Place(0, 0, 1, 8, 4), Place(0, 4, 1, 8, 4)).check(4)  # halves repeated: fine
    for bad in (
        layout(Place(0, 0, 2, 0, 4), Place(0, 6, 2, 0, 4)),  # column 6 twice
        layout(Place(0, 0, 1, 2, 4), Place(0, 8, 1, 0, 4)),  # cos overlaps its own dup
        layout(Place(0, 0, 1, 0, 4), Place(0, 4, 1, 0, 4), pad=3),  # the pad column
    ):
        with pytest.raises(AssertionError, match="written twice"):
            bad.check(4)
