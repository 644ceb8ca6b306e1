"""The public functions: the one place that validates arguments, resolves conventions into
frequencies and tables, allocates (or checks) the output and picks a filler."""

from __future__ import annotations

import functools
import importlib
import math
import operator
import os
import warnings

import numpy as np

from . import _numpy
from ._angles import exact_cos_sin, rotation_tables
from ._frequencies import frequency_vector
from .conventions import Convention
from .conventions import get as get_convention

try:
    _kernel = importlib.import_module(".._kernel", __name__)
except ImportError as exc:  # the build fell back to NumPy (it said so); tell the truth here too
    _kernel = None
    _KERNEL_ERROR = (
        f"{type(exc).__name__}: {exc}; the install had no working C compiler or the build "
        "failed, reinstall with one for the fast path"
    )
else:
    _KERNEL_ERROR = ""

__all__ = [
    "sinusoidal_positional_encoding",
    "frequencies",
    "encode",
    "encode_2d",
    "shift_matrix",
    "BACKEND",
    "HAVE_OPENMP",
]

MAX_POSITION = 2**53  # every position must be below this (exactly representable in float64)
# Every frequency must be below this: then position * frequency < 2**953 and Dekker's split
# stays finite, so the product is exact (see _angles._two_product).
MAX_FREQUENCY = 2.0**900
_FLOAT_DTYPES = {
    np.dtype(np.float64): np.dtype(np.float64),
    np.dtype(np.float32): np.dtype(np.float32),
}
_BACKENDS = ("auto", "cython", "numpy")
_FILLERS = {"numpy": _numpy.fill_table}
if _kernel is not None:
    _FILLERS["cython"] = _kernel.fill_table
HAVE_OPENMP = bool(_kernel is not None and _kernel.HAVE_OPENMP)

# Below this many table elements one thread is faster than waking a team.
PARALLEL_MIN_ELEMENTS = 1 << 17


def _backend_from_environment() -> str:
    requested = os.environ.get("SINPE_BACKEND", "").strip().lower() or "auto"
    if requested not in _BACKENDS:
        raise ImportError(
            f"SINPE_BACKEND={requested!r} is not a backend; use one of {', '.join(_BACKENDS)}"
        )
    if requested == "cython" and _kernel is None:
        raise ImportError(
            f"SINPE_BACKEND=cython but the compiled kernel is not available ({_KERNEL_ERROR})"
        )
    if requested == "auto":
        if _kernel is None:
            warnings.warn(
                "sinpe: the compiled kernel is not available "
                f"({_KERNEL_ERROR}); using the NumPy fallback. "
                "Set SINPE_BACKEND=numpy to silence this warning.",
                RuntimeWarning,
                stacklevel=3,
            )
            return "numpy"
        return "cython"
    return requested


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _thread_cap_from_environment() -> int:
    usable = usable_cores()
    raw = os.environ.get("SINPE_NUM_THREADS", "").strip()
    if raw:
        try:
            cap = int(raw)
        except ValueError:
            cap = 0
        if cap < 1:
            raise ImportError(f"SINPE_NUM_THREADS must be an integer >= 1, got {raw!r}")
        usable = min(usable, cap)
    return max(usable, 1)


BACKEND = _backend_from_environment()
# The cap is read (and checked) even without OpenMP: a typo must not pass on some builds only.
_THREAD_CAP = _thread_cap_from_environment()
MAX_THREADS = _THREAD_CAP if HAVE_OPENMP else 1


# --------------------------------------------------------------------------- validation


def _integer(name: str, value, minimum: int) -> int:
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


def _real(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r:.60}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {value}") from None


def _base(value) -> float:
    base = _real("base", value)
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be finite and > 0, got {base!r}")
    return base


_F64 = np.dtype(np.float64)
_TABLE_SIZES = ("seq_len", "d_model")  # what sets each dimension of a table, for errors


def _dtype(value) -> np.dtype:
    if value is np.float64:  # the default, answered without building a dtype
        return _F64
    try:
        dtype = np.dtype(value)
    except Exception:  # np.dtype parses strings: TypeError, ValueError, even SyntaxError
        dtype = None
    if dtype not in _FLOAT_DTYPES:
        raise TypeError(f"dtype must be float32 or float64 (any NumPy spelling), got {value!r:.60}")
    return dtype


