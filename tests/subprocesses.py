"""Scripts in a fresh interpreter, for the tests of threads, forks, signals and limits: a hang
fails the test (a timeout that only catches a hang) instead of stopping the suite."""

import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

TIMEOUT = 120  # seconds; a healthy run of any script here takes well under 20
# forks of each fork-stress test: 200 (CI's legs that repeat the suite on other builds ask
# for fewer: the builds differ in C, and the Python locks these tests stress do not)
FORKS = int(os.environ.get("SINPE_TEST_FORKS", "200"))


def run_script(code: str, *, check=True, timeout=TIMEOUT, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with ``env`` added (a ``None`` value unsets)."""
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
                timeout=timeout,
                cwd=folder,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"hung for {timeout} s: {exc.stdout!r} {exc.stderr!r}")
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


# Forks while another thread works: `busy()` runs in a thread until `stop` is set, and
# `in_child()` in each child must return True (its tables are the parent's). A child that
# has not ended 10 s after its fork is killed and counted as hung (a healthy one takes
# milliseconds). `wait_for_window()` returns when a fork is most likely to catch `busy` with
# a lock held, true when it saw it held. The script prints "forks N hung H wrong W caught C".
FORK_STRESS = """
import os, signal, threading, time

def fork_stress(n_forks, busy, in_child, wait_for_window=lambda: False):
    stop = threading.Event()
    worker = threading.Thread(target=busy, args=(stop,), daemon=True)
    worker.start()
    hung = wrong = caught = 0
    for _ in range(n_forks):
        caught += bool(wait_for_window())
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if in_child() else 3
            finally:
                os._exit(code)
        deadline = time.monotonic() + 10.0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                wrong += status != 0
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                hung += 1
                break
            time.sleep(0.001)
    stop.set()
    worker.join()
    print("forks", n_forks, "hung", hung, "wrong", wrong, "caught", caught)
"""


def fork_counts(result: subprocess.CompletedProcess) -> tuple[int, int, int, int]:
    """(forks, hung, wrong, caught) from a FORK_STRESS script's last line."""
    words = result.stdout.strip().splitlines()[-1].split()
    assert words[0] == "forks", result.stdout
    return int(words[1]), int(words[3]), int(words[5]), int(words[7])
