/* The one filler: every table sinpe writes (sinusoidal tables of every convention, encode,
   RoPE tables of every layout, several position axes) is this loop over data. Its NumPy twin
   is _twin/fill.py (same names, same operations in the same order, same bits).

   Value of an entry. Every position p reads one anchor row, one mid row and one fine row:
   for an integer p, with A = floor(p / 1024) * 1024 and p - A = 16 j + k (j < 64, k < 16),

       e^{i p w} = e^{i A w} * e^{i 16 j w} * e^{i k w}:

   the anchor e^{iAw} is given (the caller's anchors, from the exact evaluator of exact.h),
   the mid and fine rows come from the plan's grid table (the same evaluator at 16 j and k,
   once per frequency vector). Then, by rotate.h's rotation,
       a = anchor * mid[j]                     (rounded, no clamp; the anchor itself for j = 0)
       v = clamp(a * fine[k], -1, 1)           (the clamp only where it can change a value)
       value = factor * v                      (factor: RoPE's attention factor, else 1)
   A fractional p is its own anchor (e^{ipw} from the evaluator) with j = k = 0, and the
   grid's rows 0 are e^{i0w} = (1, +-0): multiplying by them changes at most the sign of a
   zero (so the mid one is skipped, and the fine one done). So the value at a
   position depends on nothing but the position and the frequency: not on the call's
   offset, length, thread count or which function asked (tests/test_fill.py).

   Bound (u = 2^-53). The evaluator's values are within 0.5u + 2^-65.3 < 0.51u of the exact
   cos/sin of the exact product p * w. A rotation of unit vectors with input errors e1, e2
   gives at most sqrt(2)(e1 + e2) + 2u (two products and one sum rounded per component), so
   |a - exact| <= sqrt(2)(1.02u) + 2u < 3.5u and |v - exact| <= sqrt(2)(3.5u + 0.51u) + 2u
   < 7.7u = 8.5e-16 at every position below 2^53; the clamp only moves v towards the exact
   value. |value - factor * exact| <= factor (8.5e-16 + u) < 1e-15 max(1, factor). A narrower
   type gets the float64 value rounded once (rotate.h, half.h).

   Data. Codes: row r of position axis x has code c = 1024 * n + u, u = 16 j + k (0 for a
   fractional position): its anchor is row n of the caller's anchors, or, when the caller
   passes the anchor positions instead ("values", one per row and axis: A, or p itself), the
   evaluator's value there, made in the thread's scratch when it changes from the row
   before (no array of the size of the table; frequencies below 2^32 only). A run of
   consecutive positions (a table) passes no codes: row r's code is start + r on every
   axis, and without anchors its anchor n is evaluated at origin + 1024 n. Segments (rows of
   SINPE_SEG_FIELDS int64, constants.h) say which frequencies read which axis and where
   their cos and sin go (rotate.h's placements); a zero column (pad_col) may be added. Work
   is cut into chunks of rows (team.h runs them); each chunk forms an anchor product only
   when the anchor or mid row changes, and rotates runs of up to 16 consecutive rows
   against consecutive fine rows, writing each value straight from the rotation's
   registers. Rows are independent given their anchor: identical results for any thread
   count and any chunking. */
#ifndef SINPE_FILL_H
#define SINPE_FILL_H
#include <string.h>
#include "config.h"
#include "constants.h"
#include "correct.h"
#include "exact.h"
#include "half.h"
#include "team.h"

enum { SINPE_SHAPE_CONTIG = 0, SINPE_SHAPE_DUP = 1, SINPE_SHAPE_PAIRS = 2, SINPE_SHAPE_GENERIC = 3 };

/* Where one kind (cos or sin) of a segment goes: lane i at column col + i * step of plane
   `plane` (and again dup further on, when dup != 0), for lanes i < count. */
typedef struct {
    ptrdiff_t plane, col, step, dup, count;
} sinpe_place;

