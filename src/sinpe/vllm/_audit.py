"""One vLLM rotary layer against the exact table of the model's config: which cache it holds,
the verdict ``sinpe check`` gives on sampled rows, the likeliest reason for a mismatch, and
(mode ``exact``) the cache filled with sinpe's correctly rounded table in place.

Nothing here imports vLLM: a layer is read through the attributes every class of vLLM's
``rotary_embedding/`` keeps (``head_size``, ``rotary_dim``, ``base``, ``is_neox_style``, its
cache buffers), so a class this module does not know is reported as unchecked, never guessed.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._check.compare import compare, explanation_text, layer_json, layer_line, verdict_text
from .._check.files import Stored
from .._rope import rotary as rot
from .._rope.rope_types import lookup

__all__ = ["LayerReport", "audit_layer", "caches", "fill_exact", "unchecked"]

# classes whose cache is not a [cos | sin] table of one RoPE: why each is left unchecked
UNCHECKED = {
    "DualChunkRotaryEmbedding": "dual-chunk attention keeps five caches of its own",
    "FourierRotaryEmbedding": "FoPE mixes its cache with learned weights at the first forward",
    "Llama4VisionRotaryEmbedding": "a complex 2-D vision grid, not a cos/sin table of positions",
    "DeepseekV4ScalingRotaryEmbedding": "DeepSeek-V4 rotates the last dimensions, inverse too",
    "Gemma4RotaryEmbedding": "Gemma 4 pads its cache to the head size with cos 1, sin 0",
}


class LayerReport(NamedTuple):
    """One distinct rotary layer: its names in the model, class, what was compared and the
    verdict (``"match"``, ``"drift"``, ``"mismatch"`` or ``"unchecked"``) with its words
    and reason, what the largest error was by position decade, a note on semantics vLLM
    knowingly gives differently, and whether mode ``exact`` replaced its cache."""

    names: tuple
    cls: str
    cache: str
    rows: int
    dtype: str
    rotary_dim: int
    verdict: str
    text: str
    reason: str
    decades: list
    largest: float
    note: str
    replaced: bool

    def line(self) -> str:
        """The log line: where, what, the verdict and its reason."""
        extra = " [replaced by sinpe's exact table]" if self.replaced else ""
        what = f"{self.cls} {self.cache} {self.rows}x{self.rotary_dim} {self.dtype}"
        return layer_line(self, what, extra)

    def as_json(self) -> dict:
        return layer_json(self)


def _stored(tensor) -> Stored:
    """A cache tensor as ``sinpe check`` reads arrays (a narrow dtype as its bits)."""
    import torch

    name = str(tensor.dtype).removeprefix("torch.")
    values = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        values = values.view(torch.int16)
        return Stored(values.numpy().view(np.uint16), name, "cos_sin_cache")
    return Stored(values.numpy(), name, "cos_sin_cache")


def caches(layer) -> list:
    """``[(buffer name, first row, rows, length the rows are judged at)]`` of the layer's
    [cos | sin] tables: one for most classes; Phi-3 LongRoPE's short rows, then its long ones;
    the rows of a linear layer's cache that hold the factor of the config."""
    name = type(layer).__name__
    if hasattr(layer, "long_short_cos_sin_cache"):
        short = int(layer.original_max_position_embeddings)
        total = int(layer.long_short_cos_sin_cache.shape[0])
        return [
            ("long_short_cos_sin_cache", 0, short, short),
            ("long_short_cos_sin_cache", short, total - short, total - short),
        ]
    cache = getattr(layer, "cos_sin_cache", None)
    if cache is None or cache.ndim != 2 or name in UNCHECKED:
        return []
    rows = int(cache.shape[0])
    factors = getattr(layer, "scaling_factors", None)
    if factors is not None and len(factors) > 1:  # several linear factors stacked
        return []
    return [("cos_sin_cache", 0, rows, rows)]


def _why_unchecked(layer) -> str:
    factors = getattr(layer, "scaling_factors", None)
    if factors is not None and len(factors) > 1:
        return f"{len(factors)} linear scaling factors stacked in one cache"
    return UNCHECKED.get(type(layer).__name__, "no [cos | sin] cache sinpe knows in it")


def _factor_reason(tensor, spec, length: int) -> str:
    """ "attention factor a where the config gives b" when row 0's first cos (the factor
    times cos 0) says so."""
    _, factor = rot.frequencies(spec._one(), length)
    first = float(tensor[0, 0])
    if math.isclose(first, factor, rel_tol=2.0**-7):
        return ""
    return f"attention factor {first:.6g} where the config gives {factor:.6g}"


def _rotation_reason(layer, spec) -> str:
    neox = bool(getattr(layer, "is_neox_style", True))
    vllm = "halves" if neox else "pairs"
    if spec.rotation is None or spec.rotation == vllm:
        return ""
    return f"vLLM rotates {vllm} (is_neox_style={neox}) where the model rotates {spec.rotation}"


