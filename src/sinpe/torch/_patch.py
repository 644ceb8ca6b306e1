"""``patch(model)``: every rotary module of a transformers model replaced by an exact
``RotaryEmbedding``, decided per module by verification, never by its class name.

For each module that holds ``inv_freq`` buffers and whose ``forward`` takes ``(x,
position_ids[, layer_type])``: the candidate is built from the module's own ``config``
(``sinpe.rope_config``, every layer type; for a family sinpe has no record of, one candidate
per output layout, the first that passes every check chosen), then checked against the very
module it would replace: its ``inv_freq`` buffers against sinpe's exact frequencies (within
4 + |ln w| ulps of float32 or of the buffer's dtype, whichever is coarser: transformers forms
them in float32), its attention factors (1e-6 relative), and a probe ``forward`` of a copy of
the module at sampled positions (0 .. 63 and a few up to its trained length; each layer type;
M-RoPE's three axes apart) against the candidate's values at those positions only (no table
is made): the same output structure, shape and dtype, and every entry within the real
module's own angle error, ``factor * (2**-21 (1 + p max w) + p max|w_buffer - w|)``, plus
the output dtype's rounding. The probe takes every form of ids the model passes: text ids
with two different rows, M-RoPE's ``(3, batch, seq)`` with three different axes (a module
that recomposes the axes inside ``forward`` is told apart only there), a grid's ``(N, 2)``.
Only then is it replaced; a module left alone is named with the
check that failed and by how much. The module that stays is never changed: it is probed as
a copy.
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from .._rope.rotary import mrope_buffer_order
from .._tables import checks as check
from . import _rotary
from ._rotary import RotaryEmbedding
from ._sincos import SinCosTable, sin_cos_candidate

__all__ = ["PatchReport", "patch"]

_EPS = {
    torch.float64: 2.0**-52,
    torch.float32: 2.0**-23,
    torch.float16: 2.0**-10,
    torch.bfloat16: 2.0**-7,
}
_ALLOWED_ULPS = 4.0


class PatchReport(list):
    """The names of the modules ``patch`` replaced, in order; ``left`` maps each rotary
    module it left alone to why (which check failed, by how much); ``table_bytes``: the
    memory the replacements' tables take."""

    def __init__(
        self,
        replaced: Iterable[str] = (),
        left: Mapping[str, str] | None = None,
        table_bytes: int = 0,
    ):
        super().__init__(replaced)
        self.left: dict[str, str] = dict(left or {})
        self.table_bytes = table_bytes

    def __repr__(self) -> str:
        return (
            f"PatchReport(replaced={list(self)!r}, left={self.left!r}, "
            f"table_bytes={self.table_bytes})"
        )


def _buffers(module) -> dict:
    """``{layer type or None: inv_freq buffer}`` of a rotary module."""
    found: dict = {}
    for name, buffer in module.named_buffers(recurse=False):
        if name == "inv_freq":
            found[None] = buffer
        elif name.endswith("_inv_freq") and "original" not in name and "long" not in name:
            found[name[: -len("_inv_freq")]] = buffer
    return found


def _takes_position_ids(module) -> bool:
    try:
        arguments = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return False
    return arguments[:2] == ["x", "position_ids"] and arguments[2:] in ([], ["layer_type"])


