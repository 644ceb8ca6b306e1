"""The verdict core, part two: the bounds, and the judgment of what an engine holds against
the exact RoPE of a config. Every tolerance sinpe's verdicts use is here.

**A table** (rows an engine computed: a cache file, a vLLM cache, an MLX module probed) is
compared entry by entry with the exact float64 table, ``A`` the attention factor, ``w_i``
the inverse frequency of pair ``i`` and ``u`` the spacing of the table's dtype just below
``A``:

- **match**: every entry within ``MATCH_ULPS u`` (8 ulps): the exact table at the dtype's
  rounding;
- **drift**: some entry beyond that, and every entry at position ``p`` of pair ``i`` within
  ``8 u + A p w_i r_i`` with ``r_i = e (ANGLE_ULPS + ANGLE_LOG_ULPS ln(w_max / w_i))``,
  ``e = 2**-24`` (float32 angles; ``2**-53``: float64). Why: an engine forms the angle as
  ``fl(p fl(w_i))``. ``fl(w_i) = fl(base ** -fl(2i/d))`` errs by the exponent's rounding
  times ``ln(base) 2i/d = ln(w_0 / w_i)`` (relative ``e``), the power's and quotient's ulps
  and those of a scaling's few products (YaRN's blend, Llama-3's smoothing: at most 8 ``e``
  in all); the product adds ``e``; ``|d cos|, |d sin| <= A |d angle|``. The bound takes twice
  each term. It is per column and proportional to the position: a cache off by a flat amount
  fails at the first rows (position 0 is exact in any precision), garbage rows fail on the
  low frequencies at any position, and nothing passes at every position;
- **mismatch**: anything else, or an entry that is not a number.

**Parameters** (a GGUF file's, as llama.cpp reads them): float32 numbers, so frequencies and
factors within ``PARAMETER_TOLERANCE`` (16 float32 ulps, relative) read as the config's;
frequencies fitted from a table's float32 angles (to explain a mismatch), within
``FIT_TOLERANCE``. A value that is not a number, or not positive, is a mismatch by itself.

Tables are read a block at a time (``BLOCK_ENTRIES``), so a check's memory is known before
it starts. A table an engine holds is judged whole (``judge_table`` takes its row count,
never positions); a RoPE an engine computes on demand, at the core's ``probe_positions``
(``judge_computed``). Either verdict counts the entries it compared, and of how many held.
``preview`` (a few hundred rows) only ranks readings of a table, never gives a verdict.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from .._rope import rotary as rot
from .._rope.rope_types import ROPE_TYPES
from .._rope.rotary import table_block
from .._tables import backends
from .._tables.checks import F64
from .verdict import DRIFT, MATCH, MISMATCH, Finding, Verdict, finding, mismatch, number

__all__ = [
    "FIT_TOLERANCE",
    "MATCH_ULPS",
    "MAX_WIDTH",
    "PARAMETER_TOLERANCE",
    "Held",
    "Table",
    "bounded",
    "explain_frequencies",
    "fit",
    "frequencies_text",
    "judge_computed",
    "judge_parameters",
    "judge_table",
    "parameters_verdict",
    "preview",
    "probe_positions",
    "relative",
    "title",
]

MATCH_ULPS = 8
ANGLE_ULPS = 16
ANGLE_LOG_ULPS = 2
_ANGLE_EPS = {"float64": 2.0**-53, "float32": 2.0**-24}  # the narrower drift is said first
PARAMETER_TOLERANCE = 2.0**-19  # 16 float32 ulps, relative
FIT_TOLERANCE = 1e-4  # relative: a frequency fitted from a table's float32 angles
FACTOR_TOLERANCE = 2.0**-7  # a table's attention factor read from its row 0 (bfloat16: 1 ulp)
BLOCK_ENTRIES = 1 << 16  # float64 entries per array per block: 512 KiB, within a core's L2
MAX_WIDTH = rot.MAX_HEAD_DIM  # a rotary width a file or an engine gives, at most
MAX_POSITION = 1 << 40  # a position, a length or a context size, at most
FIT_TOP = 1 << 20  # frequencies are fitted by doubling the position up to this one
SAMPLE_ROWS = 64
_EPS = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float8_e4m3fn": 2.0**-3,
    "float8_e5m2": 2.0**-2,
}


def title(spec) -> str:
    """The rope type's name in prose, with its space (``"YaRN "``; ``""`` for a plain RoPE),
    of a spec or a rotary (whose scaling names its type)."""
    scaling = spec.scaling
    kind = scaling.rope_type if hasattr(scaling, "rope_type") else scaling["rope_type"]
    record = ROPE_TYPES[kind]
    return "" if record.plain else f"{record.title or record.name} "


def bounded(name: str, value, limit: int = MAX_WIDTH, least: int = 0) -> int:
    """``value`` (a width, a count, a length a file or an engine gave) as an int, refused
    (``ValueError``) when it is not an integer in ``least .. limit``: checked before it sizes
    anything."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} is {value!r:.60}, not an integer")
    if not least <= value <= limit:
        raise ValueError(f"{name} {value} is outside {least} .. {limit}: no model has that")
    return int(value)


