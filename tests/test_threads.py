"""Threads that never hurt: sinpe's own pool (``_c/team.h``) under forks (whatever ran in the
parent: sinpe, another library's OpenMP, a thread in the middle of a fill), every cap on the
thread count, and signals during long calls on both backends.

Every pattern that could hang runs in a subprocess under a timeout that only catches a hang,
so a hang fails the test instead of stopping the suite. Thread counts are observed from the
operating system (``/proc/self/task``), never re-derived from the code under test. Speed
is never judged here: ``benchmarks/threads.py`` measures it.
"""

import os
import shutil
import subprocess

import pytest
from subprocesses import FORK_STRESS, FORKS, fork_counts, run_script

import sinpe
from sinpe._tables import backends

# the kernel's own tests; `pool`: the thread pool, processes and memory limits, code no
# instruction-set cap changes (the capped builds skip them, every other build runs them)
pytestmark = [pytest.mark.compiled, pytest.mark.pool]

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")
needs_pool = pytest.mark.skipif(
    sinpe.THREAD_RUNTIME == "none" or "cython" not in backends.BACKENDS,
    reason="no thread runtime in this build",
)
needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
    reason="needs two usable cores",
)
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


DIGESTS = """
import hashlib, os, threading, numpy as np, sinpe
from sinpe._tables.backends import BACKENDS
def os_threads():
    return len(os.listdir("/proc/self/task")) if os.path.exists("/proc/self/task") else 0
def digest(threads=None):
    kernel = dict(threads=threads, backend="cython" if "cython" in BACKENDS else "numpy")
    table = sinpe.sinusoidal_positional_encoding(4096, 512, offset=3, **kernel)
    cos, sin = sinpe.rope(8192, 128, **kernel)
    half = sinpe.sinusoidal_positional_encoding(2048, 512, dtype="float16", **kernel)
    return hashlib.sha256(table.tobytes() + cos.tobytes() + half.tobytes()).hexdigest()
WANT = digest(threads=1)
def child_checks():
    assert digest() == WANT  # default threads, in the child
    assert digest(threads=2) == WANT
    return sinpe.thread_limit().threads, sinpe._c._kernel.helpers()
def in_child(work):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            print("child", *work(), flush=True)
        except BaseException as exc:
            print("child failed", repr(exc), flush=True)
            code = 1
        os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0, "child failed"
"""


# --------------------------------------------------------------------------- forks


@needs_fork
@needs_pool
def test_a_child_forked_after_threaded_tables_keeps_its_threads():
    """os.fork() after multi-threaded tables (sinpe's helpers exist in the parent, not in
    the child): the child's tables are the parent's, made with helpers of its own, and so
    are a grandchild's."""
    result = run_script(
        DIGESTS
        + """
assert digest(threads=2) == WANT
# helpers exist in the parent wherever two threads may run (none on one usable core)
assert (sinpe._c._kernel.helpers() >= 1) == (sinpe.thread_limit().threads > 1)
def grand():
    limit, helpers = child_checks()
    in_child(child_checks)
    return limit, helpers
in_child(grand)
print("parent", sinpe.thread_limit().threads, sinpe._c._kernel.helpers())
"""
    )
    lines = [line.split() for line in result.stdout.splitlines()]
    for line in lines:
        assert line[0] in ("child", "parent") and int(line[1]) == sinpe.thread_limit().threads
        if int(line[1]) > 1:
            assert int(line[2]) >= 1  # a helper of its own: threads kept, not a fallback


OPENMP_LIBRARY = r"""
#include <omp.h>
int busy(int n) {
    int total = 0;
    #pragma omp parallel for reduction(+:total)
    for (int i = 0; i < n; i++) total += i % 7;
    return total;
}
"""


@needs_fork
@needs_pool
def test_a_fork_after_another_librarys_openmp_never_hangs(tmp_path):
    """Another library that shares the process's OpenMP runtime runs a parallel region, then
    the process forks: the child's tables (default threads) are right and nothing waits for
    the parent's OpenMP threads (sinpe has no OpenMP)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the OpenMP library")
    source, library = tmp_path / "busy.c", tmp_path / "libbusy.so"
    source.write_text(OPENMP_LIBRARY)
    built = subprocess.run(
        [compiler, "-fopenmp", "-shared", "-fPIC", str(source), "-o", str(library)],
        capture_output=True,
        text=True,
    )
    if built.returncode:
        pytest.skip(f"no OpenMP in this compiler: {built.stderr[-200:]}")
    result = run_script(
        DIGESTS
        + f"""
