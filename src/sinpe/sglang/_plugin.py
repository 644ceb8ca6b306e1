"""The ``sglang.srt.plugins`` entry point: SGLang's ``load_plugins`` calls ``register`` in
each of its processes (engine, scheduler, workers). ``register`` asks SGLang's own
``HookRegistry`` for two hooks on the model runner:

- BEFORE ``reserve_rope_cache_for_long_sequences`` (which ``ModelRunner.load_model`` calls
  once the model is built, before CUDA-graph capture): each rotary layer's row count is
  recorded, so that the rows SGLang then appends past it (computed by the class's
  ``_compute_inv_freq(base)``, without the scaling its own cache applies) are judged apart;
- AFTER ``ModelRunner.load_model``: every distinct rotary layer is audited against the
  model's own config.json, read as transformers reads it (mode ``audit``), or, where SGLang's
  cache matches it up to its float32 drift, filled with sinpe's exact table on the cache's
  device (mode ``exact``), before SGLang captures its CUDA graphs.

``SINPE_SGLANG`` chooses the mode (audit, exact, off; default audit), ``SINPE_SGLANG_REPORT``
a JSON file for the reports. It never stops SGLang: a failure anywhere in the audit, the fill
or the report is one logged warning, and the model runs as SGLang made it. Where SGLang is
installed but has no plugin registry (a release before it), one warning says so.
"""

from __future__ import annotations

import logging
import threading

from .._check.plugin import DEFAULT, MODES, claim, publish, read_mode

__all__ = ["DEFAULT", "LOAD_MODEL", "MODES", "RESERVE", "mode", "register", "reports"]

_RUNNER = "sglang.srt.model_executor.model_runner"
LOAD_MODEL = f"{_RUNNER}.ModelRunner.load_model"
# where ModelRunner.load_model finds it (SGLang's registry patches every module that imported it)
RESERVE = "sglang.srt.utils.common.reserve_rope_cache_for_long_sequences"
_LOCK = threading.Lock()
_STATE: dict = {"registered": False, "warned": False}
_REPORTS: list = []  # the last audit's LayerReports


def _logger():
    return logging.getLogger("sglang.sinpe")


def mode() -> str:
    """``SINPE_SGLANG`` (audit, exact or off; default audit). An invalid value warns once and
    acts as off."""
    return read_mode("SINPE_SGLANG", _STATE, _logger(), "SGLang")


def register() -> None:
    """Register the two hooks with SGLang's ``HookRegistry`` (idempotent; nothing where SGLang
    is absent). SGLang's ``load_plugins`` applies them. The mode is read when a model is
    loaded; ``off`` does nothing."""
    with _LOCK:
        sglang = claim(_STATE, "sglang")
        if sglang is None:
            return
        try:
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType
        except ImportError as exc:
            _logger().warning(
                "sinpe cannot audit this SGLang's rotary caches: SGLang %s has no plugin "
                "registry (%s; sinpe knows SGLang 0.5.23's HookRegistry); SGLang runs unchanged",
                getattr(sglang, "__version__", "of unknown version"),
                exc,
            )
            return
        HookRegistry.register(RESERVE, before_reserve, HookType.BEFORE)
        HookRegistry.register(LOAD_MODEL, after_load_model, HookType.AFTER)


def before_reserve(model, *args, **kwargs):
    """Each rotary layer's rows as its class made them, before SGLang appends any."""
    try:
        if mode() == "off":
            return None
        from ..vllm._audit import MADE
        from ..vllm._model import layers

        for layer, _ in layers(model).values():
            cache = getattr(layer, "cos_sin_cache", None)
            if cache is not None and getattr(cache, "ndim", 0) == 2:
                setattr(layer, MADE, int(cache.shape[0]))
    except Exception as exc:  # noqa: BLE001 (never stops SGLang)
        _logger().warning("sinpe could not read the rotary caches: %s: %s", type(exc).__name__, exc)
    return None


def after_load_model(result, runner=None, *args, **kwargs):
    """The audit (and fill) of the runner's model; any failure is one warning, never raised.
    Returns None: SGLang keeps ``load_model``'s own result."""
    try:
        current = mode()
        _REPORTS.clear()
        if current == "off":
            return None
        found = audit_runner(runner, exact=current == "exact")
        _REPORTS[:] = found
        publish(found, _logger(), "SINPE_SGLANG_REPORT")
    except Exception as exc:  # noqa: BLE001 (an audit never stops serving)
        _logger().warning(
            "sinpe could not audit the rotary layers: %s: %s", type(exc).__name__, exc
        )
    return None


def audit_runner(runner, exact: bool = False) -> list:
    """The ``LayerReport``s of an SGLang ``ModelRunner``'s model, against its config.json
    (else SGLang's ``hf_config``, said), at its context length."""
    from ..vllm._model import audit, make_context

    model_config = runner.model_config
    context = make_context(
        getattr(model_config, "model_path", ""),
        getattr(model_config, "revision", None),
        getattr(model_config, "hf_config", None),
        getattr(model_config, "context_len", None),
        engine="SGLang",
    )
    return audit(runner.model, context, exact=exact, engine="SGLang")


def reports() -> list:
    """The ``LayerReport``s of the last model loaded in this process."""
    return list(_REPORTS)
