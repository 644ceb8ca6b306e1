"""Output formats as one table: how a RoPE's cos and sin are laid out in what a function,
a module or a cache returns. Every tuple of layout names sinpe accepts is derived from it.

A format says what comes back (columns, one or two planes, where each frequency's cos and sin
go); it does not say which query/key elements a model rotates together (NeoX's halves or
GPT-J's pairs), which is the model's, not the table's.
"""

from __future__ import annotations

from typing import NamedTuple

from .._tables.plan import Place

__all__ = ["FORMATS", "Format", "names", "place"]


class Format(NamedTuple):
    """One format: ``columns`` per frequency (2 or 1), ``planes`` (2: a cos and a sin table;
    1: one table), the cos and the sin of frequency 0 as ``(plane, first column, columns
    from one frequency to the next, offset of a second copy)`` with ``"h"`` standing for the
    number of frequencies, and where it is offered: ``rope`` (``sinpe.rope``/``rope_at``
    layouts), ``spec`` (``RopeSpec`` outputs), ``torch`` (``RotaryEmbedding``) and ``check``
    (caches ``sinpe check`` reads)."""

    columns: int
    planes: int
    cos: tuple
    sin: tuple
    offered: frozenset


_ALL = frozenset({"rope", "spec", "torch", "check"})
FORMATS: dict[str, Format] = {
    # [f0 .. f(h-1), f0 .. f(h-1)] in a cos table and a sin table
    "half": Format(2, 2, (0, 0, 1, "h"), (1, 0, 1, "h"), _ALL),
    # [f0, f0, f1, f1, ...]
    "interleaved": Format(2, 2, (0, 0, 2, 1), (1, 0, 2, 1), _ALL),
    # [f0 .. f(h-1)]
    "compact": Format(1, 2, (0, 0, 1, 0), (1, 0, 1, 0), _ALL),
    # vLLM's cos_sin_cache: one table, [cos f0 .. f(h-1) | sin f0 .. f(h-1)]
    "vllm": Format(2, 1, (0, 0, 1, 0), (0, "h", 1, 0), frozenset({"check"})),
    # one table, (cos, sin) of each frequency side by side (a complex tensor's real view)
    "complex": Format(2, 1, (0, 0, 2, 0), (0, 1, 2, 0), frozenset({"spec", "torch", "check"})),
    # the same values as real pairs
    "pairs": Format(2, 1, (0, 0, 2, 0), (0, 1, 2, 0), frozenset({"check"})),
}


def names(where: str) -> tuple:
    """The format names offered ``where``, in the table's order."""
    return tuple(name for name, f in FORMATS.items() if where in f.offered)


def place(name: str, h: int):
    """``(row width, planes, cos Place, sin Place)`` of format ``name`` for ``h``
    frequencies, in the filler's vocabulary."""
    f = FORMATS[name]

    def resolve(spot):
        return Place(*(h if v == "h" else v for v in spot), h)

    return f.columns * h, f.planes, resolve(f.cos), resolve(f.sin)
