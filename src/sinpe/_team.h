/* Threads: how many the OpenMP runtime allows, and whether this process may start a team.

   GCC's OpenMP runtime (libgomp) is not fork-safe: a child forked after the parent's first
   parallel region inherits the team's bookkeeping but not its threads, and its first parallel
   region waits for them forever (seen here: os.fork() after a 2048 x 512 table, then a table
   in the child, hung). So the kernel records which process started its first team; in any
   other process (a forked child, or a child of that child) it runs on one thread. A child
   forked before the parent ever started a team still gets threads: its runtime is fresh.
   Windows has no fork, so there the question never arises. */
#ifndef SINPE_TEAM_H
#define SINPE_TEAM_H
#include "_config.h"
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
static int sinpe_team_allowed(void) {
    long pid = __atomic_load_n(&sinpe_team_pid, __ATOMIC_RELAXED);
    return pid == 0 || pid == (long)getpid();
}

/* Called before every parallel region: from here on, a forked child must not start one. */
static void sinpe_team_starting(void) {
    if (__atomic_load_n(&sinpe_team_pid, __ATOMIC_RELAXED) == 0)
        __atomic_store_n(&sinpe_team_pid, (long)getpid(), __ATOMIC_RELAXED);
}
#endif

/* The team size to use for `requested` threads: 1 where a team is not safe to start. */
static int sinpe_team_size(int requested) {
    if (requested <= 1 || !sinpe_team_allowed()) return 1;
    sinpe_team_starting();
    return requested;
}

/* The most threads OpenMP gives the calling thread: OMP_NUM_THREADS at load, then
   omp_set_num_threads (which is what threadpoolctl calls); 1 without OpenMP. */
static int sinpe_openmp_max_threads(void) {
#if SINPE_HAVE_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#endif /* SINPE_TEAM_H */
