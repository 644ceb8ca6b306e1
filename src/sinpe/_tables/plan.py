"""Between the public functions and the one filler: a frequency vector and a layout become
a ``Filler`` (the per-frequency constants, the grid table, a backend's ``Plan``), and a call's
positions become anchors and codes for ``fill`` (``fill.h`` has the scheme).

A layout is data: ``Layout`` (row width, output planes, a zero column) of ``Segment``s
(which frequencies read which position axis) with a ``Place`` for their cos and one for
their sin (plane, first column, column step, offset of a second copy, how many). A new table
format is a new ``Layout``, never a new loop.

Memory stays bounded by what the call asks for: anchors are made for at most
``ANCHOR_BYTES`` at a time, and a row wider than ``FREQUENCY_BLOCK`` frequencies is filled in
blocks of frequencies, each with the grid rows its positions need (nothing of the size of
rows x every column besides the table itself).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._exactmath.constants import (
    ANCHOR_BYTES,
    FREQUENCY_BLOCK,
    GRID_FINE,
    GRID_FINE_BITS,
    GRID_MID,
    GRID_ROWS,
    GRID_SPAN,
    GRID_SPAN_BITS,
    PAIR_COST,
)
from .._twin.exact import slow_columns
from .._twin.turns import FAST_W_LIMIT, exact_columns
from . import cache
from .backends import DEFAULT
from .threads import threads_for

__all__ = [
    "Filler",
    "Frequencies",
    "Layout",
    "Place",
    "Segment",
    "exact_values",
    "fill_at",
    "fill_run",
    "make_filler",
    "prepare",
]

# Where grid tables start: 512 bytes past a 4096-byte boundary. 64-byte alignment keeps every
# 32-byte AVX2 load inside one cache line, and the offset keeps the filler's loads clear of its
# stores to a fresh NumPy array (which starts 16 bytes past a page): a store a few hundred bytes
# behind a load, modulo 4096, makes the CPU wait on a false dependence (4K aliasing). Chosen on
# the project's 2-core x86-64 VMs; to re-measure on another CPU, change it and compare
# `python benchmarks/ratios.py` side by side (the warm table ratios against np.ones).
TABLE_PLACEMENT = 512
_GRID_POSITIONS = np.concatenate(
    [np.arange(GRID_MID) * float(GRID_FINE), np.arange(GRID_FINE, dtype=np.float64)]
)


# --------------------------------------------------------------------------- layouts


class Place(NamedTuple):
    """Where one kind (cos or sin) of a segment goes: lane i at column ``col + i * step``
    of output plane ``plane``, again ``dup`` columns further when ``dup``, lanes i < count."""

    plane: int
    col: int
    step: int
    dup: int
    count: int  # type: ignore[assignment]  # a field, shadowing tuple.count

    def lanes(self, lo: int, hi: int) -> Place:
        """This place for the segment's lanes [lo, hi) only, renumbered from 0."""
        count = max(0, min(self.count, hi) - lo)
        return self._replace(col=self.col + lo * self.step, count=count)


class Segment(NamedTuple):
    """Frequencies ``first .. first + count - 1`` read position axis ``axis``."""

    first: int
    count: int  # type: ignore[assignment]  # a field, shadowing tuple.count
    axis: int
    cos: Place
    sin: Place


class Layout(NamedTuple):
    """A table format: rows of ``width`` elements in ``planes`` arrays (1, or 2 for separate
    cos and sin tables), the segments, and a zero column of plane 0 (or -1)."""

    width: int
    planes: int
    segments: tuple
    pad_col: int = -1

    def array(self) -> np.ndarray:
        """The segments as the ``(n, 13)`` int64 rows of ``constants.SEG_*``."""
        rows = [(s.first, s.count, s.axis, *s.cos, *s.sin) for s in self.segments]
        return np.array(rows, dtype=np.int64).reshape(len(rows), 13)

    def block(self, f0: int, f1: int) -> Layout:
        """The layout of frequencies [f0, f1) only, renumbered from 0 (the zero column goes
        with the first block)."""
        segments = []
        for s in self.segments:
            lo, hi = max(s.first, f0), min(s.first + s.count, f1)
            if hi > lo:
                a, b = lo - s.first, hi - s.first
                segments.append(
                    Segment(lo - f0, hi - lo, s.axis, s.cos.lanes(a, b), s.sin.lanes(a, b))
                )
        return self._replace(segments=tuple(segments), pad_col=self.pad_col if f0 == 0 else -1)

    def check(self, h: int) -> Layout:
        """Every place inside a row, every segment inside the ``h`` frequencies, and (for
        rows of up to 2**20 columns: the layouts of wider ones are the conventions' own) no
        column written twice."""
        if not -1 <= self.pad_col < self.width:
            raise AssertionError(f"pad column {self.pad_col} outside {self.width} columns")
        # one flag per column and plane; every place is an arithmetic progression of
        # columns, marked through a slice (no index arrays, no sort: a first table of a new
        # width pays this once, on caches the previous table's writes have emptied)
        marked = np.zeros((self.planes, self.width), dtype=bool) if self.width <= 1 << 20 else None
        if marked is not None and self.pad_col >= 0:
            marked[0, self.pad_col] = True
        for s in self.segments:
            if not (0 <= s.first and s.first + s.count <= h and s.axis >= 0):
                raise AssertionError(f"segment {s} outside {h} frequencies")
            for p in (s.cos, s.sin):
                ok = 0 <= p.plane < self.planes and 0 <= p.count <= s.count and p.step >= 1
                if p.count:
                    ok = ok and 0 <= p.col and p.col + p.step * (p.count - 1) + p.dup < self.width
                if not ok:
                    raise AssertionError(f"place {p} of {s} outside {self.width} columns")
                if marked is None or not p.count:
                    continue
                for start in (p.col, p.col + p.dup) if p.dup else (p.col,):
                    columns = marked[p.plane, start : start + p.step * (p.count - 1) + 1 : p.step]
                    if columns.any():
                        raise AssertionError(f"a column is written twice: {self}")
                    columns[...] = True
        return self


