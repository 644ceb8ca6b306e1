"""sinpe: fast, exact sinusoidal positional encoding tables."""

from . import conventions, rope_scaling
from ._front.config import rope_config
from ._front.grid import encode_2d, encode_grid
from ._front.rope import rope, rope_at, rope_cache, rope_frequencies
from ._front.spec import RopeSpec
from ._front.tables import (
    BACKEND,
    HAVE_OPENMP,
    cache_info,
    clear_cache,
    encode,
    frequencies,
    set_cache_limit,
    shift_matrix,
    sinusoidal_positional_encoding,
)
from ._front.threads import RUNTIME as THREAD_RUNTIME
from ._front.threads import thread_limit
from ._version import __version__

__all__ = [
    "BACKEND",
    "HAVE_OPENMP",
    "RopeSpec",
    "THREAD_RUNTIME",
    "__version__",
    "cache_info",
    "clear_cache",
    "conventions",
    "encode",
    "encode_2d",
    "encode_grid",
    "frequencies",
    "rope",
    "rope_at",
    "rope_cache",
    "rope_config",
    "rope_frequencies",
    "rope_scaling",
    "set_cache_limit",
    "shift_matrix",
    "sinusoidal_positional_encoding",
    "thread_limit",
]
