"""fairseq's ``SinusoidalPositionalEmbedding.get_embedding``, exact, as a function.

``get_embedding(num_embeddings, embedding_dim, padding_idx=None)`` returns what the static
method returns (``(num_embeddings, embedding_dim)`` float32, ``[sin | cos]`` with
``w_i = exp(-i ln(10000) / (embedding_dim//2 - 1))``, a zero column for an odd width, a zero
row at ``padding_idx``) as a float32 torch tensor, as fairseq does (torch is imported there,
with an ``ImportError`` naming ``pip install torch`` where it is absent). Every value is the
exact one rounded once to float32, where fairseq's float32 arithmetic drifts. The NumPy table
is ``sinpe.sinusoidal_positional_encoding(n, d, convention="fairseq", dtype="float32")``.
"""

from __future__ import annotations

import numpy as np

from .._tables import checks as check
from .._tables.tables import sinusoidal_positional_encoding
from .._tables.types import Tensor
from ._common import import_torch

__all__ = ["get_embedding"]


def get_embedding(
    num_embeddings: int, embedding_dim: int, padding_idx: int | None = None
) -> Tensor:
    """fairseq's table of ``num_embeddings`` positions (0, 1, ...), a float32 torch tensor.

    ``embedding_dim`` 2 and 3 are refused, as fairseq refuses them (it divides by
    ``embedding_dim//2 - 1 = 0``); ``padding_idx`` may be negative, as an index.
    """
    num_embeddings = check.integer("num_embeddings", num_embeddings, 0)
    embedding_dim = check.integer("embedding_dim", embedding_dim, 1)
    if embedding_dim in (2, 3):
        raise ValueError(
            f"embedding_dim must not be 2 or 3, got {embedding_dim}: fairseq's rule divides "
            "by embedding_dim // 2 - 1, which is 0 there"
        )
    if padding_idx is not None:
        padding_idx = check.integer("padding_idx", padding_idx, -num_embeddings)
        if padding_idx >= num_embeddings:
            raise ValueError(
                f"padding_idx must be below num_embeddings={num_embeddings}, got {padding_idx}"
            )
    torch = import_torch("sinpe.compat.fairseq.get_embedding")  # after the arguments' checks
    table = check.allocate(
        (num_embeddings, embedding_dim), np.dtype(np.float32), ("num_embeddings", "embedding_dim")
    )
    sinusoidal_positional_encoding(num_embeddings, embedding_dim, convention="fairseq", out=table)
    if padding_idx is not None:
        table[padding_idx] = 0.0
    return torch.from_numpy(table)
