"""The backends: the compiled kernel (``sinpe._c._kernel``) and its NumPy twin
(``sinpe._twin``), each one object with the same attribute names (``exact_cos_sin``,
``prepare_frequency_table``, ``log_dd``, ``power_vector``, ``Plan``, ``fill``,
``round_half``), and which of them ``backend="auto"`` means.

``BACKEND`` is what ``SINPE_BACKEND`` asks for, or the kernel when there is one. ``DEFAULT``,
that backend's object, also computes the data every backend shares (frequency vectors and the
evaluator's per-frequency constants): both give the same bits (tested), so
``SINPE_BACKEND=numpy`` runs NumPy throughout and otherwise the kernel's faster twin does.
"""

from __future__ import annotations

import os
import warnings

from .. import _environment, _twin

__all__ = ["BACKEND", "BACKENDS", "DEFAULT", "KERNEL_ERROR", "NAMES", "get"]

NAMES = ("auto", "cython", "numpy")

try:
    from .._c import _kernel as kernel
except ImportError as exc:  # the build fell back to NumPy; tell the truth here too
    kernel = None  # type: ignore[assignment]
    KERNEL_ERROR = (
        f"{type(exc).__name__}: {exc}; the install had no working C compiler or the build "
        "failed, reinstall with one for the fast path"
    )
else:
    KERNEL_ERROR = ""

BACKENDS = {"numpy": _twin}
if kernel is not None:
    BACKENDS["cython"] = kernel


def _from_environment() -> str:
    requested = os.environ.get("SINPE_BACKEND", "").strip().lower() or "auto"
    if requested not in NAMES:
        _environment.fail(
            f"SINPE_BACKEND={requested!r} is not a backend; use one of {', '.join(NAMES)}"
        )
    if requested == "cython" and kernel is None:
        _environment.fail(
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
DEFAULT = BACKENDS[BACKEND]


def get(value):
    """The backend object a ``backend=`` argument names (``"auto"`` is ``BACKEND``); any
    ``str`` (a subclass such as ``numpy.str_`` too) is taken by its value."""
    if isinstance(value, str):
        if value == "auto":
            return DEFAULT
        if value in BACKENDS:
            return BACKENDS[value]
    if not isinstance(value, str):
        raise TypeError(
            f"backend must be one of {', '.join(map(repr, NAMES))}, got "
            f"{type(value).__name__} {value!r:.60}"
        )
    if value == "cython":
        raise ValueError(
            f"backend='cython' but the compiled kernel is not available ({KERNEL_ERROR}); "
            "use backend='auto' or 'numpy', or reinstall with a C compiler"
        )
    raise ValueError(f"backend must be one of {', '.join(map(repr, NAMES))}, got {value!r:.60}")
