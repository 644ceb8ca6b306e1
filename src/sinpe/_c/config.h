/* Build-mode facts and the one CPU probe shared by every header of the kernel.

   setup.py defines SINPE_DEBUG and SINPE_MAX_SIMD (0 plain C, 1 SSE2, 2 AVX2 where the
   CPU has it). One macro per instruction set says whether this build may
   compile code for it; one probe (cpuid, once, at import) says whether this CPU runs it:

       SINPE_SSE2   the build has SSE2 (x86-64 baseline)
       SINPE_AVX2   the build may compile AVX2 + FMA + F16C functions (target attributes,
                    no -march flag), chosen at run time by sinpe_isa()

   sinpe_isa() is the level every dispatcher uses: 2 when the CPU has AVX2, FMA and F16C
   (and the OS saves the YMM registers), 1 with SSE2, 0 plain C. Every level gives the same
   bits: the headers use no FMA where it would change a rounding (-ffp-contract=off). */
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
#define SINPE_MAX_SIMD 2
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

#if defined(_MSC_VER)
#define SINPE_RESTRICT __restrict
#else
#define SINPE_RESTRICT __restrict__
#endif

enum { SINPE_ISA_C = 0, SINPE_ISA_SSE2 = 1, SINPE_ISA_AVX2 = 2 };

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
#endif

/* The instruction-set level of this CPU and build; asked once at import (the kernel calls it
   before any fill), so the answer is settled before any thread reads it. */
static int sinpe_isa(void)
{
#if SINPE_AVX2
    static int level = -1;
    if (level < 0)
        level = sinpe__cpu_avx2_level() ? SINPE_ISA_AVX2 : SINPE_ISA_SSE2;
    return level;
#elif SINPE_SSE2
    return SINPE_ISA_SSE2;
#else
    return SINPE_ISA_C;
#endif
}

#endif /* SINPE_CONFIG_H */
