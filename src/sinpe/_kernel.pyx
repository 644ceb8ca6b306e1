# cython: language_level=3
# boundscheck, wraparound, cdivision and initializedcheck come from setup.py, which turns the
# checks on for SINPE_DEBUG_BUILD=1 (a file-level directive here would override it).
"""The compiled filler: rotations only, under ``nogil``, into a buffer it is given.

The scheme (shared with the NumPy filler in ``_numpy.py``, which rounds identically)
------------------------------------------------------------------------------------
Row ``r`` of the table is position ``offset + r``. Write ``r = (q*M + j)*F + k`` with
``k < F`` (fine), ``j < M`` (mid), ``q < Q`` (coarse). By the angle-addition identity

    e^{i(offset + r)w} = e^{i(offset + qMF)w} * e^{ijFw} * e^{ikw},

so with three small tables of correctly rounded unit vectors (the exact evaluator of
``_exact.h`` and its NumPy twin in ``_angles.py``: <= 0.5 ulp + 2**-65.3 each) every row
is two complex multiplies: ``anchor = coarse[q] * mid[j]`` once per block of F rows (kept in
a per-thread scratch row), then ``row = anchor * fine[k]``: four multiplies and two adds per sin/cos pair,
no transcendental call, and the inner loop is contiguous: SSE2/AVX2 loops in ``_rotate.h`` for
the interleaved layout, ``_rope.h``'s for block layouts (``[sin | cos]``) and RoPE rows.

Error bound (u = 2**-53): table entries are within 0.51u; one rotation of unit vectors with
input errors e1, e2 gives <= sqrt(2)*(e1 + e2) + 2u (two products and one sum rounded), so the
anchor is within 3.5u and every written value within sqrt(2)*(3.5u + 0.51u) + 2u < 7.7u
= 8.5e-16 of the exact sin/cos of the exact product ``position * w``, at every position
below 2**53. float32 output is rounded once from that float64 value (<= 2**-25 + 8.5e-16).

Rows are independent given their anchor, so blocks are split across threads (``prange``) and
each thread writes only its own rows and its own scratch row: identical results for any
thread count. Compiled with -ffp-contract=off: no FMA contraction, same rounding as NumPy.

Where the operands sit matters as much as the arithmetic (measured on Zen 3): the cached
tables start 64-byte aligned (a table 16 bytes off split half of the 32-byte loads across cache
lines: ~15-20% slower), and the anchor rows share the fine table's offset into a page, so the
row loop loads from few page offsets and rarely trails its own stores by a few hundred bytes
modulo 4096 (a false store-to-load dependence, ~10% slower where it hits).
"""

cimport numpy as cnp
import numpy as np
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset
from cython.parallel cimport prange, threadid

cnp.import_array()

ctypedef fused real_out:
    float
    double


cdef extern from "_config.h":
    int SINPE_HAVE_OPENMP
    int SINPE_DEBUG
    int SINPE_C_ASSERTS

cdef extern from "_team.h":
    int team_size "sinpe_team_size"(int requested) noexcept nogil
    int team_allowed "sinpe_team_allowed"() noexcept nogil
    int openmp_max_threads "sinpe_openmp_max_threads"() noexcept nogil

cdef extern from "_exact.h":
    int exact_simd "sinpe_exact_simd"() noexcept nogil
    void exact_cos_sin_rows "sinpe_exact_cos_sin"(
        const double* p, Py_ssize_t n_p, const double* table, Py_ssize_t n_w,
        double* out) noexcept nogil

cdef extern from "_frequencies.h":
    ctypedef struct sinpe_dd "sinpe__dd":
        double hi
        double lo
    sinpe_dd log_dd_c "sinpe_log_dd"(double base) noexcept nogil
    void power_vector_c "sinpe_power_vector"(
        Py_ssize_t count, double log_hi, double log_lo, double numerator, double denominator,
        double scale, double* out) noexcept nogil

cdef extern from "_turns.h":
    int TURNS_EXACT "SINPE_TURNS_EXACT"
    Py_ssize_t prepare_frequency_table_c "sinpe_prepare_frequency_table"(
        const double* w, Py_ssize_t n, double* table, unsigned char* status) noexcept nogil

cdef extern from "_rotate.h":
    int sinpe_simd() noexcept nogil
    double unit "sinpe_unit"(double v) noexcept nogil
    void rotate_pairs_f64 "sinpe_rotate_f64"(
        double* row, const double* a_cos, const double* a_sin,
        const double* f_cos, const double* f_sin, Py_ssize_t pairs) noexcept nogil
    void rotate_pairs_f32 "sinpe_rotate_f32"(
        float* row, const double* a_cos, const double* a_sin,
        const double* f_cos, const double* f_sin, Py_ssize_t pairs) noexcept nogil

