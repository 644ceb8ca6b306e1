"""Where a model's config.json is, as a user names it: the file itself, the model's folder
(its ``config.json``), or a Hugging Face Hub id (``org/name`` or ``org/name@revision``),
resolved through ``huggingface_hub`` where it is installed: its cache, ``HF_HUB_CACHE`` /
``HF_HOME`` and ``HF_HUB_OFFLINE`` respected, nothing else downloaded. A name that is a file
or a folder here is always read as one: a Hub id is only a name nothing here answers to."""

from __future__ import annotations

import os
import re

__all__ = ["config_file", "HUB_ID"]

# the Hub's repository names: an owner and a name of letters, digits, '.', '_', '-'
HUB_ID = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}(@[\w./-]{1,255})?"
)


def config_file(path: str, what: str = "config") -> str:
    """The config.json ``path`` names: itself (a file, or no such thing: the reader says
    so), ``path/config.json`` for a folder, or the Hub's file for a Hub id."""
    if os.path.isdir(path):
        inside = os.path.join(path, "config.json")
        if not os.path.lexists(inside):
            raise ValueError(f"{what} folder {path!r} holds no config.json")
        return inside
    if os.path.lexists(path) or path.endswith(".json") or not HUB_ID.fullmatch(path):
        return path
    return _from_hub(path, what)


def _from_hub(name: str, what: str) -> str:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ValueError(
            f"{what} {name!r}: no such file or folder; read as a Hugging Face Hub id it needs "
            "huggingface_hub (pip install huggingface_hub)"
        ) from None
    repo, _, revision = name.partition("@")
    try:
        return str(hf_hub_download(repo, "config.json", revision=revision or None))
    except Exception as exc:  # the Hub's errors: not cached while offline, no such repo, gated
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ValueError(
            f"{what} {name!r}: no such file or folder, and not found as a Hugging Face Hub id "
            f"({type(exc).__name__}{': ' + first if first else ''})"
        ) from None
