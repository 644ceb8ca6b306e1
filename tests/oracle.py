"""The exact reference: sin/cos of the exact real product position * w, by mpmath."""

import mpmath
import numpy as np

_CTX = mpmath.MPContext()
_CTX.prec = 320  # positions < 2**53 times w in (0, 1]: 106 bits of product, ample room for the rest


def exact_table(positions, freqs, columns=None):
    """(len(positions), 2, len(freqs)) float64: [cos, sin] of exact p*w, correctly rounded."""
    out = np.empty((len(positions), 2, len(freqs)))
    for r, p in enumerate(positions):
        p = _CTX.mpf(
            p if isinstance(p, (int, np.integer)) and not isinstance(p, bool) else float(p)
        )
        for i, w in enumerate(freqs):
            x = p * _CTX.mpf(float(w))
            out[r, 0, i] = float(_CTX.cos(x))
            out[r, 1, i] = float(_CTX.sin(x))
    return out


def exact_vaswani(positions, d_model, freqs):
    """The exact 'vaswani' table rows at these positions for the package's own frequencies."""
    cs = exact_table([int(p) for p in positions], freqs)
    table = np.empty((len(positions), d_model))
    table[:, 0::2] = cs[:, 1, : (d_model + 1) // 2]
    table[:, 1::2] = cs[:, 0, : d_model // 2]
    return table


def exact_frequency(i, d_model, base=10000.0):
    return _CTX.power(_CTX.mpf(base), -_CTX.mpf(2 * i) / d_model)