cdef extern from "_rope.h":
    int ROPE_FINE "SINPE_ROPE_FINE"
    int ROPE_COMPACT "SINPE_ROPE_COMPACT"
    double ROPE_BLOCK "SINPE_ROPE_BLOCK"
    void rope_rotate "sinpe_rope_rotate"(
        double* c, double* s, const double* a_cos, const double* a_sin,
        const double* f_cos, const double* f_sin, double factor, Py_ssize_t h) noexcept nogil
    void rope_scale "sinpe_rope_scale"(double* v, double factor, Py_ssize_t n) noexcept nogil
    void rope_write_f64 "sinpe_rope_write_f64"(
        double* row, const double* v, Py_ssize_t first, Py_ssize_t h, int layout) noexcept nogil
    void rope_write_f32 "sinpe_rope_write_f32"(
        float* row, const double* v, Py_ssize_t first, Py_ssize_t h, int layout) noexcept nogil
    Py_ssize_t rope_fused "sinpe_rope_fused"(
        int is_double, void* cos_row, void* sin_row, Py_ssize_t width, Py_ssize_t n_rows,
        const double* a_cos, const double* a_sin, const double* fine, double factor,
        Py_ssize_t h, int layout) noexcept nogil

cdef extern from "_half.h":
    int HALF_F16 "SINPE_F16"
    int HALF_BF16 "SINPE_BF16"
    int half_simd "sinpe_half_simd"() noexcept nogil
    void half_row "sinpe_half_row"(unsigned short* out, const double* v, Py_ssize_t n,
                                   int format) noexcept nogil

# What a table's elements are: float64, float32, or the bits of float16 / bfloat16 (the
# formats of _half.h: 1 and 2).
cdef enum:
    KIND_F64 = 0
    KIND_F32 = 3


cdef inline int output_kind(cnp.ndarray out):
    cdef int itemsize = cnp.PyArray_ITEMSIZE(out)
    if itemsize == 8:
        return KIND_F64
    if itemsize == 4:
        return KIND_F32
    return HALF_F16 if cnp.PyArray_TYPE(out) == cnp.NPY_FLOAT16 else HALF_BF16


HAVE_OPENMP = bool(SINPE_HAVE_OPENMP)
# What the hot loop runs on this CPU. Asking here, at import, settles the CPU check before
# any thread can fill a table, so the kernel has no shared mutable state at all (it is
# declared freethreading_compatible in setup.py).
SIMD = ("c", "sse2", "avx2")[sinpe_simd()]
# What the exact evaluator runs on this CPU (same bits either way).
EXACT_SIMD = "avx2-fma" if exact_simd() == 2 else "c"
# What rounds float16/bfloat16 output on this CPU (same bits either way); asked here, at
# import, for the same reason as SIMD.
HALF_SIMD = "avx2-f16c" if half_simd() else "c"
DEBUG = bool(SINPE_DEBUG)  # a SINPE_DEBUG_BUILD=1 build: trusted arguments are checked too
C_ASSERTS = bool(SINPE_C_ASSERTS)  # C assert() live (NDEBUG undefined): debug builds only


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


def max_threads():
    """``(threads, forked)``: the most threads OpenMP gives the calling thread
    (``OMP_NUM_THREADS``, ``omp_set_num_threads``, threadpoolctl; 1 without OpenMP), and
    whether this process is a fork of one that started a team (then fills run on one thread,
    see ``_team.h``)."""
    return openmp_max_threads(), not team_allowed()


cdef inline void rotate_interleaved(
    real_out* row, const double* a_cos, const double* a_sin,
    const double* f_cos, const double* f_sin, Py_ssize_t pairs,
) noexcept nogil:
    if real_out is double:
        rotate_pairs_f64(row, a_cos, a_sin, f_cos, f_sin, pairs)
    else:
        rotate_pairs_f32(row, a_cos, a_sin, f_cos, f_sin, pairs)


cdef inline void rotate_strided(
    real_out* row, const double* a_cos, const double* a_sin,
    const double* f_cos, const double* f_sin,
    Py_ssize_t sin_col, Py_ssize_t cos_col, Py_ssize_t step,
    Py_ssize_t n_sin, Py_ssize_t n_cos,
) noexcept nogil:
    """General column map: sin of frequency i in column sin_col + i*step (i < n_sin), cos in
    cos_col + i*step (i < n_cos)."""
    cdef Py_ssize_t i
    cdef real_out* sin_out = row + sin_col
    cdef real_out* cos_out = row + cos_col
    if step == 1:
        for i in range(n_sin):
            sin_out[i] = <real_out>unit(a_sin[i] * f_cos[i] + a_cos[i] * f_sin[i])
        for i in range(n_cos):
            cos_out[i] = <real_out>unit(a_cos[i] * f_cos[i] - a_sin[i] * f_sin[i])
    else:
        for i in range(n_sin):
            sin_out[i * step] = <real_out>unit(a_sin[i] * f_cos[i] + a_cos[i] * f_sin[i])
        for i in range(n_cos):
            cos_out[i * step] = <real_out>unit(a_cos[i] * f_cos[i] - a_sin[i] * f_sin[i])


