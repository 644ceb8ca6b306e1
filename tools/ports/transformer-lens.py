"""TransformerLens 4.3.0, native path: the Hugging Face config mapped as its bridge maps it
(transformer_lens/model_bridge/sources/_bridge_builder.py, build_bridge_config_from_hf, which calls
_hf_format.py's map_default_transformer_lens_config) and the rotary tables its TL-native model
bakes from that (sources/native/model.py, NativeRotary and _resolve_rope_scaling)."""

import torch
from transformer_lens.model_bridge.sources._bridge_builder import build_bridge_config_from_hf
from transformer_lens.model_bridge.sources.native.model import NativeRotary
from transformers import CONFIG_MAPPING

ROWS = 1 << 15  # NativeRotary bakes n_ctx rows: the first 2**15 of a longer context are judged


def candidate(config: dict):
    hf = CONFIG_MAPPING[config["model_type"]].from_dict(config)
    cfg = build_bridge_config_from_hf(hf, "TransformerLensNative", "native", torch.float32)
    cfg.n_ctx = min(cfg.n_ctx, ROWS)
    rotary = NativeRotary(cfg)  # cos_cached, sin_cached: (n_ctx, rotary_dim), values twice in place
    return rotary.cos_cached, rotary.sin_cached


LAYOUT = "interleaved"
