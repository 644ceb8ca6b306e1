"""``sinpe.mlx.check``: each RoPE module of an MLX model probed at the core's positions up to the
model's length and judged by the verdict core (``sinpe._check.probe``: match, drift,
mismatch, with the error by position decade and, for a mismatch, what the module's own
angles show: its rotation, width, attention factor, base and scaling against the config's).
A model folder is loaded lazily: no weight is read to probe weightless modules."""

from __future__ import annotations

import pathlib
from typing import NamedTuple

import numpy as np

from .._check.probe import judge_module
from .._rope.config import load_config, rope_config
from .._verdict.judge import Held, judge_parameters
from .._verdict.layers import LayerUnknown, layer_spec
from .._verdict.verdict import (
    MISMATCH,
    Judged,
    Verdict,
    layer_json,
    layer_line,
    mismatch,
    not_judged,
)
from ._probe import call_of, dims_of, find_ropes, layer_index

__all__ = ["LayerReport", "check", "check_folder"]


class _LayerReportFields(NamedTuple):
    """The fields of ``LayerReport``."""

    names: tuple
    cls: str
    rotary_dim: int
    rotation: str | None
    judgment: Verdict


class LayerReport(_LayerReportFields, Judged):
    """One distinct RoPE module (the layers that hold one like it): its names, class, width,
    rotation and the core's ``Verdict`` (``judgment``)."""

    __slots__ = ()

    def line(self) -> str:
        """One line: where, what, the verdict and its reasons."""
        what = (self.cls, self.rotation, f"x{self.rotary_dim}")
        return layer_line(self.names, what, self.judgment)

    def as_json(self) -> dict:
        held = {"rotary_dim": self.rotary_dim, "rotation": self.rotation}
        return layer_json(self.names, self.cls, self.judgment, held)


def _softmax(attention):
    """What the attention module multiplies its softmax scale ``q_head_dim ** -0.5`` by
    (DeepSeek's YaRN ``mscale_all_dim`` squared), where it keeps ``scale`` and ``q_head_dim``;
    ``None`` where it keeps neither."""
    scale, width = getattr(attention, "scale", None), getattr(attention, "q_head_dim", None)
    if not isinstance(scale, float) or not isinstance(width, int) or width < 1:
        return None
    return scale / width**-0.5


def _identity(value):
    """What tells one value from another: an array's dtype, shape and bytes (NumPy's or MLX's,
    whose printed form shows only its ends, to 6 digits), its every value where NumPy cannot
    hold its dtype (bfloat16), else its ``repr``."""
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return repr(value)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        return str(value.dtype), tuple(value.shape), repr(value.tolist())
    return str(array.dtype), array.shape, array.tobytes()


def _signature(rope) -> tuple:
    """What tells two modules apart: their class and attributes (a table's bytes)."""
    items = [(key, _identity(v)) for key, v in sorted(getattr(rope, "__dict__", {}).items())]
    for key in ("dims", "base", "scale", "traditional", "mscale", "_scale", "_freqs"):
        items.append((key, _identity(getattr(rope, key, None))))
    return type(rope).__name__, tuple(items)


def check(model, config, *, length: int | None = None) -> list:
    """One ``LayerReport`` per distinct RoPE module of ``model`` (an MLX model, as mlx_lm
    loads it) against ``config`` (its config.json path or mapping, read as transformers
    reads it), judged up to ``length`` (default: the config's trained length)."""
    data = load_config(config)
    spec = rope_config(data)
    groups: dict = {}
    for name, parent, _, rope in find_ropes(model):
        try:
            one = layer_spec(spec, data, layer_index(name))
        except LayerUnknown as exc:
            one = exc
        softmax = _softmax(parent)
        key = (_signature(rope), id(one) if isinstance(one, LayerUnknown) else one, softmax)
        groups.setdefault(key, (rope, one, softmax, []))[3].append(name)
    if not groups:
        raise ValueError("the model has no RoPE module (no layer keeps a 'rope')")
    return [
        _report(rope, one, softmax, names, length) for rope, one, softmax, names in groups.values()
    ]


def _report(rope, spec, softmax, names, length=None) -> LayerReport:
    cls = type(rope).__name__
    if isinstance(spec, LayerUnknown):
        judgment = not_judged(spec.finding)
        return LayerReport(tuple(names), cls, dims_of(rope, 0), None, judgment)
    dims = dims_of(rope, spec.head_dim)
    judgment, rotation = judge_module(spec, call_of(rope), dims, length)
    found, _ = judge_parameters(spec, Held(softmax_scale=softmax), None)
    if found:
        reasons = list(judgment.findings if judgment.verdict == MISMATCH else ()) + found
        judgment = mismatch(reasons)._replace(
            decades=judgment.decades, largest=judgment.largest, dtype=judgment.dtype
        )
    return LayerReport(tuple(names), cls, dims, rotation, judgment)


def check_folder(folder, config=None) -> list:
    """``check`` of the model in ``folder`` as mlx_lm loads it, lazily (no weight is read:
    RoPE modules hold none), against ``config`` (default: the folder's config.json)."""
    try:
        from mlx_lm.utils import load_model
    except ImportError as exc:
        raise ImportError("mlx-lm, which loads model folders: pip install 'sinpe[mlx]'") from exc
    folder = pathlib.Path(folder)
    model, _ = load_model(folder, lazy=True)
    return check(model, folder / "config.json" if config is None else config)
