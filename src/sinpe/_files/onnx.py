"""Reading an ONNX model's graph for ``sinpe check model.onnx``, bounded, without ``onnx``.

``onnx.load`` parses the whole protobuf into memory and (by default) loads every external
tensor: a 10 GB model's weights, to look at two RoPE caches; and protobuf's own parser trusts
lengths a hostile file gives. This reader memory-maps the ``.onnx`` file and walks its
protobuf wire format once: every length is compared with the bytes that remain *before*
anything is read, varints are at most 10 bytes, nesting (a subgraph of an ``If`` inside a
subgraph) at most ``MAX_DEPTH`` deep, and counts are capped for the whole file, every
subgraph's with its parents' (``_Budget``): a file of many small subgraphs is refused as
early as one large graph. It keeps the graph's nodes (op type, domain, inputs, outputs, and
their small attributes; a subgraph attribute as a graph), and of each tensor (initializer or
``Constant``) only its name, dims, type and where its bytes are: an offset into the
``.onnx`` file, or an external-data file (which must lie in the model's folder), offset and
length. ``tensor_values`` reads one tensor's bytes, by
offset, when asked. The map is closed before ``read`` returns. Every file (the model, its
external data) is opened through the reading room (``sinpe._files.reading``): a regular
file only, every declared length checked against its bytes.
"""

from __future__ import annotations

import math
import os
import struct
from typing import NamedTuple

import numpy as np

from . import reading

__all__ = [
    "DTYPES",
    "Graph",
    "Model",
    "Node",
    "Tensor",
    "read",
    "rewrite",
    "tensor_proto",
    "tensor_rows",
    "tensor_values",
]

MAX_DEPTH = 16  # graphs nested in attributes (an If's branches), at most
MAX_ITEMS = 1 << 18  # nodes, initializers, values, attributes and subgraphs in the file
MAX_NAMES = 1 << 20  # nodes' inputs and outputs in the file
MAX_NUMBERS = 1 << 20  # numbers kept from lists (attributes, tensors' *_data) in the file
MAX_NAME = 1 << 16  # bytes of a name or string kept (a longer one is refused)
MAX_DIMS = 8
MAX_VALUES = 1 << 16  # numbers of one tensor or attribute list read, at most
# TensorProto.DataType -> (NumPy dtype, or a name NumPy lacks; bytes per element)
DTYPES = {
    1: ("float32", 4),
    2: ("uint8", 1),
    3: ("int8", 1),
    4: ("uint16", 2),
    5: ("int16", 2),
    6: ("int32", 4),
    7: ("int64", 8),
    9: ("bool", 1),
    10: ("float16", 2),
    11: ("float64", 8),
    12: ("uint32", 4),
    13: ("uint64", 8),
    16: ("bfloat16", 2),
}
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class Tensor(NamedTuple):
    """A tensor's record: name, dims, ONNX data type, and where its bytes are: ``("inline",
    offset, length)`` in the ``.onnx`` file, ``("external", path, offset, length)``, or
    ``("numbers", values)`` for a tensor stored as a list of numbers (``float_data``...)."""

    name: str
    dims: tuple
    data_type: int
    where: tuple
    span: tuple = (0, 0)  # (offset, length) of its TensorProto in the .onnx file


class Node(NamedTuple):
    op_type: str
    domain: str
    name: str
    inputs: tuple
    outputs: tuple
    attributes: dict  # name -> int, float, str, tuple of numbers, Tensor, or Graph


class Graph(NamedTuple):
    nodes: tuple
    initializers: dict  # name -> Tensor
    inputs: tuple  # names of the graph's inputs
    outputs: tuple = ()  # names of the graph's outputs (a subgraph's, an If branch's)


class Model(NamedTuple):
    path: str
    ir_version: int
    opsets: dict  # domain -> version
    graph: Graph


class _Budget:
    """What the whole file may still hold (every graph and subgraph together): each record
    kept costs a few hundred bytes of memory, whatever the few bytes it takes in the file."""

    __slots__ = ("items", "names", "numbers")

    def __init__(self):
        self.items, self.names, self.numbers = MAX_ITEMS, MAX_NAMES, MAX_NUMBERS


