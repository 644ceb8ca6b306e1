"""What the engine plugins share (vLLM's, ``sinpe.vllm``, and SGLang's, ``sinpe.sglang``):
the mode an environment variable chooses, and how an audit's reports are published (one log
line per distinct rotary layer, and the JSON file a second variable names, written by the
writing room: a new file, never one that exists nor through a link). A plugin never stops
its engine: an invalid mode warns once and acts as ``off``; a report that cannot be written
(its name taken included) is one warning."""

from __future__ import annotations

import importlib
import json
import logging
import os

from .._files import writing

__all__ = ["DEFAULT", "MODES", "claim", "publish", "read_mode"]

_WRITTEN: dict = {}  # report path -> the identity of the file this process wrote there

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
    reports as strict JSON to the new file ``variable`` names, if it names one (a later
    audit's reports in its place, when it is still the file this process wrote)."""
    for report in found:
        level = logging.WARNING if report.verdict in ("mismatch", "unchecked") else logging.INFO
        logger.log(level, "sinpe: %s", report.line())
    path = os.environ.get(variable)
    if path:
        try:
            text = json.dumps([r.as_json() for r in found], indent=2, allow_nan=False)
            writing.remove_own(path, _WRITTEN.pop(path, None))  # a later audit's reports
            _WRITTEN[path] = writing.write_new(path, lambda s: s.write(text.encode("utf-8")))
        except (OSError, ValueError) as exc:
            logger.warning("sinpe could not write %s=%r: %s", variable, path, exc)
