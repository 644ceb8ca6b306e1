"""One memory-bounded cache for every array sinpe keeps between calls.

Frequency vectors, rotation tables and the other read-only arrays that make repeated calls
cheap all live here, least recently used first out, their bytes counted together against one
limit (64 MiB unless ``set_cache_limit`` says otherwise). Every entry also counts
``ENTRY_BYTES`` for its key and bookkeeping, so that entries holding no arrays are bounded
too. A value larger than the limit is computed, returned and not kept.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import NamedTuple

import numpy as np

__all__ = ["CacheInfo", "cached", "cache_info", "clear", "lookup", "set_limit", "DEFAULT_LIMIT"]

DEFAULT_LIMIT = 64 << 20


class CacheInfo(NamedTuple):
    """What the cache holds: bytes kept, the limit, entries, and lookups that hit or missed."""

    nbytes: int
    limit: int
    entries: int
    hits: int
    misses: int


ENTRY_BYTES = 256  # a key tuple, a dict slot and the entry's list: what an entry costs at least


def _nbytes(value) -> int:
    """Bytes of every array in ``value`` (an array or nested tuples), counting whole buffers:
    a view of a larger allocation keeps all of it alive."""
    if isinstance(value, tuple):
        return sum(_nbytes(item) for item in value)
    if isinstance(value, np.ndarray):
        while isinstance(value.base, np.ndarray):
            value = value.base
        return value.nbytes
    return 0


class _Cache:
    """Least recently used out, approximately (second chance, "CLOCK"): a hit only sets the
    entry's referenced flag, without a lock (a lookup on every call must cost well under a
    microsecond); eviction, under the lock, gives each referenced entry one more round."""

    def __init__(self, limit: int) -> None:
        self._entries: dict = {}  # key -> [value, nbytes, referenced], oldest first
        self._lock = threading.Lock()
        self._nbytes = 0
        self._limit = limit
        self._hits = self._misses = 0

    def lookup(self, key, make, args):
        """The value kept for ``key``, or ``make(*args)``, kept if it fits."""
        try:  # a hit raises nothing and costs no method call
            entry = self._entries[key]
        except KeyError:
            pass
        else:
            entry[2] = True
            self._hits += 1  # statistics only: a lost increment under a race is harmless
            return entry[0]
        value = make(*args)  # outside the lock: two threads may both compute; either is kept
        size = _nbytes(value) + ENTRY_BYTES
        with self._lock:
            self._misses += 1
            if size <= self._limit and key not in self._entries:
                self._entries[key] = [value, size, False]
                self._nbytes += size
                self._evict()
        return value

    def _evict(self) -> None:
        entries = self._entries
        while self._nbytes > self._limit:
            key = next(iter(entries))
            entry = entries.pop(key)
            if entry[2]:  # used since it was last looked at: to the back of the queue
                entry[2] = False
                entries[key] = entry
            else:
                self._nbytes -= entry[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._nbytes = self._hits = self._misses = 0

    def set_limit(self, limit: int) -> int:
        with self._lock:
            previous, self._limit = self._limit, limit
            self._evict()
        return previous

    def after_fork_in_child(self) -> None:
        """In a forked child: a fresh lock and no entries. The fork may have come in the
        middle of an eviction, in another thread, with the lock held (never released in the
        child) and the byte count disagreeing with the entries: start again from nothing."""
        self._lock = threading.Lock()
        self._entries = {}
        self._nbytes = self._hits = self._misses = 0

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(
                self._nbytes, self._limit, len(self._entries), self._hits, self._misses
            )


_CACHE = _Cache(DEFAULT_LIMIT)
if hasattr(os, "register_at_fork"):  # not taking the lock around the fork: see the method
    os.register_at_fork(after_in_child=_CACHE.after_fork_in_child)
lookup = _CACHE.lookup
clear = _CACHE.clear
set_limit = _CACHE.set_limit
cache_info = _CACHE.info


def cached(function):
    """Keep ``function``'s results (read-only arrays) in the bounded cache, keyed by its
    positional arguments (hashable)."""
    name = function.__qualname__

    @functools.wraps(function)
    def cached_function(*args):
        return _CACHE.lookup((name, *args), function, args)

    return cached_function
