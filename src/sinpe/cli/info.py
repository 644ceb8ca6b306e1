"""``sinpe info``: the version, backend, threads, instruction set, cache and NumPy in use."""

from __future__ import annotations

import os

import numpy as np

from .._tables import backends
from .._tables import tables as api
from .._tables.checks import bfloat16
from .._tables.threads import RUNTIME as THREAD_RUNTIME
from .._tables.threads import thread_limit, usable_cores
from .._version import __version__
from .arguments import AddCommand

_THREAD_VARIABLES = ("SINPE_NUM_THREADS", "OMP_NUM_THREADS")


def add_info_arguments(command: AddCommand) -> None:
    """The ``info`` subcommand (it takes no arguments)."""
    command("info", "version, backend, threads, instruction set, caches, NumPy")


def info_command(args) -> int:
    """``sinpe info``: one line per fact, for bug reports."""
    kernel = backends.kernel
    print(f"sinpe {__version__}")
    print(
        f"backend: {api.BACKEND} (compiled kernel: "
        f"{'yes' if kernel is not None else 'no - ' + backends.KERNEL_ERROR})"
    )
    limit = thread_limit()
    print(f"threads: {THREAD_RUNTIME}, up to {limit.threads} (set by {limit.source})")
    print(
        f"  usable cores {usable_cores()}, "
        + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in _THREAD_VARIABLES)
    )
    cache = api.cache_info()
    print(f"cache: {cache.nbytes / 2**20:.1f} of {cache.limit / 2**20:.0f} MiB kept")
    if kernel is None or api.BACKEND == "numpy":
        print(f"instruction set: n/a (backend {api.BACKEND}: NumPy's own loops)")
    else:
        reason = kernel.ISA_REASON
        if not reason.startswith("the best"):  # forced: say what the best would be
            reason += f"; this CPU and build run up to {kernel.CPU_ISA}"
        if kernel.EMULATED and "emulated" not in reason:
            reason += ", emulated"
        print(f"instruction set: {kernel.ISA} ({reason})")
    print(f"bfloat16: {'ml_dtypes' if bfloat16() is not None else 'not available'}")
    print(f"numpy: {np.__version__}")
    return 0
