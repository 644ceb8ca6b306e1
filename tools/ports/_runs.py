"""Shared by the ports' glue: a port that computes its table for a contiguous range
(``length`` rows from ``offset``) called at the kit's positions, one contiguous run at a time;
the text config of a multimodal one; a config's RoPE keys as the ports' builders read them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

import numpy as np


def by_runs(table: Callable) -> Callable:
    """``positions -> (cos, sin)`` from ``table(length, offset) -> (cos, sin)`` (any array
    library, rows = positions): each run of consecutive positions is one call, as the port
    itself is called for a sequence."""

    def at(positions):
        positions = np.asarray(positions, dtype=np.int64)
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        cos, sin = [], []
        for run in np.split(positions, breaks):
            c, s = table(len(run), int(run[0]))
            cos.append(_numpy(c).reshape(len(run), -1))
            sin.append(_numpy(s).reshape(len(run), -1))
        return np.concatenate(cos), np.concatenate(sin)

    return at


def _numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    return np.asarray(value)


def text_config(config: dict) -> dict:
    """The text model's config of a multimodal one (its ``text_config``), else the config."""
    text = config.get("text_config")
    return text if isinstance(text, dict) else config


def rope_keys(config: dict) -> SimpleNamespace:
    """What a Hugging Face config says of its RoPE, as a port's model config is set from it:
    ``text`` (the text config), ``params`` (``rope_parameters``, else ``rope_scaling``), ``kind``
    (its rope type), ``head`` (``qk_rope_head_dim``, ``head_dim`` or hidden size / heads),
    ``partial`` (``partial_rotary_factor``) and ``theta`` (``rope_theta``)."""
    c = text_config(config)
    rp = c.get("rope_parameters") or c.get("rope_scaling") or {}
    kind = rp.get("rope_type", rp.get("type", "default"))
    head = (
        c.get("qk_rope_head_dim")
        or c.get("head_dim")
        or c["hidden_size"] // c["num_attention_heads"]
    )
    return SimpleNamespace(
        text=c,
        params=rp,
        kind=kind,
        head=head,
        partial=c.get("partial_rotary_factor", rp.get("partial_rotary_factor", 1.0)),
        theta=c.get("rope_theta", rp.get("rope_theta", 10_000)),
    )


def rotate_by_runs(apply: Callable) -> Callable:
    """``(q, positions) -> q_rotated`` (for ``sinpe.testing.Rotates``) from ``apply(q_run,
    offset)``, a port that rotates a sequence starting at ``offset``: one call a run."""

    def rotate(q, positions):
        q, positions = np.asarray(q), np.asarray(positions, dtype=np.int64)
        starts = list(np.flatnonzero(np.diff(positions) != 1) + 1)
        out = [
            _numpy(apply(q[a:b], int(positions[a])))
            for a, b in zip([0] + starts, starts + [len(positions)])
        ]
        return np.concatenate(out)

    return rotate
