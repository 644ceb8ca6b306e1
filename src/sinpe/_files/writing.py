"""The writing room: every file sinpe writes is made here.

- A new file is made under a temporary name in its own folder (``O_CREAT | O_EXCL |
  O_NOFOLLOW``, mode ``0666`` less the umask, as ``numpy.save`` gives), written, flushed to
  disk, and moved to its name only at the end, by a move that never replaces: ``renameat2``
  with ``RENAME_NOREPLACE`` where the kernel has it, else a hard link of the temporary file
  (which fails on any name taken, a dangling symbolic link included) and its unlink.
- A name taken by anything (a file, a folder, a FIFO, a symbolic link, dangling or not) is
  refused, naming it: sinpe never replaces, appends to or writes through what is there. A
  character device (``/dev/null``, ``/dev/full``) is a stream, written as one.
- A user's file brought into a new model folder is copied (a reflink where the file system
  makes one), never hard-linked: a second name would be a second way to change it, and ONNX
  refuses external data with more than one link.
- Several files (``new_files``) or a whole folder (``new_folder``: made under a temporary name
  beside it, moved into place last) are put in place together or not at all: an error, Ctrl-C
  (SIGINT) or SIGTERM at any moment leaves the folder as it was, and the retry works.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import IO

__all__ = [
    "NewFiles",
    "check_new",
    "copy_new",
    "is_device",
    "new_files",
    "new_folder",
    "remove_own",
    "scratch",
    "scratch_folder",
    "silence",
    "write_new",
]

_FICLONE = 0x40049409  # Linux's ioctl that shares a file's extents (a reflink): btrfs, XFS
_CHUNK = 8 << 20  # bytes copied per call where no reflink is made
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_FLAGS |= getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = {stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
_KINDS.update({stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"})


def is_device(path) -> bool:
    """Whether ``path`` is a character device (``/dev/null``): a stream, not a file made."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def check_new(path, shown=None) -> None:
    """Refuse (``ValueError``) unless ``path`` is a free name in an existing, writable folder;
    ``shown`` is the name said (default ``path``)."""
    shown = os.fspath(path if shown is None else shown)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        named = os.path.dirname(shown) or folder
        raise ValueError(f"cannot write {shown!r}: the directory {named!r} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(
            f"cannot write {shown!r}: the directory {folder!r} is not writable (a file is "
            "made there under a temporary name, then moved to its own)"
        )
    taken = _taken(path, shown)
    if taken is not None:
        raise taken


def _taken(path, shown: str) -> ValueError | None:
    """The refusal of a name something holds (a symbolic link, dangling or not, included)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        where = "" if os.path.exists(path) else " (dangling)"
        return ValueError(
            f"{shown!r} is a symbolic link{where}: sinpe never writes through a link; remove "
            "it or give a new name"
        )
    kind = next((f" ({name})" for test, name in _KINDS.items() if test(mode)), "")
    return ValueError(
        f"{shown!r} exists{kind}: sinpe never replaces a file; remove it or give a new name"
    )


def write_new(path, produce: Callable[[IO[bytes]], object]) -> tuple | None:
    """``produce(stream)`` writes the bytes of the new file ``path`` (see the module); a
    character device is written directly. The new file's stamp, for ``remove_own``."""
    path = os.fspath(path)
    if is_device(path):
        _write_device(path, produce)
        return None
    with new_files(os.path.dirname(path)) as files:
        files.write(os.path.basename(path), produce)
    return _stamp(path)


def remove_own(path, stamp: tuple | None) -> None:
    """``path`` removed if it is still the file ``write_new`` made (its ``stamp``): what a
    program rewrites, such as a report, is its own file, never one put there since."""
    with contextlib.suppress(OSError):
        if stamp is not None and _stamp(path) == stamp:
            os.unlink(path)