/* One call of a row function: n_rows consecutive rows sharing an anchor product. */
typedef struct {
    char *planes[2];              /* row 0 of the run in each output plane */
    ptrdiff_t width;              /* elements per row */
    ptrdiff_t n_rows;
    const double *a_cos, *a_sin;  /* the anchor product, lane 0 = the segment's first */
    const double *fine;           /* cos lanes of the first fine row */
    ptrdiff_t fine_stride;        /* doubles from one fine row to the next */
    ptrdiff_t fine_sin;           /* doubles from a row's cos lanes to its sin lanes */
    double factor;
    int clamp, scale;
    sinpe_place cos, sin;
    /* narrow kinds: what the values that may round the wrong way are recomputed from */
    int kind, isa;                /* isa: the job's level (SINPE_ISA_*), for the undecided ring */
    size_t itemsize;
    double p0;                    /* the position of row 0 of the run */
    const double *w;              /* the frequency of lane 0 */
    double guard[6];              /* sinpe__set_guard: keep, half, bound, kappa', shift, kappa */
} sinpe_rows;

typedef void (*sinpe_rows_fn)(const sinpe_rows *, ptrdiff_t, ptrdiff_t);

/* Narrow types, correctly rounded. The float64 value v of an entry is within g of the
   exact one (the bound above, 1e-15 max(1, factor), taken as 1.25e-15 max(1, factor)), so
   RN(v) is the exact value's rounding unless a halfway point of the type lies within g of
   v. With D the bits a float64 mantissa has beyond the type's (29 for float32, 42 float16,
   45 bfloat16), h = (v & keep) | half (v's low D bits replaced by 1 0 ... 0) is the one
   halfway point of v's binade nearer than half a step, and every value with
   d = |v - h| <= B, B the least power of two above 1.001 g, is recomputed. That is all it
   takes: in a binade whose step is at most 2B, d <= B always holds (tiny values, zeros);
   in the others the step is at least 4B, so the halfway points of the binades below and
   above lie further than g. float16's subnormal step 2^-24 is not its binade's: there the
   exact test counts |v| < 2^-14 as |v| + 2^-14, and it also flags |v| <= 2.001 g
   (kappa |v| <= B), which may round to either zero. Each row keeps its least d (closest,
   every instruction set's helper: three vector operations per value on AVX-512; for
   float16 every |v| < 2^-14 counts as within, by kappa' |v|, instead of the shift); a row
   where it is within B is tested again lane by lane, exactly (sinpe__recheck, the same
   values in plain C), and its flagged entries (about 2^-20 of float32 values, fewer of the
   half types, and the exact zeros of position 0, which are skipped) recomputed by
   correct.h and stored over what the vector store wrote: every narrow value is then the
   exact value rounded once. The NumPy twin (_twin/fill.py) flags by the exact test and
   recomputes by _twin/correct.py. The constants (D, 1.25e-15, 1.001, 2.001, 2^-14) are
   SINPE__GUARD_* of correct_constants.h, generated by tools/gen_correct_constants.py with
   the twin's _exactmath/correct_constants.py. */
static inline void sinpe__set_guard(double *guard, int kind, double factor)
{
    const int f16 = kind == SINPE_KIND_F16;
    int e, d = kind == SINPE_KIND_F32 ? SINPE__GUARD_DROP_F32
               : f16 ? SINPE__GUARD_DROP_F16 : SINPE__GUARD_DROP_BF16;
    uint64_t keep = ~((1ull << d) - 1), half = 1ull << (d - 1);
    double g = SINPE__GUARD_ERROR * (fabs(factor) > 1.0 ? fabs(factor) : 1.0), bound;
    frexp(SINPE__GUARD_MARGIN * g, &e); /* 1.001 g < 2^e */
    bound = ldexp(1.0, e);
    memcpy(&guard[0], &keep, 8);
    memcpy(&guard[1], &half, 8);
    guard[2] = bound;
    guard[3] = f16 ? bound / SINPE__GUARD_F16_SHIFT : 0.0;         /* kappa': the rows */
    guard[4] = f16 ? SINPE__GUARD_F16_SHIFT : 0.0;                 /* shift */
    guard[5] = f16 ? bound / (SINPE__GUARD_ZERO_MARGIN * g) : 0.0; /* kappa: each lane */
}

/* The least of acc and the halfway distances of c and s (and, for float16, kappa times the
   lesser magnitude): the test of every instruction set, one lane. */
