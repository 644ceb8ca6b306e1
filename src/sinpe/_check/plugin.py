"""What the engine plugins share (vLLM's, ``sinpe.vllm``, and SGLang's, ``sinpe.sglang``):
the mode an environment variable chooses, and how an audit's reports are published (one log
line per distinct rotary layer, and the JSON file a second variable names). A plugin never
stops its engine: an invalid mode warns once and acts as ``off``; a report that cannot be
written is one warning."""

from __future__ import annotations

import importlib
import json
import logging
import os

__all__ = ["DEFAULT", "MODES", "claim", "publish", "read_mode"]

MODES = ("audit", "exact", "off")
# audit by default: it reads and logs, never changes a number (a plugin that changes numerics
# unasked surprises people; one that stays silent helps nobody); exact is asked for by name
DEFAULT = "audit"


def claim(state: dict, package: str):
    """The engine's package on a plugin's first registration (``state["registered"]`` set
    then); None when the plugin registered before, or where the engine is absent (nothing
    set: a later call looks again). Call it under the plugin's lock."""
    if state["registered"]:
        return None
    try:
        engine = importlib.import_module(package)
    except ImportError:
        return None
    state["registered"] = True
    return engine


def read_mode(variable: str, state: dict, logger, engine: str) -> str:
    """The mode ``variable`` sets (audit, exact or off; default audit). An invalid value
    warns once (``state["warned"]``) and acts as off."""
    value = os.environ.get(variable, DEFAULT).strip().lower() or DEFAULT
    if value in MODES:
        return value
    if not state.get("warned"):
        state["warned"] = True
        logger.warning(
            "%s must be one of %s, got %r: sinpe leaves %s alone",
            variable,
            MODES,
            value[:60],
            engine,
        )
    return "off"


def publish(found: list, logger, variable: str) -> None:
    """Each report's log line (a warning for a mismatch or an unchecked layer), and the
    reports as strict JSON to the path ``variable`` names, if it names one."""
    for report in found:
        level = logging.WARNING if report.verdict in ("mismatch", "unchecked") else logging.INFO
        logger.log(level, "sinpe: %s", report.line())
    path = os.environ.get(variable)
    if path:
        try:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump([r.as_json() for r in found], handle, indent=2, allow_nan=False)
        except (OSError, ValueError) as exc:
            logger.warning("sinpe could not write %s=%r: %s", variable, path, exc)
