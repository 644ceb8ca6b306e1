"""Reading a GGUF file's metadata (llama.cpp's model format) for ``sinpe check``, bounded.

The file is memory-mapped read-only and walked once: the header, every key/value pair, every
tensor info. Every length it gives is compared with the bytes that remain *before* anything
is allocated or walked, and counts are capped, so a hostile file (a wrong magic, lying counts,
a 2**40-element array, a 2**62-byte string, truncation anywhere) is one ``ValueError`` at
once, in bounded memory, never a hang. The checks are ggml's own (``gguf_init_from_file_impl``
in ggml/src/gguf.cpp), so a file read here is one llama.cpp's parser reads too: version 2 or 3;
no empty or duplicate key; no array of arrays; ``general.alignment`` a UINT32 power of two;
tensor names under 64 bytes and unique; at most 4 dims; a known ggml type whose block divides
the first dim; offsets the running sum of aligned sizes; every tensor's bytes in the file.

The file is opened through the reading room (``sinpe._files.reading``: a regular file
only, a FIFO or device refused at once), and the counts of a split set are summed over its
shards: the tensors and key/value pairs of the whole set are bounded as one file's.

What is kept: scalars and strings (a string over 1 MiB, and every string array, is walked but
not decoded: a tokenizer's vocabulary is never read), numeric arrays of at most 4096 elements
(copies), and the data of the tensors asked for (float32 copies). The map is closed before
``read`` returns.
"""

from __future__ import annotations

import os
import re
import struct
from typing import NamedTuple

import numpy as np

from . import reading

__all__ = ["GGUF", "TensorInfo", "read", "shard_paths"]

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NAME = 64  # GGML_MAX_NAME: a tensor name is shorter
MAX_KEY = 4096
MAX_STRING = 1 << 20  # a longer string value is walked, not decoded
MAX_KV = 1 << 16  # key/value pairs of a file, or of a split set's shards together
# tensors of a file, or of a split set's shards together: a model holds a few thousand, and
# each costs ~200 bytes of memory from ~35 in the file
MAX_TENSORS = 1 << 16
MAX_ARRAY = 1 << 24  # numbers in one array
MAX_STRINGS = 1 << 22  # strings in one array (a real vocabulary has < 300k)
KEEP_ARRAY = 4096  # a numeric array is kept (copied) up to this many elements
# gguf-split's and gguf-py's shard names (llama.cpp's llama_split_path: "%s-%05d-of-%05d.gguf")
SHARD_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")

# GGUF value types: id -> (name, struct code, size; a string's size is its length field)
_VALUE_NAMES = "UINT8 INT8 UINT16 INT16 UINT32 INT32 FLOAT32 BOOL STRING ARRAY UINT64 INT64 FLOAT64"
_VALUE_SIZES = (1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8)
VALUE_TYPES = {
    i: (name, code.strip(), size)
    for i, (name, code, size) in enumerate(zip(_VALUE_NAMES.split(), "BbHhIif?  Qqd", _VALUE_SIZES))
}
STRING, ARRAY = 8, 9