_SCRATCH: set = set()  # the scratch folders open now (``scratch``): sinpe's own, nobody else's


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[str]:
    """A private folder of sinpe's own (a new name under the system's temporary folder, mode
    0700), removed with all it holds on leaving: where sinpe, and the engines it runs, put
    working files (an engine's twin). Never a user's folder."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        _SCRATCH.add(os.path.realpath(folder))
        try:
            yield folder
        finally:
            _SCRATCH.discard(os.path.realpath(folder))


def _in_scratch(path: str) -> str:
    """``path`` if it lies inside an open scratch folder (its folder resolved; the name
    itself never followed), else ``ValueError``."""
    path = os.fspath(path)
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if not any(folder == s or folder.startswith(s + os.sep) for s in _SCRATCH):
        raise ValueError(f"{path!r} is not in a scratch folder of sinpe's own: not touched")
    return path


def scratch_folder(path) -> None:
    """A new folder at ``path`` inside a scratch folder (a taken name is refused by mkdir)."""
    os.mkdir(_in_scratch(path), 0o700)


def silence(fd: int) -> None:
    """Descriptor ``fd`` pointed at the null device (a reader that left a pipe: the exit's
    flush must not fail again); a device, never a file."""
    null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _stamp(path: str) -> tuple:
    """A file's identity, its time and size too: a new file may reuse a removed one's inode."""
    status = os.lstat(path)
    return status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size


def copy_new(source, path) -> None:
    """The new file ``path``, a copy of the regular file ``source`` (see the module)."""
    path = os.fspath(path)
    with new_files(os.path.dirname(path)) as files:
        files.copy(source, os.path.basename(path))


class _Made:
    """One file on its way: its temporary name (listed before the file exists, so that a
    signal at any moment finds it), descriptor, identity (device, inode), and final name."""

    __slots__ = ("fd", "final", "ident", "shown", "temp")

    def __init__(self, final: str, shown: str):
        self.final, self.shown = final, shown
        self.temp: str | None = None
        self.fd: int | None = None
        self.ident: tuple | None = None


class NewFiles:
    """Files made in one folder under temporary names, moved to their names together when
    the ``with`` block of ``new_files`` or ``new_folder`` ends, or none of them."""

    def __init__(self, folder: str, shown: str):
        self.folder = folder  # where the files are made (a temporary folder for new_folder)
        self.shown = shown  # the folder as the user named it
        self._made: list[_Made] = []
        self._current: _Made | None = None  # the file a failure is said of

    def write(self, name: str, produce: Callable[[IO[bytes]], object]) -> str:
        """The new file ``name``: ``produce(stream)`` writes its bytes. Its name as said."""
        made = self._create(name)
        assert made.fd is not None
        # the file object never owns the descriptor: _close or _discard closes it
        with open(made.fd, "wb", closefd=False) as stream:
            produce(stream)
            stream.flush()
            os.fsync(stream.fileno())
        _close(made)
        return made.shown

    def copy(self, source, name: str) -> str:
        """The new file ``name``, a copy of the regular file ``source``. Its name as said."""
        source = os.fspath(source)
        flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
        reader = os.open(source, flags | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks
        try:
            status = os.fstat(reader)
            if not stat.S_ISREG(status.st_mode):
                raise ValueError(f"cannot copy {source!r}: not a regular file")
            made = self._create(name)
            assert made.fd is not None
            if not _reflink(reader, made.fd):
                _copy_bytes(reader, made.fd, status.st_size, source)
            os.fsync(made.fd)
            _close(made)
        finally:
            os.close(reader)
        return made.shown

    def _create(self, name: str) -> _Made:
        if not name or os.path.basename(name) != name or name in (".", ".."):
            raise ValueError(f"{name!r} is not a file name")
        final = os.path.join(self.folder, name)
        shown = os.path.join(self.shown, name)
        if any(m.final == final for m in self._made):
            raise ValueError(f"{shown!r} would be written twice")
        taken = _taken(final, shown)  # the folder's own trouble is the OS's to say, naming it
        if taken is not None:
            raise taken
        made = _Made(final, shown)
        self._made.append(made)
        self._current = made
        _temporary(self.folder, made)
        return made

    def _place(self) -> None:
        for made in self._made:
            assert made.temp is not None
            self._current = made
            try:
                _move(made.temp, made.final)
            except FileExistsError as exc:  # taken since it was checked
                raise _taken(made.final, made.shown) or exc from None

    def _discard(self) -> None:
        """Every temporary file and every file already moved to its name, removed."""
        for made in self._made:
            with contextlib.suppress(OSError):
                _close(made)
            if made.ident is not None:
                _remove_if(made.final, made.ident)
            _remove_if(made.temp, made.ident)


@contextlib.contextmanager
def new_files(folder, shown=None) -> Iterator[NewFiles]:
    """A ``NewFiles`` in the existing ``folder``: its files are put in place when the block
    ends, or, on any exception (a signal's included), none is and every one is removed."""
    folder = os.fspath(folder)
    files = NewFiles(folder or os.curdir, folder if shown is None else os.fspath(shown))
    with _signals_raise() as signals:
        try:
            yield files
            with signals.held():
                files._place()
            _raise_received(signals)  # a signal that came while they were moved: undone
        except BaseException as exc:
            with signals.held():
                files._discard()
            raise _reason(exc, signals, files._current or files) from None


@contextlib.contextmanager
def new_folder(out) -> Iterator[NewFiles]:
    """A ``NewFiles`` in a new folder made beside ``out`` under a temporary name, moved to
    ``out`` when the block ends (never replacing what is there); on any exception the
    temporary folder is removed with everything in it."""
    out = os.fspath(out).rstrip(os.sep) or os.sep
    check_new(out)
    made = _Made(out, out)
    with _signals_raise() as signals:
        try:
            _temporary(os.path.dirname(os.path.abspath(out)), made, directory=True)
            assert made.temp is not None
            with new_files(made.temp, out) as files:
                yield files
            with signals.held():
                _move(made.temp, out)
            _raise_received(signals)
        except BaseException as exc:
            with signals.held():
                if made.ident is not None:
                    _remove_if(out, made.ident)
                _remove_if(made.temp, made.ident)
            if isinstance(exc, FileExistsError):  # taken since it was checked
                exc = _taken(out, out) or exc
            raise _reason(exc, signals, made) from None


# --------------------------------------------------------------------------- the steps


def _temporary(folder: str, made: _Made, directory: bool = False) -> None:
    """A new file (or folder) in ``folder`` under an unused temporary name: the name in
    ``made`` before the file exists, then its descriptor and identity."""
    for _ in range(tempfile.TMP_MAX):
        made.temp = os.path.join(folder, f".sinpe-{secrets.token_hex(6)}.part")
        try:
            if directory:
                os.mkdir(made.temp, 0o777)
                made.ident = _identity(os.lstat(made.temp))
            else:
                made.fd = os.open(made.temp, _FLAGS, 0o666)
                made.ident = _identity(os.fstat(made.fd))
        except FileExistsError:
            made.temp = None
            continue
        return
    raise FileExistsError(errno.EEXIST, "no unused temporary name", folder)


def _identity(status: os.stat_result) -> tuple:
    return status.st_dev, status.st_ino


def _close(made: _Made) -> None:
    if made.fd is not None:
        fd, made.fd = made.fd, None
        os.close(fd)


def _remove_if(path: str | None, ident: tuple | None) -> None:
    """``path`` removed (a folder with what it holds) if it is the file or folder ``ident``
    (any, for a temporary name, which only sinpe makes)."""
    if path is None:
        return
    try:
        status = os.lstat(path)
    except OSError:
        return
    if ident is not None and _identity(status) != ident:
        return
    if stat.S_ISDIR(status.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _move(temp: str, final: str) -> None:
    """``temp`` renamed ``final``, never replacing anything there (``FileExistsError``)."""
    if _rename_noreplace(temp, final):
        return
    if os.name == "nt":
        os.rename(temp, final)  # Windows' rename never replaces
    elif os.path.isdir(temp):
        # no atomic no-replace rename here: refused where taken, and POSIX's rename of a
        # folder can replace nothing but an empty folder made in between
        taken = _taken(final, final)
        if taken is not None:
            raise FileExistsError(errno.EEXIST, str(taken), final)
        os.rename(temp, final)
    else:
        os.link(temp, final)  # a link fails on any name taken, a dangling symbolic link too
        os.unlink(temp)


@functools.cache
def _libc_rename():
    """The C library's no-replace rename (Linux's renameat2, macOS's renamex_np), or None."""
    try:
        if sys.platform.startswith("linux"):
            function = ctypes.CDLL(None, use_errno=True).renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p] * 2 + [ctypes.c_uint]
        elif sys.platform == "darwin":
            function = ctypes.CDLL(None, use_errno=True).renamex_np
            function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        else:
            return None
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    return function


def _rename_noreplace(temp: str, final: str) -> bool:
    """Whether ``temp`` was renamed ``final`` by the atomic no-replace rename; False where
    the kernel or the file system has none."""
    function = _libc_rename()
    if function is None:
        return False
    names = os.fsencode(temp), os.fsencode(final)
    if sys.platform == "darwin":
        done = function(*names, 0x4)  # RENAME_EXCL
    else:
        done = function(-100, names[0], -100, names[1], 0x1)  # AT_FDCWD, RENAME_NOREPLACE
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), final)  # EEXIST: a FileExistsError