cdef inline void rotate_blocks(
    real_out* row, const double* a_cos, const double* a_sin,
    const double* f_cos, const double* f_sin,
    Py_ssize_t sin_col, Py_ssize_t cos_col, Py_ssize_t n_sin, Py_ssize_t n_cos, double* values,
) noexcept nogil:
    """Block layouts (step 1): the vector loops of ``_rope.h`` with factor 1 (exact), which
    round as ``rotate_strided`` does; ``values`` is scratch for 2*n_sin doubles."""
    cdef double* c = values
    cdef double* s = values + n_sin
    if real_out is double:  # straight into the row; an odd width's last sine apart
        rope_rotate(row + cos_col, row + sin_col, a_cos, a_sin, f_cos, f_sin, 1.0, n_cos)
        if n_sin > n_cos:
            row[sin_col + n_cos] = unit(a_sin[n_cos] * f_cos[n_cos] + a_cos[n_cos] * f_sin[n_cos])
    else:
        rope_rotate(c, s, a_cos, a_sin, f_cos, f_sin, 1.0, n_sin)  # c[n_cos:] unused
        rope_write_f32(row + sin_col, s, 0, n_sin, ROPE_COMPACT)
        rope_write_f32(row + cos_col, c, 0, n_cos, ROPE_COMPACT)


cdef inline void multiply_anchor(
    double* a_cos, double* a_sin,
    const double* c_cos, const double* c_sin, const double* m_cos, const double* m_sin,
    Py_ssize_t h,
) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(h):
        a_sin[i] = c_sin[i] * m_cos[i] + c_cos[i] * m_sin[i]
        a_cos[i] = c_cos[i] * m_cos[i] - c_sin[i] * m_sin[i]


def fill_table(
    cnp.ndarray out,
    cnp.ndarray coarse,
    cnp.ndarray mid,
    cnp.ndarray fine,
    Py_ssize_t sin_col, Py_ssize_t cos_col, Py_ssize_t step,
    Py_ssize_t n_sin, Py_ssize_t n_cos, Py_ssize_t pad_col,
    int threads,
):
    """Fill ``out`` (rows x columns, float64, float32, float16 or bfloat16) with rotations
    ``coarse[q] * mid[j] * fine[k]``; half-precision rows are made in float64 (a block of F
    rows of scratch per thread) and rounded once (``_half.h``).

    Tables are C-contiguous ``(rows, 2, h)`` float64 ``[cos, sin]`` with ``h >= n_sin >= n_cos``;
    ``threads`` >= 1 is the team size. Arguments are trusted: ``_api`` made the tables and
    checked ``out`` (C-contiguous, writable, shape, dtype). Everything is read and written
    through raw pointers: acquiring a typed memoryview cost ~1 us per call, a quarter of a
    small table's whole time. Debug builds check every argument those pointers depend on.
    """
    cdef Tables t
    if SINPE_DEBUG:
        _check_arguments(out, coarse, mid, fine, sin_col, cos_col, step, n_sin, n_cos, pad_col,
                         threads)
    t.coarse = <const double*>cnp.PyArray_DATA(coarse)
    t.mid = <const double*>cnp.PyArray_DATA(mid)
    t.fine = <const double*>cnp.PyArray_DATA(fine)
    t.n_mid = cnp.PyArray_DIM(mid, 0)
    t.n_fine = cnp.PyArray_DIM(fine, 0)
    t.h = cnp.PyArray_DIM(fine, 2)
    t.sin_col, t.cos_col, t.step = sin_col, cos_col, step
    t.n_sin, t.n_cos, t.pad_col = n_sin, n_cos, pad_col
    cdef Py_ssize_t n_rows = cnp.PyArray_DIM(out, 0)
    cdef Py_ssize_t width = cnp.PyArray_DIM(out, 1)
    _fill(cnp.PyArray_DATA(out), n_rows, width, &t, threads, output_kind(out))


def exact_cos_sin(cnp.ndarray positions, cnp.ndarray table, cnp.ndarray out, int threads):
    """``out[r, 0, i]``, ``out[r, 1, i]`` = cos, sin of ``positions[r] * w[i]`` (``_exact.h``),
    for the columns with ``|w| < 2**32`` (the others are left to ``_angles``).

    ``positions`` 1-D float64 C-contiguous, ``|p| < 2**53``; ``table`` from
    ``_turns.prepare_frequency_table`` (8, n_w); ``out`` (n, 2, n_w) float64 C-contiguous.
    Trusted, like ``fill_table``; rows are split across ``threads`` in equal runs.
    """
    cdef Py_ssize_t n = cnp.PyArray_DIM(positions, 0)
    cdef Py_ssize_t n_w = cnp.PyArray_DIM(table, 1)
    cdef const double* p = <const double*>cnp.PyArray_DATA(positions)
    cdef const double* frequencies = <const double*>cnp.PyArray_DATA(table)
    cdef double* result = <double*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t run, first, count, per_run
    if SINPE_DEBUG:
        _check_exact_arguments(positions, table, out, threads)
    threads = team_size(threads)  # 1 in a forked child of a process that ran a team
    per_run = (n + threads - 1) // threads
    with nogil:
        if threads > 1:
            for run in prange(threads, num_threads=threads, schedule="static"):
                first = run * per_run
                count = min(per_run, n - first)
                if count > 0:
                    exact_cos_sin_rows(p + first, count, frequencies, n_w,
                                       result + first * 2 * n_w)
        else:
            exact_cos_sin_rows(p, n, frequencies, n_w, result)


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


