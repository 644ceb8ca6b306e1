"""The vLLM adapter: what one vLLM rotary layer holds -- its class, rotary width, rotation
(``is_neox_style``) and ``[cos | sin]`` cache -- extracted and handed to the verdict core
(``sinpe._verdict.judge``), which judges every row of the cache against the exact table of the
config; and (mode ``exact``) the cache filled with sinpe's correctly rounded table, on its
own device, in its dtype and layout.

Rows are read on the cache's device a block at a time (``judge.BLOCK_ENTRIES``: the host
holds one block of the cache and of the exact table at once, whatever its length). A class
this module does not know is "unchecked", named, never guessed at. Nothing here imports
vLLM; torch is imported only to read and write a layer's tensors.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._rope import rotary as rot
from .._rope.rope_types import ROPE_TYPES
from .._verdict.judge import (
    MAX_POSITION,
    MAX_WIDTH,
    Held,
    bounded,
    fit,
    judge_parameters,
    judge_table,
)
from .._verdict.layers import LayerUnknown, specs_of
from .._verdict.verdict import (
    DRIFT,
    MATCH,
    MISMATCH,
    Judged,
    Verdict,
    evidence,
    explained,
    finding,
    layer_json,
    layer_line,
    mismatch,
    not_judged,
    note,
    unchecked,
)

__all__ = ["KNOWN", "LayerReport", "audit_layer", "fill_exact"]

# The rotary classes of vLLM 0.32.0's rotary_embedding/ (tests/test_vllm.py enumerates them
# from the installed vLLM and fails when a class is added): the buffer each keeps its
# [cos | sin] table in, or the reason (a core reason code) it is not judged.
_CACHE = "cos_sin_cache"
_LONG_SHORT = "long_short_cos_sin_cache"
KNOWN = {
    "RotaryEmbedding": _CACHE,
    "LinearScalingRotaryEmbedding": _CACHE,
    "NTKScalingRotaryEmbedding": _CACHE,
    "DynamicNTKScalingRotaryEmbedding": _CACHE,
    "DynamicNTKAlphaRotaryEmbedding": _CACHE,
    "YaRNScalingRotaryEmbedding": _CACHE,
    "DeepseekScalingRotaryEmbedding": _CACHE,
    "Llama3RotaryEmbedding": _CACHE,
    "MRotaryEmbedding": _CACHE,
    "MRotaryEmbeddingInterleaved": _CACHE,
    "Ernie4_5_VLRotaryEmbedding": _CACHE,
    "BailingMRotaryEmbedding": _CACHE,
    "Phi3LongRoPEScaledRotaryEmbedding": _LONG_SHORT,
    "DualChunkRotaryEmbedding": "dual_chunk",
    "FourierRotaryEmbedding": "fope",
    "Llama4VisionRotaryEmbedding": "vision_grid",
    "DeepseekV4ScalingRotaryEmbedding": "inverse_tail",
    "Gemma4RotaryEmbedding": "padded",
}
# the attribute sinpe.sglang's hook sets on each rotary layer before SGLang grows its cache:
# the rows the layer made itself (the rows past them are judged apart)
MADE = "_sinpe_rows_made"
_NEOX_ONLY = ("Phi3LongRoPEScaledRotaryEmbedding",)  # it refuses is_neox_style=False
# a module under one of these parts of a model's name rotates an image's positions
_VISION = ("visual", "vision", "vision_model", "vision_tower", "vision_encoder", "vit")


class _LayerReportFields(NamedTuple):
    """The fields of ``LayerReport``."""

    names: tuple
    cls: str
    cache: str
    rows: int
    dtype: str
    rotary_dim: int
    judgment: Verdict
    notes: tuple = ()
    outcome: str = ""
    start: int = 0  # the position of the first row judged (SGLang's appended rows)


class LayerReport(_LayerReportFields, Judged):
    """One distinct rotary layer (for the layers of one config spec): its names in the
    model, class, the cache part judged, the core's ``Verdict`` (``judgment``), the notes,
    and what mode ``exact`` did (``outcome``: ``""`` not asked, ``"replaced"``, or why not)."""

    __slots__ = ()

    @property
    def note(self) -> str:
        return "; ".join(self.notes)

    @property
    def replaced(self) -> bool:
        return self.outcome == "replaced"

    def line(self) -> str:
        """The log line: where, what, the verdict, its reasons and notes, the outcome."""
        what: tuple = (self.cls,)
        if self.cache:
            what += (self.cache, f"{self.rows}x{self.rotary_dim}", self.dtype)
        return layer_line(self.names, what, self.judgment, self.notes, self.outcome)

    def as_json(self) -> dict:
        """Strict JSON-ready data (the core's verdict fields, then the layer's)."""
        held = {"cache": self.cache, "rows": self.rows, "dtype": self.dtype}
        held["rotary_dim"] = self.rotary_dim
        after = {"notes": list(self.notes), "replaced": self.replaced, "outcome": self.outcome}
        return layer_json(self.names, self.cls, self.judgment, held, after)


# --------------------------------------------------------------------------- reading


def _parts(layer, buffer: str) -> list:
    """``[(first row, rows, which, first position)]`` of a cache buffer (each part judged at
    the length ``first position + rows``): Phi-3 LongRoPE's short rows then its long ones
    (each a table from position 0); the rows an engine made, then those it appended past them
    (SGLang grows its caches after the model is built: ``sinpe.sglang`` records how many rows
    each had), judged apart; else the whole table."""
    cache = getattr(layer, buffer)
    total = bounded("the cache's rows", int(cache.shape[0]), MAX_POSITION, 1)
    if buffer == _LONG_SHORT:
        original = int(layer.original_max_position_embeddings)
        short = bounded("original_max_position_embeddings", original, total - 1, 1)
        return [(0, short, "short", 0), (short, total - short, "long", 0)]
    made = getattr(layer, MADE, None)
    if type(made) is int and 0 < made < total:
        return [(0, made, "", 0), (made, total - made, "grown", made)]
    return [(0, total, "", 0)]


def _reader(tensor, first: int, h: int):
    """``read(positions)``: the rows at ``positions`` (the core asks a block of consecutive
    rows at a time: a slice of the cache on its device) copied to the host, as float32
    ``(cos, sin)`` (float64 for a float64 cache), views of one block."""
    import torch

    def read(positions: np.ndarray):
        wide = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        lo = first + int(positions[0])
        if positions.size and int(positions[-1]) - int(positions[0]) + 1 == positions.size:
            rows = tensor[lo : lo + positions.size].to(wide)  # exact from any float dtype
        else:
            index = torch.as_tensor(first + positions, dtype=torch.long, device=tensor.device)
            rows = tensor.index_select(0, index).to(wide)
        values = rows.cpu().numpy()  # each half a view the core reads in place
        return values[:, :h], values[:, h : 2 * h]

    return read


def _rotation(layer, cls: str) -> tuple:
    neox = getattr(layer, "is_neox_style", True if cls in _NEOX_ONLY else None)
    if not isinstance(neox, bool):
        return None, ""
    return ("halves" if neox else "pairs"), evidence("neox_style", engine=neox)


def _judge_part(layer, spec, tensor, part: tuple, top: int | None):
    """The core's verdict on one part of a cache (``_parts``: its rows ``first .. first +
    rows``, the positions from ``start``), and the largest error of the rows within ``top``
    (the deployment's max_model_len)."""
    first, rows, _, start = part
    length = start + rows
    h = spec.head_dim // 2
    if tensor.ndim != 2 or tensor.shape[1] != 2 * h:
        return mismatch_width(tensor, spec), None
    read = _reader(tensor, first - start, h)
    table = judge_table(spec._one(), read, rows, np.arange(h), _dtype(tensor), length, start)
    judgment = table.verdict
    if judgment.verdict == MISMATCH and judgment.findings[0].code != "not_a_number":
        held = fit(read, rows) if start == 0 else None
        if held is not None:
            judgment = explained(judgment, judge_parameters(spec, held, length)[0])
    within = None
    if top is not None:
        errors = table.errors[table.positions < top]
        within = float(errors.max()) if errors.size and np.isfinite(errors).all() else None
    return judgment, within


def mismatch_width(tensor, spec) -> Verdict:
    """A cache whose [cos | sin] rows are not the config's rotary dim wide (the width said is
    the row's: the rotary dim the cache holds)."""
    width = int(tensor.shape[-1]) if tensor.ndim else 0
    return mismatch([finding("cache_width", engine=width, config=spec.head_dim)])


def _dtype(tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def in_vision(name: str) -> bool:
    """Whether a module's name places it in a vision encoder."""
    return any(part.startswith(_VISION) for part in name.split("."))


def is_rotary(module) -> bool:
    """Whether a module of a vLLM model is a rotary layer (a class sinpe knows, one named as
    vLLM names them, or one holding a [cos | sin] cache)."""
    cls = type(module).__name__
    return cls in KNOWN or cls.endswith("RotaryEmbedding") or hasattr(module, _CACHE)


def audit_layer(
    layer,
    spec,
    names,
    config: dict | None = None,
    max_model_len=None,
    permuted: bool = False,
    refused=None,
    engine: str = "vLLM",
) -> list:
    """The ``LayerReport`` of each cache of ``layer`` (for each config spec its layers
    ``names`` are judged by: ``config``, the config mapping, places each layer) against
    ``spec`` (the model's RoPE as transformers reads its config), every row.
    ``permuted``: the model permutes its query and key weights at load (vLLM's Llama 4 and
    Mistral-format loaders), so that a rotation other than the config's is the same.
    ``spec`` None: the config could not be read, for the reason ``refused`` (a finding),
    said where the class itself gives none. ``engine``: whose caches these are (vLLM, or
    SGLang, whose rotary classes are vLLM's), for the notes on what it computes otherwise."""
    cls = type(layer).__name__
    if all(in_vision(name) for name in names):
        return [_unchecked(layer, names, "vision", engine=cls)]
    known = KNOWN.get(cls)
    if known is None:
        return [_unchecked(layer, names, "unknown_class", engine=cls)]
    if known not in (_CACHE, _LONG_SHORT):
        return [_unchecked(layer, names, known)]
    if spec is None:
        return [_report(layer, names, "", 0, not_judged(refused))]
    factors = getattr(layer, "scaling_factors", None)
    if isinstance(factors, (list, tuple)) and len(factors) > 1:
        return [_unchecked(layer, names, "stacked_factors", engine=len(factors))]
    if not hasattr(layer, known) or not hasattr(layer, "rotary_dim"):
        missing = known if not hasattr(layer, known) else "rotary_dim"
        return [_unchecked(layer, names, "missing_attribute", engine=cls, config=missing)]
    try:
        groups = specs_of(spec, config or {}, names) if spec.layer_types else {spec: list(names)}
    except LayerUnknown as exc:
        return [_report(layer, names, "", 0, not_judged(exc.finding))]
    reports = []
    for one, group in groups.items():
        reports += _audit_group(layer, one, group, known, max_model_len, permuted, engine)
    return reports


# what each engine calls the deployment's length (its setting's name)
_LENGTH = {"vLLM": "max_model_len", "SGLang": "context_len"}


def _audit_group(
    layer, spec, names, buffer: str, max_model_len, permuted: bool, engine: str
) -> list:
    cls = type(layer).__name__
    rotary_dim = bounded("rotary_dim", int(layer.rotary_dim), MAX_WIDTH, 2)
    rotation, detail = _rotation(layer, cls)
    turned = () if rotation in (None, spec.rotation) or not permuted else (
        note("rotation_permuted_weights", engine=rotation, config=spec.rotation),
    )  # fmt: skip
    held = Held(width=rotary_dim, rotation=None if turned else rotation, rotation_detail=detail)
    structural, _ = judge_parameters(spec, held, None)
    tensor = getattr(layer, buffer)
    parts = _parts(layer, buffer)
    reports = []
    for part in parts:
        first, rows, which, start = part
        cache = buffer if len(parts) == 1 else f"{buffer}[{first}:{first + rows}]"
        notes = turned + _notes(layer, spec, which, engine, start)
        if any(f.code == "rotary_width" for f in structural):
            judgment = mismatch(structural)
        else:
            top = None if max_model_len is None else int(max_model_len)
            judgment, within = _judge_part(layer, spec, tensor, part, top)
            if structural:
                judgment = mismatch(structural + list(judgment.findings))._replace(
                    largest=judgment.largest, decades=judgment.decades, dtype=judgment.dtype
                )
            if within is not None:
                length = _LENGTH.get(engine, "max_model_len")
                notes = notes + (note("at_length", engine=within, config=top, length=length),)
        reports.append(_report(layer, names, cache, rows, judgment, notes)._replace(start=start))
    return reports


def _report(layer, names, cache, rows, judgment, notes=()) -> LayerReport:
    tensor = getattr(layer, cache.partition("[")[0], None) if cache else None
    return LayerReport(
        names=tuple(names),
        cls=type(layer).__name__,
        cache=cache,
        rows=rows,
        dtype="" if tensor is None else _dtype(tensor),
        rotary_dim=_int(getattr(layer, "rotary_dim", 0)),
        judgment=judgment,
        notes=tuple(notes),
    )


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _unchecked(layer, names, code: str, **fields) -> LayerReport:
    return _report(layer, names, "", 0, unchecked(code, **fields))


def _notes(layer, spec, which: str, engine: str = "vLLM", start: int = 0) -> tuple:
    """What the engine knowingly computes differently from transformers, for this layer."""
    # a family's own type too (HunYuan's ntk_alpha, PhiMoE's longrope_mscale): the spec read it
    record = ROPE_TYPES.get(spec.scaling.get("rope_type")) if spec.scaling else None
    if which == "grown":
        return (note("grown_rows", engine=engine, config=start),)
    if which and engine == "SGLang":  # its forward: any(positions > k), for the whole batch
        original = int(layer.original_max_position_embeddings)
        return (note("longrope_batch", engine=which, config=original),)
    if which:
        uses = "long" if getattr(layer, "use_long_rope", False) else "short"
        return (note("longrope_policy", engine=which, config=uses),)
    if record is not None and record.length_state == "grows":
        return (note("dynamic_static", engine=engine),)
    return ()


# --------------------------------------------------------------------------- exact mode


def fill_exact(layer, spec, report: LayerReport) -> LayerReport:
    """The rows ``report`` judged filled with sinpe's exact table, each value rounded once
    to the cache's dtype, on the cache's device and in its layout; only after a match or a
    drift. A failure leaves the cache as vLLM made it, never part-written; the report's
    ``outcome`` says what happened. On the CPU, in the process's own memory, the rows are
    written in place by one compiled call that checks no signal (``table_run(whole=True)``):
    it either raises before writing or ends whole, a signal's handler running after it
    returns (only the process's end stops it, and the cache ends with the process). Elsewhere
    (a device, shared memory, the NumPy backend) the new rows are made whole apart first,
    then copied in one call."""
    if report.verdict not in (MATCH, DRIFT):
        return report
    import torch

    buffer, _, rest = report.cache.partition("[")
    first = int(rest.split(":")[0]) if rest else 0
    target = getattr(layer, buffer)[first : first + report.rows]
    dtype = _numpy_dtype(target.dtype, torch)
    step = max(1, (1 << 20) // max(int(target.shape[1]), 1))
    start, length = report.start, report.start + report.rows  # the positions of the rows
    if target.device.type == "cpu":
        # positions start .. length - 1: the filler's run at the current length ``length``
        one, view = spec._one(), _host_view(target, torch)
        if _own_memory(target, view) and rot.fills_whole(one, length, "vllm"):
            out = (view.view(dtype),)  # bfloat16's int16 bits seen as bfloat16
            rot.table_run(one, report.rows, start, "vllm", dtype, None, "auto", "", out, True)
            return report._replace(outcome="replaced")
        host = np.empty(tuple(target.shape), dtype)  # made apart, then one copy of its bytes
        rot.table_run(one, report.rows, start, "vllm", dtype, None, "auto", "", (host,))
        np.copyto(view, _bits(host))
        return report._replace(outcome="replaced")
    made = torch.empty(target.shape, dtype=target.dtype, device=target.device)
    for lo in range(0, report.rows, step):
        n = min(step, report.rows - lo)
        (block,) = rot.table_block(spec._one(), length, start + lo, n, "vllm", dtype)
        made[lo : lo + n].copy_(_tensor(block, target.dtype, torch))
    target.copy_(made)
    return report._replace(outcome="replaced")


def _own_memory(tensor, view: np.ndarray) -> bool:
    """Whether a CPU cache may be written in place: memory of this process only (not shared
    with another, which could outlive a fill stopped by this process's end), one C-ordered
    block, writable."""
    return not tensor.is_shared() and view.flags.c_contiguous and view.flags.writeable


def _host_view(tensor, torch) -> np.ndarray:
    """A CPU tensor's memory as a NumPy array (bfloat16's bits as int16: NumPy has no
    bfloat16 of its own)."""
    if tensor.dtype == torch.bfloat16:
        return tensor.detach().view(torch.int16).numpy()
    return tensor.detach().numpy()


def _bits(block: np.ndarray) -> np.ndarray:
    return block.view(np.int16) if block.dtype.name == "bfloat16" else block


def _numpy_dtype(dtype, torch):
    from .._tables.checks import bfloat16

    found = {torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64}
    if dtype in found:
        return np.dtype(found[dtype])
    if dtype == torch.bfloat16:
        narrow = bfloat16()
        if narrow is None:
            raise ValueError("a bfloat16 cache needs ml_dtypes (pip install ml_dtypes)")
        return np.dtype(narrow)
    raise ValueError(f"a {dtype} cache: sinpe writes float64, float32, float16 and bfloat16")


def _tensor(block: np.ndarray, dtype, torch):
    if block.dtype.name == "bfloat16":
        return torch.from_numpy(block.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(block)).to(dtype)
