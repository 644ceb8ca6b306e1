"""MaxText 0.2.5 (JAX, CPU): the rotary module Attention.init_rotary_embedding builds (layers/
attentions.py, embeddings.py), its keys set from config.json as its model configs set them."""

import _maxtext
import jax.numpy as jnp
from _runs import rope_keys
from maxtext.layers.embeddings import LLaMARotaryEmbedding, RotaryEmbedding, YarnRotaryEmbedding

from sinpe.testing import Rotates

FAMILIES = _maxtext.FAMILIES  # those of MaxText's model configs with one RoPE for every layer


def candidate(config: dict):
    k = rope_keys(config)  # the width: partial_rotary_factor (PartialRotaryEmbedding rotates it)
    common = dict(mesh=None, embedding_dims=int(k.head * k.partial), fprop_dtype=jnp.float32)
    if k.kind == "llama3":  # "llama3.1": factor 8, 1, 4, 8192 fixed in _apply_scaling_factor
        rope = LLaMARotaryEmbedding(1, k.theta, **common)
    elif k.kind == "yarn":
        rope = YarnRotaryEmbedding(**common, **_maxtext.yarn_args(k))
    elif k.kind in ("default", "linear"):
        factor = k.params.get("factor", 1.0)
        rope = RotaryEmbedding(1, k.theta, **common, rope_linear_scaling_factor=factor)
    else:
        raise NotImplementedError(f"MaxText 0.2.5 has no {k.kind!r} RoPE for a text model")

    def rotate(q, positions):
        return rope(jnp.asarray(q)[None, :, None, :], jnp.asarray(positions)[None])[0, :, 0, :]

    return Rotates(rotate, "interleaved" if k.kind == "llama3" else "half")  # llama3.1: pairs