def _reflink(reader: int, writer: int) -> bool:
    """Whether ``writer`` now shares ``reader``'s extents (Linux's FICLONE)."""
    if not sys.platform.startswith("linux"):
        return False
    import fcntl

    try:
        fcntl.ioctl(writer, _FICLONE, reader)
    except OSError:
        return False
    return True


def _copy_bytes(reader: int, writer: int, size: int, source: str) -> None:
    done = 0
    while done < size:
        count = _copy_chunk(reader, writer, done, min(_CHUNK, size - done))
        if count <= 0:
            raise ValueError(f"cannot copy {source!r}: it shrank while it was copied")
        done += count


def _copy_chunk(reader: int, writer: int, offset: int, count: int) -> int:
    """Up to ``count`` bytes of ``reader`` from ``offset`` appended to ``writer``."""
    if hasattr(os, "copy_file_range"):
        with contextlib.suppress(OSError):  # not across these file systems: read and write
            return os.copy_file_range(reader, writer, count, offset)
    if hasattr(os, "pread"):
        data = os.pread(reader, count, offset)
    else:
        os.lseek(reader, offset, os.SEEK_SET)
        data = os.read(reader, count)
    view = memoryview(data)
    while view:
        view = view[os.write(writer, view) :]
    return len(data)


def _write_device(path: str, produce: Callable[[IO[bytes]], object]) -> None:
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        with open(os.open(path, flags | getattr(os, "O_BINARY", 0)), "wb") as stream:
            if not stat.S_ISCHR(os.fstat(stream.fileno()).st_mode):  # changed since asked
                raise ValueError(f"cannot write {path!r}: no longer a character device")
            produce(stream)
    except OSError as exc:
        raise _failure(path, exc) from None


