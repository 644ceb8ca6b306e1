/* The parallel scaffold: a job cut into chunks, run by the calling thread and, for big jobs,
   a few helpers of a small pool of sinpe's own. Every filler and the exact evaluator hand
   their work here as (chunk function, context, chunk count, scratch per thread); nothing
   above this file knows how threads are made.

   What the pool does, after pocketfft, numexpr and Blosc:
   - the calling thread works too, taking chunks from an atomic counter like every helper,
     so no one ever waits for a thread that has not started: a helper that wakes late finds
     the chunks gone and goes back to sleep;
   - helpers sleep on a condition variable between jobs (no spinning), so a busy machine
     loses nothing to them; chunks are small and handed out dynamically, so a helper slowed
     by another process only takes fewer of them;
   - one job at a time uses the helpers; a second calling thread that finds them busy runs
     its own job alone, on its own thread (no global lock serialises two callers);
   - a forked child starts with an empty pool (pthread_atfork): it makes its own helpers
     when it needs them, whatever ran in the parent, and never waits for threads that do not
     exist in it;
   - helpers block every signal, so signals go to the threads that asked for them; between
     chunks the calling thread runs the caller's check (Python's signal handlers, about every
     20 ms) and stops the job when it says so.
   POSIX threads, Windows threads, or (neither) the calling thread alone: SINPE_THREADS
   (2, 1, 0) says which, and the kernel's THREADS names it. Every result is the same bits whatever ran where: chunks write disjoint rows. */
#ifndef SINPE_TEAM_H
#define SINPE_TEAM_H
#include <stdlib.h>
#include "config.h"

#if defined(_WIN32)
#define SINPE_THREADS 2
#include <windows.h>
#include <process.h>
#elif defined(__unix__) || defined(__APPLE__)
#define SINPE_THREADS 1
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#else
#define SINPE_THREADS 0
#endif

/* One unit of work: chunk `chunk` of the job behind `context`, with this thread's scratch. */
typedef void (*sinpe_work_fn)(void *context, ptrdiff_t chunk, double *scratch);
/* Run by the calling thread between chunks (about every 20 ms): nonzero stops the job. */
typedef int (*sinpe_check_fn)(void);

#define SINPE_MAX_HELPERS 255
#if defined(_WIN32)
#define SINPE_EXPORT __declspec(dllexport)
#else
#define SINPE_EXPORT __attribute__((visibility("default")))
#endif

#define SINPE_CHECK_NS 20000000LL /* between two checks of the caller's signals */
#define SINPE_ALONE_NS 500000000LL /* after a long wait for a helper: small jobs alone */

/* ------------------------------------------------------------------ atomics, clock */
#if defined(_MSC_VER)
#include <intrin.h>
#define SINPE__FETCH_ADD(p, v) _InterlockedExchangeAdd64((volatile __int64 *)(p), (v))
#define SINPE__LOAD(p) _InterlockedOr((volatile long *)(p), 0)
#define SINPE__STORE(p, v) _InterlockedExchange((volatile long *)(p), (v))
#else
#define SINPE__FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define SINPE__LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define SINPE__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif

/* The limit threadpoolctl sets (process-wide; 0: none), through sinpe's registered
   controller (sinpe._tables.threads), by name from the loaded module. */
static long sinpe__threadpool_limit = 0;
SINPE_EXPORT int sinpe_threadpool_get_num_threads(void);
SINPE_EXPORT void sinpe_threadpool_set_num_threads(int n);
SINPE_EXPORT int sinpe_threadpool_get_num_threads(void)
{
    return (int)SINPE__LOAD(&sinpe__threadpool_limit);
}
SINPE_EXPORT void sinpe_threadpool_set_num_threads(int n)
{
    SINPE__STORE(&sinpe__threadpool_limit, n > 0 ? n : 0);
}
static long long sinpe__now_ns(void)
{
#if SINPE_THREADS == 2
    static LARGE_INTEGER frequency;
    LARGE_INTEGER now;
    if (!frequency.QuadPart)
        QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&now);
    return (long long)(now.QuadPart * (1e9 / (double)frequency.QuadPart));
