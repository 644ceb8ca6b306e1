"""The compiled extension, loaded once, and which backend ``backend="auto"`` means.

``kernel`` is the ``_kernel`` module or None (then ``KERNEL_ERROR`` says why); ``BACKEND`` is
what ``SINPE_BACKEND`` asks for, or the kernel when there is one. ``shared`` is the module that
computes the data every backend shares (frequency vectors, the evaluator's per-frequency
constants): the kernel when ``BACKEND`` is ``"cython"``, else None, so that
``SINPE_BACKEND=numpy`` runs pure NumPy throughout. Both give the same bits (tested).
"""

from __future__ import annotations

import importlib
import os
import warnings

NAMES = ("auto", "cython", "numpy")

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
                stacklevel=2,
            )
            return "numpy"
        return "cython"
    return requested


BACKEND = _from_environment()
shared = kernel if BACKEND == "cython" else None