import ctypes
lib = ctypes.CDLL({str(library)!r})
assert lib.busy(1000000) > 0  # libgomp's team now exists in the parent
in_child(child_checks)
assert lib.busy(1000) > 0
"""
    )
    assert result.stdout.startswith("child")


@needs_fork
@needs_pool
def test_a_fork_from_a_thread_during_a_fill():
    """A Python thread forks while another is inside a multi-threaded fill: the child (which
    has neither the filling thread nor the helpers) makes right tables with threads, and the
    parent's fill finishes with the right table."""
    run_script(
        DIGESTS
        + """
out = np.empty((16384, 1024))
started, done = threading.Event(), threading.Event()
def fill():
    for _ in range(6):
        started.set()
        sinpe.sinusoidal_positional_encoding(16384, 1024, out=out, threads=2)
    done.set()
filler = threading.Thread(target=fill)
filler.start()
started.wait()
for _ in range(3):
    in_child(child_checks)
filler.join()
assert np.array_equal(out, sinpe.sinusoidal_positional_encoding(16384, 1024, threads=1))
"""
    )


@needs_fork
def test_forks_while_a_thread_churns_the_cache_never_hang():
    """A thread fills the cache with thousands of small entries and evicts them all again
    (set_cache_limit(0): the longest time the cache lock is held) while the main thread
    forks 200 times (FORKS); each child's first table is a cache miss. Not one child hangs on the
    lock it inherited, and each child's table is the parent's."""
    result = run_script(
        FORK_STRESS
        + f"""
import numpy as np, sinpe
WANT = sinpe.rope(64, 16, base=12345.0)
def churn(stop):
    base = 2.0
    while not stop.is_set():
        for _ in range(3000):
            base += 1.0
            sinpe.rope_frequencies(8, base=base)
        sinpe.set_cache_limit(0)
        sinpe.set_cache_limit(64 << 20)
def child():
    assert sinpe.cache_info().entries == 0  # the child's cache starts empty, lock free
    return all(np.array_equal(a, b) for a, b in zip(sinpe.rope(64, 16, base=12345.0), WANT))
fork_stress({FORKS}, churn, child, wait_for_window=lambda: time.sleep(0.002))
"""
    )
    assert fork_counts(result)[:3] == (FORKS, 0, 0), result.stdout


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pools_after_threaded_tables(method):
    """A Pool of every start method, made after the parent ran threads, returns right tables
    and its workers may use threads; the parent still does afterwards."""
    if method not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip(f"{method} is not available here")
    result = run_script(
        DIGESTS
        + f"""
import multiprocessing
def work(_):
    return digest(), sinpe.thread_limit().threads

if __name__ == "__main__":
    assert digest(threads=2) == WANT
    with multiprocessing.get_context({method!r}).Pool(2) as pool:
        results = pool.map(work, range(4))
    assert all(r[0] == WANT for r in results), results
    print(sorted({{r[1] for r in results}}), sinpe.thread_limit().threads)
"""
    )
    child_limits, parent_limit = result.stdout.rsplit(" ", 1)
    assert child_limits == f"[{sinpe.thread_limit().threads}]"  # no child falls back to one
    assert int(parent_limit) == sinpe.thread_limit().threads


# --------------------------------------------------------------------------- caps

COUNT = """
import os, sinpe
def os_threads():
    return len(os.listdir("/proc/self/task"))
"""


# the variables that cap the pool: a child gets only those its test gives (a user's
# OMP_NUM_THREADS=1 would otherwise decide every child's limit)
UNCAPPED = {"SINPE_NUM_THREADS": None, "OMP_NUM_THREADS": None}