#elif SINPE_THREADS == 1
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------ a job */
typedef struct {
    sinpe_work_fn work;
    void *context;
    ptrdiff_t n_chunks;
    ptrdiff_t stride;     /* doubles of scratch per thread, whole pages */
    uintptr_t placement;  /* where in its first page each thread's scratch starts */
    int helpers;          /* at most this many helpers may join */
    long long next;       /* the next chunk to hand out (atomic) */
    long stop;            /* set (atomic) when the caller's check says so */
} sinpe_job;

/* A thread's scratch: whole pages, `placement` bytes into the first; NULL if none needed. */
static void *sinpe__scratch(const sinpe_job *job, double **scratch)
{
    void *block;
    *scratch = NULL;
    if (!job->stride)
        return NULL;
    block = malloc((size_t)job->stride * sizeof(double) + 8192);
    if (block)
        *scratch = (double *)(((uintptr_t)block + 4095) / 4096 * 4096 + (job->placement & 4088));
    return block;
}

/* Take chunks until none is left (or the job is stopped); `check` (the caller only).
   Returns how many chunks this thread ran. */
static ptrdiff_t sinpe__run_chunks(sinpe_job *job, double *scratch, sinpe_check_fn check)
{
    long long due = check ? sinpe__now_ns() + SINPE_CHECK_NS : 0;
    ptrdiff_t done = 0;
    for (;;) {
        long long chunk = SINPE__FETCH_ADD(&job->next, 1);
        if (chunk >= job->n_chunks || SINPE__LOAD(&job->stop))
            return done;
        job->work(job->context, (ptrdiff_t)chunk, scratch);
        done++;
        if (check && sinpe__now_ns() >= due) {
            if (check()) {
                SINPE__STORE(&job->stop, 1);
                return done;
            }
            due = sinpe__now_ns() + SINPE_CHECK_NS;
        }
    }
}

/* ------------------------------------------------------------------ the pool */
#if SINPE_THREADS
#if SINPE_THREADS == 1
typedef pthread_mutex_t sinpe__mutex;
typedef pthread_cond_t sinpe__cond;
#define SINPE__LOCK(m) pthread_mutex_lock(m)
#define SINPE__UNLOCK(m) pthread_mutex_unlock(m)
#define SINPE__WAIT(c, m) pthread_cond_wait(c, m)
#define SINPE__WAKE_ALL(c) pthread_cond_broadcast(c)
#define SINPE__WAKE(c) pthread_cond_signal(c)
#else
typedef CRITICAL_SECTION sinpe__mutex;
typedef CONDITION_VARIABLE sinpe__cond;
#define SINPE__LOCK(m) EnterCriticalSection(m)
#define SINPE__UNLOCK(m) LeaveCriticalSection(m)
#define SINPE__WAIT(c, m) SleepConditionVariableCS(c, m, INFINITE)
#define SINPE__WAKE_ALL(c) WakeAllConditionVariable(c)
#define SINPE__WAKE(c) WakeConditionVariable(c)
#endif

static struct {
    sinpe__mutex lock;
    sinpe__cond wake;   /* helpers wait here for a job */
    sinpe__cond done;   /* the caller waits here for its helpers */
    sinpe_job *job;     /* the job the helpers may join, or NULL */
    unsigned long generation; /* counts the jobs handed to the helpers */
    int threads;        /* helpers made (they never exit) */
    int busy;           /* a caller owns the helpers */
    int active;         /* helpers inside the current job */
    /* Contention: when the caller of a job waited long for a helper (one another process
       had taken off its core in the middle of a chunk), smaller jobs run on the calling
       thread alone until `alone_until` (ns); jobs of at least `big_job` chunks still take
       helpers, their wait being small against their length. */
    long long alone_until;
    ptrdiff_t big_job;
} sinpe__pool;

