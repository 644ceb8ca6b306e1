/* The one rotation of the filler, written once over an instruction set's helpers (isa_*.h)
   and compiled once per set: fill.h includes this file after isa_c.h, isa_sse2.h and
   isa_avx2.h in turn (as SLEEF writes one algorithm over per-ISA helper headers), so no loop
   is written twice. There is deliberately no include guard.

   Value. For an anchor a = (a_cos, a_sin) and a step f = (f_cos, f_sin), unit vectors,
       sin = a_sin * f_cos + a_cos * f_sin,    cos = a_cos * f_cos - a_sin * f_sin
   (four products and two sums, each rounded once, in this order); then, if clamp, each held
   to [-1, 1] (min then max), then, if scale, times factor. The NumPy twin (_twin/fill.py,
   rotate) does the same operations in the same order, so both give the same bits, and so
   does every instruction set (no FMA: -ffp-contract=off). The error bound of two chained
   rotations is derived in fill.h.

   Places. Each value is converted once to the table's element type (T) and stored to the
   places the segment's placement names (sinpe_rows): cos of lane i at column
   col + i * step of its plane, and again at col + i * step + dup when dup != 0; sin
   likewise. Three shapes of placement have vector stores:
       contig  step 1 (a second copy dup further on: rotate_half tables)
       dup     step 2, dup 1: each value twice, adjacent (interleaved RoPE tables)
       pairs   cos and sin adjacent in one plane, step 2 (the interleaved sinusoidal table,
               complex caches)
   and generic placements (any step, unequal counts) are written lane by lane, by the plain C
   instantiation. Lanes past the last full vector go to the plain C function of the same
   shape, which rounds identically, or, where the instruction set defines SINPE_VECTOR_TAIL
   (AVX-512), are done as one more vector with masked loads (SINPE__VTAIL). */

#define SINPE__CAT2(a, b) a##_##b
#define SINPE__CAT(a, b) SINPE__CAT2(a, b)
#define V(name) SINPE__CAT(SINPE__CAT(sinpe, SINPE_ISA_NAME), name)

/* The correct-rounding test of narrow values (fill.h, "Narrow types"): each row keeps the
   least halfway distance of its values (closest, each instruction set's helper); a row where
   it is within the bound has its lanes retested one by one and the flagged ones
   recomputed (sinpe__recheck). float64 values are final: no test. */
#define SINPE__GUARDS                                                                        \
    const SINPE_VD g_keep = V(set1)(a->guard[0]), g_half = V(set1)(a->guard[1]);            \
    const SINPE_VD g_bound = V(set1)(a->guard[2]), g_kappa = V(set1)(a->guard[3]);          \
    const SINPE_VD g_far = V(set1)(INFINITY);                                               \
    (void)g_keep; (void)g_half; (void)g_bound; (void)g_kappa; (void)g_far;
#define SINPE__NEAR(acc, F16) acc = V(closest)(acc, c, s, g_keep, g_half, g_kappa, F16);
#define SINPE__NEAR_f64(acc)
#define SINPE__NEAR_f32(acc) SINPE__NEAR(acc, 0)
#define SINPE__NEAR_bf16(acc) SINPE__NEAR(acc, 0)
#define SINPE__NEAR_bf16n(acc) SINPE__NEAR(acc, 0)
/* float16 tests each vector (every |v| < 2^-14 is within: too many rows to redo whole) */
#define SINPE__NEAR_f16(acc)                                                                 \
    {                                                                                      \
        SINPE_VD near_ = g_far;                                                            \
        SINPE__NEAR(near_, 1)                                                              \
        if (V(within)(near_, g_bound))                                                     \
            sinpe__recheck(a, t, i, i + SINPE_W);                                          \
    }
#define SINPE__NEAR_f32u(acc)
#define SINPE__NEAR_f16u(acc)
#define SINPE__NEAR_bf16u(acc)
#define SINPE__NEAR_bf16nu(acc)
#define SINPE__RECHECK(acc, t, i0, i1)                                                       \
    if (V(within)(acc, g_bound))                                                           \
        sinpe__recheck(a, t, i0, i1);