def extra_threads(setup: str = "", threads=None, **env) -> tuple[int, str]:
    """OS threads a big table adds in a fresh process, and what thread_limit() says there
    (the thread variables unset there, but those ``env`` gives)."""
    code = (
        COUNT
        + setup
        + f"""
before = os_threads()
with limits():
    sinpe.sinusoidal_positional_encoding(8192, 1024, threads={threads!r}, backend="cython")
    limit = sinpe.thread_limit()
print(os_threads() - before, limit.threads, limit.source, sep="|")
"""
    )
    if "def limits" not in setup:
        code = code.replace("with limits():", "if True:")
    extra, threads, source = run_script(code, **{**UNCAPPED, **env}).stdout.strip().split("|")
    return int(extra), f"{threads}|{source}"


@linux_only
@needs_pool
@needs_two_cores
def test_the_default_uses_every_core():
    """A big table with no cap but the cores: one helper per usable core beyond the caller's,
    the cores counted by the operating system here (whatever this machine has)."""
    cores = len(os.sched_getaffinity(0))
    extra, limit = extra_threads(SINPE_NUM_THREADS=None, OMP_NUM_THREADS=None)
    assert extra == min(cores - 1, 255) and limit == f"{cores}|usable cores"  # 255: team.h's cap


@linux_only
@needs_pool
@needs_two_cores
@pytest.mark.parametrize(
    "env, source",
    [
        ({"OMP_NUM_THREADS": "1"}, "OMP_NUM_THREADS"),
        ({"OMP_NUM_THREADS": "1,4"}, "OMP_NUM_THREADS"),  # one number per nesting level
        ({"SINPE_NUM_THREADS": "1"}, "SINPE_NUM_THREADS"),
        ({"SINPE_NUM_THREADS": " 1 ", "OMP_NUM_THREADS": "2"}, "SINPE_NUM_THREADS"),
        ({"SINPE_NUM_THREADS": "8", "OMP_NUM_THREADS": "1"}, "OMP_NUM_THREADS"),
    ],
)
@pytest.mark.parametrize("threads", [None, 2])
def test_environment_caps_threads(env, source, threads):
    """Each variable caps the default and an explicit ``threads=``, the smallest wins, and no
    extra OS thread appears."""
    extra, limit = extra_threads(
        threads=threads, **{"SINPE_NUM_THREADS": None, "OMP_NUM_THREADS": None, **env}
    )
    assert extra == 0 and limit == f"1|{source}"


@linux_only
@needs_pool
@needs_two_cores
def test_cpu_affinity_caps_threads():
    extra, limit = extra_threads("os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n")
    assert extra == 0 and limit == "1|usable cores"


@linux_only
@needs_pool
@needs_two_cores
@pytest.mark.parametrize("first", ["sinpe", "threadpoolctl"])
def test_threadpoolctl_sees_and_limits_the_pool(first):
    """Whichever is imported first, threadpoolctl lists sinpe (user_api "openmp", as users
    tame every library's threads at once) and its limit holds, process-wide, then lifts."""
    pytest.importorskip("threadpoolctl")
    imports = (
        "import sinpe\nimport threadpoolctl\n"
        if first == "sinpe"
        else "import threadpoolctl\nimport sinpe\n"
    )
    extra, limit = extra_threads(
        imports
        + """
from threadpoolctl import threadpool_info, threadpool_limits
found = [i for i in threadpool_info() if i["internal_api"] == "sinpe"]
assert len(found) == 1 and found[0]["user_api"] == "openmp", threadpool_info()
def limits():
    return threadpool_limits(1, user_api="openmp")
"""
    )
    assert extra == 0 and limit == "1|threadpoolctl"
    result = run_script(
        imports
        + """
from threadpoolctl import threadpool_limits
with threadpool_limits(1):
    inside = sinpe.thread_limit()
print(inside.threads, inside.source, sinpe.thread_limit().source)
""",
        **UNCAPPED,
    )
    assert result.stdout.split() == ["1", "threadpoolctl", "usable", "cores"]