def ulp(dtype: str, factor: float) -> float:
    """The spacing of ``dtype`` just below ``factor`` (a table's largest value)."""
    exponent = math.floor(math.log2(factor))
    if 2.0**exponent == factor:
        exponent -= 1
    return _EPS[dtype] * 2.0**exponent


def relative(got, want) -> float:
    """The largest ``|got - want| / |want|`` (0 where they are equal, zeros included;
    ``inf`` where ``got`` is not a number)."""
    found = differences(got, want)
    if not np.isfinite(found).all():
        return math.inf
    return float(np.max(found, initial=0.0))


def differences(got, want) -> np.ndarray:
    """Each ``|got - want| / |want|``: 0 where they are equal (zeros included), ``inf``
    where they differ from a want of 0, ``nan`` where ``got`` is not a number."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(got == want, 0.0, np.abs(got - want) / np.abs(want))


# --------------------------------------------------------------------------- a table


class Table(NamedTuple):
    """A table judged: the ``Verdict``, the position its first row stands for, and each
    row's largest error (``inf`` where an entry is not a number)."""

    verdict: Verdict
    start: int
    errors: np.ndarray

    @property
    def positions(self) -> np.ndarray:
        """The position each row stands for."""
        return self.start + np.arange(self.errors.shape[0], dtype=np.int64)


def probe_positions(length: int) -> np.ndarray:
    """The positions at which a computed RoPE (a module or function called on positions,
    which holds no table) is judged, chosen here and never by an adapter: 0-63, 8 rows at
    100, 1000, 10,000 and 100,000 (those within ``length``) and 24 runs of 8 spread to the
    end."""
    top = max(int(length), 72)
    blocks = [(0, min(64, top))]
    blocks += [(p, 8) for p in (100, 1000, 10_000, 100_000) if p + 8 <= top]
    blocks += [(int(p), 8) for p in np.linspace(64, top - 8, 24)]
    return np.unique(np.concatenate([np.arange(o, o + n) for o, n in blocks]))


def _preview_rows(rows: int) -> np.ndarray:
    """The rows ``preview`` reads: the first 64, 64 spread geometrically, 64 evenly, the last."""
    if rows <= 3 * SAMPLE_ROWS:
        return np.arange(rows, dtype=np.int64)
    far = np.geomspace(SAMPLE_ROWS, rows - 1, SAMPLE_ROWS).astype(np.int64)
    even = np.linspace(SAMPLE_ROWS, rows - 1, SAMPLE_ROWS).astype(np.int64)
    return np.unique(np.concatenate([np.arange(SAMPLE_ROWS), far, even, [rows - 1]]))


def _exact(rotary, positions: np.ndarray, length: int, out: tuple | None = None):
    """The exact rows at ``positions`` (``out``: the planes of an earlier block, refilled
    where this one is a run of rows: no memory of its own for each block)."""
    n = positions.shape[0]
    if rotary.n_axes == 1 and n and bool((np.diff(positions) == 1).all()):
        # a run of rows (a held table's block): the filler's run, without a row's anchor each
        return table_block(rotary, length, int(positions[0]), n, "compact", F64, out)
    if rotary.n_axes > 1:  # a text run: every axis at the same position
        positions = np.broadcast_to(positions, (rotary.n_axes, positions.shape[0]))
    return rot.table_at(rotary, positions, "compact", F64, None, "auto", length)


class _Bounds:
    """The match bound, the per-pair drift rates and frequencies of one RoPE in one dtype."""

    def __init__(self, rotary, length: int, dtype: str):
        inv_freq, factor = rot.frequencies(rotary, length)
        self.factor = float(factor)
        self.inv_freq = np.asarray(inv_freq, np.float64)
        self.match = MATCH_ULPS * ulp(dtype, factor)
        turning = inv_freq > 0  # a zero frequency (proportional RoPE) has an exact angle: 0
        with np.errstate(divide="ignore"):
            spread = np.where(turning, np.log(inv_freq.max() / np.where(turning, inv_freq, 1)), 0)
        self.rates = {
            kind: factor * inv_freq * eps * (ANGLE_ULPS + ANGLE_LOG_ULPS * spread)
            for kind, eps in _ANGLE_EPS.items()
        }


