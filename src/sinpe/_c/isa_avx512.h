/* AVX-512 helpers for rotate.h and exact_simd.h: eight lanes, compiled for AVX-512 F, DQ,
   BW and VL by a function attribute (no -march flag) and chosen at run time (config.h:
   cpuid and the OS's ZMM state). The same operations as isa_c.h lane by lane: no FMA in
   the rotation, vminpd/vmaxpd clamp as its min/max do, vcvtpd2ps rounds as a cast to float.

   float16/bfloat16, sixteen values per step, each rounded once: to nearest float32
   (vcvtpd2ps), then to nearest-even in the target (vcvtps2ph for float16; adding 0x7FFF plus
   the lowest kept bit, for bfloat16). Two roundings give the one rounding of the float64
   value except where the first lands exactly on a halfway point of the target (the halfway
   points are float32 values and rounding is monotonic, so it cannot cross one): those
   lanes, found as float32 values whose low 12 bits (float16: every halfway point, its
   subnormal ones included, has at least 12 trailing zeros) or low 15 bits (bfloat16) are
   zero, and NaN lanes, take half.h's exact sequence. Zeros and round values are among them
   (row 0 of a table): right, and rare. Measured on an AMD EPYC Zen 4 (docs/performance.md):
   a 2048 x 512 float16 table costs 1.3x the float32 one this way, 1.6x by round-to-odd
   (truncation plus a sticky bit) and 2.5x by the first round-to-odd form. The bfloat16 rounding is
   the integer one here; level avx512bf16 (below) uses vcvtneps2bf16 where the CPU has it.

   SINPE_AVX512_EMULATED builds (tests on machines without AVX-512) take the same
   intrinsics from SIMDe's portable code. Seven are done here by their documented semantics
   instead (the sinpe_avx512__ functions below): four conversions SIMDe 0.8.2 lacks; the
   masked load and store, which SIMDe does at full width (its mask_storeu writes zeros to
   the masked-off lanes); and fmsub, which SIMDe's portable code does not fuse (here: C99's
   fma, one rounding, lane by lane). */
#define SINPE_ISA_NAME avx512
#define SINPE_W 8
#define SINPE_ATTR SINPE_AVX512_TARGET
#define SINPE_VD sinpe__zd
#define SINPE_VM sinpe__zm8
#define SINPE_VI sinpe__zi
#define SINPE_VECTOR_TAIL 1 /* rotate.h: the last partial vector with masked loads */

#if SINPE_AVX512_EMULATED
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#define Z(name) simde_##name
typedef simde__m512d sinpe__zd;
typedef simde__m512 sinpe__zf;
typedef simde__m512i sinpe__zi;
typedef simde__m256 sinpe__yf;
typedef simde__m256i sinpe__yi;
typedef simde__m256d sinpe__yd;
typedef simde__m128i sinpe__xi;
typedef simde__m128 sinpe__xf;
typedef simde__mmask8 sinpe__zm8;
typedef simde__mmask16 sinpe__zm16;
#else
#define Z(name) _##name
typedef __m512d sinpe__zd;
typedef __m512 sinpe__zf;
typedef __m512i sinpe__zi;
typedef __m256 sinpe__yf;
typedef __m256i sinpe__yi;
typedef __m256d sinpe__yd;
typedef __m128i sinpe__xi;
typedef __m128 sinpe__xf;
typedef __mmask8 sinpe__zm8;
typedef __mmask16 sinpe__zm16;
#endif
#define SINPE__Z SINPE_AVX512_TARGET static inline

/* The four conversions: eight doubles to eight floats (RN) and back; sixteen floats to
   float16 (RN); sixteen int32 to their low 16 bits. */
