"""Reading an OpenVINO IR (``openvino_model.xml`` and its ``.bin``) for ``sinpe check``, bounded.

The XML is read through the reading room (``reading.read_text``: a regular file only, at
most ``MAX_XML_BYTES``) and parsed by the standard library's expat parser with every door
shut: a ``DOCTYPE`` is refused where it starts (so no entity is ever declared, expanded or
fetched: no billion laughs, no external entity), parameter entities are never parsed, and
the elements, attributes, layers and edges are counted as they come and refused past
``MAX_ELEMENTS``, ``MAX_LAYERS``, ``MAX_EDGES``. Only the top-level graph is kept (the layers
of a ``Loop``'s or ``TensorIterator``'s body are counted, not kept).

The weights file is the XML's name with ``.bin`` (a regular file; a link is followed to what
it names). Every ``Const`` layer's ``offset`` and ``size`` are checked against the ``.bin``'s
size when the IR is read, and its ``shape`` and ``element_type`` against its ``size``, so a
Const that points past the end or lies about its bytes refuses the whole file at once. The
values of a Const are read only when asked (``const_values``, ``const_rows``), as float64:
``f32``, ``f16``, ``bf16`` and ``f64`` are read; other element types are not RoPE values.
"""

from __future__ import annotations

import math
import os
import xml.parsers.expat
from typing import NamedTuple

import numpy as np

from . import reading

__all__ = [
    "FLOATS",
    "IR",
    "Layer",
    "MAX_XML_BYTES",
    "const_rows",
    "const_values",
    "read",
]

MAX_XML_BYTES = 256 << 20  # an 8B model's IR is a few MiB of XML; the weights are in the .bin
MAX_ELEMENTS = 1 << 23  # elements of the XML (a layer is ~5-10 with its ports and dims)
MAX_LAYERS = 1 << 20  # layers, a body's included (a large model has tens of thousands)
MAX_EDGES = 1 << 21
MAX_DEPTH = 64  # nesting of elements (a body within a body within ...)
MAX_RANK = 8  # dims of a Const's shape
MAX_VALUES = 1 << 26  # values of one Const read at once (a 2**17-row, 128-wide table is 2**24)
# element_type -> (NumPy dtype of the stored bytes, bytes each); bf16 is read as uint16
FLOATS = {"f32": ("<f4", 4), "f16": ("<f2", 2), "bf16": ("<u2", 2), "f64": ("<f8", 8)}
_SIZES = {
    **{k: v[1] for k, v in FLOATS.items()},
    **{"i64": 8, "u64": 8, "i32": 4, "u32": 4, "i16": 2, "u16": 2, "i8": 1, "u8": 1},
    "boolean": 1,
}


class Layer(NamedTuple):
    """One layer of the top-level graph: its id, name, type, opset and ``<data>`` attributes."""

    id: int
    name: str
    type: str
    version: str
    data: dict


class IR(NamedTuple):
    """An IR's top-level graph: ``layers`` by id; ``inputs[id]``: ``[(port, from id)]``
    sorted by port; ``consumers[id]``: the ids its outputs feed; the ``.bin``'s path and size;
    ``info``: the ``rt_info`` values kept (optimum's versions: ``{name: value}``)."""

    path: str
    bin_path: str
    bin_size: int
    layers: dict
    inputs: dict
    consumers: dict
    info: dict