def _backend(value) -> str:
    if not isinstance(value, str) or value not in _BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, _BACKENDS))}, got {value!r:.60}"
        )
    if value == "cython" and _kernel is None:
        raise ValueError(
            f"backend='cython' but the compiled kernel is not available ({_KERNEL_ERROR}); "
            "use backend='auto' or 'numpy', or reinstall with a C compiler"
        )
    return BACKEND if value == "auto" else value


def _threads(value, n_elements: int) -> int:
    if value is None:
        return MAX_THREADS if n_elements >= PARALLEL_MIN_ELEMENTS else 1
    threads = _integer("threads", value, 1)
    return min(threads, MAX_THREADS)


def _allocate(shape: tuple, dtype: np.dtype, names: tuple, zeros: bool = False) -> np.ndarray:
    """A new array; ``names`` are the arguments that set each dimension, for the error."""
    try:
        return (np.zeros if zeros else np.empty)(shape, dtype=dtype)
    except ValueError as exc:  # larger than the address space (MemoryError passes through)
        sizes = ", ".join(f"{name}={size}" for name, size in zip(names, shape))
        raise ValueError(f"{sizes}: a {shape} {dtype} array is too large ({exc})") from None


def _output(out, shape: tuple, dtype: np.dtype, names: tuple) -> np.ndarray:
    if out is None:
        return _allocate(shape, dtype, names)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray or None, got {type(out).__name__}")
    problems = []
    if out.shape != shape:
        problems.append(f"shape {out.shape} (expected {shape})")
    if out.dtype != dtype:
        problems.append(f"dtype {out.dtype} (expected {dtype}; pass dtype= to match)")
    if not out.flags.c_contiguous:
        problems.append("not C-contiguous")
    if not out.flags.writeable:
        problems.append("read-only")
    if problems:
        raise ValueError("out is unusable: " + ", ".join(problems))
    return out


# --------------------------------------------------------------------------- plans


