"""Inside real programs: forked children finish, the ecosystem's thread controls are obeyed,
the caches stay bounded, and pickled objects keep their hash in another process.

Every pattern that could hang runs in a subprocess under a timeout, so a hang fails the test
instead of stopping the suite. Thread counts are observed from the operating system
(``/proc/self/task``), never re-derived from the code under test.
"""

import os
import pickle
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import sinpe
from sinpe import conventions

TIMEOUT = 60  # seconds; a healthy run of any script here takes well under 5
linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")
needs_openmp = pytest.mark.skipif(not sinpe.HAVE_OPENMP, reason="kernel built without OpenMP")
needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
    reason="needs two usable cores",
)
BIG = (2048, 512)  # big enough for the default to use every core


def run_script(code: str, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a hang is a failure, not a stuck suite."""
    full_env = {**os.environ, **env}
    for name, value in env.items():
        if value is None:
            del full_env[name]
    with tempfile.TemporaryDirectory() as folder:  # a file: spawn workers re-import __main__
        script = os.path.join(folder, "script.py")
        with open(script, "w") as fh:
            fh.write(textwrap.dedent(code))
        try:
            result = subprocess.run(
                [sys.executable, script],
                capture_output=True,
                text=True,
                env=full_env,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"hung for {TIMEOUT} s: {exc.stdout!r} {exc.stderr!r}")
    assert result.returncode == 0, result.stderr
    return result


# --------------------------------------------------------------------------- fork safety

EXPECTED = """
import hashlib, numpy as np, sinpe
def digest(offset, threads=None):
    table = sinpe.sinusoidal_positional_encoding(2048, 512, offset=offset, threads=threads)
    return hashlib.sha256(table.tobytes()).hexdigest()
"""


def test_bare_fork_after_a_threaded_table():
    """os.fork() after a multi-threaded table: the child's tables (default threads, which
    would hang libgomp) are right, RoPE and float16 ones included, and so are a
    grandchild's."""
    run_script(
        EXPECTED
        + """
import os
sinpe.sinusoidal_positional_encoding(2048, 512, threads=2)  # the parent's team starts
want = {p: digest(p, threads=1) for p in (3, 10**9)}
# the RoPE and half-precision fillers take the same team (default threads below)
def rope_digest(threads=None):
    cos, sin = sinpe.rope(8192, 128, threads=threads)
    return hashlib.sha256(cos.tobytes() + sin.tobytes()).hexdigest()
def half_digest(threads=None):
    table = sinpe.sinusoidal_positional_encoding(2048, 512, dtype="float16", threads=threads)
    return hashlib.sha256(table.tobytes()).hexdigest()
want_rope, want_half = rope_digest(threads=1), half_digest(threads=1)

def child(depth):
    for offset, expected in want.items():
        got = sinpe.sinusoidal_positional_encoding(2048, 512, offset=offset)
        assert hashlib.sha256(got.tobytes()).hexdigest() == expected, offset
    assert rope_digest() == want_rope and half_digest() == want_half
    if depth < 2:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child(depth + 1)
            except BaseException:
                code = 1
            os._exit(code)
        assert os.waitpid(pid, 0)[1] == 0, "grandchild failed"

pid = os.fork()
if pid == 0:
    code = 0
    try:
        child(1)
    except BaseException:
        code = 1
    os._exit(code)
assert os.waitpid(pid, 0)[1] == 0, "child failed"
print("ok")
"""
    )


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pools_after_a_threaded_table(method):
    """A Pool of every start method, made after the parent ran threads, returns right tables;
    the parent still runs threads afterwards."""
    if method not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip(f"{method} is not available here")
    result = run_script(
        EXPECTED
        + f"""
import multiprocessing
def work(offset):
    return digest(offset), sinpe.thread_limit().threads

if __name__ == "__main__":
    sinpe.sinusoidal_positional_encoding(2048, 512, threads=2)
    offsets = [0, 3, 2**40, 2**53 - 4096]
    with multiprocessing.get_context({method!r}).Pool(2) as pool:
        results = pool.map(work, offsets)
    assert [r[0] for r in results] == [digest(p, threads=1) for p in offsets]
    print(sorted({{r[1] for r in results}}), sinpe.thread_limit().threads)
"""
    )
    child_limits, parent_limit = result.stdout.rsplit(" ", 1)
    if method == "fork" and sinpe.HAVE_OPENMP and sinpe.BACKEND == "cython":
        # the parent started a team, so its forked children run serially
        assert child_limits == "[1]"
    assert int(parent_limit) == sinpe.thread_limit().threads


THREAD_COUNT = """
import os, sinpe
def os_threads():
    return len(os.listdir("/proc/self/task"))
"""


