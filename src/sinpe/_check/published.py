"""The run model in its published checkpoint's layout, for an engine that reads only that.

transformers saves gpt-oss's experts unquantized (``mlp.experts.gate_up_proj``,
``[experts, hidden, 2 x intermediate]``, and ``down_proj``, ``[experts, intermediate,
hidden]``: inputs along axis 1), as no published gpt-oss checkpoint holds them: OpenAI's hold
them in MXFP4 (``_blocks`` and ``_scales`` of each, rows the outputs, ``quant_method:
mxfp4`` in config.json). keras-hub's converter reads only that
(``convert_gpt_oss.py``, ``convert_weights``), and MLX-LM's ``gpt_oss.Model.sanitize`` turns
an unquantized ``gate_up_proj`` into names its model has no parameter for. So:

- ``on_grid``: the run model's experts are made of values MXFP4 holds (``mxfp4.to_grid``),
  before it is saved: every engine, and the reference, runs the same numbers whatever the
  layout it reads them in;
- ``published_layout``: a copy of the run model, beside it, with the experts packed as the
  published checkpoint packs them (the same numbers, ``mxfp4.pack`` refuses any other) and
  the published config's ``quantization_config``; for any other model, the run model
  itself."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import mxfp4 as _mxfp4

__all__ = ["PUBLISHED_MXFP4", "on_grid", "published_layout"]

_EXPERTS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")  # gpt-oss's, as saved
# openai/gpt-oss-20b's and -120b's config.json
PUBLISHED_MXFP4 = {
    "modules_to_not_convert": [
        "model.layers.*.self_attn",
        "model.layers.*.mlp.router",
        "model.embed_tokens",
        "lm_head",
    ],
    "quant_method": "mxfp4",
}


def _gpt_oss(config: dict) -> bool:
    return config.get("model_type") == "gpt_oss"


def on_grid(model, config: dict) -> int:
    """A gpt-oss model's experts (transformers' ``GptOssExperts``: ``gate_up_proj`` and
    ``down_proj``, inputs along axis 1) replaced in place by the nearest values MXFP4 holds,
    blocks of 32 along each output's inputs as the checkpoint packs them. Returns how many
    tensors; 0 for another model. ``ValueError`` where a gpt-oss model has none."""
    import torch

    if not _gpt_oss(config):
        return 0
    done = 0
    for name, parameter in model.named_parameters():
        if not name.endswith(_EXPERTS):
            continue
        rows = np.swapaxes(parameter.detach().to("cpu", torch.float64).numpy(), 1, 2)
        grid = np.ascontiguousarray(np.swapaxes(_mxfp4.to_grid(rows), 1, 2))
        with torch.no_grad():
            parameter.copy_(torch.from_numpy(grid).to(parameter.dtype))
        done += 1
    if not done:
        raise ValueError("a gpt-oss model without its experts' gate_up_proj and down_proj")
    return done


def published_layout(model, engine: str) -> Path:
    """The run model ``model`` (a folder: config.json, model.safetensors, its tokenizer) as
    its published checkpoint lays it out, in a new folder beside it named for ``engine``
    (each engine its own: two may run at once); ``model`` itself where the published layout
    is the one transformers saved."""
    from safetensors.numpy import load, save

    from .._files import reading, writing

    model = Path(model)
    config = reading.read_json(model / "config.json", what="the run model's config")
    if not _gpt_oss(config):
        return model
    with reading.opened(model / "model.safetensors", "the run model's weights") as stream:
        tensors = load(stream.read())
    published = {}
    for name, values in tensors.items():
        if name.endswith(_EXPERTS):
            blocks, scales = _mxfp4.pack(np.swapaxes(values, 1, 2))
            published[name + "_blocks"], published[name + "_scales"] = blocks, scales
        else:
            published[name] = values
    if len(published) == len(tensors):
        raise ValueError(f"{model}: a gpt-oss run model without its experts")
    config = {**config, "quantization_config": PUBLISHED_MXFP4}
    text = (json.dumps(config, indent=2) + "\n").encode()
    weights = save(published, {"format": "pt"})
    out = model.parent / f"{model.name}-published-{engine}"
    with writing.new_folder(out) as files:
        files.write("config.json", lambda stream: stream.write(text))
        files.write("model.safetensors", lambda stream: stream.write(weights))
        for source in sorted(model.iterdir()):  # its tokenizer: regular files (copy refuses others)
            if source.is_symlink():  # never followed, even in sinpe's own folder
                raise ValueError(f"{source}: a link in the run model's folder, not copied")
            if source.name not in ("config.json", "model.safetensors"):
                files.copy(source, source.name)
    return out
