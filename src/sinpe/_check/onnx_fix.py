"""``sinpe check model.onnx --fix OUT``: a copy of an ONNX model whose RoPE caches are
sinpe's exact tables, each value the exact one correctly rounded once to the cache's dtype.

Only a model whose caches read as their config (a match or a drift: float32 angles, a
double rounding) is fixed: a cache that is another config's (an unrounded YaRN ramp, the
wrong LongRoPE factors) is a misreading, not a rounding, and ``--fix`` never hides one; a
model that computes its RoPE in the graph (a traced ``inv_freq``) has no cache to replace.
The original is never written, nor linked: the new ``.onnx`` is the old one with the caches'
tensor records replaced (``onnx_file.rewrite``: every other byte as it was); caches held in
external data get a data file of their own beside it (``<name>.sinpe-rope.data``), so the
weights file is never written; caches held in the ``.onnx`` (LongRoPE's ``If`` branches) are
replaced there. OUT is a new folder (or an empty one: the source folder's other files copied
into it, so that ONNX Runtime GenAI runs it) or a new ``.onnx`` path (the external data it
names copied beside it, unless it is the model's own folder). Every file goes through the
writing room (``sinpe._files.writing``): copies, never hard links (a second link to the
weights would make ``onnx.load`` refuse the original too); no name taken is replaced or
written through (a symbolic link, another model's data file); all the files appear at the
end, or none (an error or Ctrl-C leaves nothing, and the retry works).
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

from .._files import onnx as onnx_file
from .._files import writing
from .._rope.config import load_config, rope_config
from .._rope.rotary import table_block
from .._tables.checks import bfloat16
from .._verdict.verdict import MISMATCH, UNCHECKED
from .onnx import _config, _regimes, _specs, check_onnx, find_caches

__all__ = ["fix"]

_SUFFIX = ".sinpe-rope.data"


def fix(path, out, config=None, *, report=None) -> str:
    """Write the exact copy of the ONNX model at ``path`` to ``out`` (see the module); its
    path. ``ValueError`` where the model's RoPE is not its config's, or a name is taken.
    ``report``: the model's ``check_onnx`` report, if the caller has it; else it is made
    while the weights are copied (``check_and_fix``)."""
    return check_and_fix(path, out, config, report=report)[1]


def check_and_fix(path, out, config=None, *, report=None) -> tuple:
    """``(check_onnx's report, the fixed copy's path)``. Without ``report`` the verdict is
    made on a thread of its own while the model's other files (its weights) are copied
    under temporary names: nothing is placed before the verdict allows it (a mismatch, an
    unjudged cache, any failure: every file made is removed, and the verdict's refusal is
    the error said, as when it came first)."""
    path, out = os.fspath(path), os.fspath(out)
    with _Verdict(path, config, report) as verdict:
        model = onnx_file.read(path)
        caches = find_caches(model)
        if not caches:
            verdict.fixable()  # a mismatch says more than a graph without caches
            raise ValueError(
                f"{path}: not fixed: its RoPE is computed in the graph, no cache holds it"
            )
        plan = _plan(path, out, model, caches)
        data = _config(path, config)
        spec = rope_config(load_config(data))
        replaced: dict = {}
        room = writing.new_folder(out) if plan.new_folder else writing.new_files(plan.folder)
        with room as files:
            for source, name in plan.brought:  # the weights, while the verdict is made
                files.copy(source, name)
            verdict.fixable()  # the room removes every file made if this refuses
            if plan.data_name:
                files.write(
                    plan.data_name,
                    lambda stream: _exact_caches(
                        spec, data, caches, replaced, stream, plan.data_name
                    ),
                )
            else:
                _exact_caches(spec, data, caches, replaced, None, None)
            files.write(plan.name, lambda stream: onnx_file.rewrite(path, stream, replaced))
        return verdict.report, os.path.join(plan.folder, plan.name)


class _Verdict:
    """``check_onnx(path, config)`` made on a thread beside the caller's work (or the report
    given); ``fixable()`` waits for it and refuses what ``--fix`` never writes. Leaving the
    ``with`` block waits for the thread, whatever ended the block: an error raised in the
    block gives way to the verdict's refusal, which says more."""

    def __init__(self, path: str, config, report):
        self.path, self.report = path, report
        self._error: BaseException | None = None
        self._thread = None
        if report is None:
            self._thread = threading.Thread(target=self._make, args=(config,), name="sinpe-verdict")
            self._thread.start()

    def _make(self, config) -> None:
        try:
            self.report = check_onnx(self.path, config)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            self._error = exc

    def __enter__(self):
        if self._thread is None:  # the report given: refused before any work, as ever
            self.fixable()
        return self

    def __exit__(self, kind, exc, traceback) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._thread.join()
        if isinstance(exc, Exception):  # a signal (KeyboardInterrupt, SystemExit) stays one
            refused = self._refusal()
            if refused is not None:
                raise refused from None

    def fixable(self) -> None:
        """The verdict, waited for; ``ValueError`` unless every cache matched or drifted."""
        if self._thread is not None:
            self._thread.join()
        refused = self._refusal()
        if refused is not None:
            raise refused

    def _refusal(self) -> BaseException | None:
        if self._error is not None:
            return self._error
        report = self.report
        if report is None:  # still being made: the block's own error stands
            return None
        if report.verdict == MISMATCH:
            return ValueError(
                f"{self.path}: not fixed: its RoPE is not the config's "
                f"({'; '.join(report.reasons)}); --fix replaces a table that reads as the "
                "config, never a misreading"
            )
        if report.verdict == UNCHECKED:  # a cache not judged is never replaced blind
            return ValueError(
                f"{self.path}: not fixed: not every cache was judged "
                f"({'; '.join(report.reasons)}); --fix replaces only tables that read as the "
                "config"
            )
        return None


