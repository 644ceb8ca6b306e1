"""Argument checks shared by the public functions: each names the argument and what is allowed,
and raises ``TypeError`` for a wrong type, ``ValueError`` for a wrong value."""

from __future__ import annotations

import errno
import math
import operator
import os

import numpy as np

MAX_POSITION = 2**53  # every position must be below this (exactly representable in float64)
F64 = np.dtype(np.float64)
FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16))
_DTYPE_NAMES = "float64, float32, float16 or bfloat16"
BFLOAT16_HINT = (
    "dtype bfloat16 needs the ml_dtypes package: pip install 'sinpe[bfloat16]' "
    "(or pip install ml_dtypes)"
)


class MissingFileError(FileNotFoundError, ValueError):
    """A file argument that does not exist: ``except FileNotFoundError`` catches it, and so
    does ``except ValueError`` (what sinpe raised for it before)."""

    def __init__(self, message: str, path: str):
        super().__init__(errno.ENOENT, message, path)

    def __str__(self) -> str:
        return str(self.strerror)


def unreadable(path: str, exc: OSError, what: str = "") -> ValueError:
    """The error for a file that cannot be opened, naming it and why."""
    message = f"cannot read {what}{path!r}: {exc.strerror or exc}"
    if isinstance(exc, FileNotFoundError):
        return MissingFileError(message, path)
    return ValueError(message)


