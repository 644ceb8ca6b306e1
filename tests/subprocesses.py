"""Scripts in a fresh interpreter, for the tests of threads, forks, signals and limits: a hang
fails the test (a timeout that only catches a hang) instead of stopping the suite."""

import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

TIMEOUT = 120  # seconds; a healthy run of any script here takes well under 20


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