static void sinpe__pool_init(void)
{
    sinpe__pool.job = NULL;
    sinpe__pool.generation = 0;
    sinpe__pool.threads = sinpe__pool.busy = sinpe__pool.active = 0;
    sinpe__pool.alone_until = 0;
    sinpe__pool.big_job = 0;
#if SINPE_THREADS == 1
    pthread_mutex_init(&sinpe__pool.lock, NULL);
    pthread_cond_init(&sinpe__pool.wake, NULL);
    pthread_cond_init(&sinpe__pool.done, NULL);
#else
    InitializeCriticalSection(&sinpe__pool.lock);
    InitializeConditionVariable(&sinpe__pool.wake);
    InitializeConditionVariable(&sinpe__pool.done);
#endif
}

#if SINPE_THREADS == 1
static void *sinpe__helper(void *unused)
#else
static unsigned __stdcall sinpe__helper(void *unused)
#endif
{
    unsigned long seen;
    (void)unused;
    SINPE__LOCK(&sinpe__pool.lock);
    seen = sinpe__pool.generation;
    for (;;) {
        sinpe_job *job;
        double *scratch;
        void *block;
        while (sinpe__pool.generation == seen)
            SINPE__WAIT(&sinpe__pool.wake, &sinpe__pool.lock);
        seen = sinpe__pool.generation;
        job = sinpe__pool.job;
        if (!job || sinpe__pool.active >= job->helpers)
            continue;
        sinpe__pool.active++;
        SINPE__UNLOCK(&sinpe__pool.lock);
        block = sinpe__scratch(job, &scratch);
        if (block || !job->stride)
            sinpe__run_chunks(job, scratch, NULL);
        free(block);
        SINPE__LOCK(&sinpe__pool.lock);
        if (--sinpe__pool.active == 0)
            SINPE__WAKE(&sinpe__pool.done);
    }
#if SINPE_THREADS == 1
    return NULL;
#else
    return 0;
#endif
}

/* Make helpers up to `wanted` (under the lock); returns how many there are. */
static int sinpe__grow(int wanted)
{
#if SINPE_THREADS == 1
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* helpers start with every signal blocked */
#endif
    while (sinpe__pool.threads < wanted) {
#if SINPE_THREADS == 1
        pthread_t thread;
        pthread_attr_t attr;
        int failed;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        failed = pthread_create(&thread, &attr, sinpe__helper, NULL);
        pthread_attr_destroy(&attr);
        if (failed)
            break;
#else
        uintptr_t thread = _beginthreadex(NULL, 256 * 1024, sinpe__helper, NULL, 0, NULL);
        if (!thread)
            break;
        CloseHandle((HANDLE)thread);
#endif
        sinpe__pool.threads++;
    }
#if SINPE_THREADS == 1
    pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
    return sinpe__pool.threads;
}

#if SINPE_THREADS == 1
/* Around a fork the pool's lock is held, so the child's copy is consistent; the child has
   none of the parent's helpers (nor any job): it starts an empty pool of its own. */
static void sinpe__before_fork(void) { pthread_mutex_lock(&sinpe__pool.lock); }
static void sinpe__after_fork_parent(void) { pthread_mutex_unlock(&sinpe__pool.lock); }
static void sinpe__after_fork_child(void)
{
    pthread_mutex_unlock(&sinpe__pool.lock);
    sinpe__pool_init();
}
#endif

/* Once, at import (the kernel calls it before any job). */
static void sinpe_team_init(void)
{
    sinpe__pool_init();
#if SINPE_THREADS == 1
    pthread_atfork(sinpe__before_fork, sinpe__after_fork_parent, sinpe__after_fork_child);
#endif
}
#else
static void sinpe_team_init(void) {}
#endif /* SINPE_THREADS */

