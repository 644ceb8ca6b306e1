"""Hugging Face transformers' fixed sinusoidal tables, exact.

- ``create_sinusoidal_embeddings(n_pos, dim, out)`` (DistilBERT, and the models that copy it)
  fills ``out`` in place, a torch tensor or a NumPy array: column ``2i`` is
  ``sin(p * 10000**(-2i/dim))``, column ``2i+1`` the cosine (an odd ``dim`` ends in a sine).
- ``marian_sinusoidal_weight(num_positions, embedding_dim)`` is the table
  ``MarianSinusoidalPositionalEmbedding`` (Marian, and the models that copy it) builds as its
  weight: the first ``ceil(dim/2)`` columns sines, the rest cosines.

transformers computes these in float64 and rounds them to float32; here every value is the
exact one rounded once to the output dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tables import checks as check
from .._tables.tables import sinusoidal_positional_encoding
from .._tables.types import DTypeLike, Tensor
from ._common import is_tensor

__all__ = ["create_sinusoidal_embeddings", "marian_sinusoidal_weight"]


def create_sinusoidal_embeddings(n_pos: int, dim: int, out: Tensor | np.ndarray) -> None:
    """Fill ``out`` (shape ``(n_pos, dim)``, a torch tensor or a NumPy array of a float dtype)
    with the table, as transformers does: for a tensor, ``requires_grad`` is set to False
    first and the tensor detached after."""
    n_pos = check.integer("n_pos", n_pos, 0)
    dim = check.integer("dim", dim, 1)
    if is_tensor(out):
        _fill_tensor(n_pos, dim, out)
        return
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a torch tensor or a numpy.ndarray, got {type(out).__name__}")
    if out.shape != (n_pos, dim):
        raise ValueError(f"out must have shape ({n_pos}, {dim}), got {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if out.flags.c_contiguous and check.table_dtype(out.dtype):
        sinusoidal_positional_encoding(n_pos, dim, out=out)
    elif out.dtype.kind == "f" or check.table_dtype(out.dtype):
        out[...] = sinusoidal_positional_encoding(n_pos, dim, dtype=_table_dtype(out.dtype))
    else:
        raise ValueError(f"out must have a float dtype, got {out.dtype}")


def _table_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if check.table_dtype(dtype) else np.dtype(np.float64)


def _fill_tensor(n_pos: int, dim: int, out: Any) -> None:
    import torch

    if tuple(out.shape) != (n_pos, dim):
        raise ValueError(f"out must have shape ({n_pos}, {dim}), got {tuple(out.shape)}")
    if not out.is_floating_point():
        raise ValueError(f"out must have a float dtype, got {out.dtype}")
    out.requires_grad = False
    # made in float64 or float32 as out is (each value rounded once), then handed over
    dtype = np.float64 if out.dtype == torch.float64 else np.float32
    table = sinusoidal_positional_encoding(n_pos, dim, dtype=dtype)
    with torch.no_grad():
        out.copy_(torch.from_numpy(table))
    out.detach_()


def marian_sinusoidal_weight(
    num_positions: int, embedding_dim: int, dtype: DTypeLike = np.float32
) -> np.ndarray:
    """``(num_positions, embedding_dim)`` in ``dtype`` (float32 by default, the weight's
    usual dtype): ``MarianSinusoidalPositionalEmbedding(num_positions,
    embedding_dim).create_weight()`` (transformers 5; ``_init_weight()`` before), exact."""
    num_positions = check.integer("num_positions", num_positions, 0)
    embedding_dim = check.integer("embedding_dim", embedding_dim, 1)
    table = check.allocate(
        (num_positions, embedding_dim),
        check.dtype(dtype) or np.dtype(np.float32),
        ("num_positions", "embedding_dim"),
    )
    return sinusoidal_positional_encoding(
        num_positions, embedding_dim, convention="hf-marian", out=table
    )
