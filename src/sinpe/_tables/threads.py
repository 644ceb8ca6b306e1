"""How many threads a call may use, read when a call needs it, and threadpoolctl's handle.

Every limit is a cap and the smallest wins: the ``threads=`` argument, ``SINPE_NUM_THREADS``,
``OMP_NUM_THREADS`` (users set it to tame every library at once; sinpe reads it itself, it
has no OpenMP), the limit ``threadpoolctl.threadpool_limits`` sets through sinpe's own
controller (``user_api="openmp"``, ``internal_api="sinpe"``; process-wide, unlike OpenMP's
per-thread setting) and the cores this process may run on. The threads are sinpe's own pool
(``_c/team.h``): helpers sleep between jobs, the calling thread works too, and a forked
child makes helpers of its own.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
import warnings
from typing import NamedTuple

from .backends import kernel

__all__ = ["PARALLEL_MIN_ELEMENTS", "ThreadLimit", "thread_limit", "threads_for", "usable_cores"]

# Below this many table elements (about a millisecond of work) one thread was as fast as two
# where it was measured: the project's 2-core x86-64 VM (two vCPUs, the second shared with
# other tenants). There a 2048 x 512 table (2**20 elements, cache-resident)
# split 17/15 between the caller and a helper that woke in time, yet each chunk took 1.5x
# longer while both ran (the two vCPUs share a core's execution units or the L3), so the pair
# saved 10-20% before the call's own cost and nothing after; 2**22 took 0.59x the time
# (docs/threads.md). Another machine may want another threshold: re-measure with
# `python benchmarks/threads.py` (default threads against threads=1, side by side).
PARALLEL_MIN_ELEMENTS = 1 << 22
RUNTIME = kernel.THREADS if kernel is not None else "none"


class ThreadLimit(NamedTuple):
    """The most threads a call may use now, and what sets that number."""

    threads: int
    source: str


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=16)
def _warn_bad_cap(name: str, raw: str) -> None:
    """Warn once per bad value: a typo must not break ``import sinpe`` or every call."""
    warnings.warn(
        f"sinpe: {name}={raw!r} is not an integer >= 1; ignored",
        RuntimeWarning,
        stacklevel=6,  # the caller of sinusoidal_positional_encoding
    )


def _environment_cap(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:  # OMP_NUM_THREADS may list one number per nesting level: the first is ours
        cap = int(raw.split(",")[0]) if name == "OMP_NUM_THREADS" else int(raw)
    except ValueError:
        cap = 0
    if cap < 1:
        _warn_bad_cap(name, raw)
        return None
    return cap


def thread_limit() -> ThreadLimit:
    """The most threads a call may use now, and what sets that limit.

    Returns
    -------
    ThreadLimit
        ``(threads, source)``; ``source`` names the smallest cap: ``"SINPE_NUM_THREADS"``,
        ``"OMP_NUM_THREADS"``, ``"threadpoolctl"``, ``"usable cores"``, or why there is only
        one thread (no compiled kernel, no thread runtime in this build).
    """
    if kernel is None:
        return ThreadLimit(1, "no compiled kernel (the NumPy path runs on one thread)")
    if RUNTIME == "none":
        return ThreadLimit(1, "no thread runtime in this build")
    caps = []
    for name in ("SINPE_NUM_THREADS", "OMP_NUM_THREADS"):
        cap = _environment_cap(name)
        if cap is not None:
            caps.append((cap, name))
    caps.append((usable_cores(), "usable cores"))
    # (after the cores: threadpoolctl restores a limit by setting what it read, the cores)
    limit = kernel.threadpool_threads()
    if limit:
        caps.append((limit, "threadpoolctl"))
    return ThreadLimit(*min(caps, key=lambda item: item[0]))  # ties: the first listed


def threads_for(requested: int | None, n_elements: int) -> int:
    """Threads for a table of ``n_elements``: ``requested`` (validated by the caller) capped by
    ``thread_limit()``; ``None``: the limit for big tables, 1 below ``PARALLEL_MIN_ELEMENTS``."""
    if requested == 1 or (requested is None and n_elements < PARALLEL_MIN_ELEMENTS):
        return 1
    limit = thread_limit().threads
    return limit if requested is None else min(requested, limit)


# --------------------------------------------------------------------------- threadpoolctl


def _register(threadpoolctl) -> None:
    """Make ``threadpoolctl`` see and limit sinpe's pool (once)."""

    class SinpeController(threadpoolctl.LibController):
        user_api = "openmp"  # what users limit to tame every library's threads at once
        internal_api = "sinpe"
        filename_prefixes = ("_kernel",)
        check_symbols = ("sinpe_threadpool_get_num_threads",)

        def get_num_threads(self):
            limit = self.dynlib.sinpe_threadpool_get_num_threads()
            return limit or usable_cores()

        def set_num_threads(self, num_threads):
            self.dynlib.sinpe_threadpool_set_num_threads(int(num_threads))

        def get_version(self):
            from .._version import __version__

            return __version__

    threadpoolctl.register(SinpeController)


class _RegisterWhenImported(importlib.abc.MetaPathFinder):
    """Registers the controller right after ``threadpoolctl`` is imported: importing it here
    would cost every ``import sinpe`` ~25 ms."""

    def find_spec(self, name, path=None, target=None):
        if name != "threadpoolctl":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                _register(module)

            spec.loader.exec_module = exec_module
        return spec


if kernel is not None and RUNTIME != "none":
    if "threadpoolctl" in sys.modules:
        _register(sys.modules["threadpoolctl"])
    else:
        sys.meta_path.insert(0, _RegisterWhenImported())
