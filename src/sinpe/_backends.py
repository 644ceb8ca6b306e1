"""The fillers this install has, and which one ``backend="auto"`` means (``SINPE_BACKEND``)."""

from __future__ import annotations

import importlib
import os
import warnings

from . import _angles, _numpy

try:
    kernel = importlib.import_module(".._kernel", __name__)
except ImportError as exc:  # the build fell back to NumPy; tell the truth here too
    kernel = None
    KERNEL_ERROR = (
        f"{type(exc).__name__}: {exc}; the install had no working C compiler or the build "
        "failed, reinstall with one for the fast path"
    )
else:
    KERNEL_ERROR = ""

NAMES = ("auto", "cython", "numpy")
# Each backend's private functions, one signature per kind: the table filler (rotations), the
# exact evaluator the rotation tables and offsets start from, and the exact row filler (every
# row its own anchor: ``encode``, a few rows far out), and the RoPE row filler (``_rope.h``).
FILLERS = {"numpy": _numpy.fill_table}
EVALUATORS = {"numpy": _angles.evaluate}
EXACT_FILLERS = {"numpy": _numpy.fill_exact}
ROPE_FILLERS = {"numpy": _numpy.fill_rope}
if kernel is not None:
    FILLERS["cython"] = kernel.fill_table
    EVALUATORS["cython"] = kernel.exact_cos_sin
    EXACT_FILLERS["cython"] = kernel.fill_exact
    ROPE_FILLERS["cython"] = kernel.fill_rope
HAVE_OPENMP = bool(kernel is not None and kernel.HAVE_OPENMP)


def _from_environment() -> str:
    requested = os.environ.get("SINPE_BACKEND", "").strip().lower() or "auto"
    if requested not in NAMES:
        raise ImportError(
            f"SINPE_BACKEND={requested!r} is not a backend; use one of {', '.join(NAMES)}"
        )
    if requested == "cython" and kernel is None:
        raise ImportError(
            f"SINPE_BACKEND=cython but the compiled kernel is not available ({KERNEL_ERROR})"
        )
    if requested == "auto":
        if kernel is None:
            warnings.warn(
                "sinpe: the compiled kernel is not available "
                f"({KERNEL_ERROR}); using the NumPy fallback. "
                "Set SINPE_BACKEND=numpy to silence this warning.",
                RuntimeWarning,
                stacklevel=4,
            )
            return "numpy"
        return "cython"
    return requested


BACKEND = _from_environment()


def resolve(value) -> str:
    """The filler a ``backend=`` argument names (``"auto"`` is ``BACKEND``)."""
    if not isinstance(value, str):
        raise TypeError(
            f"backend must be one of {', '.join(map(repr, NAMES))}, got "
            f"{type(value).__name__} {value!r:.60}"
        )
    if value not in NAMES:
        raise ValueError(f"backend must be one of {', '.join(map(repr, NAMES))}, got {value!r:.60}")
    if value == "cython" and kernel is None:
        raise ValueError(
            f"backend='cython' but the compiled kernel is not available ({KERNEL_ERROR}); "
            "use backend='auto' or 'numpy', or reinstall with a C compiler"
        )
    return BACKEND if value == "auto" else value
