/* The parallel scaffold: a job cut into chunks, run on a team of threads. Every filler and
   the exact evaluator hand their work to sinpe_team_run as (chunk function, context,
   chunk count, scratch per thread); nothing above this file knows how threads are made.

   Today the team is OpenMP's, with chunks claimed dynamically (schedule(dynamic, 1)).
   GCC's OpenMP runtime (libgomp) is not fork-safe: a child forked after the parent's first
   parallel region inherits the team's bookkeeping but not its threads, and its first
   parallel region waits for them forever. So the scaffold records which process started
   its first team; in any other process (a forked child, or a child of that child) it runs on
   one thread. A child forked before the parent ever started a team still gets threads.
   Windows has no fork, so there the question never arises. */
#ifndef SINPE_TEAM_H
#define SINPE_TEAM_H
#include <stdlib.h>
#include "config.h"
#if SINPE_HAVE_OPENMP
#include <omp.h>
#endif
#if !defined(_WIN32)
#include <unistd.h>
#endif

#if defined(_WIN32)
static int sinpe_team_allowed(void) { return 1; }
static void sinpe_team_starting(void) {}
#else
static long sinpe_team_pid = 0; /* the process that started this runtime's team; 0: none yet */

/* 1 unless a team was started in another process (an ancestor of this forked one). */
static int sinpe_team_allowed(void)
{
    long pid = __atomic_load_n(&sinpe_team_pid, __ATOMIC_RELAXED);
    return pid == 0 || pid == (long)getpid();
}

/* Called before every parallel region: from here on, a forked child must not start one. */
static void sinpe_team_starting(void)
{
    if (__atomic_load_n(&sinpe_team_pid, __ATOMIC_RELAXED) == 0)
        __atomic_store_n(&sinpe_team_pid, (long)getpid(), __ATOMIC_RELAXED);
}
#endif

/* The most threads OpenMP gives the calling thread: OMP_NUM_THREADS at load, then
   omp_set_num_threads (which is what threadpoolctl calls); 1 without OpenMP. */
static int sinpe_openmp_max_threads(void)
{
#if SINPE_HAVE_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* One unit of work: chunk `chunk` of the job behind `context`, with this thread's scratch. */
typedef void (*sinpe_work_fn)(void *context, ptrdiff_t chunk, double *scratch);

/* Run chunks 0 .. n_chunks - 1 on at most `threads` threads, each thread with its own
   scratch of scratch_doubles doubles in whole pages, starting `placement` bytes (< 4096)
   past a page boundary. Returns 0, or -1 when the scratch could not be allocated (then no
   chunk ran). */
static int sinpe_team_run(int threads, ptrdiff_t n_chunks, sinpe_work_fn work, void *context,
                          ptrdiff_t scratch_doubles, uintptr_t placement)
{
    ptrdiff_t stride = (scratch_doubles + 511) / 512 * 512; /* whole 4096-byte pages */
    void *block = NULL;
    double *scratch = NULL;
    ptrdiff_t c;
    if (n_chunks <= 0)
        return 0;
    if (threads > n_chunks)
        threads = (int)n_chunks;
    if (threads < 1 || !SINPE_HAVE_OPENMP || !sinpe_team_allowed())
        threads = 1;
    if (stride) {
        block = malloc((size_t)threads * (size_t)stride * sizeof(double) + 8192);
        if (block == NULL)
            return -1;
        scratch = (double *)(((uintptr_t)block + 4095) / 4096 * 4096 + (placement & 4088));
    }
#if SINPE_HAVE_OPENMP
    if (threads > 1) {
        long n = (long)n_chunks, i;
        sinpe_team_starting();
#pragma omp parallel num_threads(threads)
        {
            double *mine = scratch ? scratch + omp_get_thread_num() * stride : NULL;
#pragma omp for schedule(dynamic, 1)
            for (i = 0; i < n; i++)
                work(context, (ptrdiff_t)i, mine);
        }
        free(block);
        return 0;
    }
#endif
    for (c = 0; c < n_chunks; c++)
        work(context, c, scratch);
    free(block);
    return 0;
}

#endif /* SINPE_TEAM_H */
