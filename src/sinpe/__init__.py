"""sinpe: fast, exact sinusoidal positional encoding tables."""

from . import conventions, rope_scaling
from ._front.config import rope_config
from ._front.grid import encode_2d, encode_grid
from ._front.rope import rope, rope_at, rope_cache, rope_frequencies
from ._front.spec import RopeSpec
from ._front.tables import (
    BACKEND,
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


def __getattr__(name: str):
    if name == "HAVE_OPENMP":  # deprecated in 0.3.0: sinpe's threads are its own
        import warnings

        warnings.warn(
            "sinpe.HAVE_OPENMP is deprecated and always False: sinpe runs its own thread pool "
            "(sinpe.THREAD_RUNTIME names it); it will be removed in 1.0",
            DeprecationWarning,
            stacklevel=2,
        )
        return False
    raise AttributeError(f"module 'sinpe' has no attribute {name!r}")


__all__ = [
    "BACKEND",
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