SINPE__Z sinpe__yf sinpe_avx512__to_f32(sinpe__zd v)
{
#if SINPE_AVX512_EMULATED
    return Z(mm256_set_m128)(Z(mm256_cvtpd_ps)(Z(mm512_extractf64x4_pd)(v, 1)),
                             Z(mm256_cvtpd_ps)(Z(mm512_castpd512_pd256)(v)));
#else
    return _mm512_cvtpd_ps(v);
#endif
}
SINPE__Z sinpe__zd sinpe_avx512__to_f64(sinpe__yf f)
{
#if SINPE_AVX512_EMULATED
    return Z(mm512_insertf64x4)(Z(mm512_castpd256_pd512)(Z(mm256_cvtps_pd)(Z(mm256_castps256_ps128)(f))),
                                Z(mm256_cvtps_pd)(Z(mm256_extractf128_ps)(f, 1)), 1);
#else
    return _mm512_cvtps_pd(f);
#endif
}
SINPE__Z sinpe__yi sinpe_avx512__to_f16(sinpe__zf f)
{
#if SINPE_AVX512_EMULATED
    return Z(mm256_set_m128i)(
        Z(mm256_cvtps_ph)(Z(mm256_castsi256_ps)(Z(mm512_extracti64x4_epi64)(Z(mm512_castps_si512)(f), 1)),
                          SIMDE_MM_FROUND_TO_NEAREST_INT),
        Z(mm256_cvtps_ph)(Z(mm512_castps512_ps256)(f), SIMDE_MM_FROUND_TO_NEAREST_INT));
#else
    return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
}
SINPE__Z sinpe__yi sinpe_avx512__low16(sinpe__zi v)
{
#if SINPE_AVX512_EMULATED
    uint32_t w[16];
    uint16_t h[16];
    int l;
    Z(mm512_storeu_si512)(w, v);
    for (l = 0; l < 16; l++)
        h[l] = (uint16_t)w[l];
    return Z(mm256_loadu_si256)((const sinpe__yi *)h);
#else
    return _mm512_cvtepi32_epi16(v);
#endif
}

/* lanes of v where m, to d; lanes of p where m, else 0: only those lanes are touched */
SINPE__Z void sinpe_avx512__mask_store(double *d, sinpe__zm8 m, sinpe__zd v)
{
#if SINPE_AVX512_EMULATED
    double lanes[8];
    int l;
    Z(mm512_storeu_pd)(lanes, v);
    for (l = 0; l < 8; l++)
        if ((m >> l) & 1)
            d[l] = lanes[l];
#else
    _mm512_mask_storeu_pd(d, m, v);
#endif
}
SINPE__Z sinpe__zd sinpe_avx512__maskz_load(sinpe__zm8 m, const double *p)
{
#if SINPE_AVX512_EMULATED
    double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int l;
    for (l = 0; l < 8; l++)
        if ((m >> l) & 1)
            lanes[l] = p[l];
    return Z(mm512_loadu_pd)(lanes);
#else
    return _mm512_maskz_loadu_pd(m, p);
#endif
}

SINPE__Z sinpe__zd sinpe_avx512_load(const double *p) { return Z(mm512_loadu_pd)(p); }
SINPE__Z sinpe__zd sinpe_avx512_set1(double v) { return Z(mm512_set1_pd)(v); }
SINPE__Z sinpe__zd sinpe_avx512_add(sinpe__zd a, sinpe__zd b) { return Z(mm512_add_pd)(a, b); }
SINPE__Z sinpe__zd sinpe_avx512_sub(sinpe__zd a, sinpe__zd b) { return Z(mm512_sub_pd)(a, b); }
SINPE__Z sinpe__zd sinpe_avx512_mul(sinpe__zd a, sinpe__zd b) { return Z(mm512_mul_pd)(a, b); }
SINPE__Z sinpe__zd sinpe_avx512_min(sinpe__zd a, sinpe__zd b) { return Z(mm512_min_pd)(a, b); }
SINPE__Z sinpe__zd sinpe_avx512_max(sinpe__zd a, sinpe__zd b) { return Z(mm512_max_pd)(a, b); }
/* the mask of lanes < n, 0 <= n <= 8 */
SINPE__Z sinpe__zm8 sinpe_avx512_first(ptrdiff_t n) { return (sinpe__zm8)((1u << n) - 1u); }