def _check_arguments(out, coarse, mid, fine, sin_col, cos_col, step, n_sin, n_cos, pad_col,
                     threads):
    """Debug builds only: everything ``fill_table`` trusts, checked, so that the whole test suite
    on a debug build proves the raw-pointer reads stay inside their arrays."""
    n_rows, width = out.shape
    h = fine.shape[2]
    for name, table in (("coarse", coarse), ("mid", mid), ("fine", fine)):
        if not (table.dtype == "float64" and table.ndim == 3 and table.flags.c_contiguous
                and table.shape[1:] == (2, h) and table.shape[0] >= 1):
            raise ValueError(f"debug: {name} table {table.dtype} {table.shape} does not fit h={h}")
    if n_rows > coarse.shape[0] * mid.shape[0] * fine.shape[0]:
        raise ValueError(f"debug: tables cover fewer than {n_rows} rows")
    _check_out_and_columns(out, h, sin_col, cos_col, step, n_sin, n_cos, pad_col, threads)


cdef struct Tables:
    const double* coarse  # (Q, 2, h): [cos, sin] rows
    const double* mid  # (n_mid, 2, h)
    const double* fine  # (n_fine, 2, h)
    Py_ssize_t n_mid, n_fine, h
    Py_ssize_t sin_col, cos_col, step, n_sin, n_cos, pad_col


