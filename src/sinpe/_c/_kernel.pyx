# cython: language_level=3
# boundscheck, wraparound, cdivision and initializedcheck come from setup.py, which turns the
# checks on for SINPE_DEBUG_BUILD=1 (a file-level directive here would override it).
"""The compiled twin of ``sinpe._twin``: the same names, arguments and results (same bits),
the work in the C headers beside this file. Glue only:

- ``exact_cos_sin(positions, table, out, threads)``: the exact evaluator (``exact.h``);
- ``prepare_frequency_table(w, table)``: its per-frequency constants (``turns.h``);
- ``log_dd(base)``, ``power_vector(out, first, log_hi, log_lo, numerator, denominator,
  scale)``:
  the frequency rule (``frequencies.h``);
- ``Plan(grid, table, segments, width, planes, pad_col, factor)`` and
  ``fill(plan, out0, out1, anchors, values, codes, start, origin, threads)``: the one filler (``fill.h``,
  whose header has the scheme and its error bound; the rotation is ``rotate.h``);
- ``round_half(values, out)``: the float16/bfloat16 converter of the filler's stores.
- ``correctly_rounded(p, w, factor, dtype)``, ``undecided()``, ``undecided_log()``: the
  correctly rounding evaluator of narrow values (``correct.h``), how many the filler could
  not decide and the inputs of the last of them;
- ``tally_block(cos, sin, want_cos, want_sin, cols, positions, rates, match, row_max)``:
  the verdict core's one pass over a block of a held table and its exact rows (``tally.h``).

Arguments are trusted: ``sinpe._tables`` builds the plans and checks every array (shape,
dtype, C order, writable). Everything is read and written through raw pointers (acquiring a
typed memoryview costs ~1 us per call, a quarter of a small table's time); debug builds
(``SINPE_DEBUG_BUILD=1``) check every argument those pointers depend on.
"""

cimport numpy as cnp
import numpy as np
from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint16_t, uintptr_t

import threading

cnp.import_array()


cdef extern from "Python.h":
    # declared without Cython's `except -1`: the exception it sets must stay set (it is the
    # call's to raise), not be reported as unraisable by the check below
    int PyErr_CheckSignals() noexcept

cdef extern from "config.h":
    int SINPE_DEBUG
    int SINPE_C_ASSERTS
    int isa_level "sinpe_isa"() noexcept nogil
    int cpu_isa "sinpe_cpu_isa"() noexcept nogil
    int set_isa "sinpe_set_isa"(int wanted) noexcept nogil
    int SINPE_AVX512_EMULATED

cdef extern from "constants.h":
    int GRID_ROWS "SINPE_GRID_ROWS"
    int GRID_SPAN_BITS "SINPE_GRID_SPAN_BITS"
    int SEG_FIELDS "SINPE_SEG_FIELDS"
    int SEG_COUNT "SINPE_SEG_COUNT"
    int SEG_AXIS "SINPE_SEG_AXIS"
    int SEG_COS_PLANE "SINPE_SEG_COS_PLANE"
    int SEG_SIN_PLANE "SINPE_SEG_SIN_PLANE"
    int KIND_F64 "SINPE_KIND_F64"
    int KIND_F32 "SINPE_KIND_F32"
    int KIND_F16 "SINPE_KIND_F16"
    int KIND_BF16 "SINPE_KIND_BF16"

cdef extern from "team.h":
    int SINPE_THREADS
    ctypedef void (*work_fn "sinpe_work_fn")(void*, Py_ssize_t, double*) noexcept nogil
    ctypedef int (*check_fn "sinpe_check_fn")() noexcept nogil
    int team_run "sinpe_team_run"(int threads, Py_ssize_t n_chunks, work_fn work,
                                  void* context, Py_ssize_t scratch_doubles,
                                  uintptr_t placement, check_fn check) noexcept nogil
    void team_init "sinpe_team_init"() noexcept nogil
    int team_helpers "sinpe_team_helpers"() noexcept nogil
    int threadpool_limit "sinpe_threadpool_get_num_threads"() noexcept nogil

cdef extern from "fill.h":
    void exact_rows "sinpe_exact_cos_sin"(const double* p, Py_ssize_t n_p, const double* table,
                                          Py_ssize_t n_w, double* out) noexcept nogil

cdef extern from "dd.h":
    ctypedef struct dd "sinpe__dd":
        double hi
        double lo

