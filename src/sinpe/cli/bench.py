"""Peers and a timer shared by ``sinpe bench``, ``benchmarks/ratios.py`` and the
pytest-benchmark suite: the textbook NumPy formula and the ``np.ones`` write limit."""

from __future__ import annotations

import math
import time

import numpy as np


def textbook(seq_len: int, d_model: int, dtype="float64") -> np.ndarray:
    """The tutorial formula, as most code writes it."""
    position = np.arange(seq_len, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = np.zeros((seq_len, d_model), dtype=dtype)
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return table


def ones(seq_len: int, d_model: int, dtype="float64") -> np.ndarray:
    """The physical limit: allocate the table and write every byte once."""
    return np.ones((seq_len, d_model), dtype=dtype)


def timed(fn, *args, min_seconds: float = 2e-3, **kwargs) -> float:
    """Seconds per call, calling often enough to last ``min_seconds``."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args, **kwargs)
        elapsed = time.perf_counter() - start
        if elapsed > min_seconds or calls >= 1 << 16:
            return elapsed / calls
        calls *= 4
