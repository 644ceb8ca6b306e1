"""The ``vllm.general_plugins`` entry point: vLLM calls ``register`` in each of its processes
before it builds a model. It wraps vLLM's model loader so that, once a model's weights are
loaded, every distinct rotary layer is audited against the model's own config (mode
``audit``) or, where vLLM's cache matches that config up to its float32 drift, filled with
sinpe's exact table (mode ``exact``). It never stops vLLM: an audit that fails says so in one
log line and serving goes on.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import threading
import weakref

__all__ = ["DEFAULT", "MODES", "mode", "register", "reports", "seen"]

MODES = ("audit", "exact", "off")
# audit by default: it reads and logs, never changes a number (a plugin that changes numerics
# unasked surprises people; one that stays silent helps nobody); exact is asked for by name
DEFAULT = "audit"
_LOCK = threading.Lock()
_STATE: dict = {"registered": False, "warned": False}
_MARK = "__sinpe_vllm__"
_SEEN: dict = {}  # id -> weak reference: every rotary layer built since register()
_REPORTS: list = []  # the last audit's LayerReports


def _logger():
    try:
        from vllm.logger import init_logger

        return init_logger("vllm.sinpe")
    except ImportError:
        return logging.getLogger("sinpe.vllm")


def mode() -> str:
    """``SINPE_VLLM`` (audit, exact or off; default audit). An invalid value warns once and
    acts as off."""
    value = os.environ.get("SINPE_VLLM", DEFAULT).strip().lower() or DEFAULT
    if value in MODES:
        return value
    if not _STATE["warned"]:
        _STATE["warned"] = True
        _logger().warning(
            "SINPE_VLLM must be one of %s, got %r: sinpe leaves vLLM alone", MODES, value[:60]
        )
    return "off"


def register() -> None:
    """Hook sinpe into vLLM's model loader (idempotent; nothing where vLLM is absent). The
    mode is read when a model is loaded, so ``SINPE_VLLM`` may change between two ``LLM``s
    of one process; ``off`` passes straight through."""
    with _LOCK:
        if _STATE["registered"]:
            return
        try:
            from vllm.model_executor.layers import rotary_embedding as rope_layers
            from vllm.model_executor.model_loader.base_loader import BaseModelLoader
        except ImportError:
            return
        _STATE["registered"] = True
        for cls in _root_classes(rope_layers):
            _wrap_init(cls)
        _wrap_loader(BaseModelLoader)


def _root_classes(package) -> list:
    """The classes every vLLM rotary layer passes through."""
    from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbeddingBase

    found = [RotaryEmbeddingBase]
    for module, name in (
        ("phi3_long_rope_scaled_rope", "Phi3LongRoPEScaledRotaryEmbedding"),
        ("dual_chunk_rope", "DualChunkRotaryEmbedding"),
    ):
        try:
            found.append(getattr(importlib.import_module(f"{package.__name__}.{module}"), name))
        except (ImportError, AttributeError):  # a vLLM without that class
            continue
    return found


def _wrap_init(cls) -> None:
    original = cls.__dict__["__init__"]
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _SEEN[id(self)] = weakref.ref(self)

    setattr(__init__, _MARK, True)
    cls.__init__ = __init__


def _wrap_loader(loader) -> None:
    original = loader.__dict__["load_model"]
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def load_model(self, vllm_config, model_config, *args, **kwargs):
        model = original(self, vllm_config, model_config, *args, **kwargs)
        current = mode()
        _REPORTS.clear()
        if current != "off":
            try:
                from ._model import audit_model

                found = audit_model(model, model_config, exact=current == "exact")
            except Exception as exc:  # an audit never stops serving
                _logger().warning(
                    "sinpe could not audit the rotary layers: %s: %s", type(exc).__name__, exc
                )
            else:
                _publish(found)
        return model

    setattr(load_model, _MARK, True)
    loader.load_model = load_model


def _publish(found: list) -> None:
    _REPORTS[:] = found
    log = _logger()
    for report in found:
        level = logging.WARNING if report.verdict in ("mismatch", "unchecked") else logging.INFO
        log.log(level, "sinpe: %s", report.line())
    path = os.environ.get("SINPE_VLLM_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump([r.as_json() for r in found], handle, indent=2, allow_nan=True)


def seen() -> list:
    """Every rotary layer object vLLM built in this process since ``register`` (alive)."""
    return [layer for ref in list(_SEEN.values()) if (layer := ref()) is not None]


def reports() -> list:
    """The ``LayerReport``s of the last model loaded in this process."""
    return list(_REPORTS)