static inline double sinpe__distance(double v, double keep, double half, double shift,
                                     const int f16)
{
    uint64_t b, k, h;
    double m;
    if (f16 && shift != 0.0) { /* the exact test: float16's subnormals */
        v = v < 0 ? -v : v;
        if (v < shift)
            v += shift;
    }
    memcpy(&b, &v, 8);
    memcpy(&k, &keep, 8);
    memcpy(&h, &half, 8);
    b = (b & k) | h;
    memcpy(&m, &b, 8);
    return v > m ? v - m : m - v;
}
static inline double sinpe__near(double acc, double c, double s, double keep, double half,
                                 double kappa, double shift, const int f16)
{
    double dc = sinpe__distance(c, keep, half, shift, f16);
    double ds = sinpe__distance(s, keep, half, shift, f16);
    acc = acc < dc ? acc : dc;
    acc = acc < ds ? acc : ds;
    if (f16) {
        double ac = c < 0 ? -c : c, as = s < 0 ? -s : s, m = (ac < as ? ac : as) * kappa;
        acc = acc < m ? acc : m;
    }
    return acc;
}

/* values correctly rounded though not decided (correct.h): none is expected */
static long long sinpe__undecided = 0;

/* The inputs of the last SINPE_UNDECIDED_RING undecided values, so that one is never lost:
   entry n % SINPE_UNDECIDED_RING holds the n-th (n counted from 0 by sinpe__undecided, whose
   atomic increment hands each thread its own slot). Written only on the undecided path; an
   entry is complete once the fill that wrote it has returned (the kernel reads it then). */
#define SINPE_UNDECIDED_RING 64
typedef struct {
    double p, w, factor;
    int kind, isa;
} sinpe_undecided_entry;
static sinpe_undecided_entry sinpe__undecided_ring[SINPE_UNDECIDED_RING];

static void sinpe__record_undecided(double p, double w, double factor, int kind, int isa)
{
    long long n = SINPE__FETCH_ADD(&sinpe__undecided, 1);
    sinpe_undecided_entry *e = &sinpe__undecided_ring[n % SINPE_UNDECIDED_RING];
    e->p = p;
    e->w = w;
    e->factor = factor;
    e->kind = kind;
    e->isa = isa;
}

#if defined(_MSC_VER)
#define SINPE__NOINLINE __declspec(noinline)
#else
#define SINPE__NOINLINE __attribute__((noinline))
#endif

static inline void sinpe__put_narrow(char *d, int kind, double v)
{
    if (kind == SINPE_KIND_F32) {
        float f = (float)v;
        memcpy(d, &f, 4);
    } else {
        uint16_t b = kind == SINPE_KIND_F16 ? sinpe_to_f16(v) : sinpe_to_bf16(v);
        memcpy(d, &b, 2);
    }
}

/* v to lane `lane` of row t of a placement (and its copy), if the placement has the lane */
static inline void sinpe__put_placed(const sinpe_rows *a, const sinpe_place *place, ptrdiff_t t,
                                     ptrdiff_t lane, double v)
{
    char *d;
    if (lane >= place->count)
        return;
    d = a->planes[place->plane] + (size_t)(t * a->width + place->col + lane * place->step) *
                                      a->itemsize;
    sinpe__put_narrow(d, a->kind, v);
    if (place->dup)
        sinpe__put_narrow(d + (size_t)place->dup * a->itemsize, a->kind, v);
}

/* Lanes i + l (bit l of mask) of row t of a run: cos and sin recomputed, correctly rounded,
   and stored over the vector store's values (a value that is already right is rewritten
   unchanged). Position 0 (and a zero frequency) is exact already: skipped. */
SINPE__NOINLINE static void sinpe__fix(const sinpe_rows *a, ptrdiff_t t, ptrdiff_t i,
                                       unsigned mask)
{
    const double p = a->p0 + (double)t;
    for (; mask; mask &= mask - 1) {
        ptrdiff_t lane = i;
        unsigned m = mask;
        double w, c, s;
        while (!(m & 1)) {
            m >>= 1;
            lane++;
        }
        w = a->w[lane];
        if (p == 0.0 || w == 0.0)
            continue;
        if (sinpe_correct_cos_sin(p, w, a->factor, a->kind, &c, &s) != 2)
            sinpe__record_undecided(p, w, a->factor, a->kind, a->isa);
        sinpe__put_placed(a, &a->cos, t, lane, c);
        sinpe__put_placed(a, &a->sin, t, lane, s);
    }
}

