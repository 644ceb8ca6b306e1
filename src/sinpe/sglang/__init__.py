"""sinpe for SGLang: SGLang's reading of a model's config (``sinpe engines``: its model
class built from a twin of the config, each rotary cache judged by the verdict core, as
sinpe's vLLM plugin judges vLLM's). docs/engines.md has the details.

Importing this module imports neither SGLang nor torch.
"""

__all__: list = []
