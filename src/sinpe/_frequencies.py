"""Frequencies w_i = scale * base**(-i / denominator), correctly rounded (within 1 ulp).

Every convention's frequency rule has this shape (see ``conventions.py``); the paper's
``base**(-2i/d_model)`` is ``denominator = d_model / 2``. The exponent ``-i/denominator`` is
inexact in float64 for most widths (768, for one), so it is evaluated in extended precision
(``numpy.longdouble``) and rounded once. Results are cached and returned read-only.
"""

from __future__ import annotations

import numpy as np

from ._cache import cached

__all__ = ["frequency_vector"]


@cached
def frequency_vector(
    count: int, base: float, numerator: int, denominator: float, scale: float = 1.0
) -> np.ndarray:
    """Return ``scale * base**(-numerator*i/denominator)`` for ``i in range(count)``, read-only.

    ``numerator`` and ``denominator`` are kept apart so that ``2i/d_model`` is formed in
    extended precision rather than rounded to float64 first. Arguments are trusted (the public
    API validates them).
    """
    i = np.arange(count, dtype=np.longdouble)
    with np.errstate(over="ignore", under="ignore"):  # the caller refuses infinite frequencies
        exponent = -(numerator * i) / np.longdouble(denominator)
        w = np.exp(exponent * np.log(np.longdouble(base)))
        if scale != 1.0:
            w = w * np.longdouble(scale)
        w = w.astype(np.float64)
    w.flags.writeable = False
    return w
