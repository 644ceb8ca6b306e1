"""How many threads a call may use, read when a call needs it.

Every limit is a cap and the smallest wins: the ``threads=`` argument, ``SINPE_NUM_THREADS``,
OpenMP's own limit for the calling thread (``OMP_NUM_THREADS``, or ``omp_set_num_threads``,
which is what ``threadpoolctl.threadpool_limits`` calls) and the cores this process may run
on. A build without OpenMP, and a forked child of a process that ran a team (GCC's OpenMP
runtime is not fork-safe, see ``_c/team.h``), use one thread.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import NamedTuple

from .backends import HAVE_OPENMP, kernel

__all__ = ["PARALLEL_MIN_ELEMENTS", "ThreadLimit", "thread_limit", "threads_for", "usable_cores"]

# Below this many table elements one thread is faster than waking a team.
PARALLEL_MIN_ELEMENTS = 1 << 17


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
def _warn_bad_cap(raw: str) -> None:
    """Warn once per bad value: a typo must not break ``import sinpe`` or every call."""
    warnings.warn(
        f"sinpe: SINPE_NUM_THREADS={raw!r} is not an integer >= 1; ignored",
        RuntimeWarning,
        stacklevel=6,  # the caller of sinusoidal_positional_encoding
    )


def _environment_cap() -> int | None:
    raw = os.environ.get("SINPE_NUM_THREADS", "").strip()
    if not raw:
        return None
    try:
        cap = int(raw)
    except ValueError:
        cap = 0
    if cap < 1:
        _warn_bad_cap(raw)
        return None
    return cap


def thread_limit() -> ThreadLimit:
    """The most threads a call from this thread may use now, and what sets that limit.

    Returns
    -------
    ThreadLimit
        ``(threads, source)``; ``source`` names the smallest cap: ``"SINPE_NUM_THREADS"``,
        ``"usable cores"``, ``"OpenMP (OMP_NUM_THREADS or threadpoolctl)"``, or why there is
        only one thread (no OpenMP in this build, or a forked child).
    """
    if not HAVE_OPENMP:
        return ThreadLimit(1, "no OpenMP in this build")
    openmp, forked = kernel.max_threads()
    if forked:
        return ThreadLimit(
            1, "forked from a process that ran threads (the OpenMP runtime is not fork-safe)"
        )
    caps = [
        (usable_cores(), "usable cores"),
        (openmp, "OpenMP (OMP_NUM_THREADS or threadpoolctl)"),
    ]
    cap = _environment_cap()
    if cap is not None:
        caps.insert(0, (cap, "SINPE_NUM_THREADS"))
    return ThreadLimit(*min(caps, key=lambda item: item[0]))  # ties: the first listed


def threads_for(requested: int | None, n_elements: int) -> int:
    """Threads for a table of ``n_elements``: ``requested`` (validated by the caller) capped by
    ``thread_limit()``; ``None``: the limit for big tables, 1 below ``PARALLEL_MIN_ELEMENTS``."""
    if requested == 1 or (requested is None and n_elements < PARALLEL_MIN_ELEMENTS):
        return 1
    limit = thread_limit().threads
    return limit if requested is None else min(requested, limit)