class _Tally:
    """What the blocks of a table have shown so far."""

    def __init__(self, bounds: _Bounds, pairs: np.ndarray):
        self.within = {kind: True for kind in (MATCH, *_ANGLE_EPS)}
        self.worst: tuple = (
            -math.inf,
            None,
        )  # (how far past float32 angles, (p, pair, error, allowed))
        self.bad: tuple | None = None  # (position, column, value) of the first non-number
        self.radial: tuple | None = None  # (position, pair, magnitude) of the first not A
        self.radii = [math.inf, -math.inf]  # the least and largest radius of blocks past match
        self.scaled = True  # each entry, brought to the factor's radius, within float32 drift
        self.past_match: list = []  # the blocks past match: ``scaled`` is judged on them, later
        self.shifts: dict = {}  # each row's whole shift read off its slowest pair: rows
        self.rows = 0
        self.entries = 0
        # float32's and float64's drift rates at ``pairs``, as the block pass takes them
        self.rates = np.stack([bounds.rates["float32"][pairs], bounds.rates["float64"][pairs]])
        w = bounds.inv_freq[pairs] if pairs.size else np.zeros(0)
        turning = np.flatnonzero(w > 0)
        self.slow = int(turning[np.argmin(w[turning])]) if turning.size else None

    def add(self, bounds: _Bounds, positions, pairs, cos, sin, want, lo: int, row_max) -> None:
        """One block (``lo``: its first row in the table), in the backend's one pass over it
        (``tally.h`` or its NumPy twin); each row's largest error goes into ``row_max``."""
        n, m = cos.shape
        positions = np.ascontiguousarray(positions, np.int64)
        self.rows += n
        self.entries += n * m * (1 if sin is None else 2)
        want_cos, want_sin = (np.ascontiguousarray(plane, np.float64) for plane in want)
        counts = backends.DEFAULT.tally_block(
            cos, sin, want_cos, want_sin, pairs, positions, self.rates, bounds.match, row_max
        )
        top, bad, worst, worst_at, worst_error, beyond, square_min, square_max = counts
        within = top <= bounds.match  # fl(e - m) <= 0 exactly where e <= m; NaN: not within
        if bad >= 0 and self.bad is None:
            row, column = divmod(bad, m)
            values = [v for v in (cos, sin) if v is not None]
            value = next(v[row, column] for v in values if not np.isfinite(v[row, column]))
            self.bad = (int(positions[row]), int(column), float(value))
        self.within[MATCH] &= within
        if not within and self.within["float64"]:
            # a block within match is within every drift (e - m <= 0 <= p * rate); a
            # narrower drift already ruled out: nothing more to learn either way
            self.within["float64"] &= beyond <= 0
        if worst_at >= 0:
            self.within["float32"] &= worst <= 0
            if worst > self.worst[0]:
                row, column = divmod(worst_at, m)
                allowed = float(positions[row]) * float(self.rates[0, column])
                entry = (
                    int(positions[row]),
                    int(pairs[column]),
                    float(worst_error),
                    float(allowed + bounds.match),
                )
                self.worst = (worst, entry)
        if sin is not None and self.bad is None and n * m:
            self._angles(
                bounds, positions, pairs, cos, sin, want, within, lo, square_min, square_max
            )

    def _angles(self, bounds, positions, pairs, cos, sin, want, within, lo, low2, high2) -> None:
        """What only an angle's error does: keep each (cos, sin) at the attention factor's
        radius (within twice the match bound: entries within it are within that), and move
        each pair by its own amount (a shift by k positions moves every pair by k w_i: read
        off the slowest pair, where k w stays below pi). ``low2``, ``high2``: the block's
        least and largest cos^2 + sin^2."""
        if not within:
            # sqrt and fl(r - A) are monotone: the block's least and largest radius tell its
            # radii, and whether any entry is off the factor's radius
            low, high = math.sqrt(low2), math.sqrt(high2)
            self.radii = [min(self.radii[0], low), max(self.radii[1], high)]
            self.past_match.append((lo, positions))
            off = max(abs(low - bounds.factor), abs(high - bounds.factor)) > 2 * bounds.match
            if off and self.radial is None:
                cos, sin = _wide(cos), _wide(sin)
                with np.errstate(invalid="ignore", over="ignore"):
                    radius = cos * cos
                    radius += sin * sin
                    np.sqrt(radius, out=radius)
                    radius -= bounds.factor
                    row, column = np.argwhere(np.abs(radius, out=radius) > 2 * bounds.match)[0]
                found = float(np.hypot(cos[row, column], sin[row, column]))
                self.radial = (int(positions[row]), int(pairs[column]), found)
        if self.slow is None:
            return
        j, pair = self.slow, int(pairs[self.slow])
        want_cos, want_sin = want[0][:, pair], want[1][:, pair]
        turn = np.arctan2(
            sin[:, j] * want_cos - cos[:, j] * want_sin, cos[:, j] * want_cos + sin[:, j] * want_sin
        )
        turns = np.round(turn / bounds.inv_freq[pair])
        turns = turns[turns != 0]  # a shift of 0 is no shift: counted nowhere
        if not turns.size:
            return
        ks, counts = np.unique(turns, return_counts=True)
        for k, count in zip(ks.tolist(), counts.tolist()):
            self.shifts[int(k)] = self.shifts.get(int(k), 0) + count

    def rescale(self, bounds: _Bounds, rotary, read, pairs, length: int) -> None:
        """``scaled``, judged (only a verdict on the radius asks it) on the blocks past
        match, read again: whether every entry, brought to the factor's radius, drifts at
        most."""
        for _, chunk in self.past_match:
            if not self.scaled:
                return
            cos, sin = (_wide(rows) for rows in _read_block(read, chunk, pairs.shape[0]))
            want = _exact(rotary, chunk, length)
            with np.errstate(invalid="ignore", over="ignore"):
                radius = cos * cos
                radius += sin * sin
                np.sqrt(radius, out=radius)
            self.scaled = _scaled_within(bounds, chunk, pairs, cos, sin, want, radius)

    def shift(self) -> int | None:
        """The whole shift most rows show, where more than half of them show the same one."""
        if not self.shifts:
            return None
        k, count = max(self.shifts.items(), key=lambda item: item[1])
        return k if 2 * count > self.rows else None