@needs_pool
def test_thread_variables_are_read_when_a_call_needs_them(monkeypatch):
    """Set after import, a variable takes effect at the next call, and unset, it is gone."""
    for name in ("SINPE_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
        assert sinpe.thread_limit() == (1, name)
        monkeypatch.delenv(name)
        assert sinpe.thread_limit().source != name


@pytest.mark.parametrize("cap", ["0", "-2", "two", "1.5"])
@pytest.mark.parametrize("name", ["SINPE_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_bad_thread_variable_warns_and_is_ignored(cap, name):
    """A typo never breaks ``import sinpe``: the first call that needs threads warns once,
    names the variable, and runs with the other limits."""
    result = run_script(
        """
import warnings, sinpe
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    table = sinpe.sinusoidal_positional_encoding(4096, 1024)  # 2**22 elements: threaded
    sinpe.sinusoidal_positional_encoding(4096, 1024)
print(len(caught), caught[0].message if caught else "", table[0, :2].tolist(), sep="|")
print(sinpe.thread_limit().source)
""",
        **{name: cap},
    )
    first, source = result.stdout.strip().split("\n")
    count, message, row = first.split("|")
    if sinpe.THREAD_RUNTIME != "none" and "cython" in backends.BACKENDS:
        assert count == "1" and name in message and repr(cap) in message
        assert source != name
    assert row == "[0.0, 1.0]"


def test_the_runtime_tells_the_truth():
    with pytest.deprecated_call(match="THREAD_RUNTIME"):
        assert sinpe.HAVE_OPENMP is False  # there is no OpenMP in sinpe any more
    if "cython" in backends.BACKENDS:
        expected = {"posix": "posix threads", "nt": "windows threads"}.get(os.name, "none")
        assert sinpe.THREAD_RUNTIME == expected
    else:
        assert sinpe.THREAD_RUNTIME == "none"
        assert sinpe.thread_limit().threads == 1


# --------------------------------------------------------------------------- signals

SIGNALS = """
import os, signal, sys, threading, time, numpy as np, sinpe
WIDTH = 128
POSITIONS = np.random.default_rng(0).integers(0, 2**40, {rows} << 3).astype(np.float64)

def call(n, out=None):
    # every position its own anchor: the filler evaluates each row's, a long call per row
    return sinpe.encode(POSITIONS[:n], WIDTH, backend={backend!r}, out=out)

def fresh(n):
    return np.full((n, WIDTH), np.nan, dtype=np.float16)  # NaN: a row not written yet

def started(out):
    return out[0, 0] == out[0, 0]  # row 0 written: the fill is under way

def unfinished(out):
    return bool(np.isnan(out[:, 0]).any())

def signal_once_started(out, signum, done):
    # The signal goes once the fill has demonstrably started, never after a fixed delay:
    # a faster or slower machine changes how long the call lasts, not the order of events.
    def send():
        while not started(out) and not done.is_set():
            time.sleep(0.0005)
        if not done.is_set():
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signum)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    return sender

def attempts():
    # A call that ended before its signal proves nothing: again, twice as long (3 times at most).
    for k in range(4):
        sent.clear()
        yield {rows} << k
sent = []
"""
# rows of a first attempt per backend: a call of about half a second here (AVX2, one core)
SIGNAL_ROWS = {"cython": 500_000, "numpy": 25_000}


@pytest.mark.skipif(os.name != "posix", reason="needs os.kill with SIGINT")
@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_ctrl_c_ends_a_long_call_at_once(backend):
    """SIGINT once a long fill has started: KeyboardInterrupt out of the call before the fill
    is done (rows still unwritten: the call did not wait for its end; how soon is printed
    here and timed by benchmarks/threads.py, never asserted), and the process stays usable:
    the same rows as before."""
    if backend not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    result = run_script(
        SIGNALS.format(rows=SIGNAL_ROWS[backend], backend=backend)
        + """
# Python's own handler, whatever this process inherited: a shell that starts a job in the
# background makes it ignore SIGINT, and Python then installs no handler of its own.
signal.signal(signal.SIGINT, signal.default_int_handler)
before = call(1000)
for n in attempts():
    out, done, stage = fresh(n), threading.Event(), "before"
    sender = signal_once_started(out, signal.SIGINT, done)
    try:
        stage = "call"
        call(n, out)
        stage = "after"
        done.set()
        sender.join()  # a signal sent as the call ended lands here, or in the loop below
        for _ in range(100000):
            pass
    except KeyboardInterrupt:
        answered = time.perf_counter()
        done.set()
        if stage == "call" and unfinished(out):
            print("interrupted", n, round(answered - sent[0], 3))
            break
    print("ended first", n)
again = call(1000)
assert np.array_equal(again, before)
"""
    )
    words = result.stdout.split("\n")[-2].split()
    assert words[0] == "interrupted", result.stdout  # during the call (its delay: printed)


@pytest.mark.skipif(os.name != "posix", reason="needs os.kill with SIGINT")
@pytest.mark.parametrize("whole", [False, True], ids=["checked", "whole"])
def test_a_whole_fill_ends_whole_and_then_the_signal_is_raised(whole):
    """What vLLM's exact mode writes a CPU cache in place with (``table_run(whole=True)``):
    SIGINT once the fill has started (one thread, a long run table) is raised only once the
    fill has returned (in table_run's Python, or after it), every row written; the same
    call checking signals (``whole=False``, every other table) is stopped part-way, rows
    unwritten: what this test would see if ``whole`` were ignored."""
    if "cython" not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    result = run_script(
        SIGNALS.format(rows=1 << 17, backend="cython")
        + f"""
from sinpe._rope import rotary as rot
WIDTH, WHOLE = 256, {whole}
ONE = sinpe.rope_config({{"model_type": "llama", "head_dim": WIDTH, "rope_theta": 1e4}})._one()

def call(n, out):
    rot.table_run(ONE, n, 0, "vllm", np.dtype("float32"), 1, "cython", "", (out,), WHOLE)

def fresh(n):
    return np.full((n, WIDTH), np.nan, dtype=np.float32)

signal.signal(signal.SIGINT, signal.default_int_handler)
for n in attempts():
    out, done, stage, ended = fresh(n), threading.Event(), "before", None
    sender = signal_once_started(out, signal.SIGINT, done)
    try:
        stage = "call"
        call(n, out)
        ended = time.perf_counter()
        stage = "after"
        done.set()
        sender.join()
        for _ in range(100000):
            pass
    except KeyboardInterrupt:
        done.set()
        if sent and (ended is None or sent[0] < ended):  # sent while the fill ran
            if not WHOLE and stage == "call" and not unfinished(out):
                # the checked fill's next check came after its last chunk (a loaded
                # machine): the call raised with every row written, which shows nothing
                print("late", n)
                continue
            print(stage, "unfinished" if unfinished(out) else "whole", n)
            break
    print("ended first", n)
"""
    )
    said = result.stdout.split("\n")[-2].split()[:2]  # raised in the call, or after it
    assert said[1:] == ["whole"] if whole else said == ["call", "unfinished"], result.stdout


@pytest.mark.skipif(os.name != "posix", reason="needs SIGUSR1")
@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_a_handler_that_returns_lets_the_call_go_on(backend):
    """A Python handler runs during the call (the fill started, not finished), and when it
    returns the call goes on to the same rows as an uninterrupted call."""
    if backend not in backends.BACKENDS:
        pytest.skip("compiled kernel not built")
    result = run_script(
        SIGNALS.format(rows=SIGNAL_ROWS[backend], backend=backend)
        + """
def handler(*args):
    ran.append((time.perf_counter(), unfinished(out)))
signal.signal(signal.SIGUSR1, handler)
for n in attempts():
    out, done, ran = fresh(n), threading.Event(), []
    sender = signal_once_started(out, signal.SIGUSR1, done)
    got = call(n, out)
    done.set()
    sender.join()
    for _ in range(100000):  # a signal sent as the call ended runs its handler here
        pass
    if ran and ran[0][1]:  # the handler ran while rows were still unwritten
        break
assert ran and ran[0][1], ("the handler never ran during a call", n, ran)
assert got is out and not unfinished(out)
assert np.array_equal(out, call(n, fresh(n))), "the call did not go on to the same rows"
print(n, round(ran[0][0] - sent[0], 3))
"""
    )
    assert len(result.stdout.split()) == 2, result.stdout  # rows, the handler's delay (said)