cdef int _fill(void* out, Py_ssize_t n_rows, Py_ssize_t width, const Tables* t,
               int threads, int kind) except -1:
    cdef Py_ssize_t n_blocks = (n_rows + t.n_fine - 1) // t.n_fine
    cdef Py_ssize_t block
    # One anchor row (2*h doubles) per thread, each in its own run of whole 4096-byte pages
    # (no two threads share a cache line) and at the same offset into its page as the fine
    # table (``_angles.TABLE_PLACEMENT``): the row loop then loads from only the two page
    # offsets the fine table uses, which keeps it clear of a store to ``out`` that lags a load
    # by a few hundred bytes modulo 4096 (a false dependence that stalls the loads).
    # (2*h anchor doubles, then 2*h for the values of a block-layout row, then for half
    # precision a block of F float64 rows)
    cdef Py_ssize_t rows = t.n_fine * width if kind != KIND_F64 and kind != KIND_F32 else 0
    cdef Py_ssize_t stride = (4 * t.h + rows + 511) // 512 * 512  # doubles: whole pages
    cdef uintptr_t placement = <uintptr_t>t.fine & 4095
    cdef void* block_of_memory
    cdef double* scratch
    if n_rows == 0 or width == 0:
        return 0
    if t.h == 0:  # no frequency at all (width-1 block layouts): only the zero column
        memset(out, 0, n_rows * width * (8 if kind == KIND_F64 else 4 if kind == KIND_F32 else 2))
        return 0
    block_of_memory = malloc(threads * stride * sizeof(double) + 8192)
    if block_of_memory == NULL:
        raise MemoryError(f"no memory for {threads} anchor rows of {2 * t.h} doubles")
    scratch = <double*>((<uintptr_t>block_of_memory + 4095) // 4096 * 4096 + placement)
    threads = team_size(threads)  # 1 in a forked child of a process that ran a team
    with nogil:
        if threads > 1:  # a parallel region costs microseconds: only enter it when it pays
            for block in prange(n_blocks, num_threads=threads, schedule="static"):
                table_block(out, n_rows, width, t, scratch + threadid() * stride, block, kind)
        else:
            for block in range(n_blocks):
                table_block(out, n_rows, width, t, scratch, block, kind)
    free(block_of_memory)
    return 0


cdef inline void table_block(
    void* out, Py_ssize_t n_rows, Py_ssize_t width, const Tables* t, double* scratch,
    Py_ssize_t block, int kind,
) noexcept nogil:
    """Block ``block`` of ``out`` in its element kind: float rows directly; half-precision
    rows made in float64 in ``scratch`` (after the anchor) and rounded once."""
    cdef Py_ssize_t first = block * t.n_fine
    cdef Py_ssize_t r
    cdef double* rows = scratch + 4 * t.h
    if kind == KIND_F64:
        fill_block(<double*>out, n_rows, width, t, scratch, block, 0)
    elif kind == KIND_F32:
        fill_block(<float*>out, n_rows, width, t, scratch, block, 0)
    else:
        fill_block(rows, n_rows, width, t, scratch, block, first)
        for r in range(first, min(first + t.n_fine, n_rows)):
            half_row(<unsigned short*>out + r * width, rows + (r - first) * width, width, kind)


cdef inline void fill_block(
    real_out* out, Py_ssize_t n_rows, Py_ssize_t width, const Tables* t, double* a_cos,
    Py_ssize_t block, Py_ssize_t out_first,
) noexcept nogil:
    """Rows ``block*F .. block*F + F - 1``: the anchor coarse[q] * mid[j] once, then a rotation
    by fine[k] per row. ``a_cos`` is this thread's scratch row (2*h doubles); ``out`` holds
    rows from ``out_first`` on."""
    cdef Py_ssize_t h = t.h
    cdef Py_ssize_t q = block // t.n_mid
    cdef Py_ssize_t j = block - q * t.n_mid
    cdef Py_ssize_t r = block * t.n_fine
    cdef Py_ssize_t r_end = min(r + t.n_fine, n_rows)
    cdef double* a_sin = a_cos + h
    cdef const double* c_row = t.coarse + 2 * h * q
    cdef const double* m_row = t.mid + 2 * h * j
    cdef const double* f_cos = t.fine
    cdef bint interleaved = t.step == 2 and t.sin_col == 0 and t.cos_col == 1
    cdef real_out* row
    multiply_anchor(a_cos, a_sin, c_row, c_row + h, m_row, m_row + h, h)
    while r < r_end:
        row = out + (r - out_first) * width
        if interleaved:
            rotate_interleaved(row, a_cos, a_sin, f_cos, f_cos + h, t.n_cos)
            if t.n_sin > t.n_cos:  # odd width: one last sine column
                rotate_strided(row, a_cos + t.n_cos, a_sin + t.n_cos, f_cos + t.n_cos,
                               f_cos + h + t.n_cos, 2 * t.n_cos, 0, 1, t.n_sin - t.n_cos, 0)
        elif t.step == 1:  # block layouts: [sin | cos] or [cos | sin]
            rotate_blocks(row, a_cos, a_sin, f_cos, f_cos + h, t.sin_col, t.cos_col, t.n_sin,
                          t.n_cos, a_cos + 2 * h)
        else:
            rotate_strided(row, a_cos, a_sin, f_cos, f_cos + h,
                           t.sin_col, t.cos_col, t.step, t.n_sin, t.n_cos)
        if t.pad_col >= 0:
            row[t.pad_col] = 0
        r += 1
        f_cos += 2 * h


def fill_exact(
    cnp.ndarray out,
    cnp.ndarray positions,
    cnp.ndarray table,
    Py_ssize_t sin_col, Py_ssize_t cos_col, Py_ssize_t step,
    Py_ssize_t n_sin, Py_ssize_t n_cos, Py_ssize_t pad_col,
    int threads,
):
    """Fill row ``r`` of ``out`` (float32 or float64) with the exact cos/sin of
    ``positions[r] * w`` straight from the evaluator, in the column map's places: every row
    its own anchor (``encode``, a few rows at a far offset). Columns of frequencies with
    ``|w| >= 2**32`` are left to ``_api`` (the slow exact path). Trusted like ``fill_table``.
    """
    cdef Exact e
    if SINPE_DEBUG:
        _check_fill_exact_arguments(out, positions, table, sin_col, cos_col, step, n_sin, n_cos,
                                    pad_col, threads)
    e.p = <const double*>cnp.PyArray_DATA(positions)
    e.table = <const double*>cnp.PyArray_DATA(table)
    e.h = cnp.PyArray_DIM(table, 1)
    e.sin_col, e.cos_col, e.step = sin_col, cos_col, step
    e.n_sin, e.n_cos, e.pad_col = n_sin, n_cos, pad_col
    cdef Py_ssize_t n_rows = cnp.PyArray_DIM(out, 0)
    cdef Py_ssize_t width = cnp.PyArray_DIM(out, 1)
    _fill_exact(cnp.PyArray_DATA(out), n_rows, width, &e, threads, output_kind(out))


_TABLE_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _check_out_and_columns(out, h, sin_col, cos_col, step, n_sin, n_cos, pad_col, threads):
    """Debug builds only: ``out`` is a writable C-contiguous float table and the column map
    stays inside its rows, for ``h`` frequencies."""
    if out.dtype.name not in _TABLE_DTYPES or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"debug: out must be a writable C-contiguous {_TABLE_DTYPES} table")
    width = out.shape[1]
    if not (0 <= n_cos <= n_sin <= h) or not (threads >= 1):
        raise ValueError(f"debug: n_sin={n_sin}, n_cos={n_cos}, h={h}, threads={threads}")
    for name, first, count in (("sin", sin_col, n_sin), ("cos", cos_col, n_cos)):
        if count and not (0 <= first and first + step * (count - 1) < width and step >= 1):
            raise ValueError(f"debug: {name} columns {first}+{step}*i, i<{count}, exceed {width}")
    if not (-1 <= pad_col < width):
        raise ValueError(f"debug: pad_col={pad_col} outside {width} columns")


def _check_fill_exact_arguments(out, positions, table, sin_col, cos_col, step, n_sin, n_cos,
                                pad_col, threads):
    """Debug builds only: everything ``fill_exact`` trusts."""
    n_rows, width = out.shape
    h = table.shape[1]
    if not (positions.dtype == "float64" and positions.shape == (n_rows,)
            and positions.flags.c_contiguous and table.dtype == "float64"
            and table.shape == (8, h) and table.flags.c_contiguous):
        raise ValueError("debug: fill_exact positions or table do not fit")
    _check_out_and_columns(out, h, sin_col, cos_col, step, n_sin, n_cos, pad_col, threads)


cdef struct Exact:
    const double* p  # one position per row
    const double* table  # (8, h): _turns.prepare_frequency_table
    Py_ssize_t h
    Py_ssize_t sin_col, cos_col, step, n_sin, n_cos, pad_col


