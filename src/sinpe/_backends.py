"""The fillers this install has (``_compiled`` says which one ``backend="auto"`` means)."""

from __future__ import annotations

from . import _angles, _numpy
from ._compiled import BACKEND, KERNEL_ERROR, NAMES, kernel

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
