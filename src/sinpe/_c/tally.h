/* One block of a table an engine holds, against the exact rows: what the verdict core
   (sinpe._verdict.judge) reads off the block's errors, in one pass over the four arrays. The
   NumPy twin (sinpe._twin.tally) makes the same quantities one array operation at a time.

   Nothing here is approximate. Every value is formed by the twin's operations in the twin's
   order, each rounded once (a difference, an absolute value, a product, two differences;
   this file is compiled without FMA contraction, setup.py's -ffp-contract=off), and every
   largest and least is a comparison, so both give the same bits. A row-major scan keeps the
   first entry where a largest is reached, as NumPy's argmax does.

   Entry (r, j), against column cols[j] of the exact rows:
   - its error e = max(|cos - want_cos|, |sin - want_sin|) (|cos - want_cos| without sin);
     an entry whose cos or sin is not a number (NaN, inf) has none: NaN, in its row's largest
     and the block's;
   - how far it is past kind k's drift bound: past_k = (x - match) - p_r rate_k[j], x = e,
     or +inf for an entry without an error (never within any bound);
   - its squared radius cos^2 + sin^2 (with sin; entries with an error only).
   cos and sin are float64, or float32 (`narrow`: each row widened first, exactly, as NumPy
   widens float32 operands against float64 ones); row r starts `stride` elements after row
   r - 1 (the halves of a [cos | sin] block are read in place). Per block: each row's
   largest e (0 for no column), the largest e, the first entry without an error, kind 0's
   largest past with its first entry and e there, kind 1's largest past (when asked), the
   least and largest squared radius. Returns 0, or -1 (nothing counted) when its rows of
   scratch could not be had. */
#ifndef SINPE_TALLY_H
#define SINPE_TALLY_H
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>

typedef struct {
    double top;          /* the largest e: NaN if an entry has none, 0 for no entry */
    ptrdiff_t bad;       /* the first entry (r * m + j) without an error, or -1 */
    double worst;        /* kind 0's largest past (-inf for no entry) */
    ptrdiff_t worst_at;  /* its first entry, or -1 */
    double worst_error;  /* e there */
    double other;        /* kind 1's largest past (-inf for no entry or no kind 1) */
    double square_min, square_max; /* of cos^2 + sin^2 (+inf, -inf for none) */
} sinpe_tally;

/* Row r's errors into err[] (NaN for an entry that is not a number), its squared radii
   into the least and largest so far (entries that are numbers only: a row with another
   is redone one entry at a time); returns whether every entry is a number. `cols` NULL:
   column j of the exact rows is column j, and the loops run on whole vectors. Four
   accumulators each: the least and largest are exact in any order, and four independent
   chains keep the core busy where one waited on each comparison. */
static int sinpe__tally_errors(const double *c, const double *s, const double *wc,
                               const double *ws, const ptrdiff_t *cols, ptrdiff_t m,
                               double *err, double *square, double *square_min,
                               double *square_max)
{
    ptrdiff_t j = 0;
    int bad = 0;
    double l0 = *square_min, l1 = l0, l2 = l0, l3 = l0;
    double h0 = *square_max, h1 = h0, h2 = h0, h3 = h0;
    if (!cols) {
        for (j = 0; j < m; j++)
            err[j] = fabs(c[j] - wc[j]);
        if (s)
            for (j = 0; j < m; j++) {
                const double es = fabs(s[j] - ws[j]);
                err[j] = es > err[j] ? es : err[j];
            }
    } else {
        for (j = 0; j < m; j++)
            err[j] = fabs(c[j] - wc[cols[j]]);
        if (s)
            for (j = 0; j < m; j++) {
                const double es = fabs(s[j] - ws[cols[j]]);
                err[j] = es > err[j] ? es : err[j];
            }
    }
    /* every entry a number? z is 0 where every square (or error, without sin) is finite, and
       NaN where one is not (inf * 0, NaN * 0): exactly where a cos or sin is not a number,
       or a square overflows (a finite |cos| > 1e154, which the exact pass below takes) */
    {
        const double *v = s ? square : err;
        double z0 = 0.0, z1 = 0.0, z2 = 0.0, z3 = 0.0;
        if (s)
            for (j = 0; j < m; j++)
                square[j] = c[j] * c[j] + s[j] * s[j];
        for (j = 0; j + 4 <= m; j += 4) {
            z0 += v[j] * 0.0;
            z1 += v[j + 1] * 0.0;
            z2 += v[j + 2] * 0.0;
            z3 += v[j + 3] * 0.0;
        }
        for (; j < m; j++)
            z0 += v[j] * 0.0;
        bad = (z0 + z1) + (z2 + z3) != 0.0;
    }
    if (bad) { /* again, one entry at a time: NaN errors, radii of the numbers only */
        int numbers = 1;
        for (j = 0; j < m; j++) {
            if (!(fabs(c[j]) <= DBL_MAX) || (s && !(fabs(s[j]) <= DBL_MAX))) {
                err[j] = NAN;
                numbers = 0;
            } else if (s) {
                const double sq = c[j] * c[j] + s[j] * s[j];
                l0 = sq < l0 ? sq : l0;
                h0 = sq > h0 ? sq : h0;
            }
        }
        *square_min = l0;
        *square_max = h0;
        return numbers;
    }
    if (!s)
        return 1;
    for (j = 0; j + 4 <= m; j += 4) {
        l0 = square[j] < l0 ? square[j] : l0;
        l1 = square[j + 1] < l1 ? square[j + 1] : l1;
        l2 = square[j + 2] < l2 ? square[j + 2] : l2;
        l3 = square[j + 3] < l3 ? square[j + 3] : l3;
        h0 = square[j] > h0 ? square[j] : h0;
        h1 = square[j + 1] > h1 ? square[j + 1] : h1;
        h2 = square[j + 2] > h2 ? square[j + 2] : h2;
        h3 = square[j + 3] > h3 ? square[j + 3] : h3;
    }
    for (; j < m; j++) {
        l0 = square[j] < l0 ? square[j] : l0;
        h0 = square[j] > h0 ? square[j] : h0;
    }
    l0 = l1 < l0 ? l1 : l0;
    l2 = l3 < l2 ? l3 : l2;
    h0 = h1 > h0 ? h1 : h0;
    h2 = h3 > h2 ? h3 : h2;
    *square_min = l2 < l0 ? l2 : l0;
    *square_max = h2 > h0 ? h2 : h0;
    return 1;
}

