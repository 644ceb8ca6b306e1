"""Frequency vectors ``scale * base**(-numerator * i / denominator)``, each rounded once,
cached and read-only; computed by the default backend (both give the same bits, tested)."""

from __future__ import annotations

import numpy as np

from .backends import DEFAULT
from .cache import cached
from .checks import frozen

__all__ = ["frequency_block", "frequency_vector", "power_vector_from_log"]


def _power(count, log_hi, log_lo, numerator, denominator, scale, first=0) -> np.ndarray:
    w = np.empty(max(int(count), 0))
    args = (float(numerator), float(denominator), float(scale))
    DEFAULT.power_vector(w, first, log_hi, log_lo, *args)
    return frozen(w)


@cached
def frequency_vector(
    count: int, base: float, numerator: int, denominator: float, scale: float = 1.0
) -> np.ndarray:
    """``scale * base**(-numerator*i/denominator)`` for ``i in range(count)``, read-only.

    Each value is rounded once from the exact real value (``_twin/frequencies.py`` has the
    method and the bound: within 1 ulp always); overflow gives +-inf and underflow +-0 or a
    subnormal, without warnings. Arguments are trusted: base > 0, denominator > 0 and scale
    finite.
    """
    log_hi, log_lo = DEFAULT.log_dd(float(base))
    return _power(count, log_hi, log_lo, numerator, denominator, scale)


def frequency_block(
    f0: int, f1: int, base: float, numerator: int, denominator: float, scale: float = 1.0
) -> np.ndarray:
    """``frequency_vector(count, ...)[f0:f1]`` for any count >= f1, bit for bit, without
    the rest of the vector (not cached: a row too wide to plan whole)."""
    log_hi, log_lo = DEFAULT.log_dd(float(base))
    return _power(f1 - f0, log_hi, log_lo, numerator, denominator, scale, first=f0)


@cached
def power_vector_from_log(
    count: int, log_hi: float, log_lo: float, numerator: int, denominator: float
) -> np.ndarray:
    """``exp(-numerator * i * (log_hi + log_lo) / denominator)`` for ``i in range(count)``,
    rounded once, read-only: ``frequency_vector`` for a base known only through its logarithm
    as a double-double (RoPE's dynamic base). Same method and bound."""
    return _power(count, float(log_hi), float(log_lo), numerator, denominator, 1.0)
