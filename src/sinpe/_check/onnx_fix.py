"""``sinpe check model.onnx --fix OUT``: a copy of an ONNX model whose RoPE caches are
sinpe's exact tables, each value the exact one correctly rounded once to the cache's dtype.

Only a model whose caches read as their config (a match or a drift: float32 angles, a
double rounding) is fixed: a cache that is another config's (an unrounded YaRN ramp, the
wrong LongRoPE factors) is a misreading, not a rounding, and ``--fix`` never hides one; a
model that computes its RoPE in the graph (a traced ``inv_freq``) has no cache to replace.
The original is never written: the new ``.onnx`` is the old one with the caches' tensor
records replaced (``onnx_file.rewrite``: every other byte as it was); caches held in
external data get a data file of their own beside it (``<name>.sinpe-rope.data``), so a
weights file linked (or copied) from the original is never written through; caches held in
the ``.onnx`` (LongRoPE's ``If`` branches) are replaced there. OUT is a new folder (the
source folder's other files linked or copied into it, so that ONNX Runtime GenAI runs it) or
a ``.onnx`` path (the external data it names linked or copied beside it).
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from .._rope.config import load_config, rope_config
from .._tables.checks import bfloat16
from . import onnx_file
from .onnx import _config, _regimes, _specs, check_onnx, find_caches
from .verdict import MISMATCH

__all__ = ["fix"]

_SUFFIX = ".sinpe-rope.data"


def fix(path, out, config=None, *, report=None) -> str:
    """Write the exact copy of the ONNX model at ``path`` to ``out`` (see the module); its
    path. ``ValueError`` where the model's RoPE is not its config's, or OUT is taken."""
    path = os.fspath(path)
    report = report or check_onnx(path, config)
    if report.verdict == MISMATCH:
        raise ValueError(
            f"{path}: not fixed: its RoPE is not the config's ({'; '.join(report.reasons)}); "
            "--fix replaces a table that reads as the config, never a misreading"
        )
    model = onnx_file.read(path)
    caches = find_caches(model)
    if not caches:
        raise ValueError(f"{path}: not fixed: its RoPE is computed in the graph, no cache holds it")
    target = _target(path, os.fspath(out))
    data = _config(path, config)
    spec = rope_config(load_config(data))
    replaced = _write_caches(model, spec, data, caches, target)
    onnx_file.rewrite(path, target, replaced)
    return target


def _target(path: str, out: str) -> str:
    """The ``.onnx`` written, its folder made and filled with what the model needs."""
    source = os.path.dirname(os.path.abspath(path))
    if os.path.abspath(out) == os.path.abspath(path):
        raise ValueError(f"--fix {out}: that is the model itself (the original is never written)")
    if out.lower().endswith(".onnx"):
        if os.path.exists(out):
            raise ValueError(f"--fix {out}: the file exists")
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise ValueError(f"--fix {out}: the folder {folder} does not exist")
        if os.path.realpath(folder) != os.path.realpath(source):
            _bring(path, source, folder, only_data=True)
        return out
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ValueError(f"--fix {out}: give a new folder (or an empty one), or a .onnx path")
    os.makedirs(out, exist_ok=True)
    _bring(path, source, out, only_data=False)
    return os.path.join(out, os.path.basename(path))


def _bring(path: str, source: str, folder: str, only_data: bool) -> None:
    """The source folder's files (or only the model's external data) linked, else copied,
    into ``folder``."""
    model = onnx_file.read(path)
    wanted = {
        os.path.basename(t.where[1]) for t in _tensors(model.graph) if t.where[0] == "external"
    }
    for name in sorted(os.listdir(source)):
        full = os.path.join(source, name)
        skip = name == os.path.basename(path) or name.endswith(_SUFFIX) or not os.path.isfile(full)
        if skip or (only_data and name not in wanted):
            continue
        try:
            os.link(full, os.path.join(folder, name))
        except OSError:
            shutil.copy2(full, os.path.join(folder, name))


def _tensors(graph):
    yield from graph.initializers.values()
    for node in graph.nodes:
        for value in node.attributes.values():
            if isinstance(value, onnx_file.Tensor):
                yield value
            elif isinstance(value, onnx_file.Graph):
                yield from _tensors(value)


def _exact(spec, data: dict, cache, tensor) -> bytes:
    """The exact table of a cache tensor (its regimes, each at its length), as its bytes."""
    rows, half = tensor.dims
    dtype = onnx_file.DTYPES[tensor.data_type][0]
    narrow = bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    if narrow is None:
        raise ValueError("a bfloat16 cache needs ml_dtypes (pip install ml_dtypes)")
    blocks = []
    one = next(iter(_specs(spec, data, cache.users).values()), spec)
    part = 0 if tensor is cache.cos else 1
    for _, count, length in _regimes(one, rows):
        table = one.rope_at(np.arange(count), layout="compact", dtype=narrow, seq_len=length)
        blocks.append(np.ascontiguousarray(table[part][:, :half]))
    values = np.concatenate(blocks)
    bits = values.view(np.uint16) if dtype == "bfloat16" else values
    return bits.astype(bits.dtype.newbyteorder("<")).tobytes()


def _write_caches(model, spec, data: dict, caches, target: str) -> dict:
    """The new TensorProto of each cache tensor (offset in the old file -> bytes), the
    external ones' values written to the copy's own data file."""
    data_file = os.path.splitext(target)[0] + _SUFFIX
    replaced: dict = {}
    offset = 0
    with open(data_file, "wb") as stream:
        for cache in caches:
            for tensor in (cache.cos, cache.sin):
                if tensor.span[0] in replaced:
                    continue
                values = _exact(spec, data, cache, tensor)
                if tensor.where[0] == "external":
                    stream.write(values)
                    place = (os.path.basename(data_file), offset, len(values))
                    replaced[tensor.span[0]] = onnx_file.tensor_proto(tensor, external=place)
                    offset += len(values)
                else:
                    replaced[tensor.span[0]] = onnx_file.tensor_proto(tensor, values)
    if not offset:
        os.remove(data_file)
    return replaced
