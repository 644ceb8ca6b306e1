"""transformers' own rotary modules against sinpe.rope_config, for published configs.

Run by hand in a throwaway virtual environment, never in CI (transformers is not a dependency):

    python3.11 -m venv /tmp/tf && /tmp/tf/bin/pip install transformers==5.24.0 torch==2.13.0 \\
        tokenizers sentencepiece
    /tmp/tf/bin/python tools/check_against_transformers.py tests/data/configs/*.json

For each config: transformers builds it (the config class of its model_type) and its text
model's rotary module; the module's inv_freq (float32) and attention factor are compared with
spec.frequencies(), and its cos/sin at a few positions (M-RoPE: three axes; axial: (h, w))
with spec.rope_at(..., dtype="float32"), within transformers' own float32 drift.
"""

import importlib
import json
import os
import sys
import warnings

import numpy as np
import torch
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import sinpe  # noqa: E402

warnings.filterwarnings("ignore")

TEXT_POSITIONS = [[0, 1, 2, 17, 100, 1000, 4000, 9000]]
MROPE_POSITIONS = [[0, 3, 17, 100, 5, 9, 40], [1, 3, 2, 50, 7, 9, 11], [2, 4, 1, 60, 8, 0, 12]]
AXIAL_POSITIONS = [[0, 0], [0, 1], [1, 0], [3, 7], [20, 5], [9, 9], [63, 2]]


def rotary_module(config):
    package = type(config).__module__.rsplit(".", 1)[0]
    module = importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and not n.startswith("_")]
    if config.model_type != "pixtral":
        names = [n for n in names if "Vision" not in n]
    return getattr(module, min(names, key=len))(config)


def text_config(data):
    model_type = {"kimi_k2": "deepseek_v3"}.get(data.get("model_type"), data.get("model_type"))
    config = CONFIG_MAPPING[model_type](**{k: v for k, v in data.items() if k != "model_type"})
    return getattr(config, "text_config", None) or config


def compare(module, spec, layer_type):
    prefix = f"{layer_type}_" if layer_type else ""
    inv_freq = getattr(module, f"{prefix}inv_freq").double().numpy()
    attention = getattr(module, f"{prefix}attention_scaling")
    w, factor = spec.frequencies()
    found = []
    found.append(
        "inv_freq ok"
        if inv_freq.shape == w.shape and np.allclose(inv_freq, w, rtol=3e-6, atol=0)
        else f"inv_freq DIFF {inv_freq[:3]} against {w[:3]}"
    )
    found.append(
        "attention ok"
        if abs(attention - factor) <= 1e-6 * factor
        else f"attention DIFF {attention}"
    )
    if spec.scaling.get("mrope_section"):
        positions = torch.tensor(MROPE_POSITIONS)[:, None, :]
        args = (torch.zeros(1, 1, positions.shape[-1], 4), positions)
    elif spec.scaling["rope_type"] == "axial":
        positions = torch.tensor(AXIAL_POSITIONS)
        args = (torch.zeros(1, positions.shape[0], 4), positions)
    else:
        positions = torch.tensor(TEXT_POSITIONS)
        args = (torch.zeros(1, 1, positions.shape[-1], 4), positions)
    cos_t, sin_t = module(*args) if layer_type is None else module(*args, layer_type)
    cos_t, sin_t = cos_t.double().numpy(), sin_t.double().numpy()
    cos_s, sin_s = spec.rope_at(positions.numpy(), dtype="float32")
    if cos_t.shape[-1] * 2 == cos_s.shape[-1]:  # a module that returns the compact layout
        cos_s, sin_s = cos_s[..., : cos_t.shape[-1]], sin_s[..., : cos_t.shape[-1]]
    if cos_t.shape != cos_s.shape:
        found.append(f"table DIFF shapes {cos_t.shape} {cos_s.shape}")
    else:
        err = max(np.abs(cos_t - cos_s).max(), np.abs(sin_t - sin_s).max())
        found.append(
            f"table {'ok' if err < 2e-3 * max(1, factor) else 'DIFF'} (max diff {err:.2g})"
        )
    return found


def main(paths):
    for path in paths:
        name = os.path.basename(path)
        data = json.load(open(path))
        try:
            module_config = text_config(data)
        except Exception as exc:
            print(name, "transformers refuses:", type(exc).__name__, str(exc)[:150])
            continue
        try:
            spec = sinpe.rope_config(path)
        except Exception as exc:
            print(name, "sinpe refuses:", type(exc).__name__, str(exc)[:150])
            continue
        module = rotary_module(module_config)
        for layer_type in spec.layer_types or [None]:
            layer = spec if layer_type is None else spec.layer(layer_type)
            print(name, layer_type or "", *compare(module, layer, layer_type))


if __name__ == "__main__":
    main(sys.argv[1:])