class _Plan(NamedTuple):
    """Where ``fix`` writes: ``name`` (and ``data_name``, the caches' data file, if any) in
    ``folder`` (made, if ``new_folder``), with the ``brought`` files (source, name) copied."""

    folder: str
    new_folder: bool
    name: str
    data_name: str | None
    brought: list


def _plan(path: str, out: str, model, caches) -> _Plan:
    """The files ``fix`` writes, every name checked free before any work."""
    source = os.path.dirname(os.path.abspath(path))
    if os.path.abspath(out) == os.path.abspath(path):
        raise ValueError(f"--fix {out}: that is the model itself (the original is never written)")
    if out.lower().endswith(".onnx"):
        folder, name, new_folder = os.path.dirname(out), os.path.basename(out), False
        writing.check_new(out)  # its folder exists and is writable, the name is free
        same = os.path.samefile(folder or os.curdir, source)  # the model's data is there
        brought = [] if same else sorted(_external_names(model.graph))
    else:
        folder, name, new_folder = out, os.path.basename(path), _new_folder(out)
        brought = [
            n
            for n in sorted(os.listdir(source))
            if n != name and not n.endswith(_SUFFIX) and os.path.isfile(os.path.join(source, n))
        ]
    external = any(t.where[0] == "external" for c in caches for t in (c.cos, c.sin))
    data_name = os.path.splitext(name)[0] + _SUFFIX if external else None
    names = [n for n in (name, data_name, *brought) if n]
    if len(set(names)) < len(names):
        raise ValueError(f"--fix {out}: the model's data file would have the copy's name")
    for each in names if not new_folder else ():
        writing.check_new(os.path.join(folder, each))
    return _Plan(
        folder, new_folder, name, data_name, [(os.path.join(source, n), n) for n in brought]
    )


def _new_folder(out: str) -> bool:
    """Whether the folder OUT is made (else it is an empty folder there): refused where it
    is a symbolic link, a file or a folder that holds anything."""
    if not os.path.lexists(out) or os.path.islink(out):
        writing.check_new(out)  # its parent exists and is writable; a link is refused
        return True
    if not os.path.isdir(out) or os.listdir(out):
        raise ValueError(f"--fix {out}: give a new folder (or an empty one), or a .onnx path")
    return False


def _external_names(graph) -> set:
    """The data files the model's external tensors name."""
    return {os.path.basename(t.where[1]) for t in _tensors(graph) if t.where[0] == "external"}


def _tensors(graph):
    yield from graph.initializers.values()
    for node in graph.nodes:
        for value in node.attributes.values():
            if isinstance(value, onnx_file.Tensor):
                yield value
            elif isinstance(value, onnx_file.Graph):
                yield from _tensors(value)


def _exact(spec, data: dict, cache, data_type: int) -> tuple:
    """The exact ``(cos, sin)`` of a cache (its regimes, each at its length) as the cache's
    tensors hold them: ``data_type``'s values (bfloat16 as its bits), little-endian. Both
    come from one run of the filler per regime (``table_block``: consecutive positions)."""
    rows, half = cache.cos.dims
    dtype = onnx_file.DTYPES[data_type][0]
    narrow = bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    if narrow is None:
        raise ValueError("a bfloat16 cache needs ml_dtypes (pip install ml_dtypes)")
    one = next(iter(_specs(spec, data, cache.users).values()), spec)
    parts = [table_block(one._one(), length, 0, count, "compact", narrow)
             for _, count, length in _regimes(one, rows)]  # fmt: skip
    tables = []
    for plane in (0, 1):
        blocks = [part[plane][:, :half] for part in parts]
        values = np.ascontiguousarray(blocks[0]) if len(blocks) == 1 else np.concatenate(blocks)
        bits = values.view(np.uint16) if dtype == "bfloat16" else values
        tables.append(np.asarray(bits, bits.dtype.newbyteorder("<")))  # a copy only if big-endian
    return tuple(tables)


def _exact_caches(spec, data: dict, caches, replaced: dict, stream, name) -> None:
    """The new TensorProto of each cache tensor in ``replaced`` (offset in the old file ->
    bytes), the external ones' values written to ``stream``, the copy's own data file
    ``name``."""
    offset = 0
    for cache in caches:
        made: dict = {}  # data type -> (cos, sin): a cache's two tables made in one run
        for plane, tensor in enumerate((cache.cos, cache.sin)):
            if tensor.span[0] in replaced:
                continue
            if tensor.data_type not in made:
                made[tensor.data_type] = _exact(spec, data, cache, tensor.data_type)
            values = made[tensor.data_type][plane]
            if tensor.where[0] == "external":
                stream.write(memoryview(values).cast("B"))
                place = (name, offset, values.nbytes)
                replaced[tensor.span[0]] = onnx_file.tensor_proto(tensor, external=place)
                offset += values.nbytes
            else:
                replaced[tensor.span[0]] = onnx_file.tensor_proto(tensor, values.tobytes())
