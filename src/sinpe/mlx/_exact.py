"""``sinpe.mlx.patch``: each RoPE module of an MLX model replaced by ``ExactRoPE`` (sinpe's
correctly rounded float32 table, looked up at the positions, and the replaced module's own
rotation and width), where the module reads the config (``check``: match or drift) and the
replacement gives what it gives on every input form it takes (an int offset, an array offset
of one or one per row, float32 and half inputs, elements past the rotary width); a module
that does not is left, with the reason."""

from __future__ import annotations

from typing import NamedTuple

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .._rope.config import load_config, rope_config
from .._tables import checks
from .._verdict.layers import layer_spec
from .._verdict.verdict import DRIFT, MATCH
from ._check import check
from ._probe import find_ropes, layer_index

__all__ = ["ExactRoPE", "PatchReport", "patch"]


class PatchReport(NamedTuple):
    """One distinct module: its names, class, whether it was replaced, and why not."""

    names: tuple
    cls: str
    replaced: bool
    reason: str


MAX_ROWS = 1 << 18  # the table's rows by default, at most (as sinpe.torch's MAX_POSITIONS)


class ExactRoPE(nn.Module):
    """The exact RoPE of ``spec`` for an MLX model: ``rope(x, offset=o)`` rotates the first
    ``dims`` elements of ``x`` (``(batch, heads, L, head_dim)``) by sinpe's float32 ``A cos``
    and ``A sin`` at positions ``o .. o + L - 1``, as ``rotation`` pairs them (``"halves"``:
    ``i`` with ``i + dims/2``, mlx's ``traditional=False``; ``"pairs"``: ``2i`` with
    ``2i + 1``), in float32, and returns ``x``'s dtype.

    It holds one compact table (``dims/2`` columns of cos and of sin, float32) of ``rows``
    positions, made at its first call (LongRoPE: one for the short factors, one for the long
    ones, each when first used): ``rows`` defaults to the model's ``max_position_embeddings``,
    at most ``MAX_ROWS`` (2**18); ``table_bytes`` says what the tables held take, checked
    against the process's memory before they are made. ``offset`` is an int (a call past the
    table gets its own rows, exactly, made for the call and not kept) or an ``mx.array`` of
    one offset or one per batch row (mlx_lm's batched caches; negative rows are left padding
    and read position 0), looked up without reading it on the host: a position past the
    table reads NaN, never a wrong row. For LongRoPE the short factors are used while the
    positions stay within the original length, the long ones past it (transformers' rule,
    by the call's last position)."""

    def __init__(self, spec, dims: int, rotation: str, rows: int | None = None):
        super().__init__()
        if rotation not in ("halves", "pairs"):
            raise ValueError(f"rotation must be 'halves' or 'pairs', got {rotation!r}")
        self._spec = spec
        self.dims = dims
        self.traditional = rotation == "pairs"
        if rows is not None:
            rows = checks.integer("rows", rows, 1)
        self._rows = rows or min(spec.max_position_embeddings or 8192, MAX_ROWS)
        original = spec.scaling.get("original_max_position_embeddings")
        self._original = int(original) if spec.length_dependent() and original else None
        self._tables: dict = {}

    @property
    def rows(self) -> int:
        """The positions the table holds (an array offset reads only these)."""
        return self._rows

    @property
    def table_bytes(self) -> int:
        """The bytes the tables held now take."""
        return sum(cos.nbytes + sin.nbytes for cos, sin in self._tables.values())

    def _length(self, key: str) -> int | None:
        if self._original is None:
            return None
        return self._original if key == "short" else max(self._rows, self._original + 1)

    def _at(self, positions: np.ndarray, key: str) -> tuple:
        """The compact rows at ``positions`` (float32), as NumPy."""
        cos, sin = self._spec.rope_at(
            positions, layout="compact", dtype=np.float32, seq_len=self._length(key)
        )
        return cos[:, : self.dims // 2], sin[:, : self.dims // 2]

    def _table(self, key: str) -> tuple:
        have = self._tables.get(key)
        if have is not None:
            return have
        half = self.dims // 2
        checks.reserve(
            2 * 2 * (self._rows + 1) * half * 4,  # NumPy's rows, then MLX's copy
            f"sinpe.mlx's float32 tables of {self._rows} positions (rows={self._rows})",
        )
        cos, sin = self._at(np.arange(self._rows), key)
        nan = np.full((1, half), np.nan, np.float32)  # the row past the table
        table = (mx.array(np.concatenate([cos, nan])), mx.array(np.concatenate([sin, nan])))
        self._tables[key] = table
        return table

    def _key(self, last: int) -> str:
        if self._original is None:
            return "one"
        return "short" if last < self._original else "long"

    def tables(self, offset, length: int) -> tuple:
        """The ``(cos, sin)`` rows of the call: ``(L, dims/2)``, or ``(B, 1, L, dims/2)``
        for one offset per row."""
        if not isinstance(offset, mx.array):
            start = int(offset)
            key = self._key(start + length - 1)
            if start < 0 or start + length > self._rows:  # past the table: exact, not kept
                cos, sin = self._at(np.arange(start, start + length), key)
                return mx.array(cos), mx.array(sin)
            cos, sin = self._table(key)
            return cos[start : start + length], sin[start : start + length]
        cos, sin = self._table(self._key(self._rows - 1))
        rows = cos.shape[0] - 1
        positions = mx.clip(offset.reshape(-1, 1) + mx.arange(length)[None], 0, rows)
        cos, sin = mx.take(cos, positions, axis=0), mx.take(sin, positions, axis=0)
        if offset.ndim == 0:
            return cos[0], sin[0]
        return cos[:, None], sin[:, None]

    def __call__(self, x, offset=0):
        cos, sin = self.tables(offset, x.shape[-2])
        return rotate(x, cos, sin, self.dims, self.traditional)


def rotate(x, cos, sin, dims: int, pairs: bool):
    """``x``'s first ``dims`` elements turned by ``cos``, ``sin`` (float32), the rest kept."""
    dtype = x.dtype
    part = x[..., :dims].astype(mx.float32)
    if pairs:
        x1, x2 = part[..., 0::2], part[..., 1::2]
        out = mx.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1).reshape(part.shape)
    else:
        half = dims // 2
        x1, x2 = part[..., :half], part[..., half:]
        out = mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    out = out.astype(dtype)
    if x.shape[-1] > dims:
        out = mx.concatenate([out, x[..., dims:]], axis=-1)
    return out