cdef extern from "frequencies.h":
    dd log_dd_c "sinpe_log_dd"(double base) noexcept nogil
    void power_vector_c "sinpe_power_vector"(
        Py_ssize_t first, Py_ssize_t count, double log_hi, double log_lo, double numerator,
        double denominator, double scale, double* out) noexcept nogil

cdef extern from "turns.h":
    int TURNS_EXACT "SINPE_TURNS_EXACT"
    Py_ssize_t prepare_frequency_table_c "sinpe_prepare_frequency_table"(
        const double* w, Py_ssize_t n, double* table, unsigned char* status) noexcept nogil

cdef extern from "fill.h":
    ctypedef struct place "sinpe_place":
        Py_ssize_t plane, col, step, dup, count
    ctypedef struct plan_t "sinpe_plan":
        const double* grid
        const double* table
        Py_ssize_t h
        const int64_t* segments
        const int* shapes
        Py_ssize_t n_segments
        Py_ssize_t max_lanes
        Py_ssize_t width
        Py_ssize_t pad_col
        double factor
    ctypedef struct fill_job "sinpe_fill_job":
        const plan_t* plan
        char* planes[2]
        int kind
        int isa
        int unchecked
        size_t itemsize
        Py_ssize_t n_rows
        const double* anchors
        const double* values
        double origin
        const int64_t* codes
        int64_t start
    int shape_of "sinpe_shape_of"(const place* c, const place* s) noexcept nogil
    int fill_c "sinpe_fill"(fill_job* job, int threads, check_fn check) noexcept nogil
    void round_half_c "sinpe_round_half"(int isa, uint16_t* out, const double* values,
                                         Py_ssize_t n, int f16) noexcept nogil
    int correct_cos_sin_c "sinpe_correct_cos_sin"(double p, double w, double factor, int kind,
                                                  double* c, double* s) noexcept nogil
    long long undecided_c "sinpe__undecided"
    int exact_tiny_c "sinpe__cr_exact_tiny"
    int UNDECIDED_RING "SINPE_UNDECIDED_RING"
    ctypedef struct undecided_entry "sinpe_undecided_entry":
        double p
        double w
        double factor
        int kind
        int isa
    undecided_entry* undecided_ring_c "sinpe__undecided_ring"

cdef extern from "tally.h":
    ctypedef struct tally_t "sinpe_tally":
        double top
        Py_ssize_t bad
        double worst
        Py_ssize_t worst_at
        double worst_error
        double other
        double square_min
        double square_max
    int tally_block_c "sinpe_tally_block"(
        const void* cos, const void* sin, int narrow, const double* want_cos,
        const double* want_sin, Py_ssize_t want_width, const Py_ssize_t* cols,
        const int64_t* positions, const double* rates, int kinds, double match, Py_ssize_t n,
        Py_ssize_t m, Py_ssize_t stride, double* row_max, tally_t* t) noexcept nogil


NAME = "cython"
# The thread runtime (team.h): sinpe's own pool of POSIX or Windows threads, or none.
THREADS = ("none", "posix threads", "windows threads")[SINPE_THREADS]
team_init()
# The instruction-set level every loop runs (config.h: one probe, asked here at import,
# before any thread can fill a table, so the kernel has no shared mutable state; it is
# declared freethreading_compatible in setup.py). Every level gives the same bits.
# SINPE_ISA=avx512bf16|avx512|avx2|sse2|c asks for a lower one (or auto); asking for one this
# CPU or build lacks warns once, here, and runs the best available. avx512bf16 is avx512 with
# AVX512_BF16's conversion in the bfloat16 stores.
ISA_NAMES = ("c", "sse2", "avx2", "avx512", "avx512bf16")
EMULATED = bool(SINPE_AVX512_EMULATED)  # avx512 on SIMDe's portable intrinsics (tests)
CPU_ISA = ISA_NAMES[cpu_isa()]  # the best this CPU and build run