# --------------------------------------------------------------------------- exact values


class Frequencies(NamedTuple):
    """A frequency vector and the evaluator's per-frequency constants (read-only), with the
    indices of the frequencies of 2**32 and more (the big-integer path)."""

    w: np.ndarray
    table: np.ndarray
    slow: np.ndarray


def prepare(w: np.ndarray) -> Frequencies:
    """``Frequencies`` of finite ``w``, computed by the default backend (same bits on both)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    table = np.empty((8, w.shape[0]))
    exact = DEFAULT.prepare_frequency_table(w, table)
    if exact is not None:  # columns the certificate could not settle: big integers
        exact_columns(table, exact)
    slow = np.flatnonzero(~(np.abs(w) < FAST_W_LIMIT))
    for array in (table, slow):
        array.flags.writeable = False
    return Frequencies(w, table, slow)


def exact_values(backend, positions: np.ndarray, frequencies: Frequencies, out=None):
    """``(n, 2, h)``: the exact cos (``[:, 0]``) and sin (``[:, 1]``) of every position
    times every frequency, each within 0.5 ulp + 2**-65.3 (``exact.h``); frequencies of
    2**32 and more by the big-integer path."""
    table = frequencies.table
    n, h = positions.shape[0], table.shape[1]
    if out is None:
        out = np.empty((n, 2, h))
    if n and h:
        backend.exact_cos_sin(positions, table, out, threads_for(None, n * h * PAIR_COST))
        if frequencies.slow.size:
            slow_columns(positions, table, frequencies.slow, out)
    return out


def _placed_empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised float64 array starting ``TABLE_PLACEMENT`` bytes past a page."""
    nbytes = 8 * math.prod(shape)
    raw = np.empty(nbytes + 4096 + TABLE_PLACEMENT, dtype=np.uint8)
    # not raw.ctypes.data: its first use imports ctypes, ~100 us of a first table
    start = (TABLE_PLACEMENT - raw.__array_interface__["data"][0]) % 4096
    return raw[start : start + nbytes].view(np.float64).reshape(shape)


def _freeze(array: np.ndarray) -> np.ndarray:
    base: np.ndarray | None = array
    while isinstance(base, np.ndarray):  # the view and the buffer under it
        base.flags.writeable = False
        base = base.base
    return array


def _grid(backend, frequencies: Frequencies, rows=None) -> np.ndarray:
    """The grid table ``(80, 2, h)``: e^{i 16 j w} (rows j < 64), then e^{i k w} (rows
    64 + k); only the ``rows`` given, or all (the others are never read: left untouched,
    their pages are not even mapped)."""
    h = frequencies.table.shape[1]
    grid = _placed_empty((GRID_ROWS, 2, h))
    if rows is None:
        exact_values(backend, _GRID_POSITIONS, frequencies, out=grid)
    else:
        grid[rows] = exact_values(backend, _GRID_POSITIONS[rows], frequencies)
    return _freeze(grid)


# --------------------------------------------------------------------------- fillers


