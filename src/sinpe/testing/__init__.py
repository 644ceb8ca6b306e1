"""sinpe's RoPE conformance kit, for other implementations' test suites: a corpus of published
configs (:func:`configs`), assertions in the ``numpy.testing`` style (:func:`check_rope`,
:func:`assert_rope`) judged by sinpe's verdict core, a pytest plugin (``rope_config``
fixture, opt-in: the top-level module ``sinpe_pytest``) and ``sinpe conformance MODULE:CALLABLE``.
See docs/testing.md."""

from .candidates import InvFreq, Rotates
from .check import Report, assert_rope, check_rope, judged_lengths
from .corpus import CorpusConfig, configs, folder_configs, transformers_defaults

__all__ = [
    "CorpusConfig",
    "InvFreq",
    "Report",
    "Rotates",
    "assert_rope",
    "check_rope",
    "configs",
    "folder_configs",
    "judged_lengths",
    "transformers_defaults",
]
