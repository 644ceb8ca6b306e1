"""Drop-in replacements for the sinusoidal-encoding functions of other libraries.

Same names, signatures, argument defaults, shapes, dtypes and layouts as the originals, so
that switching is one import line; the values are sinpe's: exact (1e-15 in float64) where the
originals round (float32 positions, float32 frequencies, ``t * freq`` in float32).

- :mod:`sinpe.compat.diffusers`: ``get_timestep_embedding``, ``get_1d_sincos_pos_embed_from_grid``,
  ``get_2d_sincos_pos_embed``, ``get_2d_sincos_pos_embed_from_grid``, ``get_3d_sincos_pos_embed``
- :mod:`sinpe.compat.mae`: ``get_2d_sincos_pos_embed``, ``get_2d_sincos_pos_embed_from_grid``,
  ``get_1d_sincos_pos_embed_from_grid``
- :mod:`sinpe.compat.fairseq`: ``get_embedding`` (``SinusoidalPositionalEmbedding.get_embedding``)
- :mod:`sinpe.compat.tensor2tensor`: ``get_timing_signal_1d``
- :mod:`sinpe.compat.transformers`: ``create_sinusoidal_embeddings`` (DistilBERT and others),
  ``marian_sinusoidal_weight`` (``MarianSinusoidalPositionalEmbedding``'s table)

None of them imports torch, TensorFlow or the original library. Where an original takes or
returns a torch tensor, torch is imported only when one is passed in or asked for.
"""

from . import diffusers, fairseq, mae, tensor2tensor, transformers

__all__ = ["diffusers", "fairseq", "mae", "tensor2tensor", "transformers"]