class Filler(NamedTuple):
    """What a table format at a frequency vector keeps between calls: the frequencies, the
    grid table and a backend's ``Plan``. A row wider than ``FREQUENCY_BLOCK`` frequencies
    keeps only how to make any block of its frequencies (``block``); it is planned a block
    at a time at each call, so nothing of the size of the row is ever held."""

    backend: Any  # a backend module: its fill, exact and plan functions
    frequencies: Frequencies | None
    grid: np.ndarray | None
    plan: object
    layout: Layout
    factor: float
    key: tuple  # the cache key it is kept under (its anchors are kept beside it)
    h: int
    origin: np.ndarray | None = None  # the anchor at position 0: the grid's row 0, e^{i0w}
    block: Any = None  # (f0, f1) -> frequencies f0 .. f1 - 1, for a wide row


def make_filler(backend, w, factor: float, layout: Layout, key: tuple, h: int | None = None):
    """A ``Filler`` for the finite frequencies ``w`` and ``layout``, for the caller to keep
    under ``key`` (which must say everything the frequencies, factor and layout depend on).
    ``w`` is the frequency vector, or for a row of ``h`` > ``FREQUENCY_BLOCK`` frequencies a
    function of ``(f0, f1)`` giving frequencies ``f0 .. f1 - 1``."""
    h = w.shape[0] if h is None else h
    layout.check(h)
    if h > FREQUENCY_BLOCK:
        block = w if callable(w) else (lambda f0, f1: w[f0:f1])
        return Filler(backend, None, None, None, layout, factor, key, h, None, block)
    frequencies = prepare(w)
    grid = _grid(backend, frequencies)
    plan = backend.Plan(
        grid, frequencies.table, layout.array(), layout.width, layout.planes, layout.pad_col, factor
    )
    return Filler(backend, frequencies, grid, plan, layout, factor, key, h, grid[:1])


def _anchors_from_zero(filler: Filler, count: int) -> np.ndarray:
    """The anchors of positions 0, 1024, ... for at least ``count`` anchors, cached."""
    count = 1 << (count - 1).bit_length()  # nearby lengths share one entry
    key = ("anchors", filler.key, count)
    return cache.lookup(key, _make_anchors_from_zero, (filler, count))


def _make_anchors_from_zero(filler: Filler, count: int) -> np.ndarray:
    positions = np.arange(count, dtype=np.float64) * GRID_SPAN
    return _freeze(exact_values(filler.backend, positions, filler.frequencies))  # type: ignore[arg-type]  # a filler with a grid has them


def fills_whole(filler: Filler) -> bool:
    """Whether ``fill_run(..., whole=True)`` can write this filler's rows in one compiled call
    that nothing but the process's end stops once it starts (not the NumPy twin's steps, not
    a row too wide to plan whole, filled a block at a time)."""
    return filler.grid is not None and filler.backend.NAME == "cython"


def fill_run(filler: Filler, outs: tuple, offset: int, n_rows: int, threads, whole=False) -> None:
    """Rows of positions ``offset .. offset + n_rows - 1`` (``0 <= offset``, every position
    below 2**53) into ``outs`` (one or two ``(n_rows, width)`` arrays); ``whole``: in one
    compiled call that checks no signal (``fills_whole``; refused before anything is written
    where it cannot), so that ``outs`` end either as they were or whole."""
    if whole and not fills_whole(filler):
        raise ValueError("this table cannot be filled whole: NumPy backend or a row too wide")
    if n_rows == 0:
        return
    start = offset & (GRID_SPAN - 1)
    first = offset - start
    n_anchors = ((start + n_rows - 1) >> GRID_SPAN_BITS) + 1
    if filler.grid is None:
        positions = np.arange(n_anchors, dtype=np.float64) * GRID_SPAN + float(first)
        rows = None if n_rows >= GRID_SPAN else np.arange(start, start + n_rows) & (GRID_SPAN - 1)
        _fill_blocks(filler, outs, positions, None, start, rows, threads, None, float(first))
        return
    n_threads = threads_for(threads, n_rows * filler.layout.width)
    if first == 0:
        anchors = filler.origin if n_anchors == 1 else _anchors_from_zero(filler, n_anchors)
    elif n_rows <= GRID_SPAN and not filler.frequencies.slow.size:  # type: ignore[union-attr]  # a filler with a grid has them
        anchors = None  # at most two, evaluated by the filler itself
    else:
        positions = np.arange(first, first + n_anchors * GRID_SPAN, GRID_SPAN, dtype=np.float64)
        anchors = exact_values(filler.backend, positions, filler.frequencies)  # type: ignore[arg-type]  # a filler with a grid has them
    fill = filler.backend.fill
    at = (filler.plan, outs[0], outs[1], anchors, None, None, start, float(first), n_threads)
    if whole:  # the kernel's whole fill: no signal checked (the twin refuses, never asked)
        fill(*at, True)
    else:
        fill(*at)


