/* Build-mode facts and the one CPU probe shared by every header of the kernel.

   setup.py defines SINPE_DEBUG and SINPE_MAX_SIMD (0 plain C, 1 SSE2, 2 AVX2, 3 AVX-512,
   4 AVX-512 with AVX512_BF16, where the CPU has it). One macro per instruction set says whether this build may
   compile code for it; one probe (cpuid, once, at import) says whether this CPU runs it:

       SINPE_SSE2     the build has SSE2 (x86-64 baseline)
       SINPE_AVX2     the build may compile AVX2 + FMA + F16C functions (target attributes,
                      no -march flag), chosen at run time by sinpe_isa()
       SINPE_AVX512   likewise AVX-512 F + DQ + BW + VL functions (with AVX2, FMA, F16C)
       SINPE_AVX512BF16  likewise, with AVX512_BF16 (vcvtneps2bf16) for bfloat16 stores
       SINPE_AVX512_EMULATED
                      a test build (SINPE_SIMD=avx512-emulated): the AVX-512 helpers are
                      SIMDe's portable implementations of the same intrinsics, so a machine
                      without AVX-512 runs and tests that code path (slowly)

   sinpe_isa() is the level every dispatcher uses: 4 when the CPU also has AVX512_BF16, 3
   when it has AVX-512 F/DQ/BW/VL and the OS saves the ZMM and mask registers (XGETBV), 2 with AVX2, FMA and F16C (and the YMM
   state saved), 1 with SSE2, 0 plain C; sinpe_set_isa() lowers it (SINPE_ISA, read by the
   kernel at import). Every level gives the same bits: the headers use no FMA where it
   would change a rounding (-ffp-contract=off). */
#ifndef SINPE_CONFIG_H
#define SINPE_CONFIG_H
#ifndef SINPE_DEBUG
#define SINPE_DEBUG 0
#endif
#ifdef NDEBUG /* Python's build flags define it; debug builds undefine it */
#define SINPE_C_ASSERTS 0
#else
#define SINPE_C_ASSERTS 1
#endif
#ifndef SINPE_MAX_SIMD
#define SINPE_MAX_SIMD 4
#endif
#ifndef SINPE_AVX512_EMULATED
#define SINPE_AVX512_EMULATED 0
#endif
#include <stddef.h>
#include <stdint.h>

#if (defined(__SSE2__) || defined(_M_X64)) && SINPE_MAX_SIMD >= 1
#include <emmintrin.h>
#define SINPE_SSE2 1
#else
#define SINPE_SSE2 0
#endif

#if SINPE_SSE2 && defined(__GNUC__) && defined(__x86_64__) && SINPE_MAX_SIMD >= 2
#include <immintrin.h>
#define SINPE_AVX2 1
/* Every function compiled for the AVX2 level carries this attribute. */
#define SINPE_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#else
#define SINPE_AVX2 0
#endif

#if SINPE_AVX2 && SINPE_MAX_SIMD >= 3
#define SINPE_AVX512 1
#if SINPE_AVX512_EMULATED
/* SIMDe's functions carry no target attribute: the callers need none either */
#define SINPE_AVX512_TARGET
#else
#define SINPE_AVX512_TARGET                                                                 \
    __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")))
#endif
#else
#define SINPE_AVX512 0
#endif
#if SINPE_AVX512 && !SINPE_AVX512_EMULATED && SINPE_MAX_SIMD >= 4
#define SINPE_AVX512BF16 1 /* SIMDe has no vcvtneps2bf16: not in emulated builds */
#define SINPE_AVX512BF16_TARGET                                                             \
    __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#else
#define SINPE_AVX512BF16 0
#endif

#if defined(_MSC_VER)
#define SINPE_RESTRICT __restrict
#else
#define SINPE_RESTRICT __restrict__
#endif

enum {
    SINPE_ISA_C = 0,
    SINPE_ISA_SSE2 = 1,
    SINPE_ISA_AVX2 = 2,
    SINPE_ISA_AVX512 = 3,
    SINPE_ISA_AVX512BF16 = 4
};

#if SINPE_AVX2
#include <cpuid.h>
/* cpuid leaf 1: ECX bit 12 FMA, 27 OSXSAVE, 29 F16C; leaf 7: EBX bit 5 AVX2; XCR0 bits 1-2:
   the OS saves the SSE and AVX state. Plain cpuid, so any GCC or clang compiles it. */
static int sinpe__cpu_avx2_level(void)
{
    unsigned a, b, c, d, xcr0_lo, xcr0_hi;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!((c >> 12) & 1) || !((c >> 27) & 1) || !((c >> 29) & 1))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6)
        return 0;
    if (__get_cpuid_max(0, 0) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 5) & 1;
}

#if SINPE_AVX512 && !SINPE_AVX512_EMULATED
/* cpuid leaf 7 EBX bits 16 AVX512F, 17 AVX512DQ, 30 AVX512BW, 31 AVX512VL; XCR0 bits 5-7:
   the OS saves the opmask registers and all 512 bits of the 32 vector registers. */
static int sinpe__cpu_avx512(void)
{
    unsigned a, b, c, d, xcr0_lo, xcr0_hi;
    const unsigned want = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
    if (!sinpe__cpu_avx2_level())
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if ((b & want) != want)
        return 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return (xcr0_lo & 0xE6) == 0xE6;
}

/* cpuid leaf 7 subleaf 1 EAX bit 5: AVX512_BF16 (leaf 7 subleaf 0 EAX: the last subleaf) */
static int sinpe__cpu_avx512bf16(void)
{
    unsigned a, b, c, d;
    if (!sinpe__cpu_avx512())
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (a < 1)
        return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 5) & 1;
}
#endif
#endif

/* The best level this CPU and build run. */
static int sinpe_cpu_isa(void)
{
#if SINPE_AVX512
#if SINPE_AVX512_EMULATED
    return SINPE_ISA_AVX512;
#else
#if SINPE_AVX512BF16
    if (sinpe__cpu_avx512bf16())
        return SINPE_ISA_AVX512BF16;
#endif
    if (sinpe__cpu_avx512())
        return SINPE_ISA_AVX512;
#endif
#endif
#if SINPE_AVX2
    return sinpe__cpu_avx2_level() ? SINPE_ISA_AVX2 : SINPE_ISA_SSE2;
#elif SINPE_SSE2
    return SINPE_ISA_SSE2;
#else
    return SINPE_ISA_C;
#endif
}

static int sinpe__isa_level = -1;

/* The instruction-set level every loop uses; settled at import (the kernel calls it, and
   sinpe_set_isa, before any fill), so no thread ever sees it change under a fill. */
static int sinpe_isa(void)
{
    if (sinpe__isa_level < 0)
        sinpe__isa_level = sinpe_cpu_isa();
    return sinpe__isa_level;
}

/* Run at `wanted` (SINPE_ISA_*) or, when this CPU or build lacks it, the best level below;
   returns the level now in force. Only while no fill runs (the kernel's import, tests). */
static int sinpe_set_isa(int wanted)
{
    int best = sinpe_cpu_isa();
    sinpe__isa_level = wanted < 0 ? best : (wanted < best ? wanted : best);
    return sinpe__isa_level;
}

#endif /* SINPE_CONFIG_H */