@linux_only
@needs_openmp
@needs_two_cores
def test_a_child_forked_before_any_team_still_gets_threads():
    """Only a team started before the fork makes a child serial: a child of a parent that
    never ran threads starts a team of its own (one more OS thread)."""
    result = run_script(
        THREAD_COUNT
        + """
sinpe.sinusoidal_positional_encoding(64, 64)  # serial work only
pid = os.fork()
if pid == 0:
    before = os_threads()
    sinpe.sinusoidal_positional_encoding(2048, 512, threads=2, backend="cython")
    print(os_threads() - before, sinpe.thread_limit().threads, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    )
    assert result.stdout.split() == ["1", "2"]


# --------------------------------------------------------------------------- thread controls


def extra_threads_after_a_big_table(setup: str = "", threads=None, **env) -> tuple[int, str]:
    """OS threads a default-threads 2048 x 512 table adds in a fresh process, and the limit
    ``sinpe.thread_limit()`` reports there."""
    code = (
        THREAD_COUNT
        + setup
        + """
before = os_threads()
with limits():
    sinpe.sinusoidal_positional_encoding(2048, 512, threads=THREADS, backend="cython")
    limit = sinpe.thread_limit()
print(os_threads() - before, limit.threads, limit.source, sep="|")
"""
    )
    if "def limits" not in setup:
        code = code.replace("with limits():", "if True:")
    code = code.replace("THREADS", repr(threads))
    extra, threads, source = run_script(code, **env).stdout.strip().split("|")
    return int(extra), f"{threads}|{source}"


@linux_only
@needs_openmp
@needs_two_cores
def test_default_uses_both_cores():
    extra, limit = extra_threads_after_a_big_table(SINPE_NUM_THREADS=None, OMP_NUM_THREADS=None)
    assert extra == 1 and limit.startswith("2|")


@linux_only
@needs_openmp
@needs_two_cores
@pytest.mark.parametrize(
    "env, source",
    [
        ({"OMP_NUM_THREADS": "1"}, "OpenMP"),
        ({"SINPE_NUM_THREADS": "1"}, "SINPE_NUM_THREADS"),
        ({"SINPE_NUM_THREADS": " 1 ", "OMP_NUM_THREADS": "2"}, "SINPE_NUM_THREADS"),
        ({"SINPE_NUM_THREADS": "8", "OMP_NUM_THREADS": "1"}, "OpenMP"),
    ],
)
@pytest.mark.parametrize("threads", [None, 2])
def test_environment_caps_threads(env, source, threads):
    """Each variable caps the default and an explicit ``threads=``, the smallest wins, and no
    extra OS thread appears."""
    extra, limit = extra_threads_after_a_big_table(
        threads=threads, **{"SINPE_NUM_THREADS": None, **env}
    )
    assert extra == 0
    assert limit.startswith("1|") and source in limit


@linux_only
@needs_openmp
@needs_two_cores
def test_threadpoolctl_sees_and_limits_the_kernel():
    pytest.importorskip("threadpoolctl")
    extra, limit = extra_threads_after_a_big_table(
        """
from threadpoolctl import threadpool_info, threadpool_limits
assert any(i["user_api"] == "openmp" for i in threadpool_info()), threadpool_info()
def limits():
    return threadpool_limits(1, user_api="openmp")
"""
    )
    assert extra == 0 and limit.startswith("1|OpenMP")


@needs_openmp
def test_thread_variable_is_read_when_a_call_needs_it(monkeypatch):
    """Set after import, the variable takes effect at the next call, and unset, it is gone."""
    monkeypatch.setenv("SINPE_NUM_THREADS", "1")
    assert sinpe.thread_limit() == (1, "SINPE_NUM_THREADS")
    monkeypatch.delenv("SINPE_NUM_THREADS")
    assert sinpe.thread_limit().source != "SINPE_NUM_THREADS"


def test_without_openmp_there_is_one_thread():
    if sinpe.HAVE_OPENMP:
        pytest.skip("this build has OpenMP")
    assert sinpe.thread_limit() == (1, "no OpenMP in this build")


@pytest.mark.parametrize("cap", ["0", "-2", "two", "1.5"])
def test_bad_thread_variable_warns_and_is_ignored(cap):
    """A typo never breaks ``import sinpe``: the first call that needs threads warns once,
    names the variable, and runs with the other limits."""
    result = run_script(
        """
import warnings, sinpe
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    table = sinpe.sinusoidal_positional_encoding(2048, 512)
    sinpe.sinusoidal_positional_encoding(2048, 512)
print(len(caught), caught[0].message if caught else "", table[0, :2].tolist(), sep="|")
print(sinpe.thread_limit().source)
""",
        SINPE_NUM_THREADS=cap,
    )
    first, source = result.stdout.strip().split("\n")
    count, message, row = first.split("|")
    if sinpe.HAVE_OPENMP:
        assert count == "1" and "SINPE_NUM_THREADS" in message and repr(cap) in message
        assert source != "SINPE_NUM_THREADS"
    assert row == "[0.0, 1.0]"


# --------------------------------------------------------------------------- caches


@linux_only
def test_a_huge_width_leaves_no_memory_behind():
    """A width whose tables exceed the bound is computed without being kept: after the table
    is dropped, resident memory is back within a few MiB, and the cache is within its bound."""
    result = run_script(
        """
import gc, os, sinpe
def resident():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
sinpe.sinusoidal_positional_encoding(1, 8)
gc.collect()
before = resident()
table = sinpe.sinusoidal_positional_encoding(1, 10**7)
assert abs(table[0, 1] - 1.0) < 1e-15
del table
gc.collect()
info = sinpe.cache_info()
print((resident() - before) / 2**20, info.nbytes <= info.limit, info.limit)
"""
    )
    grown, bounded, limit = result.stdout.split()
    assert bounded == "True" and int(limit) == 64 << 20
    assert float(grown) < 64 + 8, grown  # the bound plus allocator slack (273 MiB before)


def test_the_cache_bound_is_kept_and_adjustable():
    previous = sinpe.set_cache_limit(1 << 20)
    try:
        for d_model in range(64, 64 + 40 * 8, 8):
            sinpe.sinusoidal_positional_encoding(2048, d_model)
            info = sinpe.cache_info()
            assert info.nbytes <= 1 << 20 and info.limit == 1 << 20
        sinpe.set_cache_limit(0)
        assert sinpe.cache_info().nbytes == 0
        table = sinpe.sinusoidal_positional_encoding(100, 16)  # still right, nothing kept
        assert sinpe.cache_info().entries == 0
        sinpe.set_cache_limit(previous)
        assert np.array_equal(table, sinpe.sinusoidal_positional_encoding(100, 16))
    finally:
        sinpe.set_cache_limit(previous)
    assert sinpe.cache_info().limit == previous


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("64M", TypeError)])
def test_bad_cache_limits_name_the_argument(bad, error):
    with pytest.raises(error, match="nbytes"):
        sinpe.set_cache_limit(bad)


def test_clear_cache_frees_everything():
    sinpe.sinusoidal_positional_encoding(300, 96, offset=5)
    sinpe.encode([1.5, 2.5], 33)
    assert sinpe.cache_info().entries > 0
    sinpe.clear_cache()
    info = sinpe.cache_info()
    assert info.entries == 0 and info.nbytes == 0


def test_plans_are_reused_across_nearby_lengths():
    """601 lengths from 1000 to 1600 share one plan: one frequency vector, one filler (its
    constants and grid) and one set of anchors past the first 1024 rows are made; every
    other lookup hits."""
    sinpe.clear_cache()
    for seq_len in range(1000, 1601):
        sinpe.sinusoidal_positional_encoding(seq_len, 64)
    info = sinpe.cache_info()
    assert info.misses == 3 and info.entries == 3 and info.hits == 600 + 575


# --------------------------------------------------------------------------- pickling


PRESETS = [
    conventions.VASWANI,
    conventions.TENSOR2TENSOR,
    conventions.HF_MARIAN,
    conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.5, scale=2.0),
]


@pytest.mark.parametrize("seed", ["1", "2"])
def test_pickled_conventions_keep_their_hash_in_another_process(seed):
    """Unpickled where strings hash differently (a spawn worker), a convention equals the
    preset and hashes like it, so it finds the same cache entries."""
    blob = pickle.dumps(PRESETS).hex()
    result = run_script(
        f"""
import pickle
from sinpe import conventions
presets = [conventions.VASWANI, conventions.TENSOR2TENSOR, conventions.HF_MARIAN,
           conventions.diffusers(flip_sin_to_cos=True, downscale_freq_shift=0.5, scale=2.0)]
loaded = pickle.loads(bytes.fromhex({blob!r}))
print(all(a == b and hash(a) == hash(b) and len({{a, b}}) == 1
          for a, b in zip(loaded, presets)))
""",
        PYTHONHASHSEED=seed,
    )
    assert result.stdout.strip() == "True"


def test_conventions_copy_and_pickle_into_equal_objects():
    import copy

    for preset in PRESETS:
        for clone in (pickle.loads(pickle.dumps(preset)), copy.deepcopy(preset)):
            assert clone == preset and hash(clone) == hash(preset)


def test_cached_results_survive_pickling():
    table = sinpe.sinusoidal_positional_encoding(5, 8, dtype="float32")
    assert np.array_equal(pickle.loads(pickle.dumps(table)), table)
    assert pickle.loads(pickle.dumps(sinpe.thread_limit())) == sinpe.thread_limit()
    assert pickle.loads(pickle.dumps(sinpe.cache_info())) == sinpe.cache_info()
