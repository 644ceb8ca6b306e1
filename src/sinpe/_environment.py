"""sinpe's run-time environment variables: their names, the values each allows, and the one
rule for a value that is wrong (docs/installing.md, "Environment variables").

- A value that is none of the allowed ones: the ``sinpe`` command says so in one line,
  naming the allowed values, and exits 2, before any work. In a program, ``SINPE_BACKEND``
  raises ``ImportError`` at import (it decides which code runs: a silent fallback would be a
  bug), while ``SINPE_ISA`` and ``SINPE_NUM_THREADS``, which only tune, warn once and are
  ignored (a typo must not break a program that imports sinpe deep inside a library).
- A valid value this machine cannot honour (``SINPE_ISA=avx512`` on a CPU without it): a
  warning, once, and the best available, in the command as in a program.

This module imports nothing of sinpe's: the package imports it first, so that the command
can refuse a bad value before the kernel is loaded (the console script imports the package
before ``main`` can catch anything).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["ISA_NAMES", "VARIABLES", "command_line", "fail", "problems", "start"]

# the instruction-set levels, lowest first (the kernel's ISA_NAMES; a test keeps them equal)
ISA_NAMES = ("c", "sse2", "avx2", "avx512", "avx512bf16")

VARIABLES = {
    "SINPE_BACKEND": ("auto", "cython", "numpy"),
    "SINPE_ISA": ("auto", *reversed(ISA_NAMES)),
    "SINPE_NUM_THREADS": "an integer >= 1",
}


def _problem(name: str, raw: str) -> str | None:
    value = raw.strip().lower()
    if not value:
        return None
    allowed = VARIABLES[name]
    if isinstance(allowed, tuple):
        if value in allowed:
            return None
        return f"{name}={raw!r} is not one of {', '.join(allowed)}"
    try:
        if int(value) >= 1:
            return None
    except ValueError:
        pass
    return f"{name}={raw!r} is not {allowed}"


def problems(environ=None) -> list:
    """One line for each of sinpe's variables whose value is none of the allowed ones."""
    environ = os.environ if environ is None else environ
    found = (_problem(name, environ.get(name, "")) for name in VARIABLES)
    return [line for line in found if line is not None]


def command_line() -> bool:
    """Whether this process is the ``sinpe`` command (the console script, or ``python -m
    sinpe``), as it was started."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if script in ("sinpe", "sinpe.exe", "sinpe-script.py"):
        return True
    argv = list(getattr(sys, "orig_argv", ()))  # Python 3.10+: the interpreter's own argv
    i = 1
    while i < len(argv):  # the interpreter's options, up to the program they start
        arg = argv[i]
        if arg == "-m":
            return argv[i + 1 : i + 2] == ["sinpe"]
        if arg.startswith("-m"):
            return arg == "-msinpe"
        if arg == "-c" or arg == "-" or not arg.startswith("-"):
            return False
        i += 2 if arg in ("-X", "-W", "--check-hash-based-pycs") else 1
    return False


def fail(message: str) -> None:
    """A variable's value cannot be used: ``ImportError``, or for the ``sinpe`` command one
    line and exit 2."""
    if command_line():
        print(f"sinpe: error: {message}", file=sys.stderr)
        raise SystemExit(2)
    raise ImportError(message)


def _one_line(message, category, filename, lineno, line=None) -> str:
    text = str(message)
    return f"sinpe: warning: {text[7:] if text.startswith('sinpe: ') else text}\n"


def start() -> None:
    """At the package's import: for the ``sinpe`` command, warnings become one line (no
    source line), and a wrong value ends the process with one line and exit 2."""
    if not command_line():
        return
    warnings.formatwarning = _one_line
    found = problems()
    if found:
        fail(found[0])