def bfloat16() -> np.dtype | None:
    """ml_dtypes' bfloat16 dtype, or None when ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def integer(name: str, value, minimum: int) -> int:
    if type(value) is not int:
        try:
            if isinstance(value, (bool, np.bool_)):
                raise TypeError
            value = operator.index(value)  # numpy integers and 0-d integer arrays
        except TypeError:
            raise TypeError(
                f"{name} must be an integer, got {type(value).__name__} {value!r:.60}"
            ) from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def choice(name: str, value, allowed: tuple) -> str:
    """``value``, a str among ``allowed``; else a ``TypeError``/``ValueError`` naming ``name``
    and the allowed values."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def table_size(seq_len, d_model, offset) -> tuple[int, int, int]:
    """``integer`` of each, in one call: the hot path of every table is plain ints."""
    if type(seq_len) is int and type(d_model) is int and type(offset) is int:
        if seq_len >= 0 and d_model >= 1 and offset >= 0:
            return seq_len, d_model, offset
    return (
        integer("seq_len", seq_len, 0),
        integer("d_model", d_model, 1),
        integer("offset", offset, 0),
    )


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy held by an immutable ``bytes`` object: no flag can make it writable
    (a cached array handed to users must stay what every later table reads)."""
    data = np.ascontiguousarray(array).tobytes()
    return np.frombuffer(data, dtype=array.dtype).reshape(array.shape)


def last_position(offset: int, seq_len: int) -> None:
    """Rows ``offset .. offset + seq_len - 1`` must lie below 2**53 (no rows: any offset)."""
    if seq_len and offset + seq_len > MAX_POSITION:
        raise ValueError(
            "positions must be below 2**53: the last row's, offset + seq_len - 1, is "
            f"{offset + seq_len - 1}"
        )


def real(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r:.60}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {value}") from None


def base(value) -> float:
    result = real("base", value)
    if not (math.isfinite(result) and result > 0):
        raise ValueError(f"base must be finite and > 0, got {result!r}")
    return result


def torch_dtype_name(value) -> str | None:
    """A torch dtype's NumPy name (``torch.float32`` -> ``"float32"``), without importing
    torch; ``None`` for anything else."""
    kind = type(value)
    if kind.__name__ == "dtype" and kind.__module__ == "torch":
        return str(value).rpartition(".")[2]
    return None


def dtype(value) -> np.dtype | None:
    """A table dtype, or ``None`` (take ``out``'s dtype, else float64). A torch dtype is
    taken by its name (the NumPy API still returns NumPy arrays)."""
    if value is None:
        return None
    if value is np.float64:  # the common spelling, answered without building a dtype
        return F64
    value = torch_dtype_name(value) or value
    try:
        result = np.dtype(value)
    except Exception:  # np.dtype parses strings: TypeError, ValueError, even SyntaxError
        result = None
    if result is None and "bfloat16" in str(value).lower():  # before ml_dtypes is imported
        result = bfloat16()
        if result is None:
            raise TypeError(f"{BFLOAT16_HINT}; got dtype={value!r:.60}")
    if result is None or not table_dtype(result):  # (np.dtype(None) is float64: test first)
        raise TypeError(
            f"dtype must be {_DTYPE_NAMES} (any NumPy or ml_dtypes spelling) or None, "
            f"got {value!r:.60}"
        )
    return result


def table_dtype(value: np.dtype) -> bool:
    """A dtype sinpe writes tables in: float64, float32, float16 or (ml_dtypes) bfloat16."""
    return value in FLOAT_DTYPES or (value.name == "bfloat16" and value.itemsize == 2)


# What a fill holds besides its output, at most: one block of frequencies with its constants,
# grid rows and anchors (fill_at's steps, plan.FREQUENCY_BLOCK) and each thread's chunk scratch.
SCRATCH_BYTES = 32 << 20
# Requests below this are not checked against the limits (numpy's own allocation refuses
# them at once when they do not fit): the hot path of small tables reads no limit.
_CHECKED_FROM = 1 << 26


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        return None


def memory_limit() -> tuple[int | None, str]:
    """The most bytes one request may need, and what sets it: the smallest of physical
    memory and the soft ``RLIMIT_AS`` and ``RLIMIT_DATA`` (``None``: nothing known)."""
    caps = []
    physical = _physical_memory()
    if physical:
        caps.append((physical, "physical memory"))
    try:
        import resource
    except ImportError:  # not POSIX
        resource = None  # type: ignore[assignment]
    if resource is not None:
        for name in ("RLIMIT_AS", "RLIMIT_DATA"):
            soft = resource.getrlimit(getattr(resource, name))[0]
            if soft != resource.RLIM_INFINITY and soft > 0:
                caps.append((soft, name))
    if not caps:
        return None, "nothing"
    return min(caps, key=lambda cap: cap[0])


def _bytes(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def reserve(nbytes: int, what: str) -> None:
    """Refuse, before any work, a request that needs more memory than this process may
    ever have: ``MemoryError`` naming the bytes ``what`` needs and the limit."""
    if nbytes < _CHECKED_FROM:
        return
    limit, source = memory_limit()
    if limit is not None and nbytes > limit:
        raise MemoryError(
            f"{what} needs {_bytes(nbytes)} ({nbytes} bytes, its scratch included), more than "
            f"{source} allows ({_bytes(limit)}): ask for fewer rows or a narrower dtype"
        )


def allocate(shape: tuple, dtype: np.dtype, names: tuple, zeros: bool = False) -> np.ndarray:
    """A new array, its memory (and the fill's scratch) checked against the process's limits
    first; ``names`` are the arguments that set each dimension, for the errors."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes >= _CHECKED_FROM:
        sizes = ", ".join(f"{name}={size}" for name, size in zip(names, shape))
        reserve(nbytes + SCRATCH_BYTES, f"a {shape} {np.dtype(dtype).name} array ({sizes})")
    try:
        return (np.zeros if zeros else np.empty)(shape, dtype=dtype)
    except ValueError as exc:  # larger than the address space (MemoryError passes through)
        sizes = ", ".join(f"{name}={size}" for name, size in zip(names, shape))
        raise ValueError(f"{sizes}: a {shape} {dtype} array is too large ({exc})") from None


def output(out, shape: tuple, dtype: np.dtype | None, names: tuple) -> np.ndarray:
    """``out`` checked against the table it must hold, or a new array; ``dtype=None`` takes
    ``out``'s dtype (any table dtype), else float64."""
    if out is None:
        return allocate(shape, F64 if dtype is None else dtype, names)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray or None, got {type(out).__name__}")
    problems = []
    if out.shape != shape:
        problems.append(f"shape {out.shape} (expected {shape})")
    if dtype is None and not table_dtype(out.dtype):
        problems.append(f"dtype {out.dtype} (expected {_DTYPE_NAMES})")
    elif dtype is not None and out.dtype != dtype:
        problems.append(f"dtype {out.dtype} (expected {dtype}; pass dtype= to match)")
    if not out.flags.c_contiguous:
        problems.append("not C-contiguous")
    if not out.flags.writeable:
        problems.append("read-only")
    if problems:
        raise ValueError("out is unusable: " + ", ".join(problems))
    if type(out) is not np.ndarray:  # a subclass (matrix, masked array): its plain memory is
        out = out.view(np.ndarray)  # filled, on both backends alike; a mask is left as it is
    return out


def _object_positions(array: np.ndarray) -> np.ndarray:
    """An object array of Python ints and floats (each an exact double below 2**53) as
    float64; anything else refused, saying why."""
    out = np.empty(array.shape, dtype=np.float64)
    flat = out.reshape(-1)
    for i, v in enumerate(array.flat):
        if isinstance(v, (bool, np.bool_)) or not isinstance(
            v, (int, float, np.integer, np.floating)
        ):
            raise TypeError(
                f"positions must be integers or floats, got a {type(v).__name__} in an object "
                "array (bool, complex, strings and other objects are not positions)"
            )
        if isinstance(v, (int, np.integer)):
            if not -MAX_POSITION < int(v) < MAX_POSITION:
                raise ValueError(f"positions must satisfy |p| < 2**53, got {int(v)}")
            flat[i] = float(v)
        else:
            flat[i] = v
    return out


def positions(value) -> np.ndarray:
    """Positions of any shape (a scalar included) as float64, finite, ``|p| < 2**53``."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(
            f"positions must be a number or an array-like of numbers, got {type(value).__name__}"
        )
    if type(value).__module__.startswith("numpy.ma"):  # not numpy.ma itself: its import is slow
        raise TypeError(
            "positions must not be a masked array: a table has no masked rows "
            "(pass positions.compressed() or positions.filled(value))"
        )
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"positions must be an array-like of numbers: {exc}") from None
    reserve(8 * array.size, f"{array.size} positions as float64")  # a broadcast view: no bytes
    if array.dtype == object:
        array = _object_positions(array)
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"positions must be integers or floats, got dtype {array.dtype} "
            "(bool, complex, object and strings are not positions)"
        )
    if array.dtype.kind in "iu":
        too_big = array.size and (
            int(array.max()) >= MAX_POSITION or int(array.min()) <= -MAX_POSITION
        )
        if too_big:
            raise ValueError("positions must satisfy |p| < 2**53")
        return array.astype(np.float64)
    array = array.astype(np.float64)  # float16/32 widen exactly; longdouble rounds once
    if not np.isfinite(array).all():
        raise ValueError("positions must be finite (no NaN or inf)")
    if array.size and np.abs(array).max() >= MAX_POSITION:
        raise ValueError("positions must satisfy |p| < 2**53")
    return array
