"""sinpe for SGLang: its plugin, and SGLang's reading of a config for ``sinpe engines``.

Every sinpe install declares the ``sglang.srt.plugins`` entry point ``sinpe =
sinpe.sglang:register``; SGLang's ``load_plugins`` calls it in each of its processes, and
sinpe's hooks (through SGLang's ``HookRegistry``) audit every rotary cache of a loaded model
against the exact table of the model's own config, read as transformers reads it, before
SGLang captures its CUDA graphs. ``SINPE_SGLANG`` chooses what it does: ``audit`` (the
default: one log line per distinct rotary layer, nothing changed), ``exact`` (each cache that
matches the config up to SGLang's float32 drift filled with sinpe's correctly rounded table,
on its device, in its dtype) or ``off``; ``SINPE_SGLANG_REPORT=path`` also writes the reports
as JSON. The rows SGLang appends to a cache past what its class made are judged apart. The
verdicts are the verdict core's (``sinpe._check``), as every engine's. ``sinpe engines`` reads
SGLang's model classes built from a twin of a config (``_engine``). docs/engines.md has the
details.

Importing this module imports neither SGLang nor torch.
"""

from ._plugin import DEFAULT, MODES, audit_runner, mode, register, reports

__all__ = ["DEFAULT", "MODES", "audit_runner", "mode", "register", "reports"]