/* The largest of v[0 .. m) and `start`, with four accumulators (exact in any order: the
   values are numbers, none of them -0). */
static double sinpe__largest(const double *v, ptrdiff_t m, double start)
{
    ptrdiff_t j = 0;
    double a0 = start, a1 = start, a2 = start, a3 = start;
    for (; j + 4 <= m; j += 4) {
        a0 = v[j] > a0 ? v[j] : a0;
        a1 = v[j + 1] > a1 ? v[j + 1] : a1;
        a2 = v[j + 2] > a2 ? v[j + 2] : a2;
        a3 = v[j + 3] > a3 ? v[j + 3] : a3;
    }
    for (; j < m; j++)
        a0 = v[j] > a0 ? v[j] : a0;
    a0 = a1 > a0 ? a1 : a0;
    a2 = a3 > a2 ? a3 : a2;
    return a2 > a0 ? a2 : a0;
}

static int sinpe_tally_block(const void *cos_rows, const void *sin_rows, int narrow,
                             const double *want_cos, const double *want_sin,
                             ptrdiff_t want_width, const ptrdiff_t *cols,
                             const int64_t *positions, const double *rates, int kinds,
                             double match, ptrdiff_t n, ptrdiff_t m, ptrdiff_t stride,
                             double *row_max, sinpe_tally *t)
{
    ptrdiff_t r, j, bad = -1, worst_at = -1;
    int nan_seen = 0;
    double top = 0.0, worst = -INFINITY, worst_error = 0.0, other = -INFINITY;
    double square_min = INFINITY, square_max = -INFINITY;
    const double *rates_other = kinds > 1 ? rates + m : NULL;
    /* a row's errors; its squared radii, then how far past a bound each entry is; a float32
       row of cos and one of sin widened (exactly) */
    double *scratch = (double *)malloc(4 * (size_t)(m > 0 ? m : 1) * sizeof(double));
    double *err = scratch, *square = scratch + m, *past = scratch + m, *wide = scratch + 2 * m;
    const ptrdiff_t *mapped = cols; /* NULL below where every column j reads column j */
    if (!scratch)
        return -1;
    for (j = 0; j < m && cols[j] == j; j++)
        ;
    if (j == m)
        mapped = NULL;
    for (r = 0; r < n; r++) {
        const double *c, *s;
        const double p = (double)positions[r];
        double largest, row_worst;
        int numbers;
        if (narrow) {
            const float *c32 = (const float *)cos_rows + r * stride;
            const float *s32 = sin_rows ? (const float *)sin_rows + r * stride : NULL;
            for (j = 0; j < m; j++)
                wide[j] = (double)c32[j];
            if (s32)
                for (j = 0; j < m; j++)
                    wide[m + j] = (double)s32[j];
            c = wide;
            s = s32 ? wide + m : NULL;
        } else {
            c = (const double *)cos_rows + r * stride;
            s = sin_rows ? (const double *)sin_rows + r * stride : NULL;
        }
        numbers = sinpe__tally_errors(c, s, want_cos + r * want_width,
                                      want_sin + r * want_width, mapped, m, err, square,
                                      &square_min, &square_max);
        /* how far past each bound (an entry that is not a number is past every one): the
           row's largest, then its first entry only where it is the block's worst so far */
        for (j = 0; j < m; j++) {
            const double x = err[j] == err[j] ? err[j] : INFINITY;
            past[j] = (x - match) - p * rates[j];
        }
        row_worst = sinpe__largest(past, m, -INFINITY);
        if (m > 0 && (row_worst > worst || worst_at < 0)) {
            /* the first entry holding it (bounded: rates the core never gives, infinite
               ones, could make a NaN that is no entry's largest) */
            for (j = 0; j < m - 1 && past[j] != row_worst; j++)
                ;
            worst = row_worst;
            worst_at = r * m + j;
            worst_error = err[j];
        }
        if (rates_other) {
            for (j = 0; j < m; j++) {
                const double x = err[j] == err[j] ? err[j] : INFINITY;
                past[j] = (x - match) - p * rates_other[j];
            }
            other = sinpe__largest(past, m, other);
        }
        if (numbers) {
            largest = sinpe__largest(err, m, 0.0);
            row_max[r] = largest;
            top = largest > top ? largest : top;
        } else {
            for (j = 0; j < m && bad < 0; j++)
                if (err[j] != err[j])
                    bad = r * m + j;
            row_max[r] = NAN;
            nan_seen = 1;
        }
    }
    t->top = nan_seen ? NAN : top;
    t->bad = bad;
    t->worst = worst;
    t->worst_at = worst_at;
    t->worst_error = worst_error;
    t->other = other;
    t->square_min = square_min;
    t->square_max = square_max;
    free(scratch);
    return 0;
}

#endif /* SINPE_TALLY_H */
