/*
 * The exact evaluator's per-frequency constants in C: c = w / (2 pi) as the triple-double
 * c0 + c1 + c2 (each the nearest double to what the previous ones leave) and the Veltkamp
 * splits of c0 and c1, the SINPE_ROW_* table that exact.h reads.
 *
 * Twin: _twin/turns.py prepare_frequency_table, whose docstring carries the derivation (steps 1 to 4:
 * exact products of w's 27-bit head and 26-bit tail with the 25-bit chunks of 1/(2 pi), one
 * carry step, three fast two-sums, and the certificate that proves the triple equal, bit for
 * bit, to the big-integer definition).  Here the same double operations run per column in
 * the same order; every sum before the last renormalisation is exact, so the bits are the
 * NumPy twin's.  A column whose certificate fails (about 2^-30 of frequencies) or whose
 * |w| < 2^-700 is marked for the big-integer path (_twin/turns.py exact_columns, Python integers);
 * columns with |w| >= SINPE_FAST_W_LIMIT keep only w, as in the twin.
 *
 * Why it is here: the NumPy twin is ~35 calls on 1 to 16 rows of n_w values, 150-400 us of
 * a first table; this loop takes about 40 ns per frequency.
 */
#ifndef SINPE_TURNS_H
#define SINPE_TURNS_H

#include "exact.h" /* sinpe__inv_2pi_chunks, SINPE_ROW_*, the IEEE and no-contract rules */


/* What sinpe_prepare_frequency_table left for the caller in status[i]. */
enum {
    SINPE_TURNS_DONE = 0,  /* every row filled */
    SINPE_TURNS_EXACT = 1, /* rows c0..c1_lo to be filled by the big-integer path */
    SINPE_TURNS_HUGE = 2   /* |w| >= SINPE_FAST_W_LIMIT (or not finite): only w, rest 0 */
};

/* Fill table (SINPE_TABLE_ROWS x n, row major) for the n frequencies w; returns how many
 * columns have status SINPE_TURNS_EXACT. */
static inline ptrdiff_t sinpe_prepare_frequency_table(const double *w, ptrdiff_t n,
                                                      double *table, unsigned char *status)
{
    const double *K = sinpe__inv_2pi_chunks;
    ptrdiff_t i, exact = 0;
    int r;
    for (i = 0; i < n; i++) {
        double wi = w[i];
        uint64_t bits;
        double scale; /* 2^E with 2^E <= |w| < 2^(E+1); 0 for 0 and subnormals, inf for inf/NaN */
        memcpy(&bits, &wi, sizeof bits);
        bits &= UINT64_C(0x7FF0000000000000);
        memcpy(&scale, &bits, sizeof scale);
        table[SINPE_ROW_W * n + i] = wi;
        for (r = SINPE_ROW_C0; r < SINPE_TABLE_ROWS; r++)
            table[r * n + i] = 0.0;
        if (!(scale < SINPE_FAST_W_LIMIT)) {
            status[i] = SINPE_TURNS_HUGE;
            continue;
        }
        if (scale < SINPE_FAST_W_MIN) {
            status[i] = SINPE_TURNS_EXACT;
            exact++;
            continue;
        }
        /* Step 1: head (27 bits) and tail of w; g_j = head K_j + tail K_{j-1}, exact. */
        double big = wi * (0x1p26 + 1.0);
        double head = big - (big - wi);
        double tail = wi - head;
        double g[9];
        g[0] = head * K[0];
        for (r = 1; r < 9; r++)
            g[r] = head * K[r] + tail * K[r - 1];
        /* Carry: the odd rows onto the grid 2^-(27+25j) 2^E of the row above, exact. */
        double x[5] = {g[0], g[2], g[4], g[6], g[8]};
        int j;
        /* 1.5 * 2^52 u_j for the grid u_j = 2^-(27 + 25j) of row j - 1 (j = 1, 3, 5, 7) */
        static const double carries[4] = {0x1.8p0, 0x1.8p-50, 0x1.8p-100, 0x1.8p-150};
        for (j = 0; j < 4; j++) {
            double odd = g[2 * j + 1];
            double carry = carries[j] * scale;
            double hi = (odd + carry) - carry;
            double lo = odd - hi;
            x[j + 1] += lo;
            x[j] += hi;
        }
        /* Step 2: renormalise top-down; r3 is the one rounding. */
        double rr[4], c, e;
        c = x[0] + x[1];
        rr[0] = c;
        e = x[1] - (c - x[0]);
        c = e + x[2];
        rr[1] = c;
        e = x[2] - (c - e);
        c = e + x[3];
        rr[2] = c;
        e = x[3] - (c - e);
        rr[3] = e + x[4];
        /* Step 3: the certificate, with margins D_k 2^E. */
        static const double margins[3] = {0x1p-98, 0x1p-151, 0x1p-201};
        int ok = 1;
        for (r = 0; r < 3; r++) {
            double a = copysign(margins[r] * scale, rr[r + 1]);
            a = (a + rr[r + 1]) + rr[r];
            ok &= a == rr[r];
        }
        if (!ok) {
            status[i] = SINPE_TURNS_EXACT;
            exact++;
            continue;
        }
        status[i] = SINPE_TURNS_DONE;
        sinpe__dd s0 = sinpe__split(rr[0]), s1 = sinpe__split(rr[1]);
        table[SINPE_ROW_C0 * n + i] = rr[0];
        table[SINPE_ROW_C1 * n + i] = rr[1];
        table[SINPE_ROW_C2 * n + i] = rr[2];
        table[SINPE_ROW_C0_HI * n + i] = s0.hi;
        table[SINPE_ROW_C0_LO * n + i] = s0.lo;
        table[SINPE_ROW_C1_HI * n + i] = s1.hi;
        table[SINPE_ROW_C1_LO * n + i] = s1.lo;
    }
    return exact;
}

#endif /* SINPE_TURNS_H */