def _probe_positions(original) -> np.ndarray:
    positions = list(range(64))
    if original and original > 64:
        positions += sorted({original // 2, original - 1, min(4093, original - 1)})
    return np.array(positions, dtype=np.int64)


def _probe_forms(layer, positions: np.ndarray) -> list:
    """Every form of position ids a model passes to its rotary module, as probes: ``(name,
    ids, each sequence index's largest position, whether the original must answer it)``.
    A vision grid takes ``(N, 2)`` ids only. A text module is probed on ``(batch, seq)``
    ids with two different rows and on M-RoPE's ``(3, batch, seq)`` with three different
    axes (the model's ``get_rope_index`` makes them so for an image): a module that
    recomposes M-RoPE's axes inside ``forward`` looks like a plain one on text ids alone.
    The form of the candidate's own spec must be answered; any other is compared only
    where the original answers it (a form the original refuses is not one its model
    passes)."""
    if layer.axial:
        grid = np.stack([np.roll(positions, 7 * a) for a in range(layer.n_axes)], axis=-1)
        return [("(N, 2) grid ids", torch.tensor(grid), grid.max(axis=-1), True)]
    rows = np.stack([positions, np.roll(positions, 7)])
    axes = np.stack([np.roll(rows, 5 * a, axis=-1) for a in range(3)])
    return [
        ("(batch, seq) ids", torch.tensor(rows), rows.max(axis=0), layer.n_axes != 3),
        ("(3, batch, seq) ids", torch.tensor(axes), axes.max(axis=(0, 1)), layer.n_axes == 3),
    ]


def _relative_ulps(buffer: torch.Tensor, w: np.ndarray):
    """How far the buffer is from sinpe's exact frequencies: the worst index, its offset in
    ulps (of float32 or of the buffer's dtype, the coarser) less |ln w|, and the values."""
    got = buffer.detach().to(torch.float64).cpu().numpy().reshape(-1)
    eps = max(_EPS.get(buffer.dtype, 2.0**-23), 2.0**-23)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(w > 0, 2.0 ** np.floor(np.log2(np.where(w > 0, w, 1.0))), 0.0)
        off = np.where(w == 0, np.where(got == 0, 0.0, np.inf), np.abs(got - w) / (scale * eps))
        allowance = np.where(w > 0, np.abs(np.log(np.where(w > 0, w, 1.0))), 0.0)
    excess = off - allowance
    i = int(np.argmax(excess)) if excess.size else 0
    return i, float(off[i]) if off.size else 0.0, float(allowance[i]) if off.size else 0.0, got


def _structure(output) -> str:
    if isinstance(output, torch.Tensor):
        return f"a {'complex ' if output.is_complex() else ''}tensor"
    if isinstance(output, (tuple, list)):
        return f"a {len(output)}-tuple"
    return type(output).__name__


def _planes(output):
    if isinstance(output, torch.Tensor):
        return (output.real, output.imag) if output.is_complex() else (output,)
    return tuple(output)


def _compare_outputs(real, mine, largest: np.ndarray, w, w_buffer, factor) -> str | None:
    if _structure(real) != _structure(mine):
        return f"the module returns {_structure(real)}, sinpe's {_structure(mine)}"
    real_planes, mine_planes = _planes(real), _planes(mine)
    if len(real_planes) != len(mine_planes):
        return f"the module returns {len(real_planes)} tensors, sinpe's {len(mine_planes)}"
    for a, b in zip(real_planes, mine_planes):
        if tuple(a.shape) != tuple(b.shape):
            return f"output shape {tuple(a.shape)} where sinpe's is {tuple(b.shape)}"
        if a.dtype != b.dtype:
            return f"output dtype {a.dtype} where sinpe's is {b.dtype}"
    angle = 2.0**-21 * (1.0 + largest * float(np.abs(w).max(initial=0.0)))
    angle = angle + largest * float(np.abs(w_buffer - w).max(initial=0.0))
    for a, b in zip(real_planes, mine_planes):
        eps = _EPS.get(a.dtype, 2.0**-23)
        tolerance = factor * (angle + (2 * eps if eps > 2.0**-23 else 0.0))
        diff = (a.detach().to(torch.float64).cpu() - b.detach().to(torch.float64).cpu()).abs()
        diff = diff.numpy().reshape(-1, largest.shape[0], diff.shape[-1]).max(axis=(0, 2))
        worst = int(np.argmax(diff / tolerance))
        if diff[worst] > tolerance[worst]:
            return (
                f"forward at position {int(largest[worst])} differs by {diff[worst]:.3g} "
                f"(allowed {tolerance[worst]:.3g}: the module's own float32 angle error)"
            )
    return None


def _verify(module, candidate: RotaryEmbedding, buffers: dict) -> str | None:
    """Why ``candidate`` may not replace ``module`` (None: it may)."""
    layers = candidate._layers
    names = set(buffers)
    if names != set(layers) and not (None not in names and names <= set(layers)):
        return f"layer types {sorted(map(str, names))} where sinpe reads {sorted(map(str, layers))}"
    for layer_type, buffer in buffers.items():
        layer = layers[layer_type]
        prefix = "" if layer_type is None else f"{layer_type}_"
        w = _matching_frequencies(module, layer, prefix, buffer)
        if buffer.numel() != w.shape[0]:
            return (
                f"{_label(layer_type)}inv_freq holds {buffer.numel()} frequencies, sinpe's "
                f"{w.shape[0]}"
            )
        i, off, allowance, got = _relative_ulps(buffer, w)
        if off - allowance > _ALLOWED_ULPS:
            return (
                f"{_label(layer_type)}inv_freq[{i}] is {got[i]!r}, sinpe's exact {w[i]!r}: "
                f"{off:.3g} ulps (allowed {_ALLOWED_ULPS + allowance:.3g})"
            )
        factor = getattr(module, f"{prefix}attention_scaling", None)
        if factor is not None and not math.isclose(
            float(factor), layer.attention_scaling, rel_tol=1e-6
        ):
            return (
                f"{prefix}attention_scaling is {float(factor)!r}, sinpe's "
                f"{layer.attention_scaling!r}"
            )
        factor = max(1.0, layer.attention_scaling)
        for form in _probe_forms(layer, _probe_positions(layer.original)):
            why = _probe(module, candidate, layer_type, buffer, form, (w, got, factor))
            if why is not None:
                return f"{_label(layer_type)}{why}"
    return None


def _probe(module, candidate, layer_type, buffer, form, angles) -> str | None:
    """Why the candidate differs from (a copy of) the module on one form of ids, for x in
    float32 and in the buffer's own dtype (None: it does not)."""
    name, ids, largest, required = form
    ids = ids.to(buffer.device)
    dtypes = [torch.float32]
    if buffer.dtype in (torch.float16, torch.bfloat16, torch.float64):
        dtypes.append(buffer.dtype)
    for dtype in dtypes:
        x = torch.zeros(1, 1, largest.shape[0], 8, dtype=dtype, device=buffer.device)
        arguments = (x, ids) if layer_type is None else (x, ids, layer_type)
        try:
            with torch.no_grad():
                real = copy.deepcopy(module)(*arguments)  # the module itself stays as it is
        except Exception as exc:
            if not required:
                return None  # not a form this module takes
            return f"its forward fails on probe positions: {type(exc).__name__}: {exc}"[:200]
        try:
            mine = candidate.probe(*arguments)
        except Exception as exc:
            return f"on {name} the module answers and sinpe's raises {type(exc).__name__}"
        why = _compare_outputs(real, mine, largest, *angles)
        if why is not None:
            return f"on {name}, {why} (x {dtype})"
    return None


def _matching_frequencies(module, layer, prefix: str, buffer) -> np.ndarray:
    """sinpe's frequencies for the length the module's buffer was last made for: dynamic
    and longrope modules update it per call (transformers' dynamic_rope_update), so the
    buffer may hold the rescaled base (at the module's max_seq_len_cached) or longrope's
    long factors. The candidate takes over that state when one of them matches."""
    lengths: list[int | None] = [None]
    cached = getattr(module, f"{prefix}max_seq_len_cached", None)
    if cached is None:
        cached = getattr(module, "max_seq_len_cached", None)
    original = layer.spec.scaling.get("original_max_position_embeddings")
    lengths.extend(layer.record.probe_lengths(original, cached))
    best = None
    order = mrope_buffer_order(layer.spec.scaling, layer.h)
    for length in lengths:
        w = np.asarray(layer.spec.frequencies(length)[0], dtype=np.float64)
        if order is not None and w.shape[0] == order.shape[0]:
            w = w[order]  # ERNIE-4.5-VL's buffer holds them pre-permuted
        if w.shape[0] != buffer.numel():
            continue
        i, off, allowance, _ = _relative_ulps(buffer, w)
        if off - allowance <= _ALLOWED_ULPS:
            grows = layer.record.length_state == "grows"
            if grows and length is not None and length > (layer.original or 0):
                layer.max_seq_len_cached = layer.dynamic_length = length  # the module's state
            return w
        best = w if best is None else best
    return best if best is not None else np.asarray(layer.inv_freq, dtype=np.float64)


def _label(layer_type) -> str:
    return "" if layer_type is None else f"{layer_type}: "


_LAYOUTS = _rotary._LAYOUTS


def _candidates(module, buffers, max_positions):
    """The replacements built from the module's own config (for a family sinpe has no
    record of, one per layout: the probe tells which, if any, is the module's), or why there
    is none; their tables are made only for the one chosen."""
    config = getattr(module, "config", None)
    if config is None:
        return [], "it has no config attribute to read"
    device = next(iter(buffers.values())).device
    if device.type == "meta":
        return [], "it is on the meta device: its buffers hold no values to compare"
    options = {"device": device, "max_positions": max_positions}
    _rotary._CANDIDATES.on = True
    try:
        try:
            return [RotaryEmbedding(config, **options)], None
        except (TypeError, ValueError) as exc:
            if "layout=" not in str(exc):
                return [], f"sinpe.rope_config refuses its config: {exc}"[:300]
        return [RotaryEmbedding(config, layout=name, **options) for name in _LAYOUTS], None
    finally:
        _rotary._CANDIDATES.on = False


def _replace(model, old, new) -> None:
    """Every reference to ``old`` among the model's submodules now holds ``new``."""
    for parent in model.modules():
        for child_name, child in list(parent._modules.items()):
            if child is old:
                parent._modules[child_name] = new


def _model_dtype(model, default: torch.dtype) -> torch.dtype:
    """The dtype the model computes in (its first floating parameter's)."""
    for parameter in model.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return default


def _chosen(module, buffers: dict, max_positions) -> tuple[RotaryEmbedding | None, str]:
    """The first candidate that passes every check against ``module``, or why none does."""
    candidates, why = _candidates(module, buffers, max_positions)
    reasons = []
    for candidate in candidates:
        why = _verify(module, candidate, buffers)
        if why is None:
            return candidate, ""
        reasons.append(f"as {candidate.layout}: {why}" if len(candidates) > 1 else why)
    return None, f"{type(module).__name__}: " + "; ".join(reasons or [str(why)])


def _install(model, module, chosen: RotaryEmbedding, buffers: dict, dtype: torch.dtype) -> None:
    """``chosen`` takes ``module``'s config and place in ``model``, its tables made there."""
    chosen.config = module.config
    device = next(iter(buffers.values())).device
    chosen._make_tables(chosen._fixed_dtype() or _rotary._NAMES.get(dtype, "float32"), device)
    _replace(model, module, chosen)


def patch(model: Any, *, warn: bool = True, max_positions: int | None = None) -> PatchReport:
    """Replace every rotary module of a transformers ``model`` in place with an exact
    :class:`RotaryEmbedding`, each only after it is verified against the module it replaces.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers model (any device; before or after ``model.to(dtype)``). A module is
        a candidate when it holds ``inv_freq`` buffers (``inv_freq``, or ``<layer
        type>_inv_freq``) and its ``forward`` takes ``(x, position_ids[, layer_type])``.
    warn : bool, default True
        Warn (``RuntimeWarning``) naming each rotary module left alone and why.
    max_positions : int, optional
        The length of the replacements' tables (as :class:`RotaryEmbedding` takes it;
        default: the trained length, at most 2**18). They are made once a module is chosen,
        in the model's dtype, on its device.

    Returns
    -------
    PatchReport
        The names replaced (a list), with ``.left``: each module left alone and the check it
        failed (its config refused, an ``inv_freq`` entry, the attention factor, a probe
        position's value, the output's layout, shape or dtype), with the numbers; and
        ``.table_bytes``, the memory the replacements' tables take.
    """
    if max_positions is not None:
        max_positions = check.integer("max_positions", max_positions, 1)
    report = PatchReport()
    seen = set()
    dtype = _model_dtype(model, torch.float32)
    for name, module in list(model.named_modules()):
        if isinstance(module, (RotaryEmbedding, SinCosTable)) or id(module) in seen:
            continue
        buffers = _buffers(module)
        if not buffers and _takes_position_ids(module) and hasattr(module, "embed_positions"):
            seen.add(id(module))
            table, why = sin_cos_candidate(module)  # GPT-J, CodeGen: a (sin, cos) table
            if table is None:
                report.left[name] = f"{type(module).__name__}: {why}"
                continue
            _replace(model, module, table)
            report.append(name)
            report.table_bytes += table.embed_positions.nbytes
            continue
        if not buffers or not _takes_position_ids(module):
            if type(module).__name__.endswith("RotaryEmbedding"):
                report.left[name] = (
                    "no inv_freq buffer"
                    if not buffers
                    else "its forward does not take (x, position_ids[, layer_type])"
                )
            continue
        seen.add(id(module))
        chosen, why = _chosen(module, buffers, max_positions)
        if chosen is None:
            report.left[name] = why
            continue
        _install(model, module, chosen, buffers, dtype)
        report.append(name)
        report.table_bytes += chosen.table_bytes
    if warn and report.left:
        warnings.warn(
            "sinpe.torch.patch left these rotary modules alone: "
            + "; ".join(f"{name} ({why})" for name, why in report.left.items()),
            RuntimeWarning,
            stacklevel=2,
        )
    return report
