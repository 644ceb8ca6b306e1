"""sinpe: fast, exact sinusoidal positional encoding tables."""

from . import _environment

_environment.start()  # the sinpe command: a wrong variable is one line and exit 2

from . import conventions, rope_scaling  # noqa: E402
from ._check.gguf import check_gguf  # noqa: E402
from ._check.onnx import check_onnx  # noqa: E402
from ._engines import engines  # noqa: E402
from ._rope.config import rope_config  # noqa: E402
from ._rope.rope import rope, rope_at, rope_cache, rope_frequencies  # noqa: E402
from ._rope.spec import RopeSpec  # noqa: E402
from ._tables.grid import encode_2d, encode_grid  # noqa: E402
from ._tables.tables import (  # noqa: E402
    BACKEND,
    cache_info,
    clear_cache,
    encode,
    frequencies,
    set_cache_limit,
    shift_matrix,
    sinusoidal_positional_encoding,
)
from ._tables.threads import RUNTIME as THREAD_RUNTIME  # noqa: E402
from ._tables.threads import thread_limit  # noqa: E402
from ._version import __version__  # noqa: E402


def _aliases() -> None:
    """Pickles made by sinpe 0.4.0 (a ``RopeSpec``, a patched model's ``RotaryEmbedding``)
    name ``sinpe._front.spec`` and ``sinpe._front.rotary``: those names still load, as
    aliases of the modules' homes now (no package is there)."""
    import sys
    import types

    from ._rope import rotary, spec

    front = types.ModuleType("sinpe._front", "sinpe 0.4.0's module names, kept for its pickles")
    front.__path__ = []
    vars(front).update(spec=spec, rotary=rotary)
    for name, module in (("_front", front), ("_front.spec", spec), ("_front.rotary", rotary)):
        sys.modules.setdefault(f"{__name__}.{name}", module)


_aliases()


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
    "check_gguf",
    "check_onnx",
    "clear_cache",
    "conventions",
    "encode",
    "encode_2d",
    "encode_grid",
    "engines",
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
