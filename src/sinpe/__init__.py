"""sinpe: fast, exact sinusoidal positional encoding tables."""

from . import conventions
from ._api import BACKEND, HAVE_OPENMP, frequencies, sinusoidal_positional_encoding

__version__ = "0.1.0"

__all__ = [
    "BACKEND",
    "HAVE_OPENMP",
    "__version__",
    "conventions",
    "frequencies",
    "sinusoidal_positional_encoding",
]
