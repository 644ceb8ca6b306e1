"""The types of the public signatures (annotations only: nothing here runs at call time).

- ``DTypeLike``: a NumPy dtype, a scalar type or a dtype name (``"float32"``, ``"bfloat16"``
  with ml_dtypes), or None for the function's default; a torch dtype is also taken, by its
  name.
- ``Scaling``: a ``rope_scaling`` / ``rope_parameters`` mapping (or one sinpe parsed), or None.
- ``Positions``: anything ``numpy.asarray`` makes an array of numbers of (integers or floats,
  any shape; a torch tensor too).
- ``Config``: a path to a ``config.json``, the parsed mapping, or an object with ``to_dict()``.
- ``Tensor``: ``torch.Tensor`` for the type checker (``Any`` where torch is not installed);
  ``TensorOrArray``: what the compat functions return, a tensor or a NumPy array.
- ``TorchDType``: a torch dtype (``torch.float32``), or ``sinpe.compat.diffusers.FLOAT32``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "ArrayLike",
    "Config",
    "DTypeLike",
    "Positions",
    "Scaling",
    "Tensor",
    "TensorOrArray",
    "TorchDType",
]

DTypeLike = Union["np.dtype[Any]", type, str, None]  # None: the function's default

Scaling = Union[Mapping[str, Any], None]
Positions = ArrayLike
Config = Union[str, "os.PathLike[str]", Mapping[str, Any], Any]
if TYPE_CHECKING:
    from torch import Tensor
else:
    Tensor = Any
TensorOrArray = Union[Tensor, "np.ndarray[Any, Any]"]
TorchDType = Any
