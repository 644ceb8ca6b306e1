"""Run by tests/test_sglang.py in a fresh interpreter of the SGLang leg (SGLang's state is
process-wide: its plugin registry, a gloo group, the published server arguments), with the
twin folder and the mode in its arguments:

    python tests/sglang_plugin.py FOLDER [CONTEXT_LENGTH]

SGLang's own plugin loader (``load_plugins``) finds sinpe's ``sglang.srt.plugins`` entry
point and applies its hooks with SGLang's ``HookRegistry``; SGLang's loader builds the
twin's model on the CPU (as ``sinpe engines`` does: ``sinpe.sglang._engine``); SGLang's own
``reserve_rope_cache_for_long_sequences`` (hooked) grows the caches as ``ModelRunner.
load_model`` does before CUDA-graph capture; then the AFTER hook runs with a stand-in of the
runner that holds what it reads (``model``, ``model_config``). A whole ``ModelRunner`` needs
an accelerator (tools/sglang_gpu.py runs one). Prints JSON: the hooks, the reports, and
for a replaced cache, whether its rows are now sinpe's table bit for bit."""

from __future__ import annotations

import json
import logging
import sys
from types import SimpleNamespace


def _closure(function) -> list:
    return [cell.cell_contents for cell in (getattr(function, "__closure__", None) or ())]


def main(folder: str, context_length: int | None = None) -> dict:
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry

    load_plugins()
    import sglang.srt.model_executor.model_runner as runner
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import _initialize_model

    import sinpe
    from sinpe.sglang import _engine, _plugin
    from sinpe.vllm._model import layers

    found = {
        "hooks": {
            target: [getattr(hook, "__qualname__", "") for _, hook, _ in entries]
            for target, entries in HookRegistry._hooks.items()
        },
        "load_model_hooked": _plugin.after_load_model in _closure(runner.ModelRunner.load_model),
        "reserve_hooked": _plugin.before_reserve
        in _closure(runner.reserve_rope_cache_for_long_sequences),
    }
    _engine._on_the_cpu()
    _engine._group()
    model_config = ModelConfig(
        model_path=folder, dtype="float32", trust_remote_code=False, context_length=context_length
    )
    model = _initialize_model(model_config, LoadConfig(load_format="dummy"))
    made = {id(layer): int(layer.cos_sin_cache.shape[0]) for layer, _ in layers(model).values()}
    runner.reserve_rope_cache_for_long_sequences(model, model_config, logging.getLogger("test"))
    stand_in = SimpleNamespace(model=model, model_config=model_config)
    result = _plugin.after_load_model(None, stand_in)
    spec = sinpe.rope_config(json.load(open(f"{folder}/config.json", encoding="utf-8")))
    exact, exact_made = [], []  # each cache (and its rows as made) against sinpe's table
    for layer, _ in layers(model).values():
        cache = layer.cos_sin_cache.numpy()
        want = spec.rope_cache(cache.shape[0], dtype="float32")
        exact.append(bool((cache == want).all()))
        rows = made[id(layer)]
        exact_made.append(bool((cache[:rows] == want[:rows]).all()))
    found.update(
        result=repr(result),
        made=sorted(set(made.values())),
        rows=sorted({int(layer.cos_sin_cache.shape[0]) for layer, _ in layers(model).values()}),
        reports=[report.as_json() for report in _plugin.reports()],
        lines=[report.line() for report in _plugin.reports()],
        exact=exact,
        exact_made=exact_made,
    )
    return found


if __name__ == "__main__":
    length = int(sys.argv[2]) if len(sys.argv) > 2 else None
    print("SINPE-JSON " + json.dumps(main(sys.argv[1], length)))