/* How many helpers this process has made so far (for tests and `sinpe info`). */
static int sinpe_team_helpers(void)
{
#if SINPE_THREADS
    int n;
    SINPE__LOCK(&sinpe__pool.lock);
    n = sinpe__pool.threads;
    SINPE__UNLOCK(&sinpe__pool.lock);
    return n;
#else
    return 0;
#endif
}

/* Run chunks 0 .. n_chunks - 1 on the calling thread and at most threads - 1 helpers, each
   with its own scratch of scratch_doubles doubles in whole pages starting `placement` bytes
   (< 4096) past a page boundary. `check` (or NULL) runs on the calling thread between chunks,
   about every 20 ms; nonzero stops the job. Returns 0; -1 when the caller's scratch could not
   be allocated (then no chunk ran); -2 when the check stopped the job (then some chunks were
   not run). The work is done when this returns: no helper touches the job afterwards. */
static int sinpe_team_run(int threads, ptrdiff_t n_chunks, sinpe_work_fn work, void *context,
                          ptrdiff_t scratch_doubles, uintptr_t placement, sinpe_check_fn check)
{
    sinpe_job job;
    double *scratch;
    void *block;
    int helpers = 0;
    long long start = 0, alone_done;
    ptrdiff_t mine;
    if (n_chunks <= 0)
        return 0;
    job.work = work;
    job.context = context;
    job.n_chunks = n_chunks;
    job.stride = (scratch_doubles + 511) / 512 * 512;
    job.placement = placement;
    job.next = 0;
    job.stop = 0;
    job.helpers = 0;
    block = sinpe__scratch(&job, &scratch);
    if (!block && job.stride)
        return -1;
#if SINPE_THREADS
    if (threads > 1 && n_chunks > 1) {
        int wanted = (int)(n_chunks - 1 < threads - 1 ? n_chunks - 1 : threads - 1);
        wanted = wanted < SINPE_MAX_HELPERS ? wanted : SINPE_MAX_HELPERS;
        start = sinpe__now_ns();
        SINPE__LOCK(&sinpe__pool.lock);
        if (start < sinpe__pool.alone_until && n_chunks < sinpe__pool.big_job)
            wanted = 0; /* the machine is busy: not worth a helper for this job */
        if (wanted > 0 && !sinpe__pool.busy) { /* else another caller has them: alone */
            helpers = sinpe__grow(wanted);
            helpers = helpers < wanted ? helpers : wanted;
            if (helpers > 0) {
                sinpe__pool.busy = 1;
                job.helpers = helpers;
                sinpe__pool.job = &job;
                sinpe__pool.generation++;
                SINPE__WAKE_ALL(&sinpe__pool.wake);
            }
        }
        SINPE__UNLOCK(&sinpe__pool.lock);
    }
#else
    (void)threads;
#endif
    mine = sinpe__run_chunks(&job, scratch, check);
#if SINPE_THREADS
    if (helpers > 0) {
        long long waited;
        alone_done = sinpe__now_ns();
        SINPE__LOCK(&sinpe__pool.lock);
        sinpe__pool.job = NULL; /* no helper joins from here on */
        while (sinpe__pool.active > 0)
            SINPE__WAIT(&sinpe__pool.done, &sinpe__pool.lock);
        sinpe__pool.busy = 0;
        waited = sinpe__now_ns() - alone_done;
        if (waited > 20000 && 4 * waited > alone_done - start && mine > 0) {
            /* a job needs about 20 of these waits of work to gain from helpers now */
            long long per_chunk = (alone_done - start) / mine + 1;
            sinpe__pool.alone_until = alone_done + waited + SINPE_ALONE_NS;
            sinpe__pool.big_job = (ptrdiff_t)(20 * waited / per_chunk) + 1;
        }
        SINPE__UNLOCK(&sinpe__pool.lock);
    }
#else
    (void)start;
    (void)alone_done;
    (void)mine;
#endif
    free(block);
    return SINPE__LOAD(&job.stop) ? -2 : 0;
}

#endif /* SINPE_TEAM_H */
