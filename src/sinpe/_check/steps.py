"""An engine's own code, run on a model sinpe hands it (``sinpe engines``' twin): an error it
raises is a finding about the engine (``EngineFailed``, naming the step), not a crash of
sinpe's reading. Every adapter wraps each call into the engine with ``step``."""

from __future__ import annotations

__all__ = ["WORDS", "EngineFailed", "step"]

# the most of an engine's error message a line carries; a longer one is cut, and says so
WORDS = 400


class EngineFailed(Exception):
    """The engine's own code stopped: where, and its error."""


class step:
    """``with step("its builder"):`` turns an error raised inside into ``EngineFailed``
    naming the step (``MemoryError`` too: a twin keeps the config's lengths)."""

    def __init__(self, where: str):
        self.where = where

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _):
        if error is None or isinstance(error, (EngineFailed, KeyboardInterrupt)):
            return False
        words = " ".join(str(error).split()) or _raised_at(error)
        if len(words) > WORDS:
            words = words[:WORDS].rstrip() + " [cut]"
        if isinstance(error, MemoryError):
            words = "out of memory (the twin keeps the config's lengths)"
        raise EngineFailed(f"{self.where} raised {type(error).__name__}: {words}") from error


def _raised_at(error: BaseException) -> str:
    """Where an error without a message was raised (a bare ``assert``): the innermost frame,
    its file named from its package (the part after ``site-packages/``)."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "(no message)"
    last = frames[-1]
    name = last.filename.replace("\\", "/").rpartition("site-packages/")[2]
    return f"(no message) at {name} line {last.lineno}, in {last.name}"