def _scaled_within(bounds: _Bounds, positions, pairs, cos, sin, want, radius) -> bool:
    """Whether every entry, scaled to the attention factor's radius, is within float32
    angles' drift: a table whose only fault is its factor."""
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = bounds.factor / radius
        error = np.abs(cos * scale - want[0][:, pairs])
        np.fmax(error, np.abs(sin * scale - want[1][:, pairs]), out=error)
    allowed = positions.astype(np.float64)[:, None] * bounds.rates["float32"][pairs][None, :]
    return bool((error <= allowed + bounds.match).all())


def _blocks(rows: int, columns: int, start: int):
    """The positions of a table's rows ``start .. start + rows - 1``, a block at a time."""
    step = max(1, BLOCK_ENTRIES // max(columns, 1))
    for lo in range(0, rows, step):
        yield lo, start + np.arange(lo, min(rows, lo + step), dtype=np.int64)


def _read_block(read: Callable, chunk: np.ndarray, columns: int) -> tuple:
    cos, sin = read(chunk)
    cos = _kept(np.asarray(cos))
    sin = None if sin is None else _kept(np.asarray(sin))
    if sin is not None and sin.dtype != cos.dtype:  # float32 beside float64: both widened
        cos, sin = _wide(cos), _wide(sin)
    if not (
        _rows_in_order(cos)
        and (sin is None or (_rows_in_order(sin) and sin.strides == cos.strides))
    ):
        # contiguous: every pass over a block after this one runs at memory speed (rows in
        # order, as the halves of one [cos | sin] block are, are read in place)
        cos = np.ascontiguousarray(cos)
        sin = None if sin is None else np.ascontiguousarray(sin)
    for name, values in (("cos", cos), ("sin", sin)):
        if values is not None and values.shape != (chunk.shape[0], columns):
            raise ValueError(
                f"the engine's {name} rows are {values.shape}, not ({chunk.shape[0]}, {columns})"
            )
    return cos, sin


def judge_table(rotary, read: Callable, rows: int, pairs, dtype: str, length: int, start=0):
    """The ``Table`` of a table an engine holds: **every** row of it, ``read(positions)``
    giving the rows standing for positions ``start .. start + rows - 1`` (``(cos, sin)``
    arrays of ``(rows, columns)``, float64 or float32, any other dtype widened to float64;
    sin may be ``None``; column ``j`` holds pair ``pairs[j]``), against the exact table of
    ``rotary`` at the current length ``length``, a block at a time. There is no way to judge
    a subset: a verdict's words never claim more than was compared, and this compares
    everything held."""
    rows = bounded("the table's rows", rows, MAX_POSITION, 1)
    start = bounded("the table's first position", start, MAX_POSITION)
    return _judge(rotary, read, rows, pairs, dtype, length, start, held=True)


def judge_computed(rotary, read: Callable, pairs, dtype: str, length: int) -> Table:
    """The ``Table`` of a RoPE an engine computes on demand (a module called on positions,
    which holds no table): judged at the core's ``probe_positions(length)``, and said so
    (the verdict counts the entries compared; none are held)."""
    return _judge(rotary, read, probe_positions(length), pairs, dtype, length, 0, held=False)


def preview(rotary, read: Callable, rows: int, pairs, dtype: str, length: int, start=0):
    """``(verdict word, largest error)`` of a few hundred rows of a table (the first 64, 64
    spread geometrically, 64 evenly, the last): only to rank readings of a table (layouts,
    offsets, widths, dtypes) before one is judged whole; never a verdict."""
    rows = bounded("the table's rows", rows, MAX_POSITION, 1)
    positions = start + _preview_rows(rows)
    table = _judge(rotary, read, positions, pairs, dtype, length, 0, held=False)
    largest = table.errors.max(initial=0.0)
    return table.verdict.verdict, float(largest) if np.isfinite(table.errors).all() else math.inf


def _judge(rotary, read, rows, pairs, dtype: str, length: int, start: int, held: bool) -> Table:
    pairs = np.ascontiguousarray(pairs, np.intp)
    bounds = _Bounds(rotary, length, dtype)
    tally = _Tally(bounds, pairs)
    if held:
        blocks = list(_blocks(rows, pairs.shape[0], start))
        count = rows
    else:  # the probe's positions, in blocks
        step = max(1, BLOCK_ENTRIES // max(pairs.shape[0], 1))
        blocks = [(lo, rows[lo : lo + step]) for lo in range(0, rows.shape[0], step)]
        count = rows.shape[0]
    errors = np.empty(count)
    want = None
    for lo, chunk in blocks:
        cos, sin = _read_block(read, chunk, pairs.shape[0])
        want = _exact(rotary, chunk, length, want)
        tally.add(bounds, chunk, pairs, cos, sin, want, lo, errors[lo : lo + chunk.shape[0]])
    low, high = tally.radii
    if tally.radial is not None and tally.bad is None and high - low <= 4 * bounds.match:
        tally.rescale(bounds, rotary, read, pairs, length)  # only the radius verdict asks
    held_entries = tally.entries if held else None
    positions = (start + np.arange(count)) if held else rows
    verdict = _table_verdict(tally, bounds, positions, errors, dtype, held_entries, rotary)
    if verdict.verdict != MATCH and tally.bad is None and (k := tally.shift()) is not None:
        verdict = _shifted(rotary, read, blocks, pairs, dtype, length, k, verdict)
    return Table(verdict, start, errors)


def _shifted(rotary, read, blocks, pairs, dtype, length, k: int, verdict: Verdict) -> Verdict:
    """A table whose rows read as the exact table k positions on (off by k: every pair moved
    by k w_i, which float32 angles at far positions can hide within their drift bound): a
    mismatch for that reason where every entry is nearer the shifted table than half of its
    largest error here."""
    largest = 0.0
    for _, chunk in blocks:
        cos, sin = _read_block(read, chunk, pairs.shape[0])
        largest = max(largest, _largest_error(cos, sin, _exact(rotary, chunk + k, length), pairs))
    if not largest < 0.5 * (verdict.largest or 0.0):
        return verdict
    found = finding("shifted", engine=k, error=largest)
    return verdict._replace(verdict=MISMATCH, findings=(found,), drift=None)


def _kept(values: np.ndarray) -> np.ndarray:
    """An engine's rows as the block pass reads them: float64, or float32 as they are (it
    widens them itself, exactly); any other dtype widened to float64 here."""
    dtype = values.dtype if values.dtype in (np.float32, np.float64) else np.float64
    return values.astype(dtype, copy=False)


def _wide(values: np.ndarray) -> np.ndarray:
    """Rows as float64 (exactly), for the few passes the block pass does not make."""
    return values.astype(np.float64, copy=False)


def _rows_in_order(values: np.ndarray) -> bool:
    """Whether ``values`` is 2-D with each row contiguous, rows in order at least a row apart."""
    if values.ndim != 2 or values.flags.c_contiguous:
        return values.flags.c_contiguous
    outer, inner = values.strides
    return inner == values.itemsize and outer >= inner * values.shape[1] and outer % inner == 0


def _largest_error(cos, sin, want, pairs) -> float:
    """A block's largest error against ``want`` (NaN where an entry is not a number)."""
    want_cos, want_sin = (np.ascontiguousarray(plane, np.float64) for plane in want)
    n = cos.shape[0]
    no_drift = np.zeros((1, pairs.shape[0]))  # no drift bound is asked of these rows
    counts = backends.DEFAULT.tally_block(
        cos, sin, want_cos, want_sin, pairs, np.zeros(n, np.int64), no_drift, 0.0, np.empty(n)
    )
    return float(counts[0])


def _uniform_radius(tally: _Tally, bounds: _Bounds) -> float | None:
    """The one radius every entry past the match bound has, where it is not the attention
    factor and accounts for the whole error (a table scaled by another factor, at any
    position: brought back to the factor's radius, it drifts at most), else ``None``."""
    low, high = tally.radii
    if tally.radial is None or not tally.scaled or not high - low <= 4 * bounds.match:
        return None
    return float(f"{(low + high) / 2:.6g}")


def _table_verdict(
    tally: _Tally, bounds: _Bounds, positions, errors, dtype, held, rotary
) -> Verdict:
    common: dict[str, Any] = dict(
        dtype=dtype,
        decades=decades(positions, errors),
        kind="table",
        compared=tally.entries,
        held=held,
    )
    if tally.bad is not None:
        position, column, value = tally.bad
        what = f"the entry at position {position:,}, column {column}"
        return Verdict(
            MISMATCH, (finding("not_a_number", what=what, engine=number(value)),), None, **common
        )
    largest = float(errors.max(initial=0.0))
    worst = None
    if tally.worst[1] is not None:
        position, _, error, allowed = tally.worst[1]
        worst = (position, error, allowed)
    if tally.within[MATCH]:
        return Verdict(MATCH, (), bounds.match, largest=largest, **common)
    for kind in _ANGLE_EPS:
        if tally.within[kind] and tally.radial is None:
            return Verdict(
                DRIFT, (), bounds.match, largest=largest, drift=kind, worst=worst, **common
            )
    if (factor := _uniform_radius(tally, bounds)) is not None:  # every entry scaled alike
        title_ = title(rotary)
        found = finding(
            "attention_factor", title=title_, engine=number(factor), config=number(bounds.factor)
        )
        return Verdict(MISMATCH, (found,), bounds.match, largest=largest, worst=worst, **common)
    if tally.radial is not None and any(tally.within[kind] for kind in _ANGLE_EPS):
        position, pair, radius = tally.radial
        found = finding(
            "radius",
            position=position,
            pair=pair,
            engine=number(radius),
            config=number(bounds.factor),
        )
        return Verdict(MISMATCH, (found,), bounds.match, largest=largest, worst=worst, **common)
    assert worst is not None  # some entry is past float32 angles: the worst of them
    found = finding("table", position=worst[0], engine=worst[1], config=worst[2])
    return Verdict(MISMATCH, (found,), bounds.match, largest=largest, worst=worst, **common)


def decades(positions: np.ndarray, errors: np.ndarray) -> tuple:
    """``(first position, last position, largest error)`` of each position decade (in
    place where the positions are already in order, as a held table's are: no copy)."""
    if positions.size > 1 and not (positions[1:] > positions[:-1]).all():
        order = np.argsort(positions, kind="stable")
        positions, errors = positions[order], errors[order]
    found, lo = [], 0
    last = int(positions[-1]) if positions.size else -1
    while lo <= last:
        hi = 10 if lo == 0 else lo * 10
        a, b = np.searchsorted(positions, [lo, hi])
        if b > a:
            found.append((int(positions[a]), int(positions[b - 1]), float(errors[a:b].max())))
        lo = hi
    return tuple(found)


# --------------------------------------------------------------------------- parameters


class Held(NamedTuple):
    """What an engine holds for one kind of layer, as its adapter extracted it; ``None``
    where the engine does not say. ``inv_freq`` per rotated pair; ``fitted``: fitted from a
    table's angles (else stored or read as the engine reads them)."""

    width: int | None = None
    rotation: str | None = None
    rotation_detail: str = ""
    inv_freq: np.ndarray | None = None
    attention_factor: float | None = None
    softmax_scale: float | None = None
    base: float | None = None
    fitted: bool = False
    values: tuple = ()  # (what, value): other parameters the engine holds, each > 0 or absent
    fit_tolerance: float = FIT_TOLERANCE  # what fitted values can tell (float64 angles: more)


def _tolerance(held: Held) -> float:
    """The relative tolerance of held values: what a fit can tell, else float32 parameters'."""
    return held.fit_tolerance if held.fitted else PARAMETER_TOLERANCE


def parameters_verdict(findings) -> Verdict:
    """The verdict of parameters judged (``judge_parameters``' findings, an engine's or a
    file's): a mismatch for its reasons, else a match within ``PARAMETER_TOLERANCE``."""
    findings = tuple(findings)
    if findings:
        return mismatch(findings, kind="parameters")
    return Verdict(MATCH, (), PARAMETER_TOLERANCE, kind="parameters")


def _not_numbers(held: Held, want=None) -> list:
    """A mismatch by itself: a base, factor or frequency that is not a positive number (a
    frequency of 0 is one where the config's ``want`` is 0: a pair left unrotated)."""
    found = []
    for what, value in (
        ("the base", held.base),
        ("the attention factor", held.attention_factor),
        ("the softmax scale", held.softmax_scale),
        *held.values,
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            found.append(finding("not_a_number", what=what, engine=number(value)))
    if held.inv_freq is not None:
        values = np.asarray(held.inv_freq, np.float64)
        unrotated = values == 0
        if want is not None and np.shape(want) == values.shape:
            unrotated &= np.asarray(want) == 0
        else:
            unrotated[:] = False
        bad = np.flatnonzero(~(np.isfinite(values) & ((values > 0) | unrotated)))
        if bad.size:
            what = f"the inverse frequency of pair {int(bad[0])}"
            found.append(finding("not_a_number", what=what, engine=number(values[bad[0]])))
    return found


def _unturned(got, want, length: int | None):
    """``got`` with 0 where the config's frequency is 0 (proportional RoPE's pairs left
    unrotated) and the engine's turns by at most ``2**-24`` up to position ``length - 1``: a
    float32 cos of 1 and a sin below float32's rounding of 1 (llama.cpp writes such pairs as
    factors of ``1e30``). Without a length, nothing is taken as 0."""
    got = np.array(got, np.float64)
    if length is not None and got.shape == np.shape(want):
        with np.errstate(invalid="ignore"):
            got[(np.asarray(want) == 0) & (np.abs(got) * (length - 1) <= 2.0**-24)] = 0.0
    return got


def judge_parameters(spec, held: Held, length: int | None, explained: Callable | None = None):
    """``(findings, largest relative frequency difference)`` of ``held`` against ``spec`` at
    the current length ``length``: width, rotation, values that are not numbers, then the
    frequencies (their reasons from ``explained(inv_freq)`` where the adapter knows the
    engine's form, else the core's), the attention factor and the softmax scale."""
    found: list = []
    if held.width is not None and held.width != spec.head_dim:
        found.append(finding("rotary_width", engine=held.width, config=spec.head_dim))
    if held.rotation is not None and spec.rotation is not None and held.rotation != spec.rotation:
        detail = held.rotation_detail
        found.append(finding("rotation", engine=held.rotation, config=spec.rotation, detail=detail))
    inv_freq, factor = spec.frequencies(length)
    broken = _not_numbers(held, inv_freq)
    found += broken
    if found and (broken or held.width not in (None, spec.head_dim)):
        return found, None
    tolerance = _tolerance(held)
    largest = None
    if held.inv_freq is not None:
        largest = relative(
            _unturned(held.inv_freq, inv_freq, length or spec.max_position_embeddings), inv_freq
        )
        if largest > tolerance:
            found += (explained(inv_freq) if explained else []) or explain_frequencies(
                spec, held, inv_freq, largest
            )
    if held.attention_factor is not None and relative(held.attention_factor, factor) > tolerance:
        found.append(
            finding(
                "attention_factor",
                title=title(spec),
                engine=number(held.attention_factor),
                config=number(factor),
            )
        )
    if held.softmax_scale is not None and relative(held.softmax_scale, spec.softmax_scale) > (
        tolerance
    ):
        found.append(
            finding(
                "softmax_scale",
                engine=number(held.softmax_scale),
                config=number(spec.softmax_scale),
            )
        )
    return found, largest


def attention_finding(spec, got: float, want: float, causes: tuple = ()) -> Finding:
    """The attention factor reason, with the adapter's causes (``_EVIDENCE`` codes)."""
    return finding(
        "attention_factor",
        title=title(spec),
        engine=number(got),
        config=number(want),
        evidence=causes,
    )


def explain_frequencies(spec, held: Held, inv_freq, largest: float) -> list:
    """Why frequencies differ from the config's, from the frequencies alone: the base they
    give (``held.base``, else fitted from pairs 0 and 1), the scaling not applied, every
    frequency divided alike; else by how much."""
    got = np.asarray(held.inv_freq, np.float64)
    tolerance = _tolerance(held)
    width = 2 * got.shape[0]
    base, found = _base_finding(spec, held, got, inv_freq, tolerance)
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    held_at = got != 0  # a pair held at 0 (unrotated, as Gemma 4's) tells no factor
    if base is not None and base > 1 and held_at.any():
        ratio = (base ** (-np.arange(0, width, 2) / width))[held_at] / got[held_at]
        if relative(ratio, np.ones_like(ratio)) <= tolerance and not record.plain:
            found.append(finding("scaling_not_applied", title=title(spec)))
            return found
        if relative(ratio, np.full_like(ratio, ratio[0])) <= tolerance:
            if relative(ratio[0], 1.0) > tolerance:
                found.append(finding("uniform_factor", engine=number(float(ratio[0]))))
            return found
    if not found or held.base is None:
        off = differences(got, inv_freq)
        pair = int(np.argmax(np.where(np.isnan(off), np.inf, off)))
        found.append(finding("frequencies", engine=f"{largest:.3g}", pair=pair))
    return found


def _base_finding(spec, held: Held, got, inv_freq, tolerance: float) -> tuple:
    """``(base, findings)``: the base the held frequencies give (``held.base``, else fitted
    from pairs 0 and 1; the config's where they agree within what they can tell), and the
    "base" finding where it is neither the config's nor the one its frequencies give."""
    width = 2 * got.shape[0]
    base = held.base
    if base is None and not math.isnan(fitted := _base_of(got, width)):
        base = float(f"{fitted:.5g}") if held.fitted else fitted  # 5 digits of float32 angles
    if base is None or spec.base is None:
        return base, []
    # a base fitted from two float32 pairs carries their rounding raised to the width / 2
    single = not held.fitted and held.base is None and bool(np.all(got.astype(np.float32) == got))
    close = tolerance + (width * 2.0**-24 if single else 0.0)
    if relative(base, spec.base) <= close:
        return spec.base, []  # the config's, within what the values held can tell
    if relative(base, _base_of(inv_freq, width)) <= close:  # the base its frequencies give
        return base, []
    return base, [finding("base", engine=number(base), config=number(spec.base))]


def _base_of(inv_freq, width: int) -> float:
    """The base two frequencies give, pairs 0 and 1 (of the config's: its ``rope_theta``
    folded with a type's scaling of the base, HunYuan's NTK-alpha); NaN where they do not
    fall."""
    want = np.asarray(inv_freq, np.float64)
    if want.shape[0] > 1 and want[0] > want[1] > 0:
        return float((want[0] / want[1]) ** (width / 2))
    return math.nan


def frequencies_text(largest: float | None) -> str:
    """How far frequencies read from parameters are from the config's, in words."""
    if largest is None:
        return "not compared (the widths differ, or a value is not a number)"
    if largest > PARAMETER_TOLERANCE:
        return f"off the config's by up to {largest:.2g} (relative)"
    return f"within {largest:.2g} of the config's (relative)"


FIT_TOLERANCE_FLOAT64 = 1e-9  # float64 angles: atan2's 1e-16 over w > 1e-7, from position 1 on


def fit(read: Callable, end: int | None, dtype: str = "float32") -> Held | None:
    """What a table's rows at positions 0, 1, 2, 4, ... (up to ``end`` and ``FIT_TOP``)
    show: the attention factor (row 0's cos, where every pair agrees) and each pair's
    inverse frequency (position 1's angle, each doubling fixing the next one's turns);
    ``None`` where the table has no positions 0 and 1 or no sin. ``read`` as
    :func:`judge_table`'s, its columns one per pair."""
    top = FIT_TOP if end is None else min(FIT_TOP, end - 1)
    if top < 1:
        return None
    positions = [0, 1]
    while positions[-1] * 2 <= top:
        positions.append(positions[-1] * 2)
    cos, sin = read(np.array(positions, np.int64))
    if sin is None:
        return None
    cos, sin = _wide(np.asarray(cos)), _wide(np.asarray(sin))  # float32 atan2 would err 1e-4
    if not (np.isfinite(cos).all() and np.isfinite(sin).all()):
        return None
    factor = float(np.mean(cos[0]))
    agree = factor > 0 and relative(cos[0], np.full_like(cos[0], factor)) <= FACTOR_TOLERANCE
    theta = np.arctan2(sin[1], cos[1])
    for k, position in enumerate(positions[2:], start=2):
        angle = np.arctan2(sin[k], cos[k])
        turns = np.round((theta * position - angle) / (2 * np.pi))
        theta = (angle + 2 * np.pi * turns) / position
    tolerance = FIT_TOLERANCE_FLOAT64 if dtype == "float64" else FIT_TOLERANCE
    return Held(
        inv_freq=theta,
        attention_factor=factor if agree else None,
        fitted=True,
        fit_tolerance=tolerance,
    )