SINPE__Z void sinpe_avx512_store_f64(double *d, sinpe__zd v) { Z(mm512_storeu_pd)(d, v); }
SINPE__Z void sinpe_avx512_dup_f64(double *d, sinpe__zd v)
{
    Z(mm512_storeu_pd)(d, Z(mm512_permutexvar_pd)(Z(mm512_setr_epi64)(0, 0, 1, 1, 2, 2, 3, 3), v));
    Z(mm512_storeu_pd)(d + 8, Z(mm512_permutexvar_pd)(Z(mm512_setr_epi64)(4, 4, 5, 5, 6, 6, 7, 7), v));
}
SINPE__Z void sinpe_avx512_pairs_f64(double *d, sinpe__zd a, sinpe__zd b)
{
    Z(mm512_storeu_pd)(d, Z(mm512_permutex2var_pd)(a, Z(mm512_setr_epi64)(0, 8, 1, 9, 2, 10, 3, 11), b));
    Z(mm512_storeu_pd)(d + 8,
                       Z(mm512_permutex2var_pd)(a, Z(mm512_setr_epi64)(4, 12, 5, 13, 6, 14, 7, 15), b));
}

SINPE__Z void sinpe_avx512_store_f32(float *d, sinpe__zd v)
{
    Z(mm256_storeu_ps)(d, sinpe_avx512__to_f32(v));
}
SINPE__Z void sinpe_avx512_dup_f32(float *d, sinpe__zd v)
{
    sinpe__zf x = Z(mm512_castps256_ps512)(sinpe_avx512__to_f32(v));
    Z(mm512_storeu_ps)(d, Z(mm512_permutexvar_ps)(
                              Z(mm512_setr_epi32)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), x));
}
SINPE__Z void sinpe_avx512_pairs_f32(float *d, sinpe__zd a, sinpe__zd b)
{
    sinpe__zf x = Z(mm512_castps256_ps512)(sinpe_avx512__to_f32(a));
    sinpe__zf y = Z(mm512_castps256_ps512)(sinpe_avx512__to_f32(b));
    Z(mm512_storeu_ps)(d, Z(mm512_permutex2var_ps)(
                              x, Z(mm512_setr_epi32)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
                              y));
}

/* Sixteen values (lanes 0-7 from a, 8-15 from b) rounded to nearest float32. */
SINPE__Z sinpe__zf sinpe_avx512__f32x16(sinpe__zd a, sinpe__zd b)
{
    return Z(mm512_insertf32x8)(Z(mm512_castps256_ps512)(sinpe_avx512__to_f32(a)),
                                sinpe_avx512__to_f32(b), 1);
}
/* The lanes of f a second rounding may get wrong: the bits under `low` all zero (every
   halfway point of the target, and more), or NaN. */
SINPE__Z sinpe__zm16 sinpe_avx512__ties(sinpe__zf f, int low)
{
    sinpe__zi bits = Z(mm512_castps_si512)(f), mask = Z(mm512_set1_epi32)(low);
#if SINPE_AVX512_EMULATED
    sinpe__zm16 zero = Z(mm512_cmpeq_epi32_mask)(Z(mm512_and_si512)(bits, mask), Z(mm512_setzero_si512)());
#else
    sinpe__zm16 zero = _mm512_testn_epi32_mask(bits, mask);
#endif
    return (sinpe__zm16)(zero | Z(mm512_cmp_ps_mask)(f, f, _CMP_UNORD_Q));
}
/* h with the lanes in redo done by half.h's exact sequence */
SINPE__Z sinpe__yi sinpe_avx512__redo(sinpe__yi h, sinpe__zm16 redo, sinpe__zd a, sinpe__zd b,
                                      const int f16)
{
    if (redo) {
        double v[16];
        uint16_t r[16];
        int l;
        Z(mm512_storeu_pd)(v, a);
        Z(mm512_storeu_pd)(v + 8, b);
        Z(mm256_storeu_si256)((sinpe__yi *)r, h);
        for (l = 0; l < 16; l++)
            if ((redo >> l) & 1)
                r[l] = f16 ? sinpe_to_f16(v[l]) : sinpe_to_bf16(v[l]);
        h = Z(mm256_loadu_si256)((const sinpe__yi *)r);
    }
    return h;
}

