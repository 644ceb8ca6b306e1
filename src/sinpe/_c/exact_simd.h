/* The exact evaluator's vector form, written once over an instruction set's helpers and
   compiled once per set (exact.h includes it after isa_avx2.h's and isa_avx512.h's exact
   helpers, as fill.h includes rotate.h): the scalar operations of exact.h in the same
   order, SINPE_W frequencies per vector, so every set gives the scalar code's bits. FMA
   only forms the exact residual of two_prod (the scalar code's Dekker product gives the
   same bits). The last partial vector of a row is done with masked loads and stores, not
   by the scalar code. No include guard, deliberately.

   Helpers of each set (V(name) = sinpe_<set>_name), on SINPE_VD vectors:
       load, set1                 as in rotate.h
       load_part(p, n)            lanes < n from p, the rest 0 (0 < n < SINPE_W)
       fmsub(a, b, c)             RN(a*b - c), one rounding
       abs, copysign(m, s), neg   sign-bit operations
       lt(a, b)                   SINPE_VM mask of a < b (ordered)
       select(m, a, b)            a where m, else b
       first(n)                   mask of lanes < n;  both(m1, m2): m1 and m2
       store_mask(d, m, v)        lanes of v where m
       row_offsets(kd)            SINPE_VI: (low 8 bits of kd's pattern) * 32 bytes
       turn_rows(base, o, ...)    the four doubles at base + o of each lane, one vector each */

#define SINPE__XCAT2(a, b) a##_##b
#define SINPE__XCAT(a, b) SINPE__XCAT2(a, b)
#define V(name) SINPE__XCAT(SINPE__XCAT(sinpe, SINPE_ISA_NAME), name)
#define SINPE__X SINPE_ATTR static inline

typedef struct {
    SINPE_VD hi, lo;
} V(vdd);

SINPE__X V(vdd) V(two_prod)(SINPE_VD a, SINPE_VD b)
{
    V(vdd) r;
    r.hi = a * b;
    r.lo = V(fmsub)(a, b, r.hi); /* RN(a*b - hi) = a*b - hi: exact */
    return r;
}

SINPE__X V(vdd) V(two_sum)(SINPE_VD a, SINPE_VD b)
{
    V(vdd) r;
    SINPE_VD bb;
    r.hi = a + b;
    bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}

SINPE__X V(vdd) V(fast_two_sum)(SINPE_VD a, SINPE_VD b)
{
    V(vdd) r;
    r.hi = a + b;
    r.lo = b - (r.hi - a);
    return r;
}

SINPE__X SINPE_VD V(frac)(SINPE_VD v)
{
    const SINPE_VD two52 = V(set1)(SINPE__TWO52);
    SINPE_VD s = V(copysign)(two52, v);
    SINPE_VD f = v - ((v + s) - s);
    /* +0.0 where |v| >= 2^52, as the scalar 0.0 */
    return V(select)(V(lt)(V(abs)(v), two52), f, V(set1)(0.0));
}

/* one vector of table row `row` at column i: n lanes (n == SINPE_W: all) */
SINPE__X SINPE_VD V(table_row)(const double *table, ptrdiff_t row, ptrdiff_t n_w, ptrdiff_t i,
                               ptrdiff_t n)
{
    const double *p = table + row * n_w + i;
    return n == SINPE_W ? V(load)(p) : V(load_part)(p, n);
}

SINPE__X V(vdd) V(fast_turns)(SINPE_VD p, const double *table, ptrdiff_t n_w, ptrdiff_t i,
                              ptrdiff_t n)
{
    V(vdd) h0 = V(two_prod)(p, V(table_row)(table, SINPE_ROW_C0, n_w, i, n));
    V(vdd) h1 = V(two_prod)(p, V(table_row)(table, SINPE_ROW_C1, n_w, i, n));
    SINPE_VD m2 = p * V(table_row)(table, SINPE_ROW_C2, n_w, i, n);
    SINPE_VD f0 = V(frac)(h0.hi);
    V(vdd) s1 = V(two_sum)(h0.lo, h1.hi);
    SINPE_VD f1 = V(frac)(s1.hi);
    V(vdd) u = V(two_sum)(f0, f1);
    SINPE_VD tail = ((u.lo + s1.lo) + h1.lo) + m2;
    return V(two_sum)(u.hi, tail);
}

/* The table row of each lane goes out as a byte offset into sinpe__turn_table. */
SINPE__X V(vdd) V(turns_to_radians)(SINPE_VD t_hi, SINPE_VD t_lo, SINPE_VI *row_offset)
{
    const SINPE_VD magic = V(set1)(SINPE__ROUND_MAGIC);
    SINPE_VD kd = t_hi * V(set1)(256.0) + magic;
    SINPE_VD r0 = t_hi - (kd - magic) * V(set1)(1.0 / 256.0);
    V(vdd) r = V(fast_two_sum)(r0, t_lo);
    V(vdd) x0 = V(two_prod)(r.hi, V(set1)(SINPE__TWO_PI_HI));
    *row_offset = V(row_offsets)(kd);
    return V(fast_two_sum)(x0.hi, x0.lo + (r.hi * V(set1)(SINPE__TWO_PI_LO) +
                                           r.lo * V(set1)(SINPE__TWO_PI_HI)));
}