def _note(layer, spec, part: int) -> str:
    """What vLLM knowingly computes differently from transformers, for this layer."""
    record = lookup(spec.scaling.get("rope_type")) if spec.scaling else None
    if hasattr(layer, "long_short_cos_sin_cache"):
        which = "short" if part == 0 else "long"
        uses = "long" if getattr(layer, "use_long_rope", False) else "short"
        return (
            f"the {which} factors' rows; vLLM uses its {uses} factors for every sequence "
            "(max_model_len against the original length), transformers switches per sequence "
            "at the original length"
        )
    if record is not None and record.length_state == "grows":
        return (
            "vLLM's cache is static, built at its largest length; transformers' dynamic base "
            "follows the current length (the two agree only for sequences that long)"
        )
    return ""


def audit_layer(layer, spec, names) -> list:
    """The ``LayerReport`` of each cache of ``layer`` against ``spec`` (the model's RoPE as
    transformers reads its config), on sampled rows."""
    found = caches(layer)
    cls = type(layer).__name__
    rotary_dim = int(getattr(layer, "rotary_dim", 0))
    if not found:
        return [unchecked(layer, names, _why_unchecked(layer))]
    reports = []
    for part, (buffer, first, rows, length) in enumerate(found):
        tensor = getattr(layer, buffer)[first : first + rows]
        verdict, text, reason, report = _judge(layer, spec, tensor, length)
        rotation = _rotation_reason(layer, spec)
        reports.append(
            LayerReport(
                names=tuple(names),
                cls=cls,
                cache=buffer if len(found) == 1 else f"{buffer}[{first}:{first + rows}]",
                rows=rows,
                dtype=str(tensor.dtype).removeprefix("torch."),
                rotary_dim=rotary_dim,
                verdict="mismatch" if rotation else verdict,
                text=_MISMATCH if rotation else text,
                reason="; ".join(r for r in (rotation, reason) if r),
                decades=[] if report is None else report.decades,
                largest=math.nan if report is None else report.largest,
                note=_note(layer, spec, part),
                replaced=False,
            )
        )
    return reports


_MISMATCH = "does not match this config"


def _judge(layer, spec, tensor, length: int) -> tuple:
    """``(verdict, its words, the likeliest reason, the Report or None)`` of one cache."""
    rotary_dim = int(getattr(layer, "rotary_dim", 0))
    if rotary_dim != spec.head_dim:
        reason = f"rotary width {rotary_dim} where the config gives {spec.head_dim}"
        return "mismatch", _MISMATCH, reason, None
    values = _stored(tensor)
    width = int(layer.head_size)
    try:
        report = compare(spec, [values], layout="vllm", full_width=width, sampled=True)
    except ValueError as exc:
        return "mismatch", _MISMATCH, str(exc), None
    reason = ""
    if report.verdict == "mismatch":
        reason = _factor_reason(tensor, spec, length) or explanation_text(report, spec, 0)
    return report.verdict, verdict_text(report), reason, report


def unchecked(layer, names, why: str) -> LayerReport:
    """The report of a layer sinpe does not judge, and why."""
    return LayerReport(
        names=tuple(names),
        cls=type(layer).__name__,
        cache="",
        rows=0,
        dtype="",
        rotary_dim=int(getattr(layer, "rotary_dim", 0)),
        verdict="unchecked",
        text="unchecked",
        reason=why,
        decades=[],
        largest=math.nan,
        note="",
        replaced=False,
    )


def fill_exact(layer, spec, report: LayerReport) -> LayerReport:
    """The layer's cache (the rows ``report`` judged) filled in place with sinpe's exact
    table in its dtype, each value rounded once; only after a match or a drift."""
    if report.verdict not in ("match", "drift"):
        return report
    buffer, _, rest = report.cache.partition("[")
    first = int(rest.split(":")[0]) if rest else 0
    tensor = getattr(layer, buffer)[first : first + report.rows]
    view = _writable(tensor)
    rot.table_run(
        spec._one(), report.rows, 0, "vllm", view.dtype, None, "auto", "sinpe.vllm", (view,)
    )
    return report._replace(replaced=True)


def _writable(tensor) -> np.ndarray:
    """A NumPy view of a contiguous CPU cache tensor sharing its memory."""
    import torch

    from .._tables.checks import bfloat16

    if tensor.device.type != "cpu" or not tensor.is_contiguous():
        raise ValueError(f"the cache is on {tensor.device} or not contiguous: not replaced")
    if tensor.dtype == torch.bfloat16:
        dtype = bfloat16()
        if dtype is None:
            raise ValueError("a bfloat16 cache needs ml_dtypes (pip install ml_dtypes)")
        return tensor.view(torch.int16).numpy().view(dtype)
    return tensor.numpy()