#define SINPE__RECHECK_f64(acc, t, i0, i1)
#define SINPE__RECHECK_f32(acc, t, i0, i1) SINPE__RECHECK(acc, t, i0, i1)
#define SINPE__RECHECK_f16(acc, t, i0, i1)
#define SINPE__RECHECK_bf16(acc, t, i0, i1) SINPE__RECHECK(acc, t, i0, i1)
#define SINPE__RECHECK_bf16n(acc, t, i0, i1) SINPE__RECHECK(acc, t, i0, i1)
#define SINPE__RECHECK_f32u(acc, t, i0, i1)
#define SINPE__RECHECK_f16u(acc, t, i0, i1)
#define SINPE__RECHECK_bf16u(acc, t, i0, i1)
#define SINPE__RECHECK_bf16nu(acc, t, i0, i1)
/* the last partial vector of a row (n lanes): its own test, the missing lanes far */
#define SINPE__TAIL_CHECK(t, i, n, F16)                                                      \
    {                                                                                      \
        SINPE_VD near_ = g_far;                                                            \
        SINPE__NEAR(near_, F16)                                                            \
        if (V(within)(V(first_or)(near_, n, g_far), g_bound))                              \
            sinpe__recheck(a, t, i, i + n);                                                \
    }
#define SINPE__TAIL_CHECK_f64(t, i, n)
#define SINPE__TAIL_CHECK_f32(t, i, n) SINPE__TAIL_CHECK(t, i, n, 0)
#define SINPE__TAIL_CHECK_f16(t, i, n) SINPE__TAIL_CHECK(t, i, n, 1)
#define SINPE__TAIL_CHECK_bf16(t, i, n) SINPE__TAIL_CHECK(t, i, n, 0)
#define SINPE__TAIL_CHECK_bf16n(t, i, n) SINPE__TAIL_CHECK(t, i, n, 0)
#define SINPE__TAIL_CHECK_f32u(t, i, n)
#define SINPE__TAIL_CHECK_f16u(t, i, n)
#define SINPE__TAIL_CHECK_bf16u(t, i, n)
#define SINPE__TAIL_CHECK_bf16nu(t, i, n)

/* Lanes [i0, i1) of every row of the run: the rotation, then EMIT (which stores c and s of
   lanes i .. i + SINPE_W - 1 of row t). The body takes clamp, scale and the pairs order as
   constants: the entry point below it inlines one copy per combination, so the vector loop
   carries no branch. */
