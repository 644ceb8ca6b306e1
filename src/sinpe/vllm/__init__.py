"""sinpe for vLLM: every rotary cache vLLM builds, audited against the exact table of the
model's own config (read as transformers reads it), or replaced by it.

Every sinpe install declares the ``vllm.general_plugins`` entry point ``sinpe =
sinpe.vllm:register``; vLLM calls it in each of its processes. ``SINPE_VLLM`` chooses what it
does: ``audit`` (the default: one log line per distinct rotary layer with the verdict
``sinpe check`` gives, nothing changed), ``exact`` (the same, then each cache that matches the
config up to vLLM's float32 drift filled with sinpe's correctly rounded table in its dtype;
a cache that does not match is left as vLLM made it, and the log says why) or ``off``.
``SINPE_VLLM_REPORT=path`` also writes the reports as JSON (strict: a number that does not
exist is null). The verdicts are the verdict core's (``sinpe._check``), as every engine's.
docs/vllm.md has the details.

Importing this module imports neither vLLM nor torch.
"""

from ._audit import KNOWN, LayerReport, audit_layer
from ._model import audit_model, check
from ._plugin import DEFAULT, MODES, mode, register, reports, wrapped

__all__ = [
    "DEFAULT",
    "KNOWN",
    "MODES",
    "LayerReport",
    "audit_layer",
    "audit_model",
    "check",
    "mode",
    "register",
    "reports",
    "wrapped",
]