/* Sixteen values rounded once to float16 (f16 = 1) or bfloat16 (0): lanes 0-7 from a,
   8-15 from b (see the top). */
SINPE__Z sinpe__yi sinpe_avx512_half2(sinpe__zd a, sinpe__zd b, const int f16)
{
    sinpe__zf f = sinpe_avx512__f32x16(a, b);
    sinpe__zi bits = Z(mm512_castps_si512)(f);
    sinpe__yi h;
    if (f16) {
        h = sinpe_avx512__to_f16(f);
    } else {
        sinpe__zi lowest_kept = Z(mm512_and_si512)(Z(mm512_srli_epi32)(bits, 16), Z(mm512_set1_epi32)(1));
        sinpe__zi rounded =
            Z(mm512_add_epi32)(Z(mm512_add_epi32)(bits, Z(mm512_set1_epi32)(0x7FFF)), lowest_kept);
        h = sinpe_avx512__low16(Z(mm512_srli_epi32)(rounded, 16));
    }
    return sinpe_avx512__redo(h, sinpe_avx512__ties(f, f16 ? 0xFFF : 0x7FFF), a, b, f16);
}

#define SINPE__AVX512_HALF(SFX, ATTR, HALF2, F16)                                            \
    ATTR void sinpe_avx512_put_##SFX(uint16_t *c, uint16_t *s, ptrdiff_t c_dup,               \
                                     ptrdiff_t s_dup, sinpe__zd vc, sinpe__zd vs)             \
    {                                                                                       \
        sinpe__yi h = HALF2(vc, vs, F16);                                                   \
        sinpe__xi hc = Z(mm256_castsi256_si128)(h), hs = Z(mm256_extracti128_si256)(h, 1);  \
        Z(mm_storeu_si128)((sinpe__xi *)(c), hc);                                           \
        Z(mm_storeu_si128)((sinpe__xi *)(s), hs);                                           \
        if (c_dup)                                                                          \
            Z(mm_storeu_si128)((sinpe__xi *)(c + c_dup), hc);                               \
        if (s_dup)                                                                          \
            Z(mm_storeu_si128)((sinpe__xi *)(s + s_dup), hs);                               \
    }                                                                                       \
    ATTR void sinpe_avx512_put_dup_##SFX(uint16_t *c, uint16_t *s, sinpe__zd vc, sinpe__zd vs) \
    {                                                                                       \
        sinpe__yi h = HALF2(vc, vs, F16);                                                   \
        Z(mm256_storeu_si256)((sinpe__yi *)c, Z(mm256_permutexvar_epi16)(                   \
                                     Z(mm256_setr_epi16)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, \
                                                         6, 6, 7, 7), h));                   \
        Z(mm256_storeu_si256)((sinpe__yi *)s, Z(mm256_permutexvar_epi16)(                   \
                                     Z(mm256_setr_epi16)(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, \
                                                         13, 13, 14, 14, 15, 15), h));       \
    }                                                                                       \
    ATTR void sinpe_avx512_pairs_##SFX(uint16_t *d, sinpe__zd a, sinpe__zd b)                \
    {                                                                                       \
        sinpe__yi h = HALF2(a, b, F16);                                                     \
        Z(mm256_storeu_si256)((sinpe__yi *)d, Z(mm256_permutexvar_epi16)(                   \
                                     Z(mm256_setr_epi16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, \
                                                         13, 6, 14, 7, 15), h));             \
    }
