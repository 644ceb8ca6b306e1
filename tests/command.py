"""The ``sinpe`` command run in this process: ``cli.main`` with its output captured, for the
tests that need no process of their own (exit codes, stdout, stderr; umask, signals and
memory peaks are tested in subprocesses)."""

from __future__ import annotations

import contextlib
import io
import subprocess

from sinpe import cli


def run(*args) -> subprocess.CompletedProcess:
    """``sinpe ARGS`` as ``subprocess.run`` would report it, without the interpreter start."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["sinpe", *argv], code, out.getvalue(), err.getvalue())
