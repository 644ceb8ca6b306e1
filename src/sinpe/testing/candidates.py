"""What the kit is given to judge, read into the verdict core's form: arrays of any array
library (NumPy, torch, MLX, JAX: converted by duck typing, none of them imported), an
``inv_freq`` with its attention factor, a callable ``positions -> (cos, sin)``, a query
rotation ``(q, positions) -> q_rotated``."""

from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

import numpy as np

__all__ = [
    "InvFreq",
    "Rotates",
    "as_array",
    "call_table",
    "complex_pair",
    "dtype_name",
    "pair_columns",
    "WidthError",
]

_DTYPES = ("float64", "float32", "float16", "bfloat16")


class InvFreq(NamedTuple):
    """A candidate given as its inverse frequencies (one per rotated pair) and the attention
    factor it multiplies cos and sin by: what a port's rotary module holds (its ``inv_freq``
    buffer and ``attention_scaling``). The same vector is used at every length, so it is
    judged at each length the config's RoPE is judged at."""

    inv_freq: Any
    attention_factor: float = 1.0


class Rotates(NamedTuple):
    """A candidate given as a function rotating queries: ``fn(q, positions)`` with ``q`` a
    float32 array ``(n, rotary_dim)`` (one row per position) and ``positions`` int64 ``(n,)``
    returns the rotated ``q`` (any array library). ``layout``: ``"half"`` (element ``i``
    turns with ``i + rotary_dim/2``: Llama's ``rotate_half``) or ``"interleaved"`` (``2i``
    with ``2i + 1``: GPT-J's ``rotate_every_two``)."""

    fn: Callable
    layout: str = "half"


def as_array(value, name: str) -> tuple[np.ndarray, str]:
    """``(float64 array, dtype name)`` of an array of any library: ``.detach().cpu()``
    (torch), ``.float()`` for bfloat16 where NumPy has none, then ``np.asarray``;
    ``TypeError`` naming ``name`` for anything else."""
    given = value
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    dtype = str(getattr(value, "dtype", "")).rpartition(".")[2]
    if dtype == "bfloat16" and hasattr(value, "float"):
        value = value.float()
    try:
        array = np.asarray(value)
    except Exception as exc:
        raise TypeError(
            f"{name} must be an array (NumPy, torch, MLX, JAX), got {type(given).__name__}: {exc}"
        ) from None
    if array.dtype.kind not in "fiu" and array.dtype.name != "bfloat16":
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    name_ = dtype if dtype in _DTYPES else array.dtype.name
    return np.asarray(array, np.float64), name_


def complex_pair(value) -> tuple | None:
    """``(cos, sin)`` NumPy arrays of a complex table (``freqs_cis``: Llama 4, DeepSeek-V2;
    its real and imaginary parts, float32 for complex64), else ``None``."""
    if "complex" not in str(getattr(value, "dtype", "")):
        return None
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    array = np.asarray(value)
    return array.real, array.imag


def dtype_name(names) -> str:
    """The dtype a table is judged in: the narrowest of its arrays' (float32 where an array
    is not a float the core knows: integers are judged as float32)."""
    order = ("bfloat16", "float16", "float32", "float64")
    found = [n for n in names if n in order]
    return min(found, key=order.index) if found else "float32"


def pair_columns(columns: int, h: int, layout: str | None, name: str) -> np.ndarray:
    """The pair each column of a ``(rows, columns)`` table holds: ``h`` columns, one per
    pair; ``2h``, each pair twice (``"half"``: ``cat(f, f)``; ``"interleaved"``: each
    value twice in place). Every column is judged."""
    if columns == h:
        return np.arange(h)
    if columns == 2 * h:
        if layout in (None, "half"):
            return np.concatenate([np.arange(h), np.arange(h)])
        if layout == "interleaved":
            return np.repeat(np.arange(h), 2)
        raise ValueError(f"layout must be 'half' or 'interleaved', got {layout!r}")
    raise WidthError(columns, h, name)


class WidthError(ValueError):
    """A table whose column count fits neither reading of the config's rotary width: a port
    that rotates another width (a partial rotary factor ignored, say). ``check_rope`` makes
    it a mismatch naming both widths; elsewhere it is the ``ValueError`` it says."""

    def __init__(self, columns: int, h: int, name: str):
        self.columns, self.h = columns, h
        super().__init__(
            f"{name} has {columns} columns: the config's rotary width {2 * h} takes {h} (one "
            f"per pair) or {2 * h} (each pair twice)"
        )


def call_table(fn: Callable, positions: np.ndarray, length: int, name: str) -> tuple:
    """``(cos, sin, dtype name)`` of a callable candidate at ``positions`` (``seq_len``
    passed where it takes one: the current length of a length-dependent RoPE)."""
    try:
        takes_length = "seq_len" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_length = False
    got = fn(positions, seq_len=length) if takes_length else fn(positions)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise TypeError(f"{name} must return (cos, sin), got {type(got).__name__}")
    cos, cos_dtype = as_array(got[0], f"the cos {name} returned")
    sin, sin_dtype = as_array(got[1], f"the sin {name} returned")
    return cos, sin, dtype_name((cos_dtype, sin_dtype))