SINPE__AVX512_HALF(f16, SINPE__Z, sinpe_avx512_half2, 1)
SINPE__AVX512_HALF(bf16, SINPE__Z, sinpe_avx512_half2, 0)

#if SINPE_AVX512BF16
/* bfloat16 by vcvtneps2bf16 (AVX512_BF16, level avx512bf16: the same bits, fewer
   instructions): it rounds float32 to nearest-even, as the integer form does, but flushes
   subnormal inputs and outputs, so the lanes with float32's zero exponent (subnormals, and
   zeros) join the redone ones. rotate.h instantiates the bfloat16 rows again with these
   stores (bf16n) under this target. */
#define SINPE_BF16N_ATTR SINPE_AVX512BF16_TARGET
SINPE_AVX512BF16_TARGET static inline sinpe__yi sinpe_avx512_half2_bf16n(sinpe__zd a, sinpe__zd b,
                                                                        const int f16)
{
    sinpe__zf f = sinpe_avx512__f32x16(a, b);
    sinpe__yi h = (sinpe__yi)_mm512_cvtneps_pbh(f);
    /* low 15 bits zero (halfway patterns), or NaN, zero or subnormal (vfpclassps 0xA7) */
    sinpe__zm16 redo = (sinpe__zm16)(
        _mm512_testn_epi32_mask(_mm512_castps_si512(f), _mm512_set1_epi32(0x7FFF)) |
        _mm512_fpclass_ps_mask(f, 0xA7));
    (void)f16;
    return sinpe_avx512__redo(h, redo, a, b, 0);
}
SINPE__AVX512_HALF(bf16n, SINPE_AVX512BF16_TARGET static inline, sinpe_avx512_half2_bf16n, 0)
#endif
#undef SINPE__AVX512_HALF

/* float64 and float32: two-kind stores from the one-vector ones above */
#include "isa_compose.h"
SINPE__COMPOSE(avx512, f64, double, sinpe__zd)
SINPE__COMPOSE(avx512, f32, float, sinpe__zd)

/* The exact evaluator's helpers (exact_simd.h). */
SINPE__Z sinpe__zd sinpe_avx512_load_part(const double *p, ptrdiff_t n)
{
    return sinpe_avx512__maskz_load(sinpe_avx512_first(n), p);
}
SINPE__Z sinpe__zd sinpe_avx512_fmsub(sinpe__zd a, sinpe__zd b, sinpe__zd c)
{
#if SINPE_AVX512_EMULATED
    double x[8], y[8], z[8];
    int l;
    Z(mm512_storeu_pd)(x, a);
    Z(mm512_storeu_pd)(y, b);
    Z(mm512_storeu_pd)(z, c);
    for (l = 0; l < 8; l++)
        x[l] = fma(x[l], y[l], -z[l]);
    return Z(mm512_loadu_pd)(x);
#else
    return _mm512_fmsub_pd(a, b, c);
#endif
}
SINPE__Z sinpe__zd sinpe_avx512_abs(sinpe__zd v) { return Z(mm512_abs_pd)(v); }
/* isa_c.h's closest and within, eight lanes. The halfway point of v's binade with v's sign,
   (v & keep) | half, is one ternary logic op; the least |distance| of two vectors, one
   vrangepd (imm 0b1010: the smaller magnitude, sign cleared). */
