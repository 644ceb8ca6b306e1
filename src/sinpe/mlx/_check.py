"""``sinpe.mlx.check``: each RoPE module of an MLX model probed at sampled positions up to the
model's length and judged against the exact table of its config, in ``sinpe check``'s words
(match, drift, mismatch), with the error by position decade and, for a mismatch, the cause
found by probing the module: its rotation, width, attention factor, base (fitted from its
frequencies) and scaling, each against the config's."""

from __future__ import annotations

import math
import pathlib
from typing import NamedTuple

import numpy as np

from .._check.compare import VERDICTS, judge_rows, layer_json, layer_line, number, verdict_text
from .._rope.config import load_config, rope_config
from .._rope.rope_types import ROPE_TYPES
from ._probe import dims_of, find_ropes, fit_frequencies, layer_index, measure, rotation_of

__all__ = ["LayerReport", "check", "check_folder", "layer_spec", "positions_of"]

FIT_TOLERANCE = 1e-4  # relative: a frequency fitted from float32 angles


class LayerReport(NamedTuple):
    """One distinct RoPE module (the layers that hold one like it): its names, class, width,
    rotation, the verdict (``"match"``, ``"drift"``, ``"mismatch"``) and its words, the
    reason for a mismatch, the largest error by position decade, and a note."""

    names: tuple
    cls: str
    rotary_dim: int
    rotation: str
    verdict: str
    text: str
    reason: str
    decades: list
    largest: float
    note: str = ""

    def line(self) -> str:
        """One line: where, what, the verdict and its reason."""
        return layer_line(self, f"{self.cls} {self.rotation} x{self.rotary_dim}")

    def as_json(self) -> dict:
        return layer_json(self)


def _layer_types(config: dict) -> list | None:
    found = config.get("layer_types")
    if found is None and isinstance(config.get("text_config"), dict):
        found = config["text_config"].get("layer_types")
    return found


def layer_spec(spec, config: dict, index: int | None):
    """The spec of layer ``index``: the config's own for one RoPE; for a RoPE per layer type,
    the type ``layer_types`` gives the layer (else Gemma's ``sliding_window_pattern``: every
    ``pattern``-th layer full, the others sliding)."""
    if spec.layer_types is None:
        return spec
    if index is None:
        raise ValueError("a config with a RoPE per layer type needs the layer of each module")
    types = _layer_types(config)
    if types is not None and index < len(types):
        return spec.layer(types[index])
    pattern = config.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 0:
        kind = "full_attention" if (index + 1) % pattern == 0 else "sliding_attention"
        return spec.layer(kind)
    raise ValueError(f"the config says no layer type for layer {index} (layer_types)")


def positions_of(length: int) -> list:
    """``(offset, rows)`` blocks probed: 0-63, 8 rows at 100, 1000, 10,000 and 100,000 (those
    within ``length``) and 24 blocks of 8 spread to the end."""
    top = max(int(length), 72)
    blocks = [(0, min(64, top))]
    blocks += [(p, 8) for p in (100, 1000, 10_000, 100_000) if p + 8 <= top]
    blocks += [(int(p), 8) for p in np.linspace(64, top - 8, 24)]
    return sorted(set(blocks))


def _regimes(spec) -> list:
    """``(current length, largest position)`` pairs to judge at: one, or for a type whose
    values switch with the length, the original length and the trained one."""
    length = int(spec.max_position_embeddings or 4096)
    original = spec.scaling.get("original_max_position_embeddings")
    if spec.length_dependent() and isinstance(original, int) and original < length:
        return [(original, original), (length, length)]
    return [(length, length)]


def _judge(rope, spec, dims: int, rotation: str, length: int, top: int):
    rows = [
        measure(rope, dims, rotation, o, n) + (np.arange(o, o + n),) for o, n in positions_of(top)
    ]
    cos = np.concatenate([r[0] for r in rows])
    sin = np.concatenate([r[1] for r in rows])
    positions = np.concatenate([r[2] for r in rows])
    return judge_rows(spec, cos, sin, positions, length)


def check_module(rope, spec) -> tuple:
    """``(verdict, words, reason, decades, largest, dims, rotation)`` of one module."""
    dims = dims_of(rope, spec.head_dim)
    rotation = rotation_of(rope, dims)
    if dims != spec.head_dim:
        reason = f"rotary width {dims} where the config gives {spec.head_dim}"
        return "mismatch", VERDICTS["mismatch"], reason, [], math.inf, dims, rotation
    reports = [
        (length, _judge(rope, spec, dims, rotation, length, top)) for length, top in _regimes(spec)
    ]
    decades: dict = {}
    for _, report in reports:
        for first, last, error in report.decades:
            key = (first, last)
            decades[key] = max(decades.get(key, 0.0), error)
    rows = sorted((a, b, e) for (a, b), e in decades.items())
    largest = max(report.largest for _, report in reports)
    failed = [(length, r) for length, r in reports if r.verdict == "mismatch"]
    worst = failed[0][1] if failed else max((r for _, r in reports), key=lambda r: r.largest)
    reason = ""
    if spec.rotation is not None and rotation != spec.rotation:
        reason = f"rotates {rotation} where the model's attention rotates {spec.rotation}"
        return "mismatch", VERDICTS["mismatch"], reason, rows, largest, dims, rotation
    if failed:
        reason = _cause(rope, spec, dims, rotation, [length for length, _ in failed], reports)
    return worst.verdict, verdict_text(worst), reason, rows, largest, dims, rotation


