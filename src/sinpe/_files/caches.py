"""Reading another engine's cos/sin cache for ``sinpe check``, with memory known before the
work, through the reading room (``sinpe._files.reading``: regular files only, every declared
size checked against the bytes present): only the members a check needs are read, each
member's expanded size is known (bounded by ``max_bytes``, by a ratio to its compressed
size, and equal to what its header declares) before a byte of it is inflated, ``.npy`` and
``.safetensors`` are memory-mapped, and torch tensors stay views (a stride-0 ``expand`` is
never expanded).

An array comes back as a ``Stored``: its values as NumPy (possibly a read-only map or a
strided view) and the name of the dtype they were written in (``bfloat16`` and the float8
types, which NumPy lacks, are kept as their bit patterns and decoded a block at a time).
"""

from __future__ import annotations

import json
import math
import os
import struct
import warnings
from typing import NamedTuple

import numpy as np

from .._tables import checks
from . import reading

__all__ = ["DEFAULT_MAX_BYTES", "NARROW", "Stored", "load"]

DEFAULT_MAX_BYTES = 16 << 30  # a cache of more than 16 GiB expanded is not a RoPE cache
MAX_HEADER_BYTES = 100 << 20  # a .safetensors header (JSON) larger than this is refused
# sinpe's own members of an .npz it writes: the record of the values' dtype, and the metadata
DTYPE_MEMBER = "dtype"
_METADATA = ("inv_freq", "attention_factor", DTYPE_MEMBER)
# the dtypes NumPy lacks: bit patterns of this width, decoded through ml_dtypes (or by hand)
NARROW = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
_SAFETENSORS = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "C64": "complex64",
    "C128": "complex128",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}


class Stored(NamedTuple):
    """One array of a cache: ``values`` as NumPy (bit patterns for a ``NARROW`` dtype) and
    the name of the dtype it was written in."""

    values: np.ndarray
    dtype: str
    name: str

    @property
    def shape(self) -> tuple:
        return self.values.shape

    @property
    def nbytes(self) -> int:
        return math.prod(self.values.shape) * self.values.dtype.itemsize


def _stored(values: np.ndarray, name: str, record: str | None = None) -> Stored:
    if record is not None:
        if values.dtype.kind not in "iu" or values.dtype.itemsize != NARROW[record]:
            raise ValueError(
                f"{name} is recorded as {record} but holds {values.dtype}: not its bit patterns"
            )
        return Stored(values, record, name)
    dtype = values.dtype
    if dtype.name in NARROW:  # ml_dtypes arrays: keep their bits
        return Stored(values.view(f"u{dtype.itemsize}"), dtype.name, name)
    return Stored(values, dtype.name, name)