SINPE__Z sinpe__zd sinpe_avx512__distance(sinpe__zd v, sinpe__zd keep, sinpe__zd half)
{
    return Z(mm512_sub_pd)(v, Z(mm512_castsi512_pd)(Z(mm512_ternarylogic_epi64)(
                                  Z(mm512_castpd_si512)(v), Z(mm512_castpd_si512)(keep),
                                  Z(mm512_castpd_si512)(half), 0xEA))); /* (a & b) | c */
}
SINPE__Z sinpe__zd sinpe_avx512__least(sinpe__zd a, sinpe__zd b)
{
    return Z(mm512_range_pd)(a, b, 0x0A); /* min |a|, |b|, sign cleared */
}
SINPE__Z sinpe__zd sinpe_avx512_closest(sinpe__zd acc, sinpe__zd c, sinpe__zd s, sinpe__zd keep,
                                     sinpe__zd half, sinpe__zd kappa, const int f16)
{
    acc = sinpe_avx512__least(acc, sinpe_avx512__least(sinpe_avx512__distance(c, keep, half),
                                                       sinpe_avx512__distance(s, keep, half)));
    if (f16)
        acc = sinpe_avx512__least(acc, Z(mm512_mul_pd)(sinpe_avx512__least(c, s), kappa));
    return acc;
}
SINPE__Z int sinpe_avx512_within(sinpe__zd acc, sinpe__zd bound)
{
    return Z(mm512_cmp_pd_mask)(acc, bound, _CMP_LE_OQ) != 0;
}
/* v in lanes below n, other in the others ("far" and "near" are macros on Windows) */
SINPE__Z sinpe__zd sinpe_avx512_first_or(sinpe__zd v, ptrdiff_t n, sinpe__zd other)
{
    return Z(mm512_mask_blend_pd)(sinpe_avx512_first(n), other, v);
}
SINPE__Z sinpe__zd sinpe_avx512_copysign(sinpe__zd m, sinpe__zd s)
{
    const sinpe__zd sign = Z(mm512_set1_pd)(-0.0);
    return Z(mm512_or_pd)(Z(mm512_and_pd)(s, sign), Z(mm512_andnot_pd)(sign, m));
}
SINPE__Z sinpe__zd sinpe_avx512_neg(sinpe__zd v) { return Z(mm512_xor_pd)(v, Z(mm512_set1_pd)(-0.0)); }
SINPE__Z sinpe__zm8 sinpe_avx512_lt(sinpe__zd a, sinpe__zd b)
{
    return Z(mm512_cmp_pd_mask)(a, b, _CMP_LT_OQ);
}
SINPE__Z sinpe__zd sinpe_avx512_select(sinpe__zm8 m, sinpe__zd a, sinpe__zd b)
{
    return Z(mm512_mask_blend_pd)(m, b, a);
}
SINPE__Z sinpe__zm8 sinpe_avx512_both(sinpe__zm8 m1, sinpe__zm8 m2) { return (sinpe__zm8)(m1 & m2); }
SINPE__Z void sinpe_avx512_store_mask(double *d, sinpe__zm8 m, sinpe__zd v)
{
    sinpe_avx512__mask_store(d, m, v);
}
SINPE__Z sinpe__zi sinpe_avx512_row_offsets(sinpe__zd kd)
{
    return Z(mm512_slli_epi64)(Z(mm512_and_si512)(Z(mm512_castpd_si512)(kd), Z(mm512_set1_epi64)(255)), 5);
}
/* Eight 32-byte table rows {ca_hi, ca_lo, sa_hi, sa_lo}: one gather per field. */
SINPE__Z void sinpe_avx512_turn_rows(const char *base, sinpe__zi o, sinpe__zd *ca_hi,
                                     sinpe__zd *ca_lo, sinpe__zd *sa_hi, sinpe__zd *sa_lo)
{
    *ca_hi = Z(mm512_i64gather_pd)(o, (const void *)base, 1);
    *ca_lo = Z(mm512_i64gather_pd)(o, (const void *)(base + 8), 1);
    *sa_hi = Z(mm512_i64gather_pd)(o, (const void *)(base + 16), 1);
    *sa_lo = Z(mm512_i64gather_pd)(o, (const void *)(base + 24), 1);
}
#undef SINPE__Z
#undef Z