def _cause(rope, spec, dims: int, rotation: str, failed: list, reports: list) -> str:
    """Why the module's values are not this config's: its attention factor, frequencies,
    base and scaling against the config's (probed, not guessed from its class)."""
    record = ROPE_TYPES[spec.scaling["rope_type"]]
    title = record.title or record.name
    if len(reports) > len(failed):  # one length regime reads as the config, the other not
        passed = next(length for length, r in reports if r.verdict != "mismatch")
        original = spec.scaling.get("original_max_position_embeddings")
        regime = "long" if passed > original else "short"
        other = "short" if regime == "long" else "long"
        return (
            f"{title} {regime} factors at every length (transformers: {other} factors while "
            f"the sequence is {'<=' if other == 'short' else '>'} {original})"
        )
    found = []
    cos0, _ = measure(rope, dims, rotation, 0, 1)
    want, factor = spec.frequencies(failed[0])
    if not math.isclose(float(cos0[0, 0]), factor, rel_tol=1e-6):
        got_factor = float(cos0[0, 0])
        found.append(
            f"attention factor {number(got_factor)} where the config gives {number(factor)}"
        )
    got = fit_frequencies(rope, dims, rotation)
    if np.allclose(got, want, rtol=FIT_TOLERANCE):
        return "; ".join(found) or "frequencies as the config's; the values differ otherwise"
    base = float((got[0] / got[1]) ** (dims / 2))
    if not math.isclose(base, spec.base, rel_tol=1e-3):
        fitted = number(float(f"{base:.5g}"))  # 5 digits: fitted from float32 angles
        found.append(f"base {fitted} where the config gives {number(spec.base)}")
    plain = base ** (-np.arange(0, dims, 2) / dims)
    ratio = plain / got
    if np.allclose(ratio, 1.0, rtol=FIT_TOLERANCE) and not record.plain:
        found.append(f"{title} scaling not applied")
    elif np.allclose(ratio, ratio[0], rtol=FIT_TOLERANCE) and not np.isclose(ratio[0], 1.0):
        found.append(f"every frequency divided by {number(float(ratio[0]))}")
    elif not np.allclose(ratio, 1.0, rtol=FIT_TOLERANCE):
        error = float(np.max(np.abs(got / want - 1)))
        found.append(f"frequencies differ from the config's {title} by up to {error:.3g}")
    return "; ".join(found)


def _softmax_note(attention, spec) -> str:
    """DeepSeek's softmax scale (YaRN's ``mscale_all_dim`` squared), where the attention
    module keeps ``scale`` and ``q_head_dim``."""
    scale, width = getattr(attention, "scale", None), getattr(attention, "q_head_dim", None)
    if not isinstance(scale, float) or not isinstance(width, int):
        return ""
    want = width**-0.5 * spec.softmax_scale
    if math.isclose(scale, want, rel_tol=1e-6):
        return ""
    return f"softmax scale {scale:.6g} where the config gives {want:.6g}"


def _signature(rope) -> tuple:
    """What tells two modules apart: their class and attributes (a table's bytes)."""
    items = []
    for key, value in sorted(getattr(rope, "__dict__", {}).items()):
        items.append((key, value.tobytes() if hasattr(value, "tobytes") else repr(value)))
    for key in ("dims", "base", "scale", "traditional", "mscale", "_scale", "_freqs"):
        value = getattr(rope, key, None)
        items.append((key, np.array(value).tobytes() if value is not None else None))
    return type(rope).__name__, tuple(items)


def check(model, config) -> list:
    """One ``LayerReport`` per distinct RoPE module of ``model`` (an MLX model, as mlx_lm
    loads it) against ``config`` (its config.json path or mapping, read as transformers
    reads it)."""
    data = load_config(config)
    spec = rope_config(data)
    groups: dict = {}
    for name, parent, _, rope in find_ropes(model):
        one = layer_spec(spec, data, layer_index(name))
        key = (_signature(rope), one, _softmax_note(parent, one))
        groups.setdefault(key, (rope, one, []))[2].append(name)
    if not groups:
        raise ValueError("the model has no RoPE module (no layer keeps a 'rope')")
    reports = []
    for (_, _, note), (rope, one, names) in groups.items():
        verdict, text, reason, rows, largest, dims, rotation = check_module(rope, one)
        if note and verdict != "mismatch":
            verdict, text, reason = "mismatch", VERDICTS["mismatch"], note
        elif note:
            reason = f"{reason}; {note}"
        reports.append(
            LayerReport(
                tuple(names),
                type(rope).__name__,
                dims,
                rotation,
                verdict,
                text,
                reason,
                rows,
                largest,
            )
        )
    return reports


def check_folder(folder, config=None) -> list:
    """``check`` of the model in ``folder`` as mlx_lm loads it, against ``config`` (default:
    the folder's config.json)."""
    try:
        from mlx_lm.utils import load_model
    except ImportError as exc:
        raise ImportError("mlx-lm, which loads model folders: pip install 'sinpe[mlx]'") from exc
    folder = pathlib.Path(folder)
    model, _ = load_model(folder)
    return check(model, folder / "config.json" if config is None else config)
