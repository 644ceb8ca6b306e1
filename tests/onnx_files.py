"""ONNX files for the tests, written without the onnx package: protobuf's wire format by hand
(onnx.proto's field numbers: ModelProto ir_version 1, graph 7, opset_import 8; GraphProto node
1, initializer 5, input 11; NodeProto input 1, output 2, name 3, op_type 4, attribute 5,
domain 7; AttributeProto name 1, f 2, i 3, s 4, t 5, g 6, floats 7, ints 8, type 20;
TensorProto dims 1, data_type 2, float_data 4, name 8, raw_data 9, external_data 13,
data_location 14)."""

from __future__ import annotations

import struct

import numpy as np

from sinpe._files.onnx import encode_varint

LEN, VARINT, I32 = 2, 0, 5
FLOAT, FLOAT16, DOUBLE, BFLOAT16 = 1, 10, 11, 16


def varint(value: int) -> bytes:
    """A varint; a negative value as protobuf writes an int64, in its 64-bit two's complement."""
    return encode_varint(value & ((1 << 64) - 1))


def field(number: int, wire: int, payload) -> bytes:
    key = varint(number << 3 | wire)
    if wire == VARINT:
        return key + varint(payload)
    if wire == I32:
        return key + struct.pack("<f", payload)
    return key + varint(len(payload)) + payload


def text(number: int, value: str) -> bytes:
    return field(number, LEN, value.encode())


def tensor(name: str, values=None, *, data_type=FLOAT, dims=None, external=None) -> bytes:
    """A TensorProto: ``values`` as raw data (float32 by default), or ``external`` (a dict
    of location, offset, length) with ``dims``."""
    out = b""
    if values is not None:
        array = np.asarray(values)
        dims = array.shape if dims is None else dims
        kind = {FLOAT: "<f4", FLOAT16: "<f2", DOUBLE: "<f8"}.get(data_type)
        raw = (
            array.astype(kind).tobytes()
            if kind
            else (array.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        )
    out += b"".join(field(1, VARINT, d) for d in dims)
    out += field(2, VARINT, data_type) + text(8, name)
    if external is None:
        out += field(9, LEN, raw)
    else:
        for key, value in external.items():
            out += field(13, LEN, text(1, key) + text(2, str(value)))
        out += field(14, VARINT, 1)
    return out


def attribute(name: str, value) -> bytes:
    out = text(1, name)
    if isinstance(value, bool) or isinstance(value, int):
        return out + field(3, VARINT, int(value)) + field(20, VARINT, 2)
    if isinstance(value, float):
        return out + field(2, I32, value) + field(20, VARINT, 1)
    if isinstance(value, str):
        return out + text(4, value) + field(20, VARINT, 3)
    if isinstance(value, tuple) and value[0] == "tensor":
        return out + field(5, LEN, value[1]) + field(20, VARINT, 4)
    if isinstance(value, tuple) and value[0] == "graph":
        return out + field(6, LEN, value[1]) + field(20, VARINT, 5)
    raise TypeError(value)


def node(op_type: str, inputs=(), outputs=(), *, domain="", name="", **attributes) -> bytes:
    out = b"".join(text(1, i) for i in inputs) + b"".join(text(2, o) for o in outputs)
    out += text(3, name or op_type) + text(4, op_type)
    out += b"".join(field(5, LEN, attribute(k, v)) for k, v in attributes.items())
    return out + (text(7, domain) if domain else b"")


def graph(nodes=(), initializers=(), inputs=()) -> bytes:
    out = b"".join(field(1, LEN, n) for n in nodes)
    out += b"".join(field(5, LEN, t) for t in initializers)
    return out + b"".join(field(11, LEN, text(1, i)) for i in inputs)


def model(graph_bytes: bytes, *, ir_version=8, opsets=(("", 17), ("com.microsoft", 1))) -> bytes:
    out = field(1, VARINT, ir_version)
    for domain, version in opsets:
        out += field(8, LEN, text(1, domain) + field(2, VARINT, version))
    return out + field(7, LEN, graph_bytes)


def nested(depth: int) -> bytes:
    """A model whose one node sits ``depth`` If-subgraphs deep (a hostile nesting)."""
    inner = graph([node("Relu", ["a"], ["b"])])
    for _ in range(depth):
        inner = graph([node("If", ["c"], ["d"], then_branch=("graph", inner))])
    return model(inner)