def _choose_isa():
    import os
    import warnings

    asked = os.environ.get("SINPE_ISA", "").strip().lower()
    if asked in ("", "auto"):
        level = set_isa(-1)
        why = "the best this CPU and build run" + (" (emulated by SIMDe)" if EMULATED else "")
        return level, why
    if asked not in ISA_NAMES:
        warnings.warn(
            f"SINPE_ISA={asked!r} is not one of auto, {', '.join(reversed(ISA_NAMES))}: "
            f"running {CPU_ISA}, the best this CPU and build run",
            RuntimeWarning,
            stacklevel=2,
        )
        return set_isa(-1), f"SINPE_ISA={asked!r} is not an instruction set; the best available"
    level = set_isa(ISA_NAMES.index(asked))
    if ISA_NAMES[level] != asked:
        warnings.warn(
            f"SINPE_ISA={asked}: this CPU or build lacks {asked}; running {ISA_NAMES[level]}, "
            "the best available",
            RuntimeWarning,
            stacklevel=2,
        )
        return level, f"SINPE_ISA={asked} asked, which this CPU or build lacks; the best available"
    return level, f"SINPE_ISA={asked}"


cdef int ISA_LEVEL
_level, ISA_REASON = _choose_isa()
ISA_LEVEL = isa_level()  # what set_isa settled on, as every loop reads it
assert ISA_LEVEL == _level
ISA = ISA_NAMES[ISA_LEVEL]


def _set_isa(name):
    """Tests only, while no fill runs: run at instruction set `name` (or the best below it
    that this CPU has); returns the name in force before. ``ISA`` follows."""
    global ISA_LEVEL, ISA
    before = ISA
    ISA_LEVEL = set_isa(ISA_NAMES.index(name))
    ISA = ISA_NAMES[ISA_LEVEL]
    return before
DEBUG = bool(SINPE_DEBUG)  # a SINPE_DEBUG_BUILD=1 build: trusted arguments are checked too
C_ASSERTS = bool(SINPE_C_ASSERTS)  # C assert() live (NDEBUG undefined): debug builds only
_TABLE_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _bounds_checked():
    """True when this module was compiled with boundscheck on: index one past the end of a
    one-element view (of a two-element buffer, so the read is harmless either way)."""
    cdef double[::1] view = cnp.PyArray_ZEROS(1, [2], cnp.NPY_DOUBLE, 0)[:1]
    cdef Py_ssize_t i = 1
    try:
        view[i]
    except IndexError:
        return True
    return False


BOUNDS_CHECKED = _bounds_checked()


def threadpool_threads():
    """The limit threadpoolctl set through sinpe's controller (process-wide), or 0."""
    return threadpool_limit()


def helpers():
    """How many helper threads this process has made so far (they sleep between jobs)."""
    return team_helpers()


# Signals are delivered to the main thread: only there does a long call stop to run the
# handlers (about every 20 ms, team.h), with the GIL taken for that moment only.
cdef unsigned long MAIN_THREAD = threading.main_thread().ident


cdef int check_signals() noexcept nogil:
    with gil:
        return PyErr_CheckSignals() != 0


cdef inline check_fn signal_check():
    if threading.get_ident() == MAIN_THREAD:
        return check_signals
    return NULL


cdef int raise_pending() except -1:
    """After a check that ran a handler which raised: that exception, now ours."""
    return -1


cdef inline int element_kind(cnp.ndarray out):
    cdef int itemsize = cnp.PyArray_ITEMSIZE(out)
    if itemsize == 8:
        return KIND_F64
    if itemsize == 4:
        return KIND_F32
    return KIND_F16 if cnp.PyArray_TYPE(out) == cnp.NPY_FLOAT16 else KIND_BF16


# --------------------------------------------------------------------------- the evaluator

cdef struct ExactJob:
    const double* p
    const double* table
    double* out
    Py_ssize_t n, n_w, rows


cdef void exact_chunk(void* context, Py_ssize_t chunk, double* scratch) noexcept nogil:
    cdef ExactJob* job = <ExactJob*>context
    cdef Py_ssize_t first = chunk * job.rows
    exact_rows(job.p + first, min(job.rows, job.n - first), job.table, job.n_w,
               job.out + first * 2 * job.n_w)


