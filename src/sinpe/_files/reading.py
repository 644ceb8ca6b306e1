"""The reading room: every file sinpe reads is opened here, and only a regular file is.

- ``opened``, ``mapped``, ``check_regular``: the path is opened ``O_RDONLY | O_NONBLOCK`` and
  its kind taken from the open descriptor (``fstat``), so a FIFO, socket, device or
  directory is refused at once, naming what it is, and never blocks; a missing or
  unreadable path raises the ``OSError`` unchanged, for the caller's own words.
- ``check_span``, ``read_exactly``, ``read_at``: every size a file declares is checked
  against the bytes it has before anything is allocated ("declares N bytes at offset O; the
  file has only M"); ``bounded``: a file handed to another library's parser (torch's legacy
  format) through reads capped by the bytes that remain.
- ``open_zip``, ``check_members``, ``check_npy_member``: a zip's central directory is bounded
  before it is parsed, and a member may expand at most ``MAX_RATIO`` times its compressed
  size (beyond ``RATIO_ALLOWANCE``); an ``.npy`` member's array bytes must be its size less
  its header, so a header cannot ask for more than the member inflates to.
- ``read_json``: a small JSON file (``config.json``, ``genai_config.json``), size-capped,
  UTF-8, a JSON object.

It imports only the standard library and NumPy (it sits under every reader in the house).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import mmap
import os
import stat
import struct
import zipfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, cast

import numpy as np

__all__ = [
    "BoundedReader",
    "MAX_JSON_BYTES",
    "MAX_NPY_HEADER",
    "MAX_RATIO",
    "MAX_ZIP_DIRECTORY",
    "RATIO_ALLOWANCE",
    "bounded",
    "check_members",
    "check_npy_member",
    "check_regular",
    "check_span",
    "mapped",
    "npy_header",
    "open_zip",
    "opened",
    "read_at",
    "read_exactly",
    "read_json",
    "read_text",
]

MAX_JSON_BYTES = 64 << 20  # a config.json is a few kB; a bigger file is not one
MAX_RATIO = 16  # real RoPE values deflate 1-2x (float16 a little more); 16x leaves a wide margin
RATIO_ALLOWANCE = 64 << 20  # up to this a member is read whatever its ratio (zeros deflate 1000x)
MAX_ZIP_DIRECTORY = 16 << 20  # a zip's directory (~100 bytes a member) is parsed into memory
MAX_NPY_HEADER = 10000  # NumPy's own bound on an .npy header (np.lib.format's max_header_size)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _named(path: str, what: str) -> str:
    return f"{what} {path!r}" if what else repr(path)


def _not_regular(path: str, mode: int, what: str) -> ValueError:
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return ValueError(f"{_named(path, what)} is {kind}, not a regular file")


def _open(path, what: str) -> int:
    """A read-only descriptor of the regular file at ``path``."""
    path = os.fspath(path)
    try:
        ahead = os.stat(path)
    except OSError:
        pass  # os.open says why, below
    else:  # refused before it is opened: opening a device can act on it
        if not stat.S_ISREG(ahead.st_mode):
            raise _not_regular(path, ahead.st_mode, what)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens at once
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # what was opened, whatever the path became since
            raise _not_regular(path, mode, what)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened(path, what: str = "") -> Iterator[IO[bytes]]:
    """The regular file at ``path``, open for reading in binary; ``ValueError`` naming what
    else it is (``what`` names the file in the message: ``"config"``)."""
    with os.fdopen(_open(path, what), "rb") as stream:
        yield stream


def check_regular(path, what: str = "") -> int:
    """The size of the regular file at ``path`` (for a reader that opens it by name itself)."""
    fd = _open(path, what)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


@contextlib.contextmanager
def mapped(path, what: str = "") -> Iterator[tuple[Any, int]]:
    """``(buffer, size)``: the regular file at ``path`` mapped read-only (an empty file is
    ``b""``); the map is closed on leaving."""
    with opened(path, what) as stream:
        size = os.fstat(stream.fileno()).st_size
        if not size:
            yield b"", 0
            return
        buffer = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield buffer, size
    finally:
        buffer.close()


def check_span(path, what: str, offset: int, length: int, size: int) -> None:
    """Refuse ``length`` bytes at ``offset`` that a file of ``size`` bytes does not hold."""
    if offset < 0 or length < 0 or offset + length > size:
        raise ValueError(
            f"{os.fspath(path)}: {what} declares {length} bytes at offset {offset}; the file "
            f"has only {size}"
        )


def read_exactly(stream: IO[bytes], offset: int, length: int, *, path, what: str) -> bytes:
    """Exactly ``length`` bytes at ``offset`` of an open file, checked before they are read."""
    size = os.fstat(stream.fileno()).st_size
    check_span(path, what, offset, length, size)
    stream.seek(offset)
    data = stream.read(length)
    if len(data) != length:  # shortened while read
        check_span(path, what, offset, length, offset + len(data))
    return data


def read_at(path, offset: int, length: int, *, what: str) -> bytes:
    """Exactly ``length`` bytes at ``offset`` of the regular file at ``path``."""
    with opened(path) as stream:
        return read_exactly(stream, offset, length, path=path, what=what)


class BoundedReader(io.RawIOBase):
    """A regular file read through a cap: every read returns at most the bytes that remain,
    so a length the file declares (a pickle's string, a record) never becomes an
    allocation beyond them. No ``fileno``: a library reads through it, not around it."""

    def __init__(self, stream: IO[bytes]):
        super().__init__()
        self._stream = stream
        self._size = os.fstat(stream.fileno()).st_size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._stream.seek(offset, whence)

    def tell(self) -> int:
        return self._stream.tell()

    def read(self, size: int | None = -1) -> bytes:
        left = max(self._size - self._stream.tell(), 0)
        return self._stream.read(left if size is None or size < 0 else min(size, left))

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


@contextlib.contextmanager
def bounded(path, what: str = "") -> Iterator[IO[bytes]]:
    """The regular file at ``path`` as a ``BoundedReader``."""
    with opened(path, what) as stream, BoundedReader(stream) as reader:
        yield cast(IO[bytes], reader)  # a binary file object, as typing does not know it


# --------------------------------------------------------------------------- JSON


def read_json(
    path,
    *,
    what: str = "config",
    kind: str = "a config.json",
    max_bytes: int = MAX_JSON_BYTES,
    parse_int: Callable[[str], Any] | None = None,
) -> dict:
    """The JSON object in the small regular file at ``path`` (at most ``max_bytes``, UTF-8);
    ``ValueError`` naming it (``what``: ``"config"``; ``kind``: what such a file is)."""
    path = os.fspath(path)
    name = _named(path, what)
    with opened(path, what) as stream:
        data = stream.read(max_bytes + 1)  # its size may be 0 (/proc) or grow: read, then count
    if len(data) > max_bytes:
        raise ValueError(f"{name} is larger than {max_bytes >> 20} MiB: not {kind}")
    if not data.strip():
        raise ValueError(f"{name} is empty: {kind} holds a JSON object")
    try:
        found = json.loads(data.decode("utf-8"), parse_int=parse_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{name} is nested too deeply to be {kind}") from None
    if not isinstance(found, dict):
        raise ValueError(f"{name} must hold a JSON object")
    return found


def read_text(path, *, what: str, max_bytes: int = 4096) -> str:
    """The text of a small regular file (at most ``max_bytes``, UTF-8: a checkout's
    ``.git/HEAD``); ``ValueError`` naming it where it is not one."""
    path = os.fspath(path)
    with opened(path, what) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{_named(path, what)} is larger than {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{_named(path, what)} is not UTF-8 text") from None


# --------------------------------------------------------------------------- zip files


def _directory_size(stream: IO[bytes], size: int) -> int:
    """The central directory's size as the end record gives it (zipfile reads that many
    bytes and keeps a record per member), or 0 where there is no end record."""
    tail_size = min(size, 22 + 0xFFFF)
    stream.seek(size - tail_size)
    tail = stream.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")  # the last one, as zipfile finds it
    if at < 0 or len(tail) - at < 22:
        return 0
    directory = struct.unpack_from("<L", tail, at + 12)[0]
    if directory != 0xFFFFFFFF or at < 20 or tail[at - 20 : at - 16] != b"PK\x06\x07":
        return directory
    (record,) = struct.unpack_from("<Q", tail, at - 20 + 8)  # the zip64 end record's offset
    if record + 56 > size:
        return 0  # zipfile refuses it
    stream.seek(record)
    head = stream.read(56)
    return struct.unpack_from("<Q", head, 40)[0] if head[:4] == b"PK\x06\x06" else 0


@contextlib.contextmanager
def open_zip(path, what: str = "") -> Iterator[tuple[zipfile.ZipFile, int]]:
    """``(archive, size)``: the regular file at ``path`` opened as a zip, its central
    directory first bounded by ``MAX_ZIP_DIRECTORY``; members are checked by
    ``check_members`` before one is read."""
    with opened(path, what) as stream:
        size = os.fstat(stream.fileno()).st_size
        directory = _directory_size(stream, size)
        if directory > min(MAX_ZIP_DIRECTORY, size):
            raise ValueError(
                f"{os.fspath(path)}: its zip directory declares {directory} bytes (the file has "
                f"{size}; at most {MAX_ZIP_DIRECTORY} are read): not a cache"
            )
        stream.seek(0)
        with zipfile.ZipFile(stream) as archive:
            yield archive, size


def check_members(path, infos: Iterable[zipfile.ZipInfo], size: int) -> None:
    """Refuse a member whose compressed bytes lie past the file's ``size``, or that expands
    more than ``MAX_RATIO`` times (beyond ``RATIO_ALLOWANCE``), alone or with the others."""
    path = os.fspath(path)
    total = 0
    for info in infos:
        check_span(path, f"member {info.filename!r}", info.header_offset, info.compress_size, size)
        if info.file_size > MAX_RATIO * info.compress_size + RATIO_ALLOWANCE:
            raise ValueError(
                f"{path}: member {info.filename!r} expands {info.compress_size} bytes to "
                f"{info.file_size}, more than {MAX_RATIO} times (a zip bomb?): refused"
            )
        total += info.file_size
    if total > MAX_RATIO * size + RATIO_ALLOWANCE:
        raise ValueError(
            f"{path}: its members expand to {total} bytes, more than {MAX_RATIO} times the "
            f"file's {size} (members sharing their bytes?): refused"
        )


def npy_header(stream: IO[bytes]) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` data at the stream's position; the
    stream is left at its first value. The header's length is bounded before it is read
    (NumPy reads the length a version 2 or 3 header declares, up to 4 GiB, then bounds it)."""
    magic = stream.read(8)
    if len(magic) < 8 or magic[:6] != b"\x93NUMPY":
        raise ValueError("not an .npy array (it does not start with the magic b'\\x93NUMPY')")
    version = (magic[6], magic[7])
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"an .npy of version {version[0]}.{version[1]} (1.0 to 3.0 are read)")
    width = 2 if version == (1, 0) else 4
    length_bytes = stream.read(width)
    length = int.from_bytes(length_bytes, "little")
    if len(length_bytes) < width or length > MAX_NPY_HEADER:
        raise ValueError(f"an .npy header of {length} bytes (at most {MAX_NPY_HEADER} are read)")
    text = stream.read(length)
    if len(text) < length:
        raise ValueError(f"an .npy header of {length} bytes, cut short at {len(text)}")
    header = io.BytesIO(magic + length_bytes + text)
    np.lib.format.read_magic(header)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(header, max_header_size=MAX_NPY_HEADER)
    return np.lib.format.read_array_header_2_0(header, max_header_size=MAX_NPY_HEADER)


def check_npy_member(path, info: zipfile.ZipInfo, header: int, shape, dtype) -> None:
    """Refuse an ``.npy`` member whose header (``header`` bytes long) declares other than
    the bytes that follow it in the member: an array is allocated at its declared size."""
    declared = math.prod(shape) * dtype.itemsize
    if declared != info.file_size - header:
        raise ValueError(
            f"{os.fspath(path)}: member {info.filename!r} declares {declared} bytes of values "
            f"after its {header}-byte header; the member holds {info.file_size - header}"
        )