cdef int _fill_exact(void* out, Py_ssize_t n_rows, Py_ssize_t width, const Exact* e,
                     int threads, int kind) except -1:
    cdef Py_ssize_t r
    # doubles per thread, rows 64 bytes apart: [cos | sin] (2*h), then a float64 row for
    # half precision
    cdef Py_ssize_t stride = (2 * e.h + width + 7) // 8 * 8
    cdef double* scratch
    if n_rows == 0 or width == 0:
        return 0
    threads = team_size(threads)  # 1 in a forked child of a process that ran a team
    scratch = <double*>malloc(threads * stride * sizeof(double) + 64)
    if scratch == NULL:
        raise MemoryError(f"no memory for {threads} rows of {2 * e.h} doubles")
    with nogil:
        if threads > 1:
            for r in prange(n_rows, num_threads=threads, schedule="static"):
                exact_table_row(out, r, width, e, scratch + threadid() * stride, kind)
        else:
            for r in range(n_rows):
                exact_table_row(out, r, width, e, scratch, kind)
    free(scratch)
    return 0


cdef inline void exact_table_row(void* out, Py_ssize_t r, Py_ssize_t width, const Exact* e,
                                 double* scratch, int kind) noexcept nogil:
    cdef double* row = scratch + 2 * e.h
    if kind == KIND_F64:
        exact_row(<double*>out + r * width, e.p[r], e, scratch)
    elif kind == KIND_F32:
        exact_row(<float*>out + r * width, e.p[r], e, scratch)
    else:
        exact_row(row, e.p[r], e, scratch)
        half_row(<unsigned short*>out + r * width, row, width, kind)


cdef inline void exact_row(real_out* row, double p, const Exact* e, double* cos_sin) noexcept nogil:
    """One row: the evaluator writes [cos | sin] of p*w into ``cos_sin`` (2*h doubles), then
    each value goes to its column, rounded once to the row's type."""
    cdef Py_ssize_t i
    exact_cos_sin_rows(&p, 1, e.table, e.h, cos_sin)
    for i in range(e.n_sin):
        row[e.sin_col + i * e.step] = <real_out>cos_sin[e.h + i]
    for i in range(e.n_cos):
        row[e.cos_col + i * e.step] = <real_out>cos_sin[i]
    if e.pad_col >= 0:
        row[e.pad_col] = 0


def round_half(cnp.ndarray values, cnp.ndarray out):
    """``out[i]`` = ``values[i]`` (1-D float64) rounded once to ``out``'s dtype (float16 or
    bfloat16, 1-D, C-contiguous, same length): the converter every half-precision table goes
    through, exposed so that tests can give it any double (``_half.round_into`` is its twin)."""
    if not (values.dtype == np.float64 and values.ndim == 1 and values.flags.c_contiguous
            and out.ndim == 1 and out.flags.c_contiguous and out.flags.writeable
            and out.shape[0] == values.shape[0] and out.dtype.name in ("float16", "bfloat16")):
        raise ValueError("round_half needs 1-D float64 values and a float16/bfloat16 out")
    cdef int kind = output_kind(out)
    with nogil:
        half_row(<unsigned short*>cnp.PyArray_DATA(out), <const double*>cnp.PyArray_DATA(values),
                 cnp.PyArray_DIM(values, 0), kind)


# --------------------------------------------------------------------------- shared data
# Frequencies and the evaluator's per-frequency constants are the same for every backend; with
# the compiled backend they come from these twins of _frequencies.py and _turns.py (same bits).


def log_dd(double base):
    """``log(base)`` as a double-double ``(hi, lo)``: ``_frequencies._log_dd``'s twin (base
    finite and > 0, trusted)."""
    cdef sinpe_dd result = log_dd_c(base)
    return result.hi, result.lo


def power_vector(cnp.ndarray out, double log_hi, double log_lo, double numerator,
                 double denominator, double scale):
    """Fill ``out`` (1-D float64, C-contiguous) with ``scale * exp(-numerator * i * (log_hi +
    log_lo) / denominator)`` rounded once: ``_frequencies._power_vector``'s twin (denominator
    > 0 and scale finite, trusted)."""
    if not (out.dtype == np.float64 and out.ndim == 1 and out.flags.c_contiguous
            and out.flags.writeable):
        raise ValueError("power_vector needs a writeable 1-D C-contiguous float64 out")
    with nogil:
        power_vector_c(cnp.PyArray_DIM(out, 0), log_hi, log_lo, numerator, denominator, scale,
                       <double*>cnp.PyArray_DATA(out))


def prepare_frequency_table(cnp.ndarray w, cnp.ndarray table):
    """Fill ``table`` (8, n) float64 C-contiguous for the frequencies ``w`` (n,) float64
    C-contiguous, as ``_turns.prepare_frequency_table`` does, except the columns it returns
    (an index array): those need the big-integer path (``_turns._exact_columns``)."""
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


# --------------------------------------------------------------------------- RoPE rows


