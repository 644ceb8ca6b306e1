/* Error-free transformations and double-double arithmetic shared by the evaluator
   (exact.h), its per-frequency constants (turns.h) and the frequency rule (frequencies.h).
   Twin: _exactmath/dd.py, the same formulas with the same names (sinpe__two_sum <-> two_sum).
   Each returns hi + lo with hi the rounded result and lo the exact rest (or, for the dd
   operations, a rest accurate to 2^-104 relative). IEEE double rounding is required: the
   header refuses -ffast-math and excess precision, and no FMA may contract a*b + c. */
#ifndef SINPE_DD_H
#define SINPE_DD_H
#include <float.h>
#include <math.h>

#if defined(__FAST_MATH__)
#error "sinpe relies on IEEE double rounding: do not compile it with -ffast-math"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "sinpe needs FLT_EVAL_METHOD == 0 (SSE2 doubles, no x87 excess precision)"
#endif
/* A contracted a*b + c would change the bits (and void the error bounds). GCC takes
 * -ffp-contract=off from setup.py (its optimize pragma would also block inlining);
 * clang has the standard pragma. The backends-agree tests catch a contracting build. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define SINPE__SPLITTER 134217729.0 /* 2^27 + 1: Veltkamp split into 26-bit halves */
#define SINPE__TWO52 0x1p52

typedef struct {
    double hi, lo;
} sinpe__dd;

/* Veltkamp: a = hi + lo exactly, each with at most 26 significant bits. */
static inline sinpe__dd sinpe__split(double a)
{
    double g = a * SINPE__SPLITTER;
    sinpe__dd r;
    r.hi = g - (g - a);
    r.lo = a - r.hi;
    return r;
}

/* Dekker: a*b = hi + lo exactly (barring underflow), from the splits as, bs
 * of a and b.  hi = RN(a*b) and lo is the exact residual, so the result is
 * bit-identical to the FMA form hi = a*b, lo = fma(a, b, -hi). */
static inline sinpe__dd sinpe__two_prod(double a, sinpe__dd as, double b, sinpe__dd bs)
{
    sinpe__dd r;
    r.hi = a * b;
    r.lo = (((as.hi * bs.hi - r.hi) + as.hi * bs.lo) + as.lo * bs.hi) + as.lo * bs.lo;
    return r;
}

/* Knuth: a + b = hi + lo exactly, any magnitudes. */
static inline sinpe__dd sinpe__two_sum(double a, double b)
{
    sinpe__dd r;
    double bb;
    r.hi = a + b;
    bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}

/* Dekker: a + b = hi + lo exactly when a == 0 or exponent(a) >= exponent(b). */
static inline sinpe__dd sinpe__fast_two_sum(double a, double b)
{
    sinpe__dd r;
    r.hi = a + b;
    r.lo = b - (r.hi - a);
    return r;
}

/* v minus its nearest integer, exactly; 0 when |v| >= 2^52 (v is an integer). */
static inline double sinpe__frac(double v)
{
    double s = copysign(SINPE__TWO52, v);
    double f = v - ((v + s) - s); /* v + s lands in [2^52, 2^53]: rounds v to an integer */
    return fabs(v) < SINPE__TWO52 ? f : 0.0;
}

/* a * b = hi + lo exactly, splitting both (_exactmath/dd.py two_prod). */
static inline sinpe__dd sinpe__two_prod_split(double a, double b)
{
    return sinpe__two_prod(a, sinpe__split(a), b, sinpe__split(b));
}

/* (a_hi + a_lo) (b_hi + b_lo) as a normalised dd (_exactmath/dd.py dd_mul). */
static inline sinpe__dd sinpe__dd_mul(sinpe__dd a, sinpe__dd b)
{
    sinpe__dd p = sinpe__two_prod_split(a.hi, b.hi);
    return sinpe__fast_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

/* (a_hi + a_lo) + (b_hi + b_lo) as a normalised dd (_exactmath/dd.py dd_add). */
static inline sinpe__dd sinpe__dd_add(sinpe__dd a, sinpe__dd b)
{
    sinpe__dd s = sinpe__two_sum(a.hi, b.hi);
    return sinpe__fast_two_sum(s.hi, s.lo + (a.lo + b.lo));
}

#endif /* SINPE_DD_H */