def block_sizes(n_rows: int) -> tuple[int, int, int]:
    """``(coarse, mid, fine)`` table lengths for ``n_rows`` rows (row = (q*mid + j)*fine + k).

    Small tables get small step tables: one row needs no table at all, and the transcendental
    work (coarse + mid + fine rows) grows roughly like the cube root of ``n_rows``.
    """
    fine = max(min(n_rows, 16), 1)
    blocks = -(-n_rows // fine)
    mid = max(min(blocks, max(64, math.isqrt(blocks))), 1)
    return -(-blocks // mid), mid, fine


def _frequency_key(convention: Convention, d_model: int, base: float) -> tuple:
    """The (cached) frequency vector's key, once its frequencies are known to be usable."""
    key = convention.frequency_key(d_model, base)
    try:
        w = frequency_vector(*key)
    except ValueError as exc:  # more frequencies than an array can index
        raise ValueError(f"d_model={d_model} is too large ({exc})") from None
    largest = float(np.abs(w).max()) if w.size else 0.0
    if not largest <= MAX_FREQUENCY:
        raise ValueError(
            f"base={base!r} gives frequencies up to {largest:.3g} for d_model={d_model} "
            f"(convention {convention.name}); every frequency must be below 2**900 so that "
            "position * frequency stays exact: use a larger base"
        )
    return key


@functools.lru_cache(maxsize=512)
def _plan(convention: Convention, d_model: int, base: float, n_rows: int):
    columns = convention.column_map(d_model)
    key = _frequency_key(convention, d_model, base)
    coarse, mid, fine = block_sizes(n_rows)
    return columns, key, (coarse, mid, fine), rotation_tables(key, fine, mid, coarse)


def _fill(backend: str, table: np.ndarray, tables: tuple, columns, threads: int) -> np.ndarray:
    """Hand the (coarse, mid, fine) tables and the column map to one filler; return ``table``."""
    c = columns
    _FILLERS[backend](
        table, *tables, c.sin_col, c.cos_col, c.step, c.n_sin, c.n_cos, c.pad_col, threads
    )
    return table


# --------------------------------------------------------------------------- public


def sinusoidal_positional_encoding(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    dtype=np.float64,
    out: np.ndarray | None = None,
    backend: str = "auto",
    threads: int | None = None,
    convention: str | Convention = "vaswani",
) -> np.ndarray:
    """Sinusoidal positional encoding table, exact to 1e-15 at every position.

    Parameters
    ----------
    seq_len : int
        Number of rows (positions), ``>= 0``.
    d_model : int
        Number of columns, ``>= 1``.
    base : float, default 10000.0
        Frequency base, finite and ``> 0``: ``w_i = base**(-2i/d_model)``.
    offset : int, default 0
        Position of the first row; every position ``offset + r`` must be below ``2**53``.
    dtype : float32 or float64, default float64
        float32 tables are computed in float64 and rounded once.
    out : numpy.ndarray, optional
        Writable, C-contiguous array of shape ``(seq_len, d_model)`` and dtype ``dtype``; it
        is filled and returned. A rejected ``out`` is left untouched.
    backend : {"auto", "cython", "numpy"}, default "auto"
        ``"auto"`` is ``sinpe.BACKEND``.
    threads : int, optional
        At most this many threads (Cython backend with OpenMP). ``None``: all usable cores
        (capped by ``SINPE_NUM_THREADS``) for tables big enough to gain, else 1.
    convention : str or Convention, default "vaswani"
        Layout and frequency rule; see :mod:`sinpe.conventions`.

    Returns
    -------
    numpy.ndarray
        ``(seq_len, d_model)``, C-contiguous; row ``r`` is position ``offset + r``:
        column ``2i`` is ``sin(p w_i)``, column ``2i+1`` is ``cos(p w_i)`` (``"vaswani"``).

    Raises
    ------
    TypeError
        An argument of the wrong type (float, str, None or bool for an integer, bad dtype).
    ValueError
        A value out of range, an unknown backend or convention, an unusable ``out``.

    Examples
    --------
    >>> import sinpe
    >>> sinpe.sinusoidal_positional_encoding(2, 4)
    array([[0.        , 1.        , 0.        , 1.        ],
           [0.84147098, 0.54030231, 0.00999983, 0.99995   ]])
    """
    seq_len = _integer("seq_len", seq_len, 0)
    d_model = _integer("d_model", d_model, 1)
    offset = _integer("offset", offset, 0)
    if offset + max(seq_len, 1) > MAX_POSITION:
        raise ValueError(
            f"positions must be below 2**53: offset + seq_len - 1 = {offset + seq_len - 1}"
        )
    if type(base) is not float or base != 10000.0:  # check the type before comparing values
        base = _base(base)
    dtype = _dtype(dtype)
    backend = _backend(backend)
    convention = get_convention(convention)
    n_threads = _threads(threads, seq_len * d_model)
    if out is None and seq_len == 0:  # answered at once, whatever d_model is
        return _allocate((0, d_model), dtype, _TABLE_SIZES)
    table = _output(out, (seq_len, d_model), dtype, _TABLE_SIZES)
    if seq_len == 0:
        return table
    columns, key, (n_coarse, n_mid, n_fine), (coarse, mid, fine) = _plan(
        convention, d_model, base, seq_len
    )
    if offset:
        positions = offset + np.arange(n_coarse, dtype=np.float64) * (n_mid * n_fine)
        coarse = exact_cos_sin(positions, frequency_vector(*key))
    n_threads = min(n_threads, -(-seq_len // n_fine))
    return _fill(backend, table, (coarse, mid, fine), columns, n_threads)


def frequencies(d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The frequencies ``w_i = base**(-2i/d_model)``, ``i < ceil(d_model/2)``.

    Each is within 1 ulp of the exact real value (the exponent is formed in extended
    precision). The array is cached and read-only.

    Parameters
    ----------
    d_model : int
        Width of the table, ``>= 1``.
    base : float, default 10000.0
        Finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(ceil(d_model / 2),)``, read-only.
    """
    d_model = _integer("d_model", d_model, 1)
    return frequency_vector(*_frequency_key(get_convention("vaswani"), d_model, _base(base)))


# --------------------------------------------------------------------------- encodings


@functools.lru_cache(maxsize=64)
def _identity_table(h: int) -> np.ndarray:
    """One row of unit vectors at angle 0: rotating by it is exact (x*1 + y*0 == x)."""
    table = np.zeros((1, 2, h))
    table[:, 0] = 1.0
    table.flags.writeable = False
    return table


def _positions(positions) -> np.ndarray:
    if isinstance(positions, (str, bytes)) or positions is None:
        raise TypeError(
            f"positions must be a 1-D array-like of numbers, got {type(positions).__name__}"
        )
    try:
        array = np.asarray(positions)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"positions must be a 1-D array-like of numbers: {exc}") from None
    if array.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {array.shape}")
    if array.dtype == object and all(type(v) is int for v in array):
        raise ValueError("positions must satisfy |p| < 2**53")  # ints too big for int64
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


def encode(
    positions,
    d_model: int,
    *,
    base: float = 10000.0,
    convention: str | Convention = "vaswani",
    dtype=np.float64,
    out: np.ndarray | None = None,
    backend: str = "auto",
) -> np.ndarray:
    """Encodings of arbitrary positions (integers or fractions, any sign), one row each.

    Parameters
    ----------
    positions : array_like
        1-D, integers or floats, finite, ``|p| < 2**53``; float positions are taken as exact.
    d_model : int
        Width, ``>= 1``.
    base, convention, dtype, out, backend
        As for :func:`sinusoidal_positional_encoding`.

    Returns
    -------
    numpy.ndarray
        ``(len(positions), d_model)``; within 1e-15 (float64) of the exact values for the
        package's own frequencies.
    """
    positions = _positions(positions)
    d_model = _integer("d_model", d_model, 1)
    base = _base(base)
    dtype = _dtype(dtype)
    backend = _backend(backend)
    convention = get_convention(convention)
    table = _output(
        out,
        (positions.shape[0], d_model),
        dtype,
        ("len(positions)", "d_model"),
    )
    if positions.shape[0] == 0:
        return table
    columns = convention.column_map(d_model)
    key = _frequency_key(convention, d_model, base)
    # Every row is its own anchor: exact sin/cos per position, then a rotation by angle 0.
    coarse = exact_cos_sin(positions, frequency_vector(*key))
    identity = _identity_table(columns.frequencies)
    return _fill(backend, table, (coarse, identity, identity), columns, 1)


def shift_matrix(k: int, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The rotation ``S`` with ``PE[p + k] == S @ PE[p]`` for the default convention.

    Block diagonal: for frequency ``i`` the 2x2 block ``[[cos kw, sin kw], [-sin kw, cos kw]]``
    acting on ``(sin pw, cos pw)``. Exact entries, so the identity holds to ~1e-15 for any ``p``.

    Parameters
    ----------
    k : int
        Shift, any sign, ``|k| < 2**53``.
    d_model : int
        Even width (an odd width's last sine has no cosine partner: no linear map exists).
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray
        ``(d_model, d_model)`` float64.
    """
    k = _integer("k", k, 1 - MAX_POSITION)
    if k >= MAX_POSITION:
        raise ValueError(f"k must satisfy |k| < 2**53, got {k}")
    d_model = _integer("d_model", d_model, 1)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for shift_matrix, got {d_model}: the last sine column of an "
            "odd width has no cosine partner, so no matrix maps PE[p] to PE[p + k]"
        )
    matrix = _allocate((d_model, d_model), _F64, ("d_model", "d_model"), zeros=True)
    w = frequencies(d_model, base=base)
    cos_k, sin_k = exact_cos_sin(np.array([float(k)]), w)[0]
    i = np.arange(d_model // 2)
    matrix[2 * i, 2 * i] = cos_k
    matrix[2 * i, 2 * i + 1] = sin_k
    matrix[2 * i + 1, 2 * i] = -sin_k
    matrix[2 * i + 1, 2 * i + 1] = cos_k
    return matrix


def encode_2d(height: int, width: int, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """MAE's 2-D grid encoding (``get_2d_sincos_pos_embed``, used by ViT/MAE/DiT).

    Row ``y * width + x``: the first ``d_model/2`` columns encode ``x``, the last ``d_model/2``
    encode ``y``, each half ``[sin | cos]`` with ``w_i = base**(-i / (d_model/4))``.

    Parameters
    ----------
    height, width : int
        Grid size, ``>= 0``.
    d_model : int
        A positive multiple of 4.
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray
        ``(height * width, d_model)`` float64.
    """
    height = _integer("height", height, 0)
    width = _integer("width", width, 0)
    d_model = _integer("d_model", d_model, 1)
    if d_model % 4:
        raise ValueError(f"d_model must be a multiple of 4 for encode_2d, got {d_model}")
    for name, size in (("height", height), ("width", width)):
        if size > MAX_POSITION:
            raise ValueError(f"{name} must be <= 2**53 (positions below 2**53), got {size}")
    table = _allocate((height * width, d_model), _F64, ("height*width", "d_model"))
    half = d_model // 2
    # Each half is the 'hf-marian' layout at width d_model/2: [sin | cos], w_i = base**(-2i/half).
    along_x = sinusoidal_positional_encoding(width, half, base=base, convention="hf-marian")
    along_y = sinusoidal_positional_encoding(height, half, base=base, convention="hf-marian")
    table[:, :half] = np.tile(along_x, (height, 1))
    table[:, half:] = np.repeat(along_y, width, axis=0)
    return table