def fill_rope(
    cnp.ndarray cos_out,
    cnp.ndarray sin_out,
    cnp.ndarray positions,
    cnp.ndarray anchor_index,
    cnp.ndarray anchors,
    cnp.ndarray mid,
    cnp.ndarray fine,
    cnp.ndarray table,
    int layout,
    double factor,
    int threads,
):
    """Fill row ``r`` of ``cos_out`` and ``sin_out`` (float32 or float64, same shape) with
    ``factor`` times the cos and sin of ``positions[r] * w``, in ``layout`` (``_rope.h``).

    An integer position has its anchor ``e^{iAw}`` (A = floor(p/1024)*1024) in row
    ``anchor_index[r]`` of ``anchors`` (n_a, 2, h); ``mid`` (64, 2, h) and ``fine`` (16, 2, h)
    are e^{i16jw} and e^{ikw}. ``anchor_index[r] < 0`` marks a non-integer position, which the
    evaluator takes (``table`` from ``prepare_frequency_table``; every |w| < 2**32). Trusted,
    like ``fill_table``; rows are split across ``threads`` in equal runs.
    """
    cdef Rope e
    if SINPE_DEBUG:
        _check_rope_arguments(cos_out, sin_out, positions, anchor_index, anchors, mid, fine,
                              table, layout, threads)
    e.p = <const double*>cnp.PyArray_DATA(positions)
    e.anchor = <const Py_ssize_t*>cnp.PyArray_DATA(anchor_index)
    e.anchors = <const double*>cnp.PyArray_DATA(anchors)
    e.mid = <const double*>cnp.PyArray_DATA(mid)
    e.fine = <const double*>cnp.PyArray_DATA(fine)
    e.table = <const double*>cnp.PyArray_DATA(table)
    e.h = cnp.PyArray_DIM(table, 1)
    e.factor = factor
    e.layout = layout
    e.width = cnp.PyArray_DIM(cos_out, 1)
    cdef Py_ssize_t n_rows = cnp.PyArray_DIM(cos_out, 0)
    _fill_rope(cnp.PyArray_DATA(cos_out), cnp.PyArray_DATA(sin_out), n_rows, &e, threads,
               output_kind(cos_out))


def _check_rope_arguments(cos_out, sin_out, positions, anchor_index, anchors, mid, fine, table,
                          layout, threads):
    """Debug builds only: everything ``fill_rope`` trusts."""
    n_rows = cos_out.shape[0]
    h = table.shape[1]
    width = {0: 2 * h, 1: 2 * h, 2: h}.get(layout, -1)
    fits = (
        cos_out.dtype.name in _TABLE_DTYPES and sin_out.dtype == cos_out.dtype
        and cos_out.shape == sin_out.shape == (n_rows, width)
        and cos_out.flags.c_contiguous and sin_out.flags.c_contiguous
        and cos_out.flags.writeable and sin_out.flags.writeable
        and positions.dtype == "float64" and positions.shape == (n_rows,)
        and positions.flags.c_contiguous
        and anchor_index.dtype == np.intp and anchor_index.shape == (n_rows,)
        and anchor_index.flags.c_contiguous
        and table.dtype == "float64" and table.ndim == 2 and table.shape[0] == 8
        and table.flags.c_contiguous and threads >= 1
        and (not n_rows or int(anchor_index.max()) < anchors.shape[0])
    )
    for name, t, rows in (("anchors", anchors, None), ("mid", mid, 64), ("fine", fine, 16)):
        fits = fits and (t.dtype == "float64" and t.ndim == 3 and t.flags.c_contiguous
                         and t.shape[1:] == (2, h) and (rows is None or t.shape[0] == rows))
    if fits and n_rows:
        integer = anchor_index >= 0
        p = positions[integer]
        fits = bool(np.all(p == np.floor(p)) and np.all(np.abs(positions) < 2.0**53))
    if not fits:
        raise ValueError("debug: fill_rope arguments do not fit")


cdef struct Rope:
    const double* p  # one position per row
    const Py_ssize_t* anchor  # its anchor's row, or -1 for a non-integer position
    const double* anchors  # (n_a, 2, h)
    const double* mid  # (64, 2, h)
    const double* fine  # (16, 2, h)
    const double* table  # (8, h): _turns.prepare_frequency_table
    Py_ssize_t h, width
    double factor
    int layout