#define SINPE__ROWS(SFX, SHAPE, T, EMIT)                                                     \
    SINPE_ATTR __attribute__((always_inline)) static inline void V(body_##SFX##_##SHAPE)(   \
        const sinpe_rows *a, ptrdiff_t i0, ptrdiff_t i1, const int clamp, const int scale,  \
        const int sin_first)                                                               \
    {                                                                                      \
        const SINPE_VD one = V(set1)(1.0), minus_one = V(set1)(-1.0);                      \
        const SINPE_VD factor = V(set1)(a->factor);                                        \
        SINPE__GUARDS                                                                      \
        const double *SINPE_RESTRICT a_cos = a->a_cos, *SINPE_RESTRICT a_sin = a->a_sin;   \
        const double *fine = a->fine;                                                      \
        const ptrdiff_t end = i0 + (i1 - i0) / SINPE_W * SINPE_W, n_rows = a->n_rows;      \
        const ptrdiff_t width = a->width, fine_stride = a->fine_stride, f_sin = a->fine_sin; \
        const ptrdiff_t cos_step = a->cos.step, cos_dup = a->cos.dup, n_cos = a->cos.count; \
        const ptrdiff_t sin_step = a->sin.step, sin_dup = a->sin.dup, n_sin = a->sin.count; \
        T *cos_row = (T *)a->planes[a->cos.plane] + a->cos.col;                            \
        T *sin_row = (T *)a->planes[a->sin.plane] + a->sin.col;                            \
        ptrdiff_t t, i;                                                                    \
        (void)cos_step; (void)cos_dup; (void)n_cos; (void)sin_step; (void)sin_dup; (void)n_sin; \
        (void)sin_first;                                                                   \
        for (t = 0; t < n_rows; t++, fine += fine_stride, cos_row += width, sin_row += width) { \
            const double *SINPE_RESTRICT fc_row = fine, *SINPE_RESTRICT fs_row = fine + f_sin; \
            T *SINPE_RESTRICT c_out = cos_row, *SINPE_RESTRICT s_out = sin_row;            \
            SINPE_VD least = g_far;                                                        \
            (void)least;                                                                   \
            for (i = i0; i < end; i += SINPE_W) {                                          \
                SINPE_VD ac = V(load)(a_cos + i), as = V(load)(a_sin + i);                 \
                SINPE_VD fc = V(load)(fc_row + i), fs = V(load)(fs_row + i);               \
                SINPE_VD s = V(add)(V(mul)(as, fc), V(mul)(ac, fs));                       \
                SINPE_VD c = V(sub)(V(mul)(ac, fc), V(mul)(as, fs));                       \
                if (clamp) {                                                               \
                    s = V(max)(V(min)(s, one), minus_one);                                 \
                    c = V(max)(V(min)(c, one), minus_one);                                 \
                }                                                                          \
                if (scale) {                                                               \
                    s = V(mul)(factor, s);                                                 \
                    c = V(mul)(factor, c);                                                 \
                }                                                                          \
                EMIT                                                                       \
                SINPE__NEAR_##SFX(least)                                                   \
            }                                                                              \
            SINPE__RECHECK_##SFX(least, t, i0, end)                                        \
        }                                                                                  \
    }                                                                                      \
    SINPE_ATTR static void V(rows_##SFX##_##SHAPE)(const sinpe_rows *a, ptrdiff_t i0,        \
                                                   ptrdiff_t i1)                             \
    {                                                                                      \
        const ptrdiff_t end = i0 + (i1 - i0) / SINPE_W * SINPE_W;                          \
        if (end > i0) {                                                                    \
            switch (a->clamp * 4 + a->scale * 2 + SINPE__ORDER_##SHAPE(a)) {               \
            case 0: V(body_##SFX##_##SHAPE)(a, i0, end, 0, 0, 0); break;                   \
            case 1: V(body_##SFX##_##SHAPE)(a, i0, end, 0, 0, 1); break;                   \
            case 2: V(body_##SFX##_##SHAPE)(a, i0, end, 0, 1, 0); break;                   \
            case 3: V(body_##SFX##_##SHAPE)(a, i0, end, 0, 1, 1); break;                   \
            case 4: V(body_##SFX##_##SHAPE)(a, i0, end, 1, 0, 0); break;                   \
            case 5: V(body_##SFX##_##SHAPE)(a, i0, end, 1, 0, 1); break;                   \
            case 6: V(body_##SFX##_##SHAPE)(a, i0, end, 1, 1, 0); break;                   \
            default: V(body_##SFX##_##SHAPE)(a, i0, end, 1, 1, 1); break;                  \
            }                                                                              \
        }                                                                                  \
        SINPE__TAIL(SFX##_##SHAPE)                                                         \
    }
/* Only the pairs shape has an order (sin first, or cos first); the others take 0. */
#define SINPE__ORDER_contig(a) 0
#define SINPE__ORDER_dup(a) 0
#define SINPE__ORDER_generic(a) 0
#define SINPE__ORDER_pairs(a) ((a)->sin.col < (a)->cos.col)

#if SINPE_W > 1 && defined(SINPE_VECTOR_TAIL)
/* The last i1 - end < SINPE_W lanes of every row as one vector (an instruction set that
   defines SINPE_VECTOR_TAIL: its load_part reads only those lanes, the rest are 0), the
   same operations, its stores made into a small buffer and the lanes that exist copied
   out: no scalar tail, and not a byte written past the row's lanes. */
#define SINPE__VTAIL(SFX, SHAPE, T, COPY_OUT)                                                \
    SINPE_ATTR static void V(tail_##SFX##_##SHAPE)(const sinpe_rows *a, ptrdiff_t i,         \
                                                   ptrdiff_t n)                             \
    {                                                                                      \
        const SINPE_VD one = V(set1)(1.0), minus_one = V(set1)(-1.0);                      \
        const SINPE_VD factor = V(set1)(a->factor);                                        \
        SINPE__GUARDS                                                                      \
        const ptrdiff_t n_rows = a->n_rows, width = a->width;                              \
        const ptrdiff_t cos_dup = a->cos.dup, sin_dup = a->sin.dup;                        \
        const int sin_first = SINPE__ORDER_##SHAPE(a);                                     \
        const double *fine = a->fine;                                                      \
        T *cos_row = (T *)a->planes[a->cos.plane] + a->cos.col;                            \
        T *sin_row = (T *)a->planes[a->sin.plane] + a->sin.col;                            \
        T tc[2 * SINPE_W], ts[2 * SINPE_W];                                                \
        SINPE_VD ac = V(load_part)(a->a_cos + i, n), as = V(load_part)(a->a_sin + i, n);   \
        ptrdiff_t t;                                                                       \
        (void)cos_dup; (void)sin_dup; (void)sin_first;                                     \
        for (t = 0; t < n_rows; t++, fine += a->fine_stride, cos_row += width, sin_row += width) { \
            T *c_out = cos_row, *s_out = sin_row;                                          \
            SINPE_VD fc = V(load_part)(fine + i, n), fs = V(load_part)(fine + a->fine_sin + i, n); \
            SINPE_VD s = V(add)(V(mul)(as, fc), V(mul)(ac, fs));                           \
            SINPE_VD c = V(sub)(V(mul)(ac, fc), V(mul)(as, fs));                           \
            if (a->clamp) {                                                                \
                s = V(max)(V(min)(s, one), minus_one);                                     \
                c = V(max)(V(min)(c, one), minus_one);                                     \
            }                                                                              \
            if (a->scale) {                                                                \
                s = V(mul)(factor, s);                                                     \
                c = V(mul)(factor, c);                                                     \
            }                                                                              \
            COPY_OUT                                                                       \
            SINPE__TAIL_CHECK_##SFX(t, i, n)                                               \
        }                                                                                  \
    }
#define SINPE__TAIL(NAME)                                                                    \
    if (end < i1)                                                                          \
        V(tail_##NAME)(a, end, i1 - end);
#elif SINPE_W > 1
#define SINPE__TAIL(NAME)                                                                    \
    if (end < i1)                                                                          \
        sinpe_c_rows_##NAME(a, end, i1);
#else
#define SINPE__TAIL(NAME)
#endif

#define SINPE__CONTIG(SFX, T) V(put_##SFX)(c_out + i, s_out + i, cos_dup, sin_dup, c, s);
#define SINPE__DUP(SFX, T) V(put_dup_##SFX)(c_out + 2 * i, s_out + 2 * i, c, s);
/* (the fill driver passes pairs placements with cos and sin in one plane, adjacent) */
#define SINPE__PAIRS(SFX, T)                                                                 \
    {                                                                                      \
        if (sin_first)                                                                     \
            V(pairs_##SFX)(s_out + 2 * i, s, c);                                           \
        else                                                                               \
            V(pairs_##SFX)(c_out + 2 * i, c, s);                                           \
    }

#if SINPE_W > 1 && defined(SINPE_VECTOR_TAIL)
#define SINPE__CONTIG_OUT(SFX, T)                                                            \
    {                                                                                      \
        V(put_##SFX)(tc, ts, 0, 0, c, s);                                                  \
        memcpy(c_out + i, tc, (size_t)n * sizeof(T));                                      \
        memcpy(s_out + i, ts, (size_t)n * sizeof(T));                                      \
        if (cos_dup)                                                                       \
            memcpy(c_out + i + cos_dup, tc, (size_t)n * sizeof(T));                        \
        if (sin_dup)                                                                       \
            memcpy(s_out + i + sin_dup, ts, (size_t)n * sizeof(T));                        \
    }
#define SINPE__DUP_OUT(SFX, T)                                                               \
    {                                                                                      \
        V(put_dup_##SFX)(tc, ts, c, s);                                                    \
        memcpy(c_out + 2 * i, tc, (size_t)(2 * n) * sizeof(T));                            \
        memcpy(s_out + 2 * i, ts, (size_t)(2 * n) * sizeof(T));                            \
    }
#define SINPE__PAIRS_OUT(SFX, T)                                                             \
    {                                                                                      \
        if (sin_first)                                                                     \
            V(pairs_##SFX)(tc, s, c);                                                      \
        else                                                                               \
            V(pairs_##SFX)(tc, c, s);                                                      \
        memcpy((sin_first ? s_out : c_out) + 2 * i, tc, (size_t)(2 * n) * sizeof(T));      \
        (void)ts;                                                                          \
    }
#define SINPE__TAILS_OF_TYPE(NAME, SFX, T)                                                   \
    SINPE__VTAIL(NAME, contig, T, SINPE__CONTIG_OUT(SFX, T))                               \
    SINPE__VTAIL(NAME, dup, T, SINPE__DUP_OUT(SFX, T))                                     \
    SINPE__VTAIL(NAME, pairs, T, SINPE__PAIRS_OUT(SFX, T))
#else
#define SINPE__TAILS_OF_TYPE(NAME, SFX, T)
#endif
/* The row functions named NAME (its test: SINPE__NEAR_NAME) with the stores of SFX. */
#define SINPE__ROWS_OF_TYPE2(NAME, SFX, T)                                                   \
    SINPE__TAILS_OF_TYPE(NAME, SFX, T)                                                     \
    SINPE__ROWS(NAME, contig, T, SINPE__CONTIG(SFX, T))                                    \
    SINPE__ROWS(NAME, dup, T, SINPE__DUP(SFX, T))                                          \
    SINPE__ROWS(NAME, pairs, T, SINPE__PAIRS(SFX, T))
#define SINPE__ROWS_OF_TYPE(SFX, T) SINPE__ROWS_OF_TYPE2(SFX, SFX, T)
SINPE__ROWS_OF_TYPE(f64, double)
SINPE__ROWS_OF_TYPE(f32, float)
SINPE__ROWS_OF_TYPE(f16, uint16_t)
SINPE__ROWS_OF_TYPE(bf16, uint16_t)
/* The narrow kinds again without the correct-rounding test (suffix u: each value the
   float64 value rounded once, as before 0.4): for benchmarks/ratios.py, which measures what
   the test costs, and the tests that show the hard cases need it (_kernel._set_checked). */
SINPE__ROWS_OF_TYPE2(f32u, f32, float)
SINPE__ROWS_OF_TYPE2(f16u, f16, uint16_t)
SINPE__ROWS_OF_TYPE2(bf16u, bf16, uint16_t)
#ifdef SINPE_BF16N_ATTR
/* bfloat16 again, with the stores of a CPU feature the set's other code does not assume
   (put_bf16n, ...: AVX512_BF16), compiled for it and chosen at run time (fill.h). */
#pragma push_macro("SINPE_ATTR")
#undef SINPE_ATTR
#define SINPE_ATTR SINPE_BF16N_ATTR
SINPE__ROWS_OF_TYPE(bf16n, uint16_t)
SINPE__ROWS_OF_TYPE2(bf16nu, bf16n, uint16_t)
#pragma pop_macro("SINPE_ATTR")
#endif

#if SINPE_W == 1
/* Any placement, lane by lane: cos where i < cos.count, sin where i < sin.count. */
#define SINPE__GENERIC(SFX, T)                                                               \
    {                                                                                      \
        if (i < n_cos) {                                                                   \
            V(store_##SFX)(c_out + i * cos_step, c);                                       \
            if (cos_dup)                                                                   \
                V(store_##SFX)(c_out + i * cos_step + cos_dup, c);                         \
        }                                                                                  \
        if (i < n_sin) {                                                                   \
            V(store_##SFX)(s_out + i * sin_step, s);                                       \
            if (sin_dup)                                                                   \
                V(store_##SFX)(s_out + i * sin_step + sin_dup, s);                         \
        }                                                                                  \
    }
SINPE__ROWS(f64, generic, double, SINPE__GENERIC(f64, double))
SINPE__ROWS(f32, generic, float, SINPE__GENERIC(f32, float))
SINPE__ROWS(f16, generic, uint16_t, SINPE__GENERIC(f16, uint16_t))
SINPE__ROWS(bf16, generic, uint16_t, SINPE__GENERIC(bf16, uint16_t))
#undef SINPE__GENERIC
#endif

/* values[i] rounded once to float16 / bfloat16, as bits, i < n: the converter of every
   half-precision store above, alone (round_half, for the tests). */
#define SINPE__ROUND(SFX, ATTR, SCALAR)                                                     \
    ATTR static void V(round_##SFX)(uint16_t *out, const double *values, ptrdiff_t n)        \
    {                                                                                       \
        ptrdiff_t i = 0;                                                                    \
        for (; i + 2 * SINPE_W <= n; i += 2 * SINPE_W)                                      \
            V(put_##SFX)(out + i, out + i + SINPE_W, 0, 0, V(load)(values + i),              \
                         V(load)(values + i + SINPE_W));                                    \
        for (; i < n; i++)                                                                  \
            out[i] = SCALAR(values[i]);                                                     \
    }
SINPE__ROUND(f16, SINPE_ATTR, sinpe_to_f16)
SINPE__ROUND(bf16, SINPE_ATTR, sinpe_to_bf16)
#ifdef SINPE_BF16N_ATTR
SINPE__ROUND(bf16n, SINPE_BF16N_ATTR, sinpe_to_bf16)
#endif
#undef SINPE__ROUND

/* This instruction set's row functions by element kind (SINPE_KIND_*) and placement shape
   (SINPE_SHAPE_*); generic placements always run lane by lane. */
static const sinpe_rows_fn V(rows)[4][4] = {
    {V(rows_f64_contig), V(rows_f64_dup), V(rows_f64_pairs), sinpe_c_rows_f64_generic},
    {V(rows_f32_contig), V(rows_f32_dup), V(rows_f32_pairs), sinpe_c_rows_f32_generic},
    {V(rows_f16_contig), V(rows_f16_dup), V(rows_f16_pairs), sinpe_c_rows_f16_generic},
    {V(rows_bf16_contig), V(rows_bf16_dup), V(rows_bf16_pairs), sinpe_c_rows_bf16_generic},
};
static const sinpe_rows_fn V(rows_unchecked)[4][4] = {
    {V(rows_f64_contig), V(rows_f64_dup), V(rows_f64_pairs), sinpe_c_rows_f64_generic},
    {V(rows_f32u_contig), V(rows_f32u_dup), V(rows_f32u_pairs), sinpe_c_rows_f32_generic},
    {V(rows_f16u_contig), V(rows_f16u_dup), V(rows_f16u_pairs), sinpe_c_rows_f16_generic},
    {V(rows_bf16u_contig), V(rows_bf16u_dup), V(rows_bf16u_pairs), sinpe_c_rows_bf16_generic},
};
#ifdef SINPE_BF16N_ATTR
static const sinpe_rows_fn V(rows_bf16n)[2][4] = {
    {V(rows_bf16n_contig), V(rows_bf16n_dup), V(rows_bf16n_pairs), sinpe_c_rows_bf16_generic},
    {V(rows_bf16nu_contig), V(rows_bf16nu_dup), V(rows_bf16nu_pairs), sinpe_c_rows_bf16_generic},
};
#endif

#undef SINPE__ORDER_contig
#undef SINPE__ORDER_dup
#undef SINPE__ORDER_generic
#undef SINPE__ORDER_pairs
#undef SINPE__ROWS_OF_TYPE
#undef SINPE__CONTIG
#undef SINPE__DUP
#undef SINPE__PAIRS
#undef SINPE__TAIL
#undef SINPE__VTAIL
#undef SINPE__TAILS_OF_TYPE
#undef SINPE__CONTIG_OUT
#undef SINPE__DUP_OUT
#undef SINPE__PAIRS_OUT
#undef SINPE__ROWS
#undef SINPE__GUARDS
#undef SINPE__NEAR
#undef SINPE__RECHECK
#undef SINPE__TAIL_CHECK
#undef SINPE__NEAR_bf16nu
#undef SINPE__RECHECK_bf16nu
#undef SINPE__TAIL_CHECK_bf16nu
#undef SINPE__NEAR_bf16u
#undef SINPE__RECHECK_bf16u
#undef SINPE__TAIL_CHECK_bf16u
#undef SINPE__NEAR_f16u
#undef SINPE__RECHECK_f16u
#undef SINPE__TAIL_CHECK_f16u
#undef SINPE__NEAR_f32u
#undef SINPE__RECHECK_f32u
#undef SINPE__TAIL_CHECK_f32u
#undef SINPE__NEAR_bf16n
#undef SINPE__RECHECK_bf16n
#undef SINPE__TAIL_CHECK_bf16n
#undef SINPE__NEAR_bf16
#undef SINPE__RECHECK_bf16
#undef SINPE__TAIL_CHECK_bf16
#undef SINPE__NEAR_f16
#undef SINPE__RECHECK_f16
#undef SINPE__TAIL_CHECK_f16
#undef SINPE__NEAR_f32
#undef SINPE__RECHECK_f32
#undef SINPE__TAIL_CHECK_f32
#undef SINPE__NEAR_f64
#undef SINPE__RECHECK_f64
#undef SINPE__TAIL_CHECK_f64
#undef SINPE__ROWS_OF_TYPE2
#undef V
#undef SINPE__CAT
#undef SINPE__CAT2
