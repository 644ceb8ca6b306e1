"""sinpe: fast, exact sinusoidal positional encoding tables."""

from . import conventions
from ._api import (
    BACKEND,
    HAVE_OPENMP,
    encode,
    encode_2d,
    frequencies,
    shift_matrix,
    sinusoidal_positional_encoding,
)

__version__ = "0.1.0"

__all__ = [
    "BACKEND",
    "HAVE_OPENMP",
    "__version__",
    "conventions",
    "encode",
    "encode_2d",
    "frequencies",
    "shift_matrix",
    "sinusoidal_positional_encoding",
]