/* Lanes [i0, i1) of row t of a run again, in plain C (the same bits as every vector
   form): each flagged lane recomputed (sinpe__fix). */
SINPE__NOINLINE static void sinpe__recheck(const sinpe_rows *a, ptrdiff_t t, ptrdiff_t i0,
                                           ptrdiff_t i1)
{
    const double *fc = a->fine + t * a->fine_stride, *fs = fc + a->fine_sin;
    const int f16 = a->kind == SINPE_KIND_F16;
    ptrdiff_t i;
    for (i = i0; i < i1; i++) {
        double s = a->a_sin[i] * fc[i] + a->a_cos[i] * fs[i];
        double c = a->a_cos[i] * fc[i] - a->a_sin[i] * fs[i];
        if (a->clamp) {
            s = (s < 1.0 ? s : 1.0) > -1.0 ? (s < 1.0 ? s : 1.0) : -1.0;
            c = (c < 1.0 ? c : 1.0) > -1.0 ? (c < 1.0 ? c : 1.0) : -1.0;
        }
        if (a->scale) {
            s = a->factor * s;
            c = a->factor * c;
        }
        if (sinpe__near(INFINITY, c, s, a->guard[0], a->guard[1], a->guard[5], a->guard[4],
                        f16) <= a->guard[2])
            sinpe__fix(a, t, i, 1u);
    }
}

/* rotate.h, once per instruction set: sinpe_c_rows, sinpe_sse2_rows, sinpe_avx2_rows,
   sinpe_avx512_rows; and the exact evaluator's vector form (exact_simd.h) for the sets with
   FMA: sinpe_avx2_exact_cos_sin, sinpe_avx512_exact_cos_sin. */
#include "isa_c.h"
#include "rotate.h"
#include "isa_end.h"
#if SINPE_SSE2
#include "isa_sse2.h"
#include "rotate.h"
#include "isa_end.h"
#endif
#if SINPE_AVX2
#include "isa_avx2.h"
#include "exact_simd.h"
#include "rotate.h"
#include "isa_end.h"
#endif
#if SINPE_AVX512
#include "isa_avx512.h"
#include "exact_simd.h"
#include "rotate.h"
#include "isa_end.h"
#endif

/* cos and sin of p[r] w[i] (exact.h's contract, sinpe_exact_cos_sin_plain's layout), by
   the fastest form this CPU runs; every form gives the same bits. p has n_p finite
   positions, |p| < 2^53; table is _twin/turns.py prepare_frequency_table(w). */
static inline void sinpe_exact_cos_sin(const double *p, ptrdiff_t n_p, const double *table,
                                       ptrdiff_t n_w, double *out)
{
#if SINPE_AVX512
    if (sinpe_isa() >= SINPE_ISA_AVX512) {
        sinpe_avx512_exact_cos_sin(p, n_p, table, n_w, out);
        return;
    }
#endif
#if SINPE_AVX2
    if (sinpe_isa() == SINPE_ISA_AVX2) {
        sinpe_avx2_exact_cos_sin(p, n_p, table, n_w, out);
        return;
    }
#endif
    sinpe_exact_cos_sin_plain(p, n_p, table, n_w, out);
}

/* The row function of an instruction set, element kind and shape; `checked` 0: the narrow
   kinds without the correct-rounding test (benchmarks and tests only). */
#define SINPE__ROWS_AT(ISA) (checked ? ISA##_rows : ISA##_rows_unchecked)[kind][shape]
static inline sinpe_rows_fn sinpe_rows_for(int isa, int kind, int shape, int checked)
{
#if SINPE_AVX512BF16
    if (isa == SINPE_ISA_AVX512BF16 && kind == SINPE_KIND_BF16)
        return sinpe_avx512_rows_bf16n[!checked][shape];
#endif
#if SINPE_AVX512
    if (isa >= SINPE_ISA_AVX512)
        return SINPE__ROWS_AT(sinpe_avx512);
#endif
#if SINPE_AVX2
    if (isa == SINPE_ISA_AVX2)
        return SINPE__ROWS_AT(sinpe_avx2);
#endif
#if SINPE_SSE2
    if (isa >= SINPE_ISA_SSE2)
        return SINPE__ROWS_AT(sinpe_sse2);
#endif
    (void)isa;
    return SINPE__ROWS_AT(sinpe_c);
}
#undef SINPE__ROWS_AT