cdef int _fill_rope(void* cos_out, void* sin_out, Py_ssize_t n_rows, const Rope* e,
                    int threads, int kind) except -1:
    # Each thread's scratch (anchor row, then the values of a row: 4*h doubles; for half
    # precision then 2 x 16 float64 rows) in its own run of whole pages, at the fine table's
    # offset into a page, as in ``_fill``: the row loop then loads from few page offsets,
    # clear of its own stores modulo 4096.
    cdef Py_ssize_t rows = 2 * ROPE_FINE * e.width if kind != KIND_F64 and kind != KIND_F32 else 0
    cdef Py_ssize_t stride = (4 * e.h + rows + 511) // 512 * 512  # doubles: whole pages
    cdef uintptr_t placement = <uintptr_t>e.fine & 4095
    cdef Py_ssize_t run, first, per_run
    cdef void* block_of_memory
    cdef double* scratch
    if n_rows == 0 or e.h == 0:
        return 0
    threads = team_size(threads)  # 1 in a forked child of a process that ran a team
    block_of_memory = malloc(threads * stride * sizeof(double) + 8192)
    if block_of_memory == NULL:
        raise MemoryError(f"no memory for {threads} rows of {4 * e.h} doubles")
    scratch = <double*>((<uintptr_t>block_of_memory + 4095) // 4096 * 4096 + placement)
    per_run = (n_rows + threads - 1) // threads
    with nogil:
        if threads > 1:
            for run in prange(threads, num_threads=threads, schedule="static"):
                first = run * per_run
                rope_run(cos_out, sin_out, e, first, min(first + per_run, n_rows),
                         scratch + run * stride, kind)
        else:
            rope_run(cos_out, sin_out, e, 0, n_rows, scratch, kind)
    free(block_of_memory)
    return 0


cdef void rope_run(void* cos_out, void* sin_out, const Rope* e, Py_ssize_t first,
                   Py_ssize_t stop, double* scratch, int kind) noexcept nogil:
    """Rows ``first .. stop - 1`` in the tables' element kind: float rows directly,
    half-precision rows 16 at a time in float64 (after the 4*h doubles ``rope_rows`` uses)
    and rounded once."""
    cdef double* cos_rows = scratch + 4 * e.h
    cdef double* sin_rows = cos_rows + ROPE_FINE * e.width
    cdef Py_ssize_t start, end, r
    if kind == KIND_F64:
        rope_rows(<double*>cos_out, <double*>sin_out, e, first, stop, scratch, 0)
    elif kind == KIND_F32:
        rope_rows(<float*>cos_out, <float*>sin_out, e, first, stop, scratch, 0)
    else:
        start = first
        while start < stop:
            end = min(start + ROPE_FINE, stop)
            rope_rows(cos_rows, sin_rows, e, start, end, scratch, start)
            for r in range(start, end):
                half_row(<unsigned short*>cos_out + r * e.width,
                         cos_rows + (r - start) * e.width, e.width, kind)
                half_row(<unsigned short*>sin_out + r * e.width,
                         sin_rows + (r - start) * e.width, e.width, kind)
            start = end


cdef void rope_rows(real_out* cos_out, real_out* sin_out, const Rope* e, Py_ssize_t first,
                    Py_ssize_t stop, double* scratch, Py_ssize_t out_first) noexcept nogil:
    """Rows ``first .. stop - 1`` (``cos_out``, ``sin_out`` hold rows from ``out_first`` on);
    the anchor times mid[j] is formed only when it changes."""
    cdef Py_ssize_t h = e.h
    cdef double* a_cos = scratch
    cdef double* a_sin = scratch + h
    cdef double* c = scratch + 2 * h  # [cos | sin] of the row, h each
    cdef double* s = scratch + 3 * h
    cdef Py_ssize_t r, q, j, k, u, done, run, t
    cdef Py_ssize_t last_q = -1, last_j = -1
    cdef double p
    cdef const double* row
    cdef real_out* cos_row
    cdef real_out* sin_row
    r = first
    while r < stop:
        p = e.p[r]
        q = e.anchor[r]
        cos_row = cos_out + (r - out_first) * e.width
        sin_row = sin_out + (r - out_first) * e.width
        if q < 0:
            exact_cos_sin_rows(&p, 1, e.table, h, c)  # cos into c, sin into s (= c + h)
            rope_scale(c, e.factor, 2 * h)
            write_rope_row(cos_row, sin_row, c, s, 0, h, e.layout)
            r += 1
            continue
        u = (<long long>p) & 1023  # p mod 1024 (two's complement: floor-mod for p < 0)
        j = u // ROPE_FINE
        k = u - j * ROPE_FINE
        if q != last_q or j != last_j:
            row = e.anchors + 2 * h * q
            multiply_anchor(a_cos, a_sin, row, row + h, e.mid + 2 * h * j,
                            e.mid + 2 * h * j + h, h)
            last_q, last_j = q, j
        # the following rows at p + 1, p + 2, ... with the same anchor and mid: fine rows
        # k + 1, k + 2, ... (a table's rows, and runs inside rope_at's positions)
        run = 1
        while (r + run < stop and k + run < ROPE_FINE and e.anchor[r + run] == q
               and e.p[r + run] == p + run):
            run += 1
        row = e.fine + 2 * h * k
        # straight into the tables where vector lanes allow; the rest through c and s
        done = rope_fused(real_out is double, cos_row, sin_row, e.width, run, a_cos, a_sin,
                          row, e.factor, h, e.layout)
        if done < h:
            for t in range(run):
                rope_rotate(c + done, s + done, a_cos + done, a_sin + done,
                            row + 2 * h * t + done, row + 2 * h * t + h + done, e.factor,
                            h - done)
                write_rope_row(cos_row + t * e.width, sin_row + t * e.width, c, s, done, h,
                               e.layout)
        r += run


cdef inline void write_rope_row(real_out* cos_row, real_out* sin_row, const double* c,
                                const double* s, Py_ssize_t first, Py_ssize_t h,
                                int layout) noexcept nogil:
    if real_out is double:
        rope_write_f64(cos_row, c, first, h, layout)
        rope_write_f64(sin_row, s, first, h, layout)
    else:
        rope_write_f32(cos_row, c, first, h, layout)
        rope_write_f32(sin_row, s, first, h, layout)