# --------------------------------------------------------------------------- signals


class _Signals:
    """The signals received while a write is under way: SIGINT raises ``KeyboardInterrupt``
    and SIGTERM ``SystemExit(143)``, so that the removal of what was made runs, except while
    that removal itself runs (``held``: said after it)."""

    def __init__(self):
        self.received: list = []
        self.holding = 0

    @contextlib.contextmanager
    def held(self):
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1

    def handle(self, signum, frame):
        self.received.append(signum)
        if not self.holding:
            raise _exception_of(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[_Signals]:
    """A ``_Signals`` whose handlers are installed for the block, in the main thread, where
    no handler of the program's own is (a signal lands there between two bytecodes, whichever
    thread it reached: a library's check may turn it into another exception, so the list
    says what really happened); inside another write's block, that write's."""
    if threading.current_thread() is not threading.main_thread():
        yield _Signals()
        return
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    owners = [getattr(h, "__self__", None) for h in handlers]
    outer = [owner for owner in owners if isinstance(owner, _Signals)]
    if outer:
        yield outer[0]
        return
    signals = _Signals()
    previous = {}
    if handlers[1] == signal.SIG_DFL:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, signals.handle)
    if handlers[0] is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signals.handle)
    try:
        yield signals
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_received(signals: _Signals) -> None:
    if signals.received:
        raise _exception_of(signals.received[0])


def _exception_of(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)


def _reason(exc: BaseException, signals: _Signals, made) -> BaseException:
    """What a write that failed with ``exc`` raises: the first signal received, else an
    ``OSError`` as a ``ValueError`` naming the file, else ``exc``."""
    if signals.received:
        return _exception_of(signals.received[0])
    if isinstance(exc, OSError):
        return _failure(made.shown, exc)
    return exc


def _failure(shown: str, exc: OSError) -> ValueError:
    reason = exc.strerror or str(exc)
    if exc.errno is None:  # numpy's short write ("N requested and M written") names no cause
        with contextlib.suppress(OSError, AttributeError):
            free = os.statvfs(os.path.dirname(os.path.abspath(shown)))
            if free.f_bavail * free.f_frsize < 1 << 20:
                reason = f"No space left on device ({reason})"
    return ValueError(f"cannot write {shown!r}: {reason}")