_K = 256  # QK_K
# ggml types: id -> (name, block size, bytes per block), as gguf-py's GGML_QUANT_SIZES
# fmt: off
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", _K, 4 + _K // 16 + _K // 4), 11: ("Q3_K", _K, 2 + _K // 4 + _K // 8 + 12),
    12: ("Q4_K", _K, 4 + _K // 2 + 12), 13: ("Q5_K", _K, 4 + _K // 2 + _K // 8 + 12),
    14: ("Q6_K", _K, 2 + _K // 2 + _K // 4 + _K // 16), 15: ("Q8_K", _K, 4 + _K + _K // 8),
    16: ("IQ2_XXS", _K, 2 + _K // 4), 17: ("IQ2_XS", _K, 2 + _K // 4 + _K // 32),
    18: ("IQ3_XXS", _K, 2 + _K // 4 + _K // 8), 19: ("IQ1_S", _K, 2 + _K // 8 + _K // 16),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", _K, 2 + _K // 4 + _K // 8 + _K // 32 + 4),
    22: ("IQ2_S", _K, 2 + _K // 4 + _K // 16), 23: ("IQ4_XS", _K, 4 + _K // 2 + _K // 64),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", _K, _K // 8 + _K // 16 + _K // 32), 30: ("BF16", 1, 2),
    34: ("TQ1_0", _K, 2 + 4 * 13), 35: ("TQ2_0", _K, 2 + 64), 39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
# fmt: on
# the smallest records: a key/value (a u64 length and a byte of key, a u32 type, a byte of
# value); a tensor info (a u64 length and a byte of name, u32 dims, i32 type, u64 offset)
_MIN_KV = 8 + 1 + 4 + 1
_MIN_INFO = 8 + 1 + 4 + 4 + 8


class TensorInfo(NamedTuple):
    """One tensor's record: its dims in GGUF order (``ne0`` first), ggml type, offset into
    the data section and size in bytes."""

    dims: tuple
    ggml_type: int
    offset: int
    nbytes: int

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.ggml_type][0]


class Unread(NamedTuple):
    """A value walked but not kept: a long string, a string array, a long numeric array."""

    type_name: str
    size: int  # bytes of a string, elements of an array


class GGUF(NamedTuple):
    """A GGUF file's metadata: ``kv`` (key -> value: an int, float, bool, str, a NumPy array
    of at most 4096 numbers, or ``Unread``), ``types`` (key -> GGUF type name, ``ARRAY[T]``
    for an array), ``tensors`` (name -> ``TensorInfo``) and ``data`` (name -> float64 values
    of each F32 tensor asked for)."""

    path: str
    version: int
    byteorder: str
    kv: dict
    types: dict
    tensors: dict
    data: dict
    shards: tuple = ()  # a split set's files, the first (which holds the metadata) first

    @property
    def architecture(self) -> str | None:
        arch = self.kv.get("general.architecture")
        return arch if isinstance(arch, str) else None


class _Cursor:
    """Reads between ``pos`` and ``end`` of a buffer; every read is checked first."""

    __slots__ = ("buf", "pos", "end", "order")

    def __init__(self, buf, pos: int, end: int, order: str):
        self.buf, self.pos, self.end, self.order = buf, pos, end, order

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.end - self.pos:
            raise ValueError(
                f"{what} needs {n} bytes at offset {self.pos}, but only "
                f"{self.end - self.pos} remain (truncated or corrupt)"
            )

    def scalar(self, code: str, size: int, what: str):
        self.need(size, what)
        (value,) = struct.unpack_from(self.order + code, self.buf, self.pos)
        self.pos += size
        return value

    def string(self, what: str, keep: int):
        """A string: decoded when at most ``keep`` bytes, else walked (``Unread``)."""
        n = self.scalar("Q", 8, what + "'s length")
        self.need(n, what)
        start, self.pos = self.pos, self.pos + n
        if n > keep:
            return Unread("STRING", n)
        return bytes(self.buf[start : start + n]).decode("utf-8", errors="replace")


def read(path, *, tensors: tuple = ()) -> GGUF:
    """Read the metadata of the GGUF file at ``path``, and the data of the F32 tensors named
    in ``tensors`` that it holds; ``ValueError`` for anything malformed or over a bound. A
    shard of a split set (``split.count`` > 1) reads the set as llama.cpp loads it: the
    metadata of its first shard, the tensors of every shard (``shard_paths``)."""
    path = os.fspath(path)
    one = _read_one(path, tensors)
    count = one.kv.get("split.count", 0)
    if one.types.get("split.count") != "UINT16" or count <= 1:
        return one
    return _read_set(path, one, tensors)


def _read_one(path: str, tensors: tuple, left: tuple = (MAX_KV, MAX_TENSORS)) -> GGUF:
    """One file; ``left``: the key/value pairs and tensors it may hold (a shard: what the
    set's other shards leave)."""
    with reading.mapped(path) as (buffer, size):
        if size < 24:
            raise ValueError(f"{path}: {size} bytes, too short for a GGUF header (24)")
        if buffer[:4] != MAGIC:
            raise ValueError(f"{path}: not a GGUF file (it does not start with b'GGUF')")
        return _parse(path, buffer, size, tensors, left)


def _over(path: str, count: int, what: str, cap: int, whole: int) -> ValueError:
    shared = "" if cap == whole else f" (what a split set's other shards leave of {whole})"
    return ValueError(f"{path}: {count} {what}, more than {cap}{shared}")


def _header(path: str, buf, size: int, left: tuple) -> tuple:
    (version,) = struct.unpack_from("<I", buf, 4)
    order = "<"
    if version & 0xFFFF == 0 and version:  # written big-endian (gguf-py can; ggml refuses)
        (version,) = struct.unpack_from(">I", buf, 4)
        order = ">"
    if version == 1:
        raise ValueError(f"{path}: GGUF version 1 (32-bit counts) is not supported")
    if version not in (2, 3):
        raise ValueError(f"{path}: unknown GGUF version {version} (2 and 3 are read)")
    cursor = _Cursor(buf, 8, size, order)
    n_tensors = cursor.scalar("Q", 8, "the tensor count")
    n_kv = cursor.scalar("Q", 8, "the key/value count")
    if n_kv > left[0]:
        raise _over(path, n_kv, "key/value pairs", left[0], MAX_KV)
    if n_tensors > left[1]:
        raise _over(path, n_tensors, "tensors", left[1], MAX_TENSORS)
    cursor.need(n_kv * _MIN_KV + n_tensors * _MIN_INFO, f"{n_kv} keys and {n_tensors} tensors")
    return version, order, cursor, n_kv, n_tensors


def _parse(path: str, buf, size: int, wanted: tuple, left: tuple) -> GGUF:
    version, order, cursor, n_kv, n_tensors = _header(path, buf, size, left)
    kv: dict = {}
    types: dict = {}
    try:
        for i in range(n_kv):
            key = cursor.string(f"key {i}", MAX_KEY)
            if isinstance(key, Unread) or not key or key in kv:
                raise ValueError(f"key {i} is empty, a duplicate or over {MAX_KEY} bytes")
            kind = cursor.scalar("I", 4, f"the type of {key!r}")
            kv[key], types[key] = _value(cursor, kind, repr(key))
        alignment = _alignment(kv, types)
        infos = _infos(cursor, n_tensors, alignment)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    data_start = cursor.pos
    if infos:
        data_start = -(-cursor.pos // alignment) * alignment
        end = max(data_start + info.offset + info.nbytes for info in infos.values())
        if end > size:
            raise ValueError(
                f"{path}: the tensors need {end} bytes, the file has {size} (truncated?)"
            )
    data = {n: _tensor(path, buf, data_start, n, infos.get(n), order) for n in wanted}
    data = {name: values for name, values in data.items() if values is not None}
    return GGUF(path, version, order, kv, types, infos, data)


def _value(cursor: _Cursor, kind: int, what: str) -> tuple:
    """One value, and its type's name."""
    if kind == ARRAY:
        return _array(cursor, what)
    found = VALUE_TYPES.get(kind)
    if found is None:
        raise ValueError(f"{what} has the unknown value type {kind}")
    name, code, size = found
    if kind == STRING:
        return cursor.string(what, MAX_STRING), name
    return cursor.scalar(code, size, what), name


def _array(cursor: _Cursor, what: str) -> tuple:
    kind = cursor.scalar("I", 4, f"{what}'s element type")
    count = cursor.scalar("Q", 8, f"{what}'s element count")
    if kind == ARRAY:
        raise ValueError(f"{what} is an array of arrays (ggml refuses them)")
    found = VALUE_TYPES.get(kind)
    if found is None:
        raise ValueError(f"{what} has the unknown element type {kind}")
    name, code, size = found
    cap = MAX_STRINGS if kind == STRING else MAX_ARRAY
    if count > cap:
        raise ValueError(f"{what} has {count} elements, more than {cap}")
    cursor.need(count * size, f"{what} ({count} x {name})")  # a string takes >= 8 bytes
    if kind == STRING:
        for i in range(count):  # walked, each length checked, never decoded
            n = cursor.scalar("Q", 8, f"{what}[{i}]'s length")
            cursor.need(n, f"{what}[{i}]")
            cursor.pos += n
        return Unread(f"ARRAY[{name}]", count), f"ARRAY[{name}]"
    start, cursor.pos = cursor.pos, cursor.pos + count * size
    if count > KEEP_ARRAY:
        return Unread(f"ARRAY[{name}]", count), f"ARRAY[{name}]"
    dtype = np.dtype(cursor.order + ("u1" if code == "?" else np.dtype(code).str[1:]))
    values = np.frombuffer(cursor.buf, dtype, count, start).copy()
    return (values.astype(bool) if code == "?" else values), f"ARRAY[{name}]"


def _alignment(kv: dict, types: dict) -> int:
    if "general.alignment" not in kv:
        return DEFAULT_ALIGNMENT
    alignment = kv["general.alignment"]
    if types["general.alignment"] != "UINT32" or not alignment or alignment & (alignment - 1):
        raise ValueError(f"general.alignment must be a UINT32 power of 2, got {alignment!r}")
    return alignment


def _infos(cursor: _Cursor, n_tensors: int, alignment: int) -> dict:
    cursor.need(n_tensors * _MIN_INFO, f"{n_tensors} tensor infos")
    infos: dict = {}
    expected = 0
    for i in range(n_tensors):
        name = cursor.string(f"tensor {i}'s name", MAX_NAME - 1)
        if isinstance(name, Unread) or name in infos:
            raise ValueError(f"tensor {i}'s name is a duplicate or {MAX_NAME} bytes or more")
        n_dims = cursor.scalar("I", 4, f"{name!r}'s dim count")
        if n_dims > MAX_DIMS:
            raise ValueError(f"tensor {name!r} has {n_dims} dims, more than {MAX_DIMS}")
        dims = tuple(cursor.scalar("q", 8, f"{name!r}'s dim {j}") for j in range(n_dims))
        count = 1
        for dim in dims:
            count *= dim
        if min(dims, default=0) < 0 or count >= 1 << 63:
            raise ValueError(f"tensor {name!r} has the dims {dims}")
        kind = cursor.scalar("i", 4, f"{name!r}'s type")
        if kind not in GGML_TYPES:
            raise ValueError(f"tensor {name!r} has the unknown ggml type {kind}")
        type_name, block, block_bytes = GGML_TYPES[kind]
        if (dims[0] if dims else 1) % block:
            raise ValueError(f"tensor {name!r}: dim 0 is not a multiple of {type_name}'s {block}")
        nbytes = count // block * block_bytes
        offset = cursor.scalar("Q", 8, f"{name!r}'s offset")
        if offset != expected:
            raise ValueError(f"tensor {name!r} is at offset {offset}, where {expected} is next")
        expected += -(-nbytes // alignment) * alignment
        infos[name] = TensorInfo(dims, kind, offset, nbytes)
    return infos


def _tensor(path: str, buf, start: int, name: str, info, order: str):
    """An F32 tensor's values (float64 copies), or ``None`` when the file has no such tensor;
    any other type is refused, as ggml's rope asserts F32 factors."""
    if info is None:
        return None
    if info.ggml_type != 0:
        raise ValueError(f"{path}: tensor {name!r} is {info.type_name}; llama.cpp needs F32")
    count = info.nbytes // 4
    if count > KEEP_ARRAY:
        raise ValueError(f"{path}: tensor {name!r} has {count} values, not a RoPE factor tensor")
    values = np.frombuffer(buf, np.dtype(order + "f4"), count, start + info.offset)
    return values.astype(np.float64)


# --------------------------------------------------------------------------- split sets


def shard_paths(path: str, number: int, count: int) -> list:
    """The paths of the ``count`` shards of the set the file at ``path`` (shard ``number``,
    from 0, of ``count``) belongs to, as llama.cpp derives them from its name
    (``llama_split_prefix``, ``llama_split_path``)."""
    found = SHARD_NAME.match(os.path.basename(path))
    if not found or int(found["no"]) != number + 1 or int(found["count"]) != count:
        raise ValueError(
            f"{path}: shard {number + 1} of a split GGUF of {count} (split.no, split.count), "
            f"but its name is not <prefix>-{number + 1:05d}-of-{count:05d}.gguf as llama.cpp "
            "requires to find the other shards"
        )
    prefix = os.path.join(os.path.dirname(path), found["prefix"])
    return [f"{prefix}-{k:05d}-of-{count:05d}.gguf" for k in range(1, count + 1)]


def _read_set(path: str, given: GGUF, wanted: tuple) -> GGUF:
    """A split set read from any of its shards: each shard bounded as one file, its
    ``split.no`` checked, no tensor in two shards, ``split.tensors.count`` the total."""
    count = given.kv["split.count"]
    number = given.kv.get("split.no")
    if given.types.get("split.no") != "UINT16" or not isinstance(number, int) or number >= count:
        raise ValueError(f"{path}: split.count {count} but split.no is {number!r}")
    paths = shard_paths(path, number, count)
    shards = []
    kv_left, tensors_left = MAX_KV - len(given.kv), MAX_TENSORS - len(given.tensors)
    for k, shard in enumerate(paths):
        if not os.path.exists(shard):
            raise ValueError(
                f"{path} is shard {number + 1} of a split GGUF of {count}: shard {k + 1}, "
                f"{shard}, is missing (every shard is needed: the RoPE tensors may be in any)"
            )
        if k == number:
            read_ = given
        else:  # the whole set's counts are bounded as one file's
            read_ = _read_one(shard, wanted, (kv_left, tensors_left))
            kv_left, tensors_left = kv_left - len(read_.kv), tensors_left - len(read_.tensors)
        if read_.kv.get("split.no") != k or read_.kv.get("split.count") != count:
            raise ValueError(
                f"{shard}: split.no {read_.kv.get('split.no')!r} of "
                f"{read_.kv.get('split.count')!r}, where shard {k + 1} of {count} is expected"
            )
        shards.append(read_)
    first = shards[0]
    tensors: dict = {}
    data: dict = {}
    for shard, shard_path in zip(shards, paths):
        for name, info in shard.tensors.items():
            if name in tensors:
                raise ValueError(f"{shard_path}: tensor {name!r} is in two shards")
            tensors[name] = info
        data.update(shard.data)
    expected = first.kv.get("split.tensors.count")
    if expected != len(tensors):
        raise ValueError(
            f"{paths[0]}: split.tensors.count {expected!r}, where the shards hold {len(tensors)}"
        )
    return first._replace(path=path, tensors=tensors, data=data, shards=tuple(paths))