def _bytes(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _check_size(arrays: list, path: str, max_bytes: int) -> None:
    total = sum(math.prod(shape) * itemsize for shape, itemsize in arrays)
    if total > max_bytes:
        raise ValueError(
            f"{path}: the cache holds {_bytes(total)} of values, more than --max-bytes "
            f"{_bytes(max_bytes)}: a RoPE cache is far smaller (raise --max-bytes to check it)"
        )


def _regular(path: str) -> None:
    try:
        reading.check_regular(path)
    except OSError as exc:
        raise checks.unreadable(path, exc) from None


def _pick(names: list, path: str, layer_type: str | None) -> list:
    """The members a check reads: ``cos`` and ``sin`` (``cos_<layer type>`` and
    ``sin_<layer type>`` with one), else the one array that is not sinpe's metadata."""
    suffix = f"_{layer_type}" if layer_type else ""
    per_layer = sorted(n[4:] for n in names if n.startswith("cos_") and f"sin_{n[4:]}" in names)
    if per_layer and not layer_type:  # never one pair judged while the others go unread
        raise ValueError(
            f"{path} holds a cache per layer type ({', '.join(per_layer)}): pass --layer-type"
        )
    if f"cos{suffix}" in names and f"sin{suffix}" in names:
        return [f"cos{suffix}", f"sin{suffix}"]
    if layer_type and "cos" in names and "sin" in names:
        return ["cos", "sin"]
    arrays = [n for n in names if not n.startswith(_METADATA)]
    if len(arrays) == 1:
        return arrays
    wanted = f"'cos{suffix}' and 'sin{suffix}'"
    raise ValueError(
        f"{path} holds {', '.join(map(repr, names[:8]))}: expected {wanted}, or one array"
    )


def _from_npz(path: str, layer_type, max_bytes: int) -> list:
    with reading.open_zip(path) as (archive, size):
        infos = archive.infolist()
        reading.check_members(path, infos, size)  # before any member is inflated
        members = {info.filename[:-4]: info for info in infos}
        members = {k: v for k, v in members.items() if v.filename.endswith(".npy")}
        names = _pick(list(members), path, layer_type)
        record = None
        if DTYPE_MEMBER in members:
            with archive.open(members[DTYPE_MEMBER]) as stream:
                if members[DTYPE_MEMBER].file_size > 4096:
                    raise ValueError(f"{path}: its {DTYPE_MEMBER!r} record is not one name")
                record = str(np.lib.format.read_array(stream, allow_pickle=False))
            if record not in NARROW:
                raise ValueError(
                    f"{path}: its {DTYPE_MEMBER!r} record says {record!r:.40}; one of "
                    f"{', '.join(NARROW)} is expected"
                )
        headers = []
        for name in names:
            with archive.open(members[name]) as stream:
                shape, _, dtype = reading.npy_header(stream)
                headers.append((shape, dtype, stream.tell()))
        _check_size([(s, d.itemsize) for s, d, _ in headers], path, max_bytes)
        arrays = []
        for name, (shape, dtype, header) in zip(names, headers):
            reading.check_npy_member(path, members[name], header, shape, dtype)
            with archive.open(members[name]) as stream:  # reads exactly the header's bytes
                values = np.lib.format.read_array(stream, allow_pickle=False)
            arrays.append(_stored(values, name, record))
        return arrays


def _from_npy(path: str, max_bytes: int) -> list:
    with reading.opened(path) as stream:
        shape, fortran, dtype = reading.npy_header(stream)
        header = stream.tell()
        _check_size([(shape, dtype.itemsize)], path, max_bytes)
        if dtype.hasobject:
            raise ValueError(f"{path} holds Python objects, not a table of numbers")
        if not math.prod(shape):
            return [_stored(np.empty(shape, dtype), "array")]
        size = os.fstat(stream.fileno()).st_size
        reading.check_span(path, "its array", header, math.prod(shape) * dtype.itemsize, size)
        values = np.memmap(stream, dtype, "r", header, shape, "F" if fortran else "C")
    return [_stored(values, "array")]


def _from_safetensors(path: str, layer_type, max_bytes: int) -> list:
    with reading.opened(path) as stream:
        size = os.fstat(stream.fileno()).st_size
        return _safetensors_arrays(path, stream, size, layer_type, max_bytes)


def _safetensors_arrays(path: str, stream, size: int, layer_type, max_bytes: int) -> list:
    if size < 8:
        raise ValueError("too short for a .safetensors file")
    (length,) = struct.unpack("<Q", reading.read_exactly(stream, 0, 8, path=path, what="a header"))
    if length > min(MAX_HEADER_BYTES, size - 8):
        raise ValueError(f"its header claims {length} bytes: not a .safetensors file")
    text = reading.read_exactly(stream, 8, length, path=path, what="its header")
    header = json.loads(text.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    names = _pick(list(header), path, layer_type)
    entries = []
    for name in names:
        entry = header[name]
        kind = _SAFETENSORS.get(str(entry.get("dtype"))) if isinstance(entry, dict) else None
        if kind is None:
            raise ValueError(f"{path}: tensor {name!r} has dtype {entry!r:.60}: not one it reads")
        shape = tuple(int(n) for n in entry["shape"])
        begin, end = (int(n) for n in entry["data_offsets"])
        itemsize = NARROW.get(kind) or np.dtype(kind).itemsize
        if not 0 <= begin <= end <= size - 8 - length or end - begin != math.prod(shape) * itemsize:
            raise ValueError(f"{path}: tensor {name!r}'s offsets do not fit its shape and file")
        entries.append((name, kind, shape, 8 + length + begin, itemsize))
    _check_size([(shape, itemsize) for _, _, shape, _, itemsize in entries], path, max_bytes)
    record = metadata.get(DTYPE_MEMBER) if isinstance(metadata, dict) else None
    arrays = []
    for name, kind, shape, start, itemsize in entries:
        raw = kind if kind not in NARROW else f"u{itemsize}"
        if math.prod(shape) == 0:
            values = np.empty(shape, raw)
        else:
            values = np.memmap(stream, dtype=raw, mode="r", offset=start, shape=shape)
        arrays.append(
            Stored(values, kind, name) if kind in NARROW else _stored(values, name, record)
        )
    return arrays


def _from_torch_tensor(value, name: str) -> Stored:
    import torch

    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{name} is a {type(value).__name__}, not a tensor")
    value = value.detach()
    kind = str(value.dtype).removeprefix("torch.")
    if kind in NARROW:  # the bits, as a view: strides kept, nothing expanded
        bits = value.view(torch.int16 if NARROW[kind] == 2 else torch.uint8)
        return Stored(bits.numpy().view(f"u{NARROW[kind]}"), kind, name)
    return _stored(value.resolve_conj().numpy(), name)


def _bounded_torch_zip(path: str) -> bool:
    """Whether the .pt file is a torch zip, its members checked as an ``.npz``'s (torch.load
    opens it again, by name, to map it)."""
    with reading.opened(path) as stream:
        if stream.read(4) != b"PK\x03\x04":
            return False
    with reading.open_zip(path) as (archive, size):
        reading.check_members(path, archive.infolist(), size)
    return True


def _from_torch(path: str, layer_type, max_bytes: int) -> list:
    zipped = _bounded_torch_zip(path)
    try:
        import torch
    except ImportError:
        raise ValueError(f"{path}: reading .pt files needs torch: pip install torch") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's legacy-format and weights_only notes
        if zipped:
            data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        else:  # the legacy format, read through a cap: its pickle's lengths are not trusted
            with reading.bounded(path) as stream:
                data = torch.load(stream, map_location="cpu", weights_only=True)
    if isinstance(data, torch.Tensor):
        data = {"cache": data}
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        data = {"cos": data[0], "sin": data[1]}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValueError(f"{path} holds a {type(data).__name__}, not named tensors")
    names = _pick(list(data), path, layer_type)
    for name in names:
        if not isinstance(data[name], torch.Tensor):
            raise ValueError(f"{path}: {name!r} is a {type(data[name]).__name__}, not a tensor")
    _check_size([(tuple(data[n].shape), data[n].element_size()) for n in names], path, max_bytes)
    return [_from_torch_tensor(data[name], name) for name in names]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load(path: str, *, layer_type: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
    """The cache's arrays, ``[cos, sin]`` or ``[one array]``, as ``Stored``."""
    _regular(path)
    lower = path.lower()
    readers = {
        ".npy": lambda: _from_npy(path, max_bytes),
        ".npz": lambda: _from_npz(path, layer_type, max_bytes),
        ".pt": lambda: _from_torch(path, layer_type, max_bytes),
        ".pth": lambda: _from_torch(path, layer_type, max_bytes),
        ".safetensors": lambda: _from_safetensors(path, layer_type, max_bytes),
    }
    reader = next((r for suffix, r in readers.items() if lower.endswith(suffix)), None)
    if reader is None:
        raise ValueError(f"{path}: expected a .npy, .npz, .pt or .safetensors file")
    try:
        return reader()
    except ValueError as exc:
        if path in str(exc):  # sinpe's own, naming the file
            raise
        raise ValueError(f"cannot read {path!r}: {_one_line(exc)}") from None
    except MemoryError:
        raise ValueError(f"cannot read {path!r}: out of memory") from None
    except Exception as exc:  # a corrupt or foreign file: one line, never a traceback
        if type(exc).__name__ == "UnpicklingError":
            raise ValueError(
                f"cannot read {path!r}: it holds Python objects beyond tensors, which sinpe "
                "never runs (torch.load weights_only=True refused it)"
            ) from None
        raise ValueError(f"cannot read {path!r}: {type(exc).__name__}: {_one_line(exc)}") from None