SINPE__X void V(radians_cos_sin)(V(vdd) x, SINPE_VI row_offset, SINPE_VD *cos_out,
                                 SINPE_VD *sin_out)
{
    const SINPE_VD half = V(set1)(0.5);
    SINPE_VD ca_hi, ca_lo, sa_hi, sa_lo;
    V(vdd) z, sp, cp, cs, ss;
    SINPE_VD xx, q, m, sigma, cx, sx;
    V(turn_rows)((const char *)&sinpe__turn_table[0][0], row_offset, &ca_hi, &ca_lo, &sa_hi,
                 &sa_lo);
    z = V(two_prod)(x.hi, x.hi);
    xx = x.hi * x.lo;
    q = z.lo + (xx + xx);
    m = ((z.hi * z.hi) * (V(set1)(SINPE__COS_C4) +
                          z.hi * (V(set1)(SINPE__COS_C6) + z.hi * V(set1)(SINPE__COS_C8))) -
         half * q) -
        half * z.hi;
    sigma = x.lo + (x.hi * z.hi) * (V(set1)(SINPE__SIN_C3) +
                                    z.hi * (V(set1)(SINPE__SIN_C5) +
                                            z.hi * V(set1)(SINPE__SIN_C7)));
    cx = V(set1)(1.0) + m;
    sx = x.hi + sigma;
    sp = V(two_prod)(sa_hi, x.hi);
    cp = V(two_prod)(ca_hi, x.hi);
    cs = V(fast_two_sum)(ca_hi, V(neg)(sp.hi));
    ss = V(fast_two_sum)(sa_hi, cp.hi);
    *cos_out =
        cs.hi + (((((cs.lo - sp.lo) + ca_lo * cx) - sa_lo * sx) - sa_hi * sigma) + ca_hi * m);
    *sin_out =
        ss.hi + (((((ss.lo + cp.lo) + sa_lo * cx) + ca_lo * sx) + ca_hi * sigma) + sa_hi * m);
}

/* This set's form of sinpe_exact_cos_sin_plain: same contract, same bits, every column
   (the last partial vector of each row masked). */
SINPE_ATTR static void V(exact_cos_sin)(const double *p, ptrdiff_t n_p, const double *table,
                                        ptrdiff_t n_w, double *out)
{
    const SINPE_VD w_limit = V(set1)(SINPE_FAST_W_LIMIT);
    const SINPE_VD tiny_limit = V(set1)(SINPE_TINY_ARGUMENT);
    const SINPE_VD one = V(set1)(1.0);
    V(vdd) x[SINPE__BLOCK / SINPE_W];
    SINPE_VI row_offset[SINPE__BLOCK / SINPE_W];
    ptrdiff_t r, start, b;
    for (r = 0; r < n_p; r++) {
        double *out_cos = out + r * 2 * n_w;
        double *out_sin = out_cos + n_w;
        SINPE_VD pv = V(set1)(p[r]);
        for (start = 0; start < n_w; start += SINPE__BLOCK) {
            ptrdiff_t n_lanes = n_w - start < SINPE__BLOCK ? n_w - start : SINPE__BLOCK;
            ptrdiff_t n_blk = (n_lanes + SINPE_W - 1) / SINPE_W;
            for (b = 0; b < n_blk; b++) {
                ptrdiff_t i = start + SINPE_W * b, n = n_w - i < SINPE_W ? n_w - i : SINPE_W;
                x[b] = V(fast_turns)(pv, table, n_w, i, n);
            }
            for (b = 0; b < n_blk; b++)
                x[b] = V(turns_to_radians)(x[b].hi, x[b].lo, &row_offset[b]);
            for (b = 0; b < n_blk; b++) {
                ptrdiff_t i = start + SINPE_W * b, n = n_w - i < SINPE_W ? n_w - i : SINPE_W;
                SINPE_VD w = V(table_row)(table, SINPE_ROW_W, n_w, i, n);
                SINPE_VM fast = V(lt)(V(abs)(w), w_limit);
                SINPE_VD pw = pv * w;
                SINPE_VM tiny = V(lt)(V(abs)(pw), tiny_limit);
                SINPE_VD c, s;
                if (n < SINPE_W)
                    fast = V(both)(fast, V(first)(n));
                V(radians_cos_sin)(x[b], row_offset[b], &c, &s);
                V(store_mask)(out_cos + i, fast, V(select)(tiny, one, c));
                V(store_mask)(out_sin + i, fast, V(select)(tiny, pw, s));
            }
        }
    }
}

#undef SINPE__X
#undef V
#undef SINPE__XCAT
#undef SINPE__XCAT2
