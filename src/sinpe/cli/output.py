"""The command line's ``-o`` files: named as ``numpy.save`` names them, written atomically.

- The name: ``suffix`` (``.npy``, ``.npz``, ``.png``) is appended unless the name already
  ends with it (``numpy.save``'s rule: ``-o pe.txt`` writes ``pe.txt.npy``). A character
  device (``/dev/null``, ``/dev/stdout``) is written directly, under its own name.
- The write: into a temporary file in the directory of the file replaced, then renamed over
  it, so every failure (a full disk, a size limit, SIGINT, SIGTERM) leaves the old file
  intact and no temporary file behind. A symbolic link is followed (its target is replaced);
  a hard link is broken (the name gets a new file; other names keep the old data). A new
  file gets the mode ``numpy.save`` would give it (``0666`` less the umask); a replaced file
  keeps its mode. The replacement needs a writable directory: without one, the write is
  refused naming the directory.
- The size: a file over ``LARGE_FILE`` bytes is announced on stderr before it is written
  (``announce``). The values: ``.npy`` and ``.npz`` have no bfloat16, so such an array is
  written as its bit patterns (``savable``; ``BITS_NOTE`` says so).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import stat
import sys
import tempfile
import threading

import numpy as np

__all__ = ["BITS_NOTE", "LARGE_FILE", "announce", "output_path", "savable", "write_atomically"]

LARGE_FILE = 64 << 20  # a file larger than this is announced before it is written
BITS_NOTE = " (bfloat16 as its bit patterns, uint16: .view(ml_dtypes.bfloat16) after loading)"


def output_path(output: str, suffix: str) -> str:
    """The file ``-o output`` writes (the name printed is the name written), its directory
    checked: called before any work, so that a bad destination is said at once."""
    if not output or not os.path.basename(output):
        raise ValueError(f"-o needs a file name, got {output!r}")
    if _is_device(output):
        return output
    if os.path.isdir(output):
        raise ValueError(f"-o {output!r} is a directory: give a file name")
    path = output if output.lower().endswith(suffix) else output + suffix
    _writable_folder(path)
    return path


def _writable_folder(path: str) -> str:
    """The directory the file ``path`` is renamed into, which must exist and be writable."""
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        shown = os.path.dirname(path) or folder
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise ValueError(f"cannot write {path!r}: the directory {shown!r} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(
            f"cannot write {path!r}: the directory {folder!r} is not writable (the file is "
            "replaced by a rename there, so that a failed write keeps the old one)"
        )
    return folder


def _is_device(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _signals_raise():
    """SIGINT raises ``KeyboardInterrupt`` and SIGTERM ``SystemExit(143)``, so that the
    ``finally`` that removes the temporary file runs; the signals received are listed in
    what it yields. (A signal that lands inside a library's Python-level check can come out
    as another exception, NumPy's ``tofile`` turning it into a ``TypeError``: the list says
    what really happened.)"""
    received: list = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def interrupt(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt

    def terminate(signum, frame):
        received.append(signum)
        raise SystemExit(128 + signum)

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, terminate)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not a caller's own
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _temporary(folder: str, made: list) -> None:
    """A new file in ``folder``, its ``[fd, name]`` in ``made``, the name listed before the
    file exists: a signal handler that raises at any moment (Python runs it between two
    bytecodes of the main thread, whichever thread the signal reached, so holding the signal
    back in this thread is not enough) finds the name, never a file no ``finally`` knows of."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(tempfile.TMP_MAX):
        name = os.path.join(folder, f".sinpe-{secrets.token_hex(6)}.part")
        made[:] = [None, name]
        try:
            made[0] = os.open(name, flags, 0o600)
        except FileExistsError:
            continue
        return
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)


def _raise_received(received: list) -> None:
    """The exception of the first signal received, if any."""
    if received:
        if received[0] == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise SystemExit(128 + received[0]) from None


def _failure(path: str, exc: OSError) -> ValueError:
    reason = exc.strerror or str(exc)
    if exc.errno is None:  # numpy's short write ("N requested and M written") names no cause
        with contextlib.suppress(OSError):
            free = os.statvfs(os.path.dirname(os.path.realpath(path)) or ".")
            if free.f_bavail * free.f_frsize < 1 << 20:
                reason = f"No space left on device ({reason})"
    return ValueError(f"cannot write {path!r}: {reason}")


def write_atomically(path: str, write) -> None:
    """``write(file)``: into ``path`` (see the module's rules)."""
    if _is_device(path):
        try:
            with open(path, "wb") as file:
                write(file)
        except OSError as exc:
            raise _failure(path, exc) from None
        return
    target = os.path.realpath(path)  # a symbolic link: its target is the file replaced
    folder = _writable_folder(path)  # again: it may have changed since output_path
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    except OSError as exc:
        raise _failure(path, exc) from None
    made: list = []  # [fd, name] of the temporary file: the fd is None once closed
    replaced = False
    with _signals_raise() as received:
        try:
            _temporary(folder, made)
            # the file object never owns the descriptor (closefd=False): it is closed here,
            # or by the finally, whichever line an exception leaves from
            with open(made[0], "wb", closefd=False) as file:
                os.fchmod(file.fileno(), mode)
                write(file)
                file.flush()
                os.fsync(file.fileno())
            handle, made[0] = made[0], None
            os.close(handle)
            os.replace(made[1], target)
            replaced = True
        except BaseException as exc:
            _raise_received(received)
            if isinstance(exc, OSError):
                raise _failure(path, exc) from None
            raise
        finally:
            if made and made[0] is not None:
                with contextlib.suppress(OSError):
                    os.close(made[0])
            if made and not replaced:
                with contextlib.suppress(OSError):
                    os.unlink(made[1])


def savable(array: np.ndarray) -> np.ndarray:
    """.npy/.npz have no bfloat16: such an array is written as its bit patterns (uint16)."""
    return array.view(np.uint16) if array.dtype.name == "bfloat16" else array


def announce(path: str, nbytes: int, why: str) -> None:
    """Say on stderr that ``path`` is about to be written, when it is over ``LARGE_FILE``."""
    if nbytes > LARGE_FILE:
        print(f"writing {path}: {nbytes / 2**20:,.0f} MiB ({why})", file=sys.stderr, flush=True)