# the input forms a module is compared on: (dtype, offset: an int or an array's values, rows)
_FORMS: tuple = (
    (mx.float32, 0, 1),
    (mx.float32, 37, 2),
    (mx.float16, 5, 1),
    (mx.bfloat16, 5, 1),
    ("array", 3, 1),
    ("array", (6, 0), 2),
)


def _differs(original, candidate, dims: int) -> str:
    """Where the candidate gives other than the module on one of the input forms, or ""."""
    rng = np.random.default_rng(0)
    for dtype, offset, batch in _FORMS:
        x = mx.array(rng.standard_normal((batch, 2, 8, dims + 4)).astype(np.float32))
        if dtype == "array":
            offset, dtype = mx.array(np.array(offset)), mx.float32
        x = x.astype(dtype)
        try:
            want = original(x, offset=offset)
        except (TypeError, ValueError):  # a form the module does not take
            continue
        got = candidate(x, offset=offset)
        if got.shape != want.shape or got.dtype != want.dtype:
            found, given = f"{got.dtype} {got.shape}", f"{want.dtype} {want.shape}"
            return f"the replacement gives {found} where the module gives {given}"
        gap = float(mx.max(mx.abs(got.astype(mx.float32) - want.astype(mx.float32))).item())
        allowed = 1e-5 if dtype == mx.float32 else 1e-2
        if not gap <= allowed * 8:
            return f"the replacement differs by {gap:.3g} at offset {offset} ({dtype})"
    return ""


def patch(model, config, *, rows: int | None = None) -> list:
    """Replace each RoPE module of ``model`` that reads ``config`` by an ``ExactRoPE`` (one
    ``PatchReport`` per distinct module: replaced, or left and why). A module is replaced
    only where the core's verdict is match or drift, and the replacement gives what it gives
    on every input form. The layers whose modules are alike share one replacement, and so
    one table."""
    data = load_config(config)
    spec = rope_config(data)
    verdicts = {name: report for report in check(model, data) for name in report.names}
    candidates: dict = {}  # one replacement (one table) for the layers of one report
    done: dict = {}
    for name, parent, attribute, rope in find_ropes(model):
        report = verdicts[name]
        reason = "" if report.verdict in (MATCH, DRIFT) else report.reason or report.verdict
        if not reason and report.names not in candidates:
            one = layer_spec(spec, data, layer_index(name))
            candidates[report.names] = ExactRoPE(one, report.rotary_dim, report.rotation, rows)
        if not reason:
            reason = _differs(rope, candidates[report.names], report.rotary_dim)
        if not reason:
            parent[attribute] = candidates[report.names]
        key = (report.names, reason)
        done.setdefault(key, PatchReport(report.names, report.cls, not reason, reason))
    return list(done.values())