/* The float16/bfloat16 converter of an instruction set (rotate.h's round_f16, round_bf16). */
#define SINPE__ROUND_AT(ISA) (f16 ? ISA##_round_f16 : ISA##_round_bf16)(out, values, n)
static inline void sinpe_round_half(int isa, uint16_t *out, const double *values, ptrdiff_t n,
                                    int f16)
{
#if SINPE_AVX512BF16
    if (isa == SINPE_ISA_AVX512BF16 && !f16) {
        sinpe_avx512_round_bf16n(out, values, n);
        return;
    }
#endif
#if SINPE_AVX512
    if (isa >= SINPE_ISA_AVX512) {
        SINPE__ROUND_AT(sinpe_avx512);
        return;
    }
#endif
#if SINPE_AVX2
    if (isa == SINPE_ISA_AVX2) {
        SINPE__ROUND_AT(sinpe_avx2);
        return;
    }
#endif
#if SINPE_SSE2
    if (isa >= SINPE_ISA_SSE2) {
        SINPE__ROUND_AT(sinpe_sse2);
        return;
    }
#endif
    (void)isa;
    SINPE__ROUND_AT(sinpe_c);
}
#undef SINPE__ROUND_AT

/* The placement shape with vector stores that a segment's two placements fit (for the
   lanes both kinds have), else generic; the caller checks them against the table. */
static inline int sinpe_shape_of(const sinpe_place *c, const sinpe_place *s)
{
    if (c->step == 1 && s->step == 1)
        return SINPE_SHAPE_CONTIG;
    if (c->step == 2 && s->step == 2 && c->dup == 1 && s->dup == 1)
        return SINPE_SHAPE_DUP;
    if (c->step == 2 && s->step == 2 && c->dup == 0 && s->dup == 0 && c->plane == s->plane &&
        (c->col - s->col == 1 || s->col - c->col == 1))
        return SINPE_SHAPE_PAIRS;
    return SINPE_SHAPE_GENERIC;
}

/* What a plan holds: the frequency data and the layout, fixed for many calls. */
typedef struct {
    const double *grid;       /* (SINPE_GRID_ROWS, 2, h): mid rows, then fine rows */
    const double *table;      /* (SINPE_TABLE_ROWS, h): the evaluator's constants (exact.h) */
    ptrdiff_t h;              /* frequencies */
    const int64_t *segments;  /* (n_segments, SINPE_SEG_FIELDS) */
    const int *shapes;        /* per segment: its placement shape, paired lanes */
    ptrdiff_t n_segments;
    ptrdiff_t max_lanes;      /* the widest segment */
    ptrdiff_t width;          /* elements per row of each plane */
    ptrdiff_t pad_col;        /* a zero column of plane 0, or -1 */
    double factor;
} sinpe_plan;

/* One fill: a plan, the tables and the positions' codes. */
typedef struct {
    const sinpe_plan *plan;
    char *planes[2];
    int kind, isa;
    int unchecked;            /* 1: narrow values without the correct-rounding test */
    size_t itemsize;
    ptrdiff_t n_rows;
    const double *anchors;    /* (n_anchors, 2, h), or NULL: evaluate them here */
    const double *values;     /* (n_axes, n_rows) anchor positions, when anchors is NULL */
    double origin;            /* a run without anchors: anchor n is at origin + 1024 n */
    const int64_t *codes;     /* (n_axes, n_rows), or NULL: code = start + r */
    int64_t start;
    ptrdiff_t chunk_rows;
} sinpe_fill_job;

static inline void sinpe__place(const int64_t *seg, int kind_offset, sinpe_place *p)
{
    p->plane = seg[kind_offset];
    p->col = seg[kind_offset + 1];
    p->step = seg[kind_offset + 2];
    p->dup = seg[kind_offset + 3];
    p->count = seg[kind_offset + 4];
}

