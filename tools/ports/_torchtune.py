"""Beside the torchtune glue (torchtune.py), what is not the use of the kit: the RoPE module and
layout each model family's component builder (torchtune/models/<family>/_component_builders.py)
makes. torchtune keeps Llama's pairs interleaved (its checkpoint converter permutes q/k), Qwen2's
and Phi-3's in halves."""

from torchtune.models.phi3._position_embeddings import Phi3RotaryPositionalEmbeddings
from torchtune.models.qwen2._positional_embeddings import Qwen2RotaryPositionalEmbeddings
from torchtune.modules import RotaryPositionalEmbeddings

# model_type -> (module, layout)
FAMILIES = {
    "llama": (RotaryPositionalEmbeddings, "interleaved"),
    "mistral": (RotaryPositionalEmbeddings, "interleaved"),
    "gemma": (RotaryPositionalEmbeddings, "interleaved"),
    "gemma2": (RotaryPositionalEmbeddings, "interleaved"),
    "qwen2": (Qwen2RotaryPositionalEmbeddings, "half"),
    "phi3": (Phi3RotaryPositionalEmbeddings, "half"),
}