def _anchor_values(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each position's anchor position (an integer p: A = floor(p / 1024) * 1024; a
    fractional p: p itself) and its offset u = p - A (0 for a fractional p), int64."""
    integer = positions == np.floor(positions)
    block = np.floor(positions / GRID_SPAN) * GRID_SPAN  # exact
    values = np.where(integer, block, positions) + 0.0  # + 0.0: -0.0 is position 0
    return values, np.where(integer, positions - block, 0.0).astype(np.int64)


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct anchor positions and each one's index, in one pass when sorted (not
    ``np.unique``: its first call imports ``numpy.ma``, ~8 ms of a first table)."""
    flat = values.reshape(-1)
    order = None
    if not np.all(flat[1:] >= flat[:-1]):  # runs of positions, a table: already sorted
        order = np.argsort(flat, kind="stable")
        flat = flat[order]
    new = np.empty(flat.shape, dtype=bool)
    new[:1] = True
    np.not_equal(flat[1:], flat[:-1], out=new[1:])
    index = np.cumsum(new) - 1
    if order is not None:
        index[order] = index.copy()
    return np.ascontiguousarray(flat[new]), index.reshape(values.shape)


def fill_at(filler: Filler, outs: tuple, positions: np.ndarray, threads) -> None:
    """Row r of ``outs`` at ``positions[:, r]`` (float64 ``(n_axes, n)``, finite,
    ``|p| < 2**53``: axis x feeds the segments that read it), in steps of at most
    ``ANCHOR_BYTES`` of anchors.

    Where positions share anchors (runs of token ids, a batch of them) the distinct anchors
    are evaluated once each; where they mostly do not (fractional timesteps, scattered ids)
    the filler evaluates each row's anchor in its own scratch, with no array of the table's
    size (frequencies below 2**32 only).
    """
    n = positions.shape[1]
    h = max(filler.h, 1)
    width = min(h, FREQUENCY_BLOCK)
    step = max(GRID_SPAN, ANCHOR_BYTES // (16 * width * positions.shape[0]))
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        parts = tuple(out[r0:r1] if out is not None else None for out in outs)
        values, u = _anchor_values(positions[:, r0:r1])
        if filler.grid is None:
            distinct, index = _distinct(values)
            codes = (index.astype(np.int64) << GRID_SPAN_BITS) | u
            _fill_blocks(filler, parts, distinct, codes, 0, u, threads, values, 0.0)
            continue
        distinct, index = _distinct(values)
        if 4 * distinct.shape[0] > values.size and not filler.frequencies.slow.size:  # type: ignore[union-attr]  # a filler with a grid has them
            # each row's anchor evaluated by the filler: count that work for the threads
            work = (r1 - r0) * filler.layout.width + distinct.shape[0] * h * PAIR_COST
            n_threads = threads_for(threads, work)
            filler.backend.fill(filler.plan, parts[0], parts[1], None, values, u, 0, 0.0, n_threads)
            continue
        n_threads = threads_for(threads, (r1 - r0) * filler.layout.width)
        anchors = exact_values(filler.backend, distinct, filler.frequencies)  # type: ignore[arg-type]  # a filler with a grid has them
        codes = (index.astype(np.int64) << GRID_SPAN_BITS) | u
        filler.backend.fill(
            filler.plan, parts[0], parts[1], anchors, values, codes, 0, 0.0, n_threads
        )


def _fill_blocks(
    filler, outs, anchor_positions, codes, start, offsets, threads, values, origin
) -> None:
    """A row too wide to plan whole, FREQUENCY_BLOCK frequencies at a time; ``offsets``: the
    positions' offsets from their anchors (None: all of them), for the grid rows to make;
    ``values`` (beside ``codes``): each row's anchor position, else ``origin``: the position
    of code 0 of a run (the filler's arguments of those names)."""
    backend, layout = filler.backend, filler.layout
    rows = None
    if offsets is not None:
        needed = np.zeros(GRID_ROWS, dtype=bool)
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        needed[offsets >> GRID_FINE_BITS] = True
        needed[GRID_MID + (offsets & (GRID_FINE - 1))] = True
        rows = np.flatnonzero(needed)
    n_threads = threads_for(threads, outs[0].shape[0] * FREQUENCY_BLOCK)
    h = filler.h
    for f0 in range(0, h, FREQUENCY_BLOCK):
        f1 = min(h, f0 + FREQUENCY_BLOCK)
        frequencies = prepare(filler.block(f0, f1))
        part = layout.block(f0, f1)
        grid = _grid(backend, frequencies, rows)
        plan = backend.Plan(
            grid,
            frequencies.table,
            part.array(),
            part.width,
            part.planes,
            part.pad_col,
            filler.factor,
        )
        anchors = exact_values(backend, anchor_positions, frequencies)
        backend.fill(plan, outs[0], outs[1], anchors, values, codes, start, origin, n_threads)
