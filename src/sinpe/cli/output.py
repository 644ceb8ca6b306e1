"""The command line's ``-o`` files: named as ``numpy.save`` names them, written by the
writing room (``sinpe._files.writing``).

- The name: ``suffix`` (``.npy``, ``.npz``, ``.png``) is appended unless the name already
  ends with it (``numpy.save``'s rule: ``-o pe.txt`` writes ``pe.txt.npy``). A character
  device (``/dev/null``, ``/dev/stdout``) is written directly, under its own name.
- The write: a new file only. A name already taken (a file, a symbolic link, dangling or
  not) is refused before any work, naming it: sinpe never replaces a file nor writes
  through a link. The file is made under a temporary name in its folder and moved to its
  name at the end, so every failure (a full disk, a size limit, SIGINT, SIGTERM) leaves no
  file and no temporary file behind. It gets the mode ``numpy.save`` would give it (``0666``
  less the umask). The folder must exist and be writable, else the write is refused naming
  it.
- The size: a file over ``LARGE_FILE`` bytes is announced on stderr before it is written
  (``announce``). The values: ``.npy`` and ``.npz`` have no bfloat16, so such an array is
  written as its bit patterns (``savable``; ``BITS_NOTE`` says so).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from .._files import writing

__all__ = ["BITS_NOTE", "LARGE_FILE", "announce", "output_path", "savable", "write_atomically"]

LARGE_FILE = 64 << 20  # a file larger than this is announced before it is written
BITS_NOTE = " (bfloat16 as its bit patterns, uint16: .view(ml_dtypes.bfloat16) after loading)"


def output_path(output: str, suffix: str) -> str:
    """The file ``-o output`` writes (the name printed is the name written), its name and
    folder checked: called before any work, so that a bad destination is said at once."""
    if not output or not os.path.basename(output):
        raise ValueError(f"-o needs a file name, got {output!r}")
    if writing.is_device(output):
        return output
    if os.path.isdir(output) and not os.path.islink(output):
        raise ValueError(f"-o {output!r} is a directory: give a file name")
    path = output if output.lower().endswith(suffix) else output + suffix
    writing.check_new(path)
    return path


def write_atomically(path: str, write) -> None:
    """``write(file)`` writes the new file ``path`` (see the module's rules)."""
    writing.write_new(path, write)


def savable(array: np.ndarray) -> np.ndarray:
    """.npy/.npz have no bfloat16: such an array is written as its bit patterns (uint16)."""
    return array.view(np.uint16) if array.dtype.name == "bfloat16" else array


def announce(path: str, nbytes: int, why: str) -> None:
    """Say on stderr that ``path`` is about to be written, when it is over ``LARGE_FILE``."""
    if nbytes > LARGE_FILE:
        print(f"writing {path}: {nbytes / 2**20:,.0f} MiB ({why})", file=sys.stderr, flush=True)