class _Parse:
    """expat's handlers: the layers, edges and rt_info of the top-level ``net``, counted."""

    def __init__(self, path: str):
        self.path = path
        self.stack: list = []
        self.elements = self.layers_seen = 0
        self.layers: dict = {}
        self.edges: list = []
        self.info: dict = {}
        self.current: dict | None = None

    def fail(self, words: str):
        raise ValueError(f"{self.path}: {words}: not an OpenVINO IR sinpe reads")

    def doctype(self, *_):
        self.fail("a DOCTYPE (entity declarations are refused, never expanded)")

    def entity(self, *_):
        self.fail("an entity declaration")

    def external(self, *_):
        self.fail("an external entity reference")

    def start(self, tag: str, attributes: dict):
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            self.fail(f"more than {MAX_ELEMENTS} elements")
        if len(self.stack) >= MAX_DEPTH:
            self.fail(f"elements nested more than {MAX_DEPTH} deep")
        where = tuple(self.stack)
        self.stack.append(tag)
        if not where and tag != "net":
            self.fail(f"its root element is <{tag[:40]}>, not <net>")
        if tag == "layer":
            self.layers_seen += 1
            if self.layers_seen > MAX_LAYERS:
                self.fail(f"more than {MAX_LAYERS} layers")
        if where == ("net", "layers") and tag == "layer":
            self.current = dict(attributes)
        elif where == ("net", "layers", "layer") and tag == "data" and self.current is not None:
            self.current["<data>"] = dict(attributes)
        elif where == ("net", "edges") and tag == "edge":
            if len(self.edges) >= MAX_EDGES:
                self.fail(f"more than {MAX_EDGES} edges")
            self.edges.append(attributes)
        elif len(where) >= 2 and where[:2] == ("net", "rt_info") and "value" in attributes:
            if len(self.info) < 256:
                self.info[str(attributes.get("name", tag))] = str(attributes["value"])[:200]

    def end(self, tag: str):
        self.stack.pop()
        if tuple(self.stack) == ("net", "layers") and tag == "layer" and self.current is not None:
            self._layer(self.current)
            self.current = None

    def _layer(self, found: dict):
        number = self.number(found.get("id"), "a layer's id")
        if number in self.layers:
            self.fail(f"two layers of id {number}")
        self.layers[number] = Layer(
            number,
            str(found.get("name", "")),
            str(found.get("type", "")),
            str(found.get("version", "")),
            found.get("<data>", {}),
        )

    def number(self, text, what: str) -> int:
        if text is None or not str(text).isdigit() or len(str(text)) > 12:
            self.fail(f"{what} is {str(text)[:40]!r}, not a number")
        return int(text)


def _parse(path: str, text: str) -> _Parse:
    found = _Parse(path)
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = found.doctype
    parser.EntityDeclHandler = found.entity
    parser.UnparsedEntityDeclHandler = found.entity
    parser.ExternalEntityRefHandler = found.external
    parser.StartElementHandler = found.start
    parser.EndElementHandler = found.end
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as exc:
        raise ValueError(f"{path}: not well-formed XML ({exc})") from None
    if not found.layers:
        found.fail("no layers")
    return found


def read(path) -> IR:
    """The IR at ``path`` (``openvino_model.xml``) and its ``.bin``: its top-level layers and
    edges, every Const's bytes checked against the ``.bin``; ``ValueError`` naming the file
    and what is wrong."""
    path = os.fspath(path)
    text = reading.read_text(path, what="OpenVINO IR", max_bytes=MAX_XML_BYTES)
    found = _parse(path, text)
    del text
    inputs: dict = {}
    consumers: dict = {}
    for edge in found.edges:
        source = found.number(edge.get("from-layer"), "an edge's from-layer")
        target = found.number(edge.get("to-layer"), "an edge's to-layer")
        port = found.number(edge.get("to-port"), "an edge's to-port")
        if source not in found.layers or target not in found.layers:
            found.fail(f"an edge from layer {source} to layer {target}, which it does not have")
        inputs.setdefault(target, []).append((port, source))
        consumers.setdefault(source, []).append(target)
    for ports in inputs.values():
        ports.sort()
    bin_path = os.path.splitext(path)[0] + ".bin"
    consts = [layer for layer in found.layers.values() if layer.type == "Const"]
    bin_size = 0
    if any(_span(path, layer)[1] for layer in consts):
        bin_size = reading.check_regular(bin_path, what="the IR's weights")
    for layer in consts:
        offset, size = _span(path, layer)
        reading.check_span(bin_path, f"Const {layer.name[:80]!r}", offset, size, bin_size)
    return IR(path, bin_path, bin_size, found.layers, inputs, consumers, found.info)