def exact_cos_sin(cnp.ndarray positions, cnp.ndarray table, cnp.ndarray out, int threads):
    """``out[r, 0, i]``, ``out[r, 1, i]`` = cos, sin of ``positions[r] * w[i]`` (``exact.h``)
    for the columns with ``|w| < 2**32`` (the others are left untouched).

    ``positions`` 1-D float64, ``|p| < 2**53``; ``table`` from ``prepare_frequency_table``,
    ``(8, n_w)``; ``out`` ``(n, 2, n_w)`` float64; all C-contiguous. Rows are cut into
    chunks of about 2048 pairs, run on ``threads`` threads (``team.h``).
    """
    cdef ExactJob job
    if SINPE_DEBUG:
        _check_exact_arguments(positions, table, out, threads)
    job.p = <const double*>cnp.PyArray_DATA(positions)
    job.table = <const double*>cnp.PyArray_DATA(table)
    job.out = <double*>cnp.PyArray_DATA(out)
    job.n = cnp.PyArray_DIM(positions, 0)
    job.n_w = cnp.PyArray_DIM(table, 1)
    job.rows = max(1, 2048 // max(job.n_w, 1))
    if job.n == 0 or job.n_w == 0:
        return
    cdef check_fn check = signal_check()
    cdef int status
    with nogil:
        status = team_run(threads, (job.n + job.rows - 1) // job.rows, exact_chunk, &job, 0, 0,
                          check)
    if status == -2:
        raise_pending()


def _check_exact_arguments(positions, table, out, threads):
    """Debug builds only: everything ``exact_cos_sin`` trusts."""
    fits = (
        positions.dtype == "float64" and positions.ndim == 1 and positions.flags.c_contiguous
        and table.dtype == "float64" and table.ndim == 2 and table.shape[0] == 8
        and table.flags.c_contiguous and out.dtype == "float64" and out.flags.c_contiguous
        and out.flags.writeable and out.shape == (positions.shape[0], 2, table.shape[1])
        and threads >= 1
    )
    if not fits:
        raise ValueError("debug: exact_cos_sin arguments do not fit")


def prepare_frequency_table(cnp.ndarray w, cnp.ndarray table):
    """Fill ``table`` (8, n) float64 C-contiguous for the frequencies ``w`` (n,) float64
    C-contiguous (``turns.h``); returns the indices of the columns left to the big-integer
    path (``sinpe._twin.turns.exact_columns``), or None."""
    if not (w.dtype == np.float64 and w.ndim == 1 and w.flags.c_contiguous
            and table.dtype == np.float64 and table.ndim == 2 and table.flags.c_contiguous
            and table.flags.writeable and table.shape[0] == 8
            and table.shape[1] == w.shape[0]):
        raise ValueError("prepare_frequency_table needs w (n,) and table (8, n), float64, "
                         "C-contiguous")
    cdef Py_ssize_t n = cnp.PyArray_DIM(w, 0), exact
    cdef cnp.ndarray status = np.empty(n, dtype=np.uint8)
    cdef unsigned char* status_data = <unsigned char*>cnp.PyArray_DATA(status)
    with nogil:
        exact = prepare_frequency_table_c(
            <const double*>cnp.PyArray_DATA(w), n, <double*>cnp.PyArray_DATA(table),
            status_data)
    if exact == 0:
        return None
    return np.flatnonzero(status == TURNS_EXACT)


# --------------------------------------------------------------------------- frequencies

# Frequency indices stay below this: first + count and every block start fit in a ptrdiff_t.
cdef Py_ssize_t MAX_INDEX = (<Py_ssize_t>1) << 62

def log_dd(double base):
    """``log(base)`` as a double-double ``(hi, lo)``; a base that is not finite and > 0 is
    refused (its logarithm is not a real number, or not a finite one)."""
    if not (0.0 < base < INFINITY):
        raise ValueError(f"log_dd needs a finite base > 0, got {base!r}")
    cdef dd result = log_dd_c(base)
    return result.hi, result.lo


def power_vector(cnp.ndarray out, Py_ssize_t first, double log_hi, double log_lo,
                 double numerator, double denominator, double scale):
    """Fill ``out`` (1-D float64, C-contiguous) with ``scale * exp(-numerator * i * (log_hi +
    log_lo) / denominator)`` for ``i = first .. first + out.size - 1``, each rounded once
    (first >= 0, denominator > 0 and scale finite, trusted)."""
    if not (out.dtype == np.float64 and out.ndim == 1 and out.flags.c_contiguous
            and out.flags.writeable):
        raise ValueError("power_vector needs a writeable 1-D C-contiguous float64 out")
    if not 0 <= first <= MAX_INDEX - cnp.PyArray_DIM(out, 0):  # no index arithmetic overflows
        raise ValueError(
            f"power_vector: indices {first} .. {first} + {out.shape[0]} must lie below 2**62")
    with nogil:
        power_vector_c(first, cnp.PyArray_DIM(out, 0), log_hi, log_lo, numerator, denominator,
                       scale, <double*>cnp.PyArray_DATA(out))


# --------------------------------------------------------------------------- the filler

cdef class Plan:
    """What a fill keeps between calls: the grid table ``(80, 2, h)`` (mid rows, then fine
    rows; ``fill.h``), the evaluator's constants ``(8, h)`` (``prepare_frequency_table``), the
    layout's segments ``(n, 13)`` int64 (``constants.h``), the row width, the number of output
    planes (1 or 2), a zero column (or -1) and the factor every value is multiplied by. The
    arrays are kept alive here; the front validated them."""

    cdef plan_t plan
    cdef readonly object grid, table, segments
    cdef readonly Py_ssize_t width, planes, pad_col
    cdef readonly double factor
    cdef readonly Py_ssize_t axes  # position axes the segments read
    cdef object _shapes

    def __init__(self, cnp.ndarray grid, cnp.ndarray table, cnp.ndarray segments,
                 Py_ssize_t width, int planes, Py_ssize_t pad_col, double factor):
        cdef Py_ssize_t s, n_segments = cnp.PyArray_DIM(segments, 0)
        cdef const int64_t* seg
        cdef place c, si
        cdef int[::1] shapes
        if not (grid.dtype == np.float64 and grid.ndim == 3 and grid.shape[0] == GRID_ROWS
                and grid.shape[1] == 2 and grid.flags.c_contiguous
                and table.dtype == np.float64 and table.ndim == 2 and table.shape[0] == 8
                and table.shape[1] == grid.shape[2] and table.flags.c_contiguous
                and segments.dtype == np.int64 and segments.ndim == 2
                and segments.shape[1] == SEG_FIELDS and segments.flags.c_contiguous
                and planes in (1, 2)):
            raise ValueError("Plan needs grid (80, 2, h) and table (8, h) float64, segments "
                             "(n, 13) int64, C-contiguous, and 1 or 2 planes")
        self.grid, self.table, self.segments = grid, table, segments
        self.width, self.planes, self.pad_col, self.factor = width, planes, pad_col, factor
        self._shapes = np.empty(n_segments, dtype=np.intc)
        shapes = self._shapes
        self.axes = 0
        self.plan.max_lanes = 0
        for s in range(n_segments):
            seg = <const int64_t*>cnp.PyArray_DATA(segments) + s * SEG_FIELDS
            c.plane, c.col, c.step, c.dup, c.count = seg[3], seg[4], seg[5], seg[6], seg[7]
            si.plane, si.col, si.step, si.dup, si.count = seg[8], seg[9], seg[10], seg[11], seg[12]
            shapes[s] = shape_of(&c, &si)
            self.plan.max_lanes = max(self.plan.max_lanes, seg[SEG_COUNT])
            self.axes = max(self.axes, seg[SEG_AXIS] + 1)
        self.plan.grid = <const double*>cnp.PyArray_DATA(grid)
        self.plan.table = <const double*>cnp.PyArray_DATA(table)
        self.plan.h = cnp.PyArray_DIM(grid, 2)
        self.plan.segments = <const int64_t*>cnp.PyArray_DATA(segments)
        self.plan.shapes = &shapes[0] if n_segments else NULL
        self.plan.n_segments = n_segments
        self.plan.width = width
        self.plan.pad_col = pad_col
        self.plan.factor = factor


def fill(Plan plan, cnp.ndarray out0, object out1, object anchors, object values,
         object codes, int64_t start, double origin, int threads, bint whole=False):
    """Fill ``out0`` (and ``out1`` for a two-plane layout, else None), ``(n, plan.width)``
    of float64, float32, float16 or bfloat16, from ``anchors`` ``(n_a, 2, h)`` float64, or
    (``anchors`` None) the evaluator here, at the anchor positions ``values`` ``(plan.axes,
    n)`` float64 or, for a run, at ``origin + 1024 n``; and the rows' ``codes`` ``(plan.axes,
    n)`` int64, or None for a run (row r's code is ``start + r``, its position ``origin +
    start + r``); see ``fill.h``. Codes come with ``values``, each row's anchor position
    (beside ``anchors`` too: a narrow value recomputed for correct rounding needs its
    position). Rows are cut into chunks run on ``threads`` threads. Signals are checked
    between chunks (a handler that raises stops the fill, part of the table written), or
    (``whole``) not at all: a started fill then ends written whole, and a signal's handler
    runs after it returns; the only other failure, no scratch, comes before any write."""
    cdef fill_job job
    if SINPE_DEBUG:
        _check_fill_arguments(plan, out0, out1, anchors, values, codes, start, origin, threads)
    job.plan = &plan.plan
    job.planes[0] = <char*>cnp.PyArray_DATA(out0)
    job.planes[1] = <char*>cnp.PyArray_DATA(out1) if out1 is not None else NULL
    job.kind = element_kind(out0)
    job.isa = ISA_LEVEL
    job.unchecked = UNCHECKED
    job.itemsize = cnp.PyArray_ITEMSIZE(out0)
    job.n_rows = cnp.PyArray_DIM(out0, 0)
    job.anchors = <const double*>cnp.PyArray_DATA(anchors) if anchors is not None else NULL
    job.values = <const double*>cnp.PyArray_DATA(values) if values is not None else NULL
    job.origin = origin
    job.codes = <const int64_t*>cnp.PyArray_DATA(codes) if codes is not None else NULL
    job.start = start
    cdef int status
    cdef check_fn check = NULL
    if not whole:
        check = signal_check()
    with nogil:
        status = fill_c(&job, threads, check)
    if status == -2:
        raise_pending()
    if status < 0:
        raise MemoryError(f"no memory for {threads} rows of scratch")


def _check_fill_arguments(Plan plan, out0, out1, anchors, values, codes, start, origin,
                          threads):
    """Debug builds only: everything ``fill`` trusts, so that the whole test suite on a debug
    build proves the raw-pointer reads and writes stay inside their arrays."""
    h = plan.grid.shape[2]
    n = out0.shape[0]
    outs = [out0] if plan.planes == 1 else [out0, out1]
    if (plan.planes == 1) != (out1 is None):
        raise ValueError("debug: out1 must be given exactly for a two-plane plan")
    for out in outs:
        if not (out.dtype.name in _TABLE_DTYPES and out.dtype == out0.dtype
                and out.shape == (n, plan.width) and out.flags.c_contiguous
                and out.flags.writeable):
            raise ValueError(f"debug: out {out.dtype} {out.shape} does not fit the plan")
    if threads < 1:
        raise ValueError(f"debug: threads={threads}")
    if codes is not None and not (codes.dtype == np.int64 and codes.ndim == 2
                                  and codes.shape[1] == n and codes.shape[0] >= plan.axes
                                  and codes.flags.c_contiguous):
        raise ValueError(f"debug: codes {codes.dtype} {codes.shape} do not fit")
    used = np.array([start, start + max(n - 1, 0)], dtype=np.int64) if codes is None else codes
    if n and int(used.min()) < 0:
        raise ValueError("debug: a negative code")
    if codes is not None and not (values is not None and values.dtype == np.float64
                                  and values.shape == codes.shape
                                  and values.flags.c_contiguous):
        raise ValueError("debug: codes need values (each row's anchor position) of their shape")
    if codes is None and values is not None:
        raise ValueError("debug: values come with codes (a run has neither)")
    if anchors is None:  # evaluated by the filler
        if not np.all(np.abs(plan.table[0]) < 2.0**32):
            raise ValueError("debug: anchors evaluated here need every frequency below 2**32")
        if values is not None:
            if n and int(codes.max()) >> GRID_SPAN_BITS != 0:
                raise ValueError("debug: codes beside values must name anchor 0")
        elif codes is not None or not (
            abs(origin) + 1024.0 * ((start + max(n - 1, 0)) >> GRID_SPAN_BITS) < 2.0**53
        ):
            raise ValueError("debug: a run without anchors must stay below 2**53")
    else:
        if not (anchors.dtype == np.float64 and anchors.ndim == 3
                and anchors.shape[1:] == (2, h) and anchors.flags.c_contiguous):
            raise ValueError(f"debug: anchors {anchors.dtype} {anchors.shape} do not fit h={h}")
        if n and int(used.max()) >> GRID_SPAN_BITS >= anchors.shape[0]:
            raise ValueError("debug: a code names an anchor that is not there")
    _check_segments(plan.segments, h, plan.width, plan.planes, plan.pad_col)


def _check_segments(segments, h, width, planes, pad_col):
    """Debug builds only: every place a segment writes lies inside a row of ``width``."""
    for seg in segments.tolist():
        first, count, axis = seg[0], seg[1], seg[2]
        if not (0 <= first and first + count <= h and axis >= 0):
            raise ValueError(f"debug: segment {seg} outside {h} frequencies")
        for plane, col, step, dup, n in (seg[3:8], seg[8:13]):
            if not (0 <= plane < planes and 0 <= n <= count and step >= 1 and dup >= 0):
                raise ValueError(f"debug: placement {seg} does not fit")
            if n and not (0 <= col and col + step * (n - 1) + dup < width):
                raise ValueError(f"debug: placement {seg} exceeds {width} columns")
    if not (-1 <= pad_col < width):
        raise ValueError(f"debug: pad_col={pad_col} outside {width} columns")


def round_half(cnp.ndarray values, cnp.ndarray out):
    """``out[i]`` = ``values[i]`` (1-D float64) rounded once to ``out``'s dtype (float16 or
    bfloat16, 1-D, C-contiguous, same length): the converter of every half-precision store
    of the filler, alone, so that tests can give it any double (``_twin.half.round_half`` is
    its twin)."""
    if not (values.dtype == np.float64 and values.ndim == 1 and values.flags.c_contiguous
            and out.ndim == 1 and out.flags.c_contiguous and out.flags.writeable
            and out.shape[0] == values.shape[0] and out.dtype.name in ("float16", "bfloat16")):
        raise ValueError("round_half needs 1-D float64 values and a float16/bfloat16 out")
    cdef int f16 = element_kind(out) == KIND_F16
    with nogil:
        round_half_c(ISA_LEVEL, <uint16_t*>cnp.PyArray_DATA(out),
                     <const double*>cnp.PyArray_DATA(values), cnp.PyArray_DIM(values, 0), f16)


cdef int UNCHECKED = 0
CHECKED = True  # narrow values correctly rounded (fill.h); _set_checked(False): not


def _set_checked(checked):
    """Benchmarks and tests only: ``False`` writes each narrow value as its float64 value
    rounded once, without the correct-rounding test (the cost benchmarks/ratios.py measures,
    the misses the tests show it prevents); returns the previous setting."""
    global CHECKED, UNCHECKED
    before, CHECKED = CHECKED, bool(checked)
    UNCHECKED = 0 if CHECKED else 1
    return before


def _set_exact_tiny(exact):
    """Tests only: ``False`` leaves the tiny path's values whose bracket straddles a halfway
    point undecided (correct.h's step 5 off: the kernel's behaviour before it, the one way
    to make undecided values on purpose); returns the previous setting. Not thread-safe:
    set it before any fill."""
    global exact_tiny_c
    before = exact_tiny_c != 0
    exact_tiny_c = 1 if exact else 0
    return before


def correctly_rounded(double p, double w, double factor, str dtype):
    """``(factor cos(p w), factor sin(p w))`` correctly rounded to ``dtype`` ("float32",
    "float16" or "bfloat16"), as Python floats, and whether both were decided: the
    evaluator ``fill`` recomputes its uncertain narrow values with (``correct.h``;
    ``|p| < 2**53``)."""
    cdef double c, s
    cdef int kind = {"float32": 1, "float16": 2, "bfloat16": 3}[dtype]
    cdef int decided = correct_cos_sin_c(p, w, factor, kind, &c, &s)
    return c, s, decided == 2


def undecided():
    """How many narrow values this process rounded without deciding them (``correct.h``:
    within about 2**-96 of a halfway point; none has been seen)."""
    return undecided_c


def undecided_log():
    """The inputs of the last (up to 64) values ``undecided`` counts, most recent last: one
    dict per value, ``p``, ``w``, ``factor``, ``dtype`` and ``isa`` (the instruction set the
    fill ran at), so that an undecided value is never lost (tests/conftest.py names them)."""
    cdef long long n = undecided_c
    cdef long long first = n - UNDECIDED_RING if n > UNDECIDED_RING else 0
    cdef long long i
    cdef undecided_entry e
    log = []
    for i in range(first, n):
        e = undecided_ring_c[i % UNDECIDED_RING]
        log.append({"p": e.p, "w": e.w, "factor": e.factor,
                    "dtype": _TABLE_DTYPES[e.kind], "isa": ISA_NAMES[e.isa]})
    return log


cdef bint _float64_rows(a, Py_ssize_t n, Py_ssize_t m):
    return (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 2
            and a.flags.c_contiguous and a.shape[0] == n and a.shape[1] == m)


cdef Py_ssize_t _row_stride(a, Py_ssize_t n, Py_ssize_t m):
    """The elements from one row of ``a`` to the next, where ``a`` is float64 or float32
    ``(n, m)`` with each row contiguous, rows in order at least ``m`` apart (a view of a
    wider block too); else -1."""
    if not (isinstance(a, np.ndarray) and a.dtype in (np.float64, np.float32) and a.ndim == 2
            and a.shape[0] == n and a.shape[1] == m):
        return -1
    if a.flags.c_contiguous or n <= 1:
        return m
    cdef Py_ssize_t size = a.itemsize, inner = a.strides[1], outer = a.strides[0]
    if (inner == size or m <= 1) and outer % size == 0 and outer >= size * m:
        return outer // size
    return -1


def tally_block(cnp.ndarray cos, object sin, cnp.ndarray want_cos, cnp.ndarray want_sin,
                cnp.ndarray cols, cnp.ndarray positions, cnp.ndarray rates, double match,
                cnp.ndarray row_max):
    """One block of a held table against its exact rows, in one pass (``tally.h``): each
    row's largest error into ``row_max`` and ``(top, bad, worst, worst_at, worst_error,
    other, square_min, square_max)``. ``cos`` (and ``sin``, or ``None``: the same dtype and
    strides) are float64 or float32 ``(n, m)`` with contiguous rows (views of a wider block
    too), ``want_cos``/``want_sin`` float64 ``(n, W)`` read at columns ``cols`` (intp, ``m``,
    each below ``W``), ``positions`` int64 ``(n,)``, ``rates`` float64 ``(k, m)`` (k = 1 or 2
    drift kinds), ``row_max`` float64 ``(n,)``, those C-contiguous (all checked: the pass
    reads them through raw pointers). ``_twin.tally.tally_block`` is its twin."""
    cdef Py_ssize_t n = cos.shape[0] if cos.ndim == 2 else -1
    cdef Py_ssize_t m = cos.shape[1] if cos.ndim == 2 else -1
    cdef Py_ssize_t width = want_cos.shape[1] if want_cos.ndim == 2 else -1
    cdef int kinds = rates.shape[0] if rates.ndim == 2 else 0
    cdef Py_ssize_t stride = _row_stride(cos, n, m)
    if not (stride >= 0
            and (sin is None or (_row_stride(sin, n, m) == stride and sin.dtype == cos.dtype
                                 and (n <= 1 or sin.strides[0] == cos.strides[0])))
            and _float64_rows(want_cos, n, width) and _float64_rows(want_sin, n, width)
            and _float64_rows(rates, kinds, m) and 1 <= kinds <= 2
            and positions.dtype == np.int64 and positions.ndim == 1
            and positions.flags.c_contiguous and positions.shape[0] == n
            and cols.dtype == np.intp and cols.ndim == 1 and cols.flags.c_contiguous
            and cols.shape[0] == m and row_max.dtype == np.float64 and row_max.ndim == 1
            and row_max.flags.c_contiguous and row_max.flags.writeable
            and row_max.shape[0] == n):
        raise ValueError("tally_block: arrays of other shapes, dtypes or orders than it reads")
    if m and not (0 <= cols.min() and cols.max() < width):
        raise ValueError(f"tally_block: a column outside the exact rows' {width}")
    if not np.isfinite(rates).all():
        raise ValueError("tally_block: a drift rate that is not a number")
    cdef const void* sin_data = NULL
    if sin is not None:
        sin_data = cnp.PyArray_DATA(<cnp.ndarray>sin)
    cdef int narrow = cos.dtype == np.float32
    cdef int failed
    cdef tally_t t
    with nogil:
        failed = tally_block_c(cnp.PyArray_DATA(cos), sin_data, narrow,
                               <const double*>cnp.PyArray_DATA(want_cos),
                               <const double*>cnp.PyArray_DATA(want_sin), width,
                               <const Py_ssize_t*>cnp.PyArray_DATA(cols),
                               <const int64_t*>cnp.PyArray_DATA(positions),
                               <const double*>cnp.PyArray_DATA(rates), kinds, match, n, m,
                               stride, <double*>cnp.PyArray_DATA(row_max), &t)
    if failed:
        raise MemoryError(f"no memory to widen a row of {m} float32 values")
    return (t.top, t.bad, t.worst, t.worst_at, t.worst_error, t.other, t.square_min,
            t.square_max)