/* Rows [r0, r1) of one segment. */
static void sinpe__fill_segment(const sinpe_fill_job *job, ptrdiff_t s, ptrdiff_t r0,
                                ptrdiff_t r1, double *scratch)
{
    const sinpe_plan *plan = job->plan;
    const int64_t *seg = plan->segments + s * SINPE_SEG_FIELDS;
    const ptrdiff_t h = plan->h, first = seg[SINPE_SEG_FIRST], lanes = seg[SINPE_SEG_COUNT];
    const int64_t *codes = job->codes ? job->codes + seg[SINPE_SEG_AXIS] * job->n_rows : NULL;
    const double *values = job->values ? job->values + seg[SINPE_SEG_AXIS] * job->n_rows : NULL;
    double *evaluated = scratch + 2 * plan->max_lanes; /* [cos | sin] at a value: 2h doubles */
    double last_value = 0.0;
    const double *mid = plan->grid + first, *fine = plan->grid + SINPE_GRID_MID * 2 * h + first;
    const int shape = plan->shapes[s];
    sinpe_rows rows, product;
    ptrdiff_t both, most, r, p;
    int64_t last_anchor = -1, last_j = -1;
    sinpe_rows_fn paired = sinpe_rows_for(job->isa, job->kind, shape, !job->unchecked);
    sinpe_rows_fn single = sinpe_rows_for(SINPE_ISA_C, job->kind, SINPE_SHAPE_GENERIC, 1);
    sinpe_rows_fn multiply = sinpe_rows_for(job->isa, SINPE_KIND_F64, SINPE_SHAPE_CONTIG, 1);

    memset(&rows, 0, sizeof rows);
    sinpe__place(seg, SINPE_SEG_COS_PLANE, &rows.cos);
    sinpe__place(seg, SINPE_SEG_SIN_PLANE, &rows.sin);
    both = rows.cos.count < rows.sin.count ? rows.cos.count : rows.sin.count;
    most = rows.cos.count < rows.sin.count ? rows.sin.count : rows.cos.count;
    rows.width = plan->width;
    rows.a_cos = scratch;
    rows.a_sin = scratch + plan->max_lanes;
    rows.fine_stride = 2 * h;
    rows.fine_sin = h;
    rows.factor = plan->factor;
    rows.scale = plan->factor != 1.0;
    /* Narrower than float64 with factor 1: a value within 8.5e-16 outside [-1, 1] rounds to
       the same float32/float16/bfloat16 as its clamped value, so the clamp is skipped. */
    rows.clamp = job->kind == SINPE_KIND_F64 || rows.scale;
    rows.kind = job->kind;
    rows.isa = job->isa;
    rows.itemsize = job->itemsize;
    rows.w = plan->table + SINPE_ROW_W * h + first;
    if (job->kind != SINPE_KIND_F64)
        sinpe__set_guard(rows.guard, job->kind, plan->factor);

    /* the anchor product a = anchor * mid[j]: one row into the scratch, no clamp, no scale */
    memset(&product, 0, sizeof product);
    product.planes[0] = (char *)scratch;
    product.planes[1] = (char *)(scratch + plan->max_lanes);
    product.n_rows = 1;
    product.fine_sin = h;
    product.factor = 1.0;
    product.cos.plane = 0;
    product.cos.step = 1;
    product.cos.count = lanes;
    product.sin = product.cos;
    product.sin.plane = 1;

    for (r = r0; r < r1;) {
        int64_t code = codes ? codes[r] : job->start + r;
        int64_t anchor = code >> SINPE_GRID_SPAN_BITS;
        int64_t u = code & (SINPE_GRID_SPAN - 1);
        int64_t j = u >> SINPE_GRID_FINE_BITS, k = u & (SINPE_GRID_FINE - 1);
        ptrdiff_t run = 1;
        if (!job->anchors) { /* evaluated here, when it changes */
            double at = values ? values[r] : job->origin + (double)(anchor << SINPE_GRID_SPAN_BITS);
            if (r == r0 || at != last_value) {
                last_value = at;
                sinpe_exact_cos_sin(&last_value, 1, plan->table, h, evaluated);
                last_anchor = -1; /* a new anchor */
            }
            anchor = 0;
        }
        if (anchor != last_anchor || j != last_j) {
            const double *a = job->anchors ? job->anchors + anchor * 2 * h + first : evaluated + first;
            if (j == 0) { /* mid[0] is e^{i0w} = (1, +-0): the anchor itself, nothing to round */
                rows.a_cos = a;
                rows.a_sin = a + h;
            } else {
                product.a_cos = a;
                product.a_sin = a + h;
                product.fine = mid + j * 2 * h;
                multiply(&product, 0, lanes);
                rows.a_cos = scratch;
                rows.a_sin = scratch + plan->max_lanes;
            }
            last_anchor = anchor;
            last_j = j;
        }
        /* the next rows at positions p + 1, p + 2, ... with the same anchor and mid row */
        while (r + run < r1 && k + run < SINPE_GRID_FINE &&
               (codes ? codes[r + run] : job->start + r + run) == code + run &&
               (!values || values[r + run] == values[r]))
            run++;
        for (p = 0; p < 2; p++)
            rows.planes[p] = job->planes[p] ? job->planes[p] + r * plan->width * job->itemsize
                                            : NULL;
        rows.n_rows = run;
        rows.fine = fine + k * 2 * h;
        /* the position of row r: its anchor position plus u, or the run's origin plus code */
        rows.p0 = values ? values[r] + (double)u : job->origin + (double)code;
        if (both)
            paired(&rows, 0, both);
        if (most > both)
            single(&rows, both, most);
        r += run;
    }
}