def shape_of(path: str, layer: Layer) -> tuple:
    """A Const's shape (``""`` is a scalar), each dim a bounded number."""
    text = str(layer.data.get("shape", ""))
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if len(parts) > MAX_RANK or not all(p.isdigit() and len(p) <= 12 for p in parts):
        raise ValueError(
            f"{path}: Const {layer.name[:80]!r} has the shape {text[:60]!r}: not one sinpe reads"
        )
    return tuple(int(p) for p in parts)


def _span(path: str, layer: Layer) -> tuple:
    """``(offset, size)`` of a Const's bytes, its shape and element type agreeing with them."""
    data = layer.data
    values = []
    for key in ("offset", "size"):
        text = str(data.get(key, ""))
        if not text.isdigit() or len(text) > 18:
            raise ValueError(
                f"{path}: Const {layer.name[:80]!r} has the {key} {text[:40]!r}: not a number"
            )
        values.append(int(text))
    kind = str(data.get("element_type", ""))
    each = _SIZES.get(kind)
    shape = shape_of(path, layer)
    if each is not None and math.prod(shape) * each != values[1]:
        raise ValueError(
            f"{path}: Const {layer.name[:80]!r} declares {values[1]} bytes for {math.prod(shape)} "
            f"{kind} values of shape {shape}"
        )
    return values[0], values[1]


def _decode(data: bytes, kind: str) -> np.ndarray:
    dtype, _ = FLOATS[kind]
    raw = np.frombuffer(data, dtype=dtype)
    if kind == "bf16":  # a bfloat16 is a float32's upper half
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


def _float_kind(ir: IR, layer: Layer) -> str:
    kind = str(layer.data.get("element_type", ""))
    if layer.type != "Const" or kind not in FLOATS:
        raise ValueError(f"{ir.path}: layer {layer.name[:80]!r} is not a float Const ({kind})")
    return kind


def const_values(ir: IR, layer: Layer, max_values: int = MAX_VALUES) -> np.ndarray:
    """A float Const's values as float64, in its shape (at most ``max_values`` of them)."""
    kind = _float_kind(ir, layer)
    shape = shape_of(ir.path, layer)
    if math.prod(shape) > max_values:
        raise ValueError(
            f"{ir.path}: Const {layer.name[:80]!r} holds {math.prod(shape)} values; at most "
            f"{max_values} are read at once"
        )
    offset, size = _span(ir.path, layer)
    data = reading.read_at(ir.bin_path, offset, size, what=f"Const {layer.name[:80]!r}")
    return _decode(data, kind).reshape(shape)


def const_rows(ir: IR, layer: Layer, rows) -> np.ndarray:
    """Rows ``rows`` (sorted, contiguous or not) of a float Const of ``(1, ..., rows,
    columns)``, as float64."""
    kind = _float_kind(ir, layer)
    shape = shape_of(ir.path, layer)
    rows = np.asarray(rows, np.int64)
    if len(shape) < 2 or math.prod(shape[:-2]) != 1:
        raise ValueError(f"{ir.path}: Const {layer.name[:80]!r} of shape {shape} is not a table")
    shape = shape[-2:]
    if rows.size and (rows.min() < 0 or rows.max() >= shape[0]):
        raise ValueError(f"{ir.path}: rows past Const {layer.name[:80]!r} of shape {shape}")
    offset, _ = _span(ir.path, layer)
    width = shape[1] * FLOATS[kind][1]
    out = np.empty((rows.size, shape[1]), np.float64)
    if not rows.size:
        return out
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    with reading.opened(ir.bin_path, "the IR's weights") as stream:
        for run in np.split(np.arange(rows.size), breaks):
            first = int(rows[run[0]])
            data = reading.read_exactly(
                stream,
                offset + first * width,
                run.size * width,
                path=ir.bin_path,
                what=f"Const {layer.name[:80]!r}",
            )
            out[run[0] : run[-1] + 1] = _decode(data, kind).reshape(run.size, shape[1])
    return out
