"""Rope-type records: every ``rope_type`` transformers knows, its keys, its frequency rule.

The records live in ``sinpe._rope.rope_types``; this public module re-exports them so that
``import sinpe.rope_scaling`` keeps working (and pickles of its classes keep loading).
"""

from ._rope.rope_types import (
    KEYS,
    MAX_FACTOR,
    ROPE_TYPES,
    TYPES,
    Key,
    RopeScaling,
    RopeType,
    inverse_frequencies,
    length_key,
    parse,
)

__all__ = [
    "KEYS",
    "MAX_FACTOR",
    "ROPE_TYPES",
    "TYPES",
    "Key",
    "RopeScaling",
    "RopeType",
    "inverse_frequencies",
    "length_key",
    "parse",
]