/* One chunk of rows: every segment, then the zero column. */
static void sinpe_fill_chunk(void *context, ptrdiff_t chunk, double *scratch)
{
    const sinpe_fill_job *job = (const sinpe_fill_job *)context;
    const sinpe_plan *plan = job->plan;
    ptrdiff_t r0 = chunk * job->chunk_rows;
    ptrdiff_t r1 = r0 + job->chunk_rows < job->n_rows ? r0 + job->chunk_rows : job->n_rows;
    ptrdiff_t s, r;
    for (s = 0; s < plan->n_segments; s++)
        sinpe__fill_segment(job, s, r0, r1, scratch);
    if (plan->pad_col >= 0)
        for (r = r0; r < r1; r++)
            memset(job->planes[0] + (r * plan->width + plan->pad_col) * job->itemsize, 0,
                   job->itemsize);
}

/* Rows per chunk: about SINPE_CHUNK_ELEMENTS elements, a multiple of the fine table's 16. */
static inline ptrdiff_t sinpe_chunk_rows(ptrdiff_t width)
{
    ptrdiff_t rows = SINPE_CHUNK_ELEMENTS / (width > 0 ? width : 1);
    rows -= rows % SINPE_GRID_FINE;
    return rows > SINPE_GRID_FINE ? rows : SINPE_GRID_FINE;
}

/* The whole fill on `threads` threads (team.h), `check` run between chunks (or NULL): 0; -1
   when the scratch could not be allocated (then nothing was written); -2 when the check
   stopped it (then part of the table is written). */
static inline int sinpe_fill(sinpe_fill_job *job, int threads, sinpe_check_fn check)
{
    ptrdiff_t n_chunks;
    uintptr_t placement;
    if (job->n_rows <= 0)
        return 0;
    /* where the filler evaluates anchors, a row may cost an evaluation too */
    job->chunk_rows = sinpe_chunk_rows(
        job->plan->width + (job->values ? SINPE_PAIR_COST * job->plan->h : 0));
    n_chunks = (job->n_rows + job->chunk_rows - 1) / job->chunk_rows;
    /* Each thread's anchor product at the fine rows' offset into a page: the row loop then
       loads from few page offsets, clear of its own stores modulo 4096 (a store a few
       hundred bytes behind a load, modulo 4096, stalls the load on a false dependence). */
    placement = (uintptr_t)(job->plan->grid + SINPE_GRID_MID * 2 * job->plan->h) & 4095;
    return sinpe_team_run(threads, n_chunks, sinpe_fill_chunk, job,
                          2 * job->plan->max_lanes + (job->anchors ? 0 : 2 * job->plan->h),
                          placement, check);
}

#endif /* SINPE_FILL_H */