_CAPS = {
    "items": (MAX_ITEMS, "nodes, initializers, values, attributes and subgraphs"),
    "names": (MAX_NAMES, "node inputs and outputs"),
    "numbers": (MAX_NUMBERS, "numbers in lists"),
}


class _Cursor:
    """Reads between ``pos`` and ``end``; every read is checked against what remains."""

    __slots__ = ("buf", "pos", "end", "path", "budget")

    def __init__(self, buf, pos: int, end: int, path: str, budget: _Budget | None = None):
        self.buf, self.pos, self.end, self.path = buf, pos, end, path
        self.budget = _Budget() if budget is None else budget

    def spend(self, kind: str, count: int = 1) -> None:
        """Take ``count`` from the file's budget of ``kind``; refuse the file past it."""
        left = getattr(self.budget, kind) - count
        if left < 0:
            cap, what = _CAPS[kind]
            raise ValueError(
                f"{self.path}: more than {cap} {what} in the file (its graph and every subgraph "
                "together)"
            )
        setattr(self.budget, kind, left)

    def fail(self, what: str):
        raise ValueError(f"{self.path}: {what} at byte {self.pos} (truncated or corrupt ONNX)")

    def varint(self) -> int:
        value, shift = 0, 0
        for _ in range(10):
            if self.pos >= self.end:
                self.fail("a number runs past its message")
            byte = self.buf[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        self.fail("a number longer than 10 bytes")
        return 0

    def field(self):
        """``(field number, wire type, value)``: an int, or ``(offset, length)`` of bytes."""
        key = self.varint()
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            return number, wire, self.varint()
        if wire in (_I64, _I32):
            size = 8 if wire == _I64 else 4
            if size > self.end - self.pos:
                self.fail("a fixed-size number runs past its message")
            start, self.pos = self.pos, self.pos + size
            return number, wire, (start, size)
        if wire == _LEN:
            length = self.varint()
            if length > self.end - self.pos:
                self.fail(f"a field of {length} bytes where {self.end - self.pos} remain")
            start, self.pos = self.pos, self.pos + length
            return number, wire, (start, length)
        self.fail(f"the wire type {wire} (groups and unknown types are refused)")
        return number, wire, None

    def fields(self, start: int, length: int):
        """The fields of the message at ``start``."""
        inner = _Cursor(self.buf, start, start + length, self.path, self.budget)
        while inner.pos < inner.end:
            yield inner.field()

    def text(self, where) -> str:
        start, length = where
        if length > MAX_NAME:
            self.fail(f"a name of {length} bytes")
        return bytes(self.buf[start : start + length]).decode("utf-8", errors="replace")


def read(path) -> Model:
    """The graph of the ONNX model at ``path``: its nodes and tensor records; ``ValueError``
    for anything malformed or over a bound."""
    path = os.fspath(path)
    with reading.mapped(path) as (buffer, size):
        if size == 0:
            raise ValueError(f"{path}: empty, not an ONNX model")
        return _model(_Cursor(buffer, 0, size, path))


def _model(cursor: _Cursor) -> Model:
    ir_version, opsets, graph = 0, {}, None
    while cursor.pos < cursor.end:
        number, wire, value = cursor.field()
        if number == 1 and wire == _VARINT:
            ir_version = value
        elif number == 8 and wire == _LEN:
            domain, version = "", 0
            for n, w, v in cursor.fields(*value):
                domain = cursor.text(v) if n == 1 and w == _LEN else domain
                version = v if n == 2 and w == _VARINT else version
            opsets[domain] = version
        elif number == 7 and wire == _LEN:
            graph = _graph(cursor, value, 0)
    if graph is None or not ir_version:
        raise ValueError(f"{cursor.path}: no ir_version or no graph: not an ONNX model")
    return Model(cursor.path, ir_version, opsets, graph)


def _graph(cursor: _Cursor, where, depth: int) -> Graph:
    if depth > MAX_DEPTH:
        cursor.fail(f"graphs nested more than {MAX_DEPTH} deep")
    cursor.spend("items")
    nodes: list = []
    initializers: dict = {}
    names: dict = {11: [], 12: []}
    for number, wire, value in cursor.fields(*where):
        if wire != _LEN or number not in (1, 5, 11, 12):
            continue
        cursor.spend("items")  # before the record is read: a subgraph spends from here on
        if number == 1:
            nodes.append(_node(cursor, value, depth))
        elif number == 5:
            tensor = _tensor(cursor, value)
            initializers[tensor.name] = tensor
        else:
            name = next((cursor.text(v) for n, w, v in cursor.fields(*value) if n == 1), "")
            names[number].append(name)
    return Graph(tuple(nodes), initializers, tuple(names[11]), tuple(names[12]))


def _node(cursor: _Cursor, where, depth: int) -> Node:
    parts: dict = {"inputs": [], "outputs": [], "attributes": {}}
    op_type = domain = name = ""
    for number, wire, value in cursor.fields(*where):
        if wire != _LEN:
            continue
        if number in (1, 2):
            cursor.spend("names")
            parts["inputs" if number == 1 else "outputs"].append(cursor.text(value))
        elif number == 3:
            name = cursor.text(value)
        elif number == 4:
            op_type = cursor.text(value)
        elif number == 7:
            domain = cursor.text(value)
        elif number == 5:
            cursor.spend("items")
            key, attribute = _attribute(cursor, value, depth)
            parts["attributes"][key] = attribute
    return Node(
        op_type, domain, name, tuple(parts["inputs"]), tuple(parts["outputs"]),
        parts["attributes"],
    )  # fmt: skip


def _attribute(cursor: _Cursor, where, depth: int) -> tuple:
    """``(name, value)``: a number, a string, a list of numbers, a tensor or a graph (the
    other kinds are walked and left out)."""
    name, found, numbers = "", None, []
    for number, wire, value in cursor.fields(*where):
        if number == 1 and wire == _LEN:
            name = cursor.text(value)
        elif number == 2 and wire == _I32:
            found = struct.unpack_from("<f", cursor.buf, value[0])[0]
        elif number == 3 and wire == _VARINT:
            found = _signed(value)
        elif number == 4 and wire == _LEN:
            found = cursor.text(value) if value[1] <= MAX_NAME else None
        elif number == 5 and wire == _LEN:
            found = _tensor(cursor, value)
        elif number == 6 and wire == _LEN:
            found = _graph(cursor, value, depth + 1)
        elif number in (7, 8):
            found_numbers = _numbers(cursor, wire, value, "f" if number == 7 else "q")
            cursor.spend("numbers", len(found_numbers))
            numbers += found_numbers
            if len(numbers) > MAX_VALUES:
                cursor.fail(f"an attribute of more than {MAX_VALUES} numbers")
            found = tuple(numbers)
    return name, found


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _numbers(cursor: _Cursor, wire: int, value, code: str) -> list:
    """A repeated number field, packed (a length) or not (one number)."""
    if wire == _VARINT:
        return [_signed(value)]
    if wire == _I32:
        return [struct.unpack_from("<f", cursor.buf, value[0])[0]]
    if wire == _I64:
        return [struct.unpack_from("<d", cursor.buf, value[0])[0]]
    start, length = value
    if code in "fd":
        size = 4 if code == "f" else 8
        if length % size or length // size > MAX_VALUES:
            cursor.fail(f"a packed list of {length} bytes")
        return list(struct.unpack_from(f"<{length // size}{code}", cursor.buf, start))
    inner = _Cursor(cursor.buf, start, start + length, cursor.path, cursor.budget)
    found = []
    while inner.pos < inner.end:
        found.append(_signed(inner.varint()))
        if len(found) > MAX_VALUES:
            cursor.fail(f"a packed list of more than {MAX_VALUES} numbers")
    return found


def _tensor(cursor: _Cursor, where) -> Tensor:
    name, dims, data_type, where_bytes, external, numbers = "", [], 0, None, {}, []
    for number, wire, value in cursor.fields(*where):
        if number == 1:
            dims += _numbers(cursor, wire, value, "q")
            if len(dims) > MAX_DIMS:
                cursor.fail(f"a tensor of more than {MAX_DIMS} dims")
        elif number == 2 and wire == _VARINT:
            data_type = value
        elif number == 8 and wire == _LEN:
            name = cursor.text(value)
        elif number == 9 and wire == _LEN:
            where_bytes = ("inline", *value)
        elif number == 13 and wire == _LEN:
            entry = {n: cursor.text(v) for n, w, v in cursor.fields(*value) if w == _LEN}
            external[entry.get(1, "")] = entry.get(2, "")
        elif number in (4, 10, 5, 7):  # float_data, double_data, int32_data, int64_data
            found = _numbers(cursor, wire, value, {4: "f", 10: "d"}.get(number, "q"))
            cursor.spend("numbers", len(found))
            numbers += found
            if len(numbers) > MAX_VALUES:
                cursor.fail(f"a tensor of more than {MAX_VALUES} numbers in its fields")
    if any(d < 0 for d in dims):
        cursor.fail(f"tensor {name!r} has the dims {tuple(dims)}")
    if external:
        where_bytes = _external(cursor, name, external)
    elif where_bytes is None:
        where_bytes = ("numbers", tuple(numbers))
    return Tensor(name, tuple(dims), data_type, where_bytes, tuple(where))


def _external(cursor: _Cursor, name: str, entries: dict) -> tuple:
    """``("external", path, offset, length)``, the path inside the model's folder."""
    location = entries.get("location", "")
    try:
        offset = int(entries.get("offset", "0"))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        cursor.fail(f"tensor {name!r} has an external offset or length that is not a number")
    folder = os.path.realpath(os.path.dirname(os.path.abspath(cursor.path)))
    target = os.path.realpath(os.path.join(folder, location))
    if not location or os.path.isabs(location) or os.path.commonpath([folder, target]) != folder:
        raise ValueError(
            f"{cursor.path}: tensor {name!r}'s external data {location!r} is not a file in the "
            "model's folder (refused: a model names only its own files)"
        )
    if offset < 0 or (length is not None and length < 0):
        cursor.fail(f"tensor {name!r} has a negative external offset or length")
    return ("external", target, offset, length)


def tensor_values(model: Model, tensor: Tensor, max_values: int = MAX_VALUES) -> np.ndarray:
    """A tensor's values as float64 (its dims), read by offset from the ``.onnx`` file or
    its external-data file; ``ValueError`` for a tensor of more than ``max_values`` numbers,
    a type that is not a float, or bytes that are not there."""
    if tensor.data_type not in DTYPES or tensor.data_type in (2, 3, 9):
        raise ValueError(f"{model.path}: tensor {tensor.name!r} has data type {tensor.data_type}")
    dtype, itemsize = DTYPES[tensor.data_type]
    count = math.prod(tensor.dims)
    if count > max_values:
        raise ValueError(
            f"{model.path}: tensor {tensor.name!r} has {count} values, more than {max_values}"
        )
    if tensor.where[0] == "numbers":
        values = np.asarray(tensor.where[1], np.float64)
        if values.size != count:
            raise ValueError(f"{model.path}: tensor {tensor.name!r} holds {values.size} values")
        return values.reshape(tensor.dims)
    if tensor.where[0] == "inline":
        _, offset, length = tensor.where
        source = model.path
    else:
        _, source, offset, length = tensor.where
    if length is not None and length != count * itemsize:
        raise ValueError(
            f"{model.path}: tensor {tensor.name!r} says {length} bytes for {count} values"
        )
    data = _bytes(source, offset, count * itemsize, tensor.name)
    return _decode(data, dtype).reshape(tensor.dims)


def _located(model: Model, tensor: Tensor) -> tuple:
    """``(file, offset, itemsize, dtype name)`` of a float tensor's bytes (not a list of
    numbers), its length checked against its dims."""
    if tensor.data_type not in DTYPES or DTYPES[tensor.data_type][0] not in _FLOATS:
        raise ValueError(
            f"{model.path}: tensor {tensor.name!r} has data type {tensor.data_type}, not a float"
        )
    dtype, itemsize = DTYPES[tensor.data_type]
    if tensor.where[0] == "inline":
        _, offset, length = tensor.where
        source = model.path
    else:
        _, source, offset, length = tensor.where
    count = math.prod(tensor.dims)
    if length is not None and length != count * itemsize:
        raise ValueError(
            f"{model.path}: tensor {tensor.name!r} says {length} bytes for {count} values"
        )
    return source, offset, itemsize, dtype


def tensor_rows(model: Model, tensor: Tensor, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` (sorted) of a 2-D float tensor, as float64 ``(len(rows), columns)``:
    only those rows' bytes are read (a run of consecutive rows at once)."""
    if len(tensor.dims) != 2:
        raise ValueError(f"{model.path}: tensor {tensor.name!r} is not 2-D: {tensor.dims}")
    n, columns = tensor.dims
    if tensor.where[0] == "numbers":
        return tensor_values(model, tensor, n * columns)[rows]
    source, offset, itemsize, dtype = _located(model, tensor)
    row_bytes = columns * itemsize
    if rows.size and (rows[0] < 0 or rows[-1] >= n):
        raise ValueError(f"tensor {tensor.name!r} has {n} rows: rows {rows[0]} .. {rows[-1]}")
    out = np.empty((rows.size, columns))
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    k = 0
    for run in np.split(rows, breaks):
        if not run.size:
            continue
        data = _bytes(source, offset + int(run[0]) * row_bytes, run.size * row_bytes, tensor.name)
        out[k : k + run.size] = _decode(data, dtype).reshape(run.size, columns)
        k += run.size
    return out


_FLOATS = ("float32", "float16", "float64", "bfloat16")


def _bytes(path: str, offset: int, length: int, name: str) -> bytes:
    try:
        return reading.read_at(path, offset, length, what=f"tensor {name!r}")
    except FileNotFoundError:
        raise ValueError(f"tensor {name!r}'s external data {path} is missing") from None


def _decode(data: bytes, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        bits = np.frombuffer(data, "<u2").astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    return np.frombuffer(data, np.dtype(dtype).newbyteorder("<")).astype(np.float64)


# --------------------------------------------------------------------------- writing

# the message fields a TensorProto can sit under: (message kind, field) -> the field's kind
_MESSAGES = {
    ("model", 7): "graph",
    ("graph", 1): "node",
    ("graph", 5): "tensor",
    ("node", 5): "attribute",
    ("attribute", 5): "tensor",
    ("attribute", 6): "graph",
    ("attribute", 10): "tensor",
    ("attribute", 11): "graph",
}


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | _LEN) + encode_varint(len(payload)) + payload


def tensor_proto(tensor: Tensor, data: bytes | None = None, external: tuple | None = None):
    """A TensorProto of ``tensor``'s name, dims and type, holding ``data`` inline, or
    ``external`` ``(location, offset, length)``."""
    out = b"".join(encode_varint(1 << 3 | _VARINT) + encode_varint(d) for d in tensor.dims)
    out += encode_varint(2 << 3 | _VARINT) + encode_varint(tensor.data_type)
    out += _field(8, tensor.name.encode())
    if external is None:
        return out + _field(9, data or b"")
    for key, value in zip(("location", "offset", "length"), external):
        out += _field(13, _field(1, key.encode()) + _field(2, str(value).encode()))
    return out + encode_varint(14 << 3 | _VARINT) + encode_varint(1)


def rewrite(path, stream, replaced: dict) -> None:
    """Write the ONNX model at ``path`` into the binary ``stream`` (the writing room's) with
    the TensorProtos at the offsets of ``replaced`` (offset -> new TensorProto bytes)
    replaced, every enclosing message's length made right, every other byte as it was."""
    with reading.mapped(path) as (buffer, size):
        data = _rewritten(_Cursor(buffer, 0, size, os.fspath(path)), 0, size, "model", replaced)
    stream.write(data)


def _rewritten(cursor: _Cursor, start: int, end: int, kind: str, replaced: dict) -> bytes:
    inner = _Cursor(cursor.buf, start, end, cursor.path, cursor.budget)
    parts = []
    while inner.pos < end:
        field_start = inner.pos
        number, wire, value = inner.field()
        child = _MESSAGES.get((kind, number)) if wire == _LEN else None
        if child is not None and value[0] in replaced and child == "tensor":
            parts.append(_field(number, replaced[value[0]]))
        elif child is not None and any(value[0] < k < value[0] + value[1] for k in replaced):
            inside = _rewritten(cursor, value[0], value[0] + value[1], child, replaced)
            parts.append(_field(number, inside))
        else:
            parts.append(bytes(cursor.buf[field_start : inner.pos]))
    return b"".join(parts)
