# cython: language_level=3
# boundscheck, wraparound, cdivision and initializedcheck come from setup.py, which turns the
# checks on for SINPE_DEBUG_BUILD=1 (a file-level directive here would override it).
"""The compiled filler: rotations only, under ``nogil``, into a buffer it is given.

The scheme (shared with the NumPy filler in ``_numpy.py``, which rounds identically)
------------------------------------------------------------------------------------
Row ``r`` of the table is position ``offset + r``. Write ``r = (q*M + j)*F + k`` with
``k < F`` (fine), ``j < M`` (mid), ``q < Q`` (coarse). By the angle-addition identity

    e^{i(offset + r)w} = e^{i(offset + qMF)w} * e^{ijFw} * e^{ikw},

so with three small tables of correctly rounded unit vectors (``_angles.py``: an error-free
product ``p*w = hi + lo`` and extended-precision sin/cos, <= 0.5 ulp + 2**-60 each) every row
is two complex multiplies: ``anchor = coarse[q] * mid[j]`` once per block of F rows (kept in
a per-thread scratch row), then ``row = anchor * fine[k]``: four multiplies and two adds per sin/cos pair,
no transcendental call, and the inner loop is contiguous, so the C compiler vectorises it.

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
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, malloc
from cython.parallel cimport prange, threadid

cnp.import_array()

ctypedef fused real_out:
    float
    double


cdef extern from *:
    """
    #ifndef SINPE_HAVE_OPENMP
    #define SINPE_HAVE_OPENMP 0
    #endif
    #ifndef SINPE_DEBUG
    #define SINPE_DEBUG 0
    #endif
    #ifdef NDEBUG  /* Python's build flags define it; debug builds undefine it */
    #define SINPE_C_ASSERTS 0
    #else
    #define SINPE_C_ASSERTS 1
    #endif
    #ifndef SINPE_MAX_SIMD
    #define SINPE_MAX_SIMD 2  /* setup.py's SINPE_SIMD: 0 plain C, 1 SSE2, 2 AVX2 if the CPU has it */
    #endif
    #include <stddef.h>
    #if (defined(__SSE2__) || defined(_M_X64)) && SINPE_MAX_SIMD >= 1
    #include <emmintrin.h>
    #define SINPE_SSE2 1
    #else
    #define SINPE_SSE2 0
    #endif
    #if defined(_MSC_VER)
    #define SINPE_RESTRICT __restrict
    #else
    #define SINPE_RESTRICT __restrict__
    #endif

    /* Clamp to [-1, 1]; the operand order is that of minpd/maxpd, so both paths agree. */
    static inline double sinpe_unit(double v) {
        v = v < 1.0 ? v : 1.0;
        return v > -1.0 ? v : -1.0;
    }

    /* The body of both loops: rotate two pairs per SSE2 step, clamp if CLAMP, then STORE
       them; the plain C tail rounds identically (and converts to the row's type on assignment).
       float32 rows skip the clamp: a float64 value within 8.5e-16 of a sine or cosine rounds
       to the same float32 whether or not it was first clamped to [-1, 1] (1 + 8.5e-16 is far
       below the halfway point 1 + 2**-25), so the result is bit-identical and ~15% cheaper. */
    #if SINPE_SSE2
    #define SINPE_SSE2_LOOP(CLAMP, ...)                                                    \
        const __m128d one = _mm_set1_pd(1.0), minus_one = _mm_set1_pd(-1.0);             \
        for (; i + 2 <= pairs; i += 2) {                                                  \
            __m128d as = _mm_loadu_pd(a_sin + i), ac = _mm_loadu_pd(a_cos + i);          \
            __m128d fc = _mm_loadu_pd(f_cos + i), fs = _mm_loadu_pd(f_sin + i);          \
            __m128d s = _mm_add_pd(_mm_mul_pd(as, fc), _mm_mul_pd(ac, fs));              \
            __m128d c = _mm_sub_pd(_mm_mul_pd(ac, fc), _mm_mul_pd(as, fs));              \
            if (CLAMP) {                                                                  \
                s = _mm_max_pd(_mm_min_pd(s, one), minus_one);                            \
                c = _mm_max_pd(_mm_min_pd(c, one), minus_one);                            \
            }                                                                             \
            __VA_ARGS__                                                                   \
        }
    #else
    #define SINPE_SSE2_LOOP(CLAMP, ...)
    #endif
    #define SINPE_SCALAR_TAIL                                                              \
        for (; i < pairs; i++) {                                                          \
            row[2 * i] = sinpe_unit(a_sin[i] * f_cos[i] + a_cos[i] * f_sin[i]);           \
            row[2 * i + 1] = sinpe_unit(a_cos[i] * f_cos[i] - a_sin[i] * f_sin[i]);       \
        }

    /* The hot loop: row[2i] = sin, row[2i+1] = cos of (anchor angle + fine angle), i < pairs.
       Four multiplies, two adds and a clamp per pair; SSE2 (baseline on x86-64) does two pairs
       per step, and the plain C tail rounds identically. */
    static inline void sinpe_rotate_pairs_f64(
        double *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
        const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
        const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
    {
        ptrdiff_t i = 0;
        SINPE_SSE2_LOOP(1,
            _mm_storeu_pd(row + 2 * i, _mm_unpacklo_pd(s, c));
            _mm_storeu_pd(row + 2 * i + 2, _mm_unpackhi_pd(s, c));
        )
        SINPE_SCALAR_TAIL
    }

    /* The same for float32 output: computed in float64, rounded once per value. */
    static inline void sinpe_rotate_pairs_f32(
        float *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
        const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
        const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
    {
        ptrdiff_t i = 0;
        SINPE_SSE2_LOOP(0,
            __m128 lo = _mm_cvtpd_ps(_mm_unpacklo_pd(s, c));
            __m128 hi = _mm_cvtpd_ps(_mm_unpackhi_pd(s, c));
            _mm_storeu_ps(row + 2 * i, _mm_movelh_ps(lo, hi));
        )
        SINPE_SCALAR_TAIL
    }
    /* AVX2 twins of the two loops above (4 pairs per step), compiled for AVX2 by a function
       attribute and chosen at run time, so the build needs no -march flag. No FMA: the
       rounding stays exactly that of the SSE2/C loops and of the NumPy path. */
    #if SINPE_SSE2 && defined(__GNUC__) && SINPE_MAX_SIMD >= 2
    #include <immintrin.h>
    #define SINPE_AVX2 1
    #define SINPE_AVX2_BODY(CLAMP, ...)                                                    \
        const __m256d one = _mm256_set1_pd(1.0), minus_one = _mm256_set1_pd(-1.0);         \
        for (; i + 4 <= pairs; i += 4) {                                                    \
            __m256d as = _mm256_loadu_pd(a_sin + i), ac = _mm256_loadu_pd(a_cos + i);      \
            __m256d fc = _mm256_loadu_pd(f_cos + i), fs = _mm256_loadu_pd(f_sin + i);      \
            __m256d s = _mm256_add_pd(_mm256_mul_pd(as, fc), _mm256_mul_pd(ac, fs));        \
            __m256d c = _mm256_sub_pd(_mm256_mul_pd(ac, fc), _mm256_mul_pd(as, fs));        \
            if (CLAMP) {                                                                    \
                s = _mm256_max_pd(_mm256_min_pd(s, one), minus_one);                        \
                c = _mm256_max_pd(_mm256_min_pd(c, one), minus_one);                        \
            }                                                                               \
            __VA_ARGS__                                                                     \
        }
    __attribute__((target("avx2")))
    static void sinpe_rotate_pairs_f64_avx2(
        double *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
        const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
        const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
    {
        ptrdiff_t i = 0;
        SINPE_AVX2_BODY(1,
            __m256d lo = _mm256_unpacklo_pd(s, c); /* s0 c0 s2 c2 */
            __m256d hi = _mm256_unpackhi_pd(s, c); /* s1 c1 s3 c3 */
            _mm256_storeu_pd(row + 2 * i, _mm256_permute2f128_pd(lo, hi, 0x20));
            _mm256_storeu_pd(row + 2 * i + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
        )
        sinpe_rotate_pairs_f64(row + 2 * i, a_cos + i, a_sin + i, f_cos + i, f_sin + i, pairs - i);
    }
    __attribute__((target("avx2")))
    static void sinpe_rotate_pairs_f32_avx2(
        float *SINPE_RESTRICT row, const double *SINPE_RESTRICT a_cos,
        const double *SINPE_RESTRICT a_sin, const double *SINPE_RESTRICT f_cos,
        const double *SINPE_RESTRICT f_sin, ptrdiff_t pairs)
    {
        ptrdiff_t i = 0;
        SINPE_AVX2_BODY(0,
            __m128 s4 = _mm256_cvtpd_ps(s), c4 = _mm256_cvtpd_ps(c);
            _mm_storeu_ps(row + 2 * i, _mm_unpacklo_ps(s4, c4));
            _mm_storeu_ps(row + 2 * i + 4, _mm_unpackhi_ps(s4, c4));
        )
        sinpe_rotate_pairs_f32(row + 2 * i, a_cos + i, a_sin + i, f_cos + i, f_sin + i, pairs - i);
    }
    static int sinpe_use_avx2(void) {
        static int answer = -1;  /* set once at import (SIMD below), before any fill can run */
        if (answer < 0) {
            __builtin_cpu_init();
            answer = __builtin_cpu_supports("avx2") ? 1 : 0;
        }
        return answer;
    }
    #else
    #define SINPE_AVX2 0
    #endif

    /* What the hot loop runs on this CPU: 2 AVX2, 1 SSE2, 0 plain C. */
    static int sinpe_simd(void) {
    #if SINPE_AVX2
        if (sinpe_use_avx2()) return 2;
    #endif
        return SINPE_SSE2 ? 1 : 0;
    }

    static inline void sinpe_rotate_f64(
        double *row, const double *a_cos, const double *a_sin, const double *f_cos,
        const double *f_sin, ptrdiff_t pairs)
    {
    #if SINPE_AVX2
        if (sinpe_use_avx2()) {
            sinpe_rotate_pairs_f64_avx2(row, a_cos, a_sin, f_cos, f_sin, pairs);
            return;
        }
    #endif
        sinpe_rotate_pairs_f64(row, a_cos, a_sin, f_cos, f_sin, pairs);
    }
    static inline void sinpe_rotate_f32(
        float *row, const double *a_cos, const double *a_sin, const double *f_cos,
        const double *f_sin, ptrdiff_t pairs)
    {
    #if SINPE_AVX2
        if (sinpe_use_avx2()) {
            sinpe_rotate_pairs_f32_avx2(row, a_cos, a_sin, f_cos, f_sin, pairs);
            return;
        }
    #endif
        sinpe_rotate_pairs_f32(row, a_cos, a_sin, f_cos, f_sin, pairs);
    }
    """
    int SINPE_HAVE_OPENMP
    int SINPE_DEBUG
    int SINPE_C_ASSERTS
    int sinpe_simd() noexcept nogil
    double unit "sinpe_unit"(double v) noexcept nogil
    void rotate_pairs_f64 "sinpe_rotate_f64"(
        double* row, const double* a_cos, const double* a_sin,
        const double* f_cos, const double* f_sin, Py_ssize_t pairs) noexcept nogil
    void rotate_pairs_f32 "sinpe_rotate_f32"(
        float* row, const double* a_cos, const double* a_sin,
        const double* f_cos, const double* f_sin, Py_ssize_t pairs) noexcept nogil

HAVE_OPENMP = bool(SINPE_HAVE_OPENMP)
# What the hot loop runs on this CPU. Asking here, at import, settles the CPU check before
# any thread can fill a table, so the kernel has no shared mutable state at all (it is
# declared freethreading_compatible in setup.py).
SIMD = ("c", "sse2", "avx2")[sinpe_simd()]
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
    """Fill ``out`` (rows x columns, float32 or float64) with rotations
    ``coarse[q] * mid[j] * fine[k]``.

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
    # Dispatch by hand: a fused ``def`` would look the signature up on every call.
    if cnp.PyArray_ITEMSIZE(out) == 8:
        _fill(<double*>cnp.PyArray_DATA(out), n_rows, width, &t, threads)
    else:
        _fill(<float*>cnp.PyArray_DATA(out), n_rows, width, &t, threads)


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
    if out.dtype not in ("float32", "float64") or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("debug: out must be a writable C-contiguous float32/float64 table")
    if not (0 <= n_cos <= n_sin <= h) or not (threads >= 1):
        raise ValueError(f"debug: n_sin={n_sin}, n_cos={n_cos}, h={h}, threads={threads}")
    for name, first, count in (("sin", sin_col, n_sin), ("cos", cos_col, n_cos)):
        if count and not (0 <= first and first + step * (count - 1) < width and step >= 1):
            raise ValueError(f"debug: {name} columns {first}+{step}*i, i<{count}, exceed {width}")
    if not (-1 <= pad_col < width):
        raise ValueError(f"debug: pad_col={pad_col} outside {width} columns")


cdef struct Tables:
    const double* coarse  # (Q, 2, h): [cos, sin] rows
    const double* mid  # (n_mid, 2, h)
    const double* fine  # (n_fine, 2, h)
    Py_ssize_t n_mid, n_fine, h
    Py_ssize_t sin_col, cos_col, step, n_sin, n_cos, pad_col


cdef int _fill(real_out* out, Py_ssize_t n_rows, Py_ssize_t width, const Tables* t,
               int threads) except -1:
    cdef Py_ssize_t n_blocks = (n_rows + t.n_fine - 1) // t.n_fine
    cdef Py_ssize_t block
    # One anchor row (2*h doubles) per thread, each in its own run of whole 4096-byte pages
    # (no two threads share a cache line) and at the same offset into its page as the fine
    # table (``_angles.TABLE_PLACEMENT``): the row loop then loads from only the two page
    # offsets the fine table uses, which keeps it clear of a store to ``out`` that lags a load
    # by a few hundred bytes modulo 4096 (a false dependence that stalls the loads).
    cdef Py_ssize_t stride = (2 * t.h + 511) // 512 * 512  # doubles: whole pages
    cdef uintptr_t placement = <uintptr_t>t.fine & 4095
    cdef void* block_of_memory
    cdef double* scratch
    if n_rows == 0 or width == 0:
        return 0
    if t.h == 0:  # no frequency at all (width-1 block layouts): only the zero column
        for block in range(n_rows):
            out[block * width + t.pad_col] = 0
        return 0
    block_of_memory = malloc(threads * stride * sizeof(double) + 8192)
    if block_of_memory == NULL:
        raise MemoryError(f"no memory for {threads} anchor rows of {2 * t.h} doubles")
    scratch = <double*>((<uintptr_t>block_of_memory + 4095) // 4096 * 4096 + placement)
    with nogil:
        if threads > 1:  # a parallel region costs microseconds: only enter it when it pays
            for block in prange(n_blocks, num_threads=threads, schedule="static"):
                fill_block(out, n_rows, width, t, scratch + threadid() * stride, block)
        else:
            for block in range(n_blocks):
                fill_block(out, n_rows, width, t, scratch, block)
    free(block_of_memory)
    return 0


cdef inline void fill_block(
    real_out* out, Py_ssize_t n_rows, Py_ssize_t width, const Tables* t, double* a_cos,
    Py_ssize_t block,
) noexcept nogil:
    """Rows ``block*F .. block*F + F - 1``: the anchor coarse[q] * mid[j] once, then a rotation
    by fine[k] per row. ``a_cos`` is this thread's scratch row (2*h doubles)."""
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
        row = out + r * width
        if interleaved:
            rotate_interleaved(row, a_cos, a_sin, f_cos, f_cos + h, t.n_cos)
            if t.n_sin > t.n_cos:  # odd width: one last sine column
                rotate_strided(row, a_cos + t.n_cos, a_sin + t.n_cos, f_cos + t.n_cos,
                               f_cos + h + t.n_cos, 2 * t.n_cos, 0, 1, t.n_sin - t.n_cos, 0)
        else:
            rotate_strided(row, a_cos, a_sin, f_cos, f_cos + h,
                           t.sin_col, t.cos_col, t.step, t.n_sin, t.n_cos)
        if t.pad_col >= 0:
            row[t.pad_col] = 0
        r += 1
        f_cos += 2 * h
