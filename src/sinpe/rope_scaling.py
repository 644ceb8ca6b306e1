"""Rope-type records: every ``rope_type`` transformers knows, its keys, its frequency rule.

The records live in ``sinpe._rope.rope_types``; this public module re-exports its public
names so that ``import sinpe.rope_scaling`` keeps working (and pickles of its classes, whose
``__module__`` is this module, keep loading).
"""

from ._rope.rope_types import *  # noqa: F403
from ._rope.rope_types import __all__ as __all__
