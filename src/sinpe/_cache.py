"""One memory-bounded cache for every array sinpe keeps between calls.

Frequency vectors, rotation tables and the other read-only arrays that make repeated calls
cheap all live here, least recently used first out, their bytes counted together against one
limit (64 MiB unless ``set_cache_limit`` says otherwise). A value larger than the limit is
computed, returned and not kept.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

__all__ = ["CacheInfo", "cached", "cache_info", "clear", "set_limit", "DEFAULT_LIMIT"]

DEFAULT_LIMIT = 64 << 20


class CacheInfo(NamedTuple):
    """What the cache holds: bytes kept, the limit, entries, and lookups that hit or missed."""

    nbytes: int
    limit: int
    entries: int
    hits: int
    misses: int


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
    def __init__(self, limit: int) -> None:
        self._entries: OrderedDict = OrderedDict()  # key -> (value, nbytes), oldest first
        self._lock = threading.Lock()
        self._nbytes = 0
        self._limit = limit
        self._hits = self._misses = 0

    def lookup(self, key, make):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return entry[0]
            self._misses += 1
        value = make()  # outside the lock: two threads may both compute; either result is kept
        size = _nbytes(value)
        with self._lock:
            if size <= self._limit and key not in self._entries:
                self._entries[key] = (value, size)
                self._nbytes += size
                self._evict()
        return value

    def _evict(self) -> None:
        while self._nbytes > self._limit:
            _, (_, size) = self._entries.popitem(last=False)
            self._nbytes -= size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._nbytes = self._hits = self._misses = 0

    def set_limit(self, limit: int) -> int:
        with self._lock:
            previous, self._limit = self._limit, limit
            self._evict()
        return previous

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(
                self._nbytes, self._limit, len(self._entries), self._hits, self._misses
            )


_CACHE = _Cache(DEFAULT_LIMIT)
clear = _CACHE.clear
set_limit = _CACHE.set_limit
cache_info = _CACHE.info


def cached(function):
    """Keep ``function``'s results (read-only arrays) in the bounded cache, keyed by its
    positional arguments (hashable)."""
    name = function.__qualname__

    @functools.wraps(function)
    def lookup(*args):
        return _CACHE.lookup((name, args), lambda: function(*args))

    return lookup
