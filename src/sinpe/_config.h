/* Build-mode facts shared by the kernel's headers; setup.py defines the SINPE_* macros. */
#ifndef SINPE_CONFIG_H
#define SINPE_CONFIG_H
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

#endif /* SINPE_CONFIG_H */
