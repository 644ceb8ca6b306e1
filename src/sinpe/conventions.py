"""Conventions of other libraries, as data: layout, frequency rule and odd-width padding.

A convention never adds a code path to the fillers: it resolves, for a given ``d_model``, to
frequencies ``w_i = scale * base**(-i * numerator / denominator)`` and a column map saying where
each frequency's sine and cosine go. Presets (by name, see ``names()``):

- ``"vaswani"`` (default): interleaved ``[sin w0, cos w0, sin w1, ...]``, ``w_i = base**(-2i/d)``;
  odd ``d``: the last column is ``sin``.
- ``"tensor2tensor"`` / ``"fairseq"``: ``h = d//2``, ``w_i = exp(-i ln(base) / max(h-1, 1))``,
  columns ``[sin | cos]``, one zero column appended when ``d`` is odd.
- ``"hf-marian"`` (Hugging Face Marian and copies): paper frequencies, the first ``ceil(d/2)``
  columns ``sin(p w_0..)``, the remaining ``floor(d/2)`` columns ``cos(p w_0..)``.
- ``diffusers(...)``: ``get_timestep_embedding``; see :func:`diffusers`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

__all__ = [
    "Convention",
    "ColumnMap",
    "VASWANI",
    "TENSOR2TENSOR",
    "HF_MARIAN",
    "diffusers",
    "get",
    "names",
]

_LAYOUTS = ("interleaved", "sin_cos", "cos_sin")
_DENOMINATORS = ("half_width", "half_minus_one", "half_minus_shift")
# One small int per distinct convention value (see Convention._token), from a counter that
# never repeats: the table is emptied when it reaches _MAX_TOKENS values (and by
# clear_cache()), after which an equal convention made anew gets a new token (a cache miss,
# never a wrong hit). So many distinct conventions (a timestep scale per call) stay bounded.
_TOKENS: dict[tuple, int] = {}
_MAX_TOKENS = 4096
_NEXT_TOKEN = itertools.count()


def _token(fields: tuple) -> int:
    token = _TOKENS.get(fields)
    if token is None:
        if len(_TOKENS) >= _MAX_TOKENS:
            _TOKENS.clear()
        token = _TOKENS.setdefault(fields, next(_NEXT_TOKEN))
    return token


def clear_tokens() -> None:
    _TOKENS.clear()


class ColumnMap(NamedTuple):
    """Where frequency ``i``'s sine and cosine go in a row of ``width`` columns."""

    frequencies: int  # h: how many frequencies are used
    sin_col: int  # column of sin(p w_0)
    cos_col: int  # column of cos(p w_0)
    step: int  # column distance between frequency i and i + 1
    n_sin: int  # sines written for i < n_sin
    n_cos: int  # cosines written for i < n_cos
    pad_col: int  # a column set to zero, or -1


@dataclass(frozen=True)
class Convention:
    """One library's sinusoidal encoding, as frozen data.

    Parameters
    ----------
    name : str
        Display name.
    layout : {"interleaved", "sin_cos", "cos_sin"}
        Interleaved pairs, or a block of sines followed by cosines (or the reverse).
    count : {"ceil", "floor"}
        Frequencies used: ``ceil(d/2)`` (an odd width ends in a sine) or ``d//2`` (an odd
        width ends in a zero column).
    denominator : {"half_width", "half_minus_one", "half_minus_shift"}
        Frequency rule ``w_i = scale * base**(-i/D)`` with ``D = d/2``, ``max(d//2 - 1, 1)``,
        or ``d//2 - shift``.
    shift : float
        The ``shift`` of ``"half_minus_shift"``.
    scale : float
        Multiplies every frequency (diffusers' ``scale``).
    base : float or None
        Fixed base of this convention (diffusers' ``max_period``); ``None`` takes the
        ``base`` argument of the call.
    """

    name: str
    layout: str = "interleaved"
    count: str = "ceil"
    denominator: str = "half_width"
    shift: float = 0.0
    scale: float = 1.0
    base: float | None = None

    def __post_init__(self) -> None:
        if self.layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {_LAYOUTS}, got {self.layout!r}")
        if self.count not in ("ceil", "floor"):
            raise ValueError(f"count must be 'ceil' or 'floor', got {self.count!r}")
        if self.denominator not in _DENOMINATORS:
            raise ValueError(
                f"denominator must be one of {_DENOMINATORS}, got {self.denominator!r}"
            )
        for field in ("shift", "scale"):
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError(f"{field} must be a real number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"{field} must be finite, got {value!r}")
        if self.scale == 0:
            raise ValueError("scale must be non-zero")
        if self.base is not None and not (
            isinstance(self.base, (int, float))
            and not isinstance(self.base, bool)
            and math.isfinite(self.base)
            and self.base > 0
        ):
            raise ValueError(f"base must be a finite number > 0, got {self.base!r}")
        fields = (
            self.name,
            self.layout,
            self.count,
            self.denominator,
            self.shift,
            self.scale,
            self.base,
        )
        object.__setattr__(self, "_hash", hash(fields))
        # Equal conventions share one small int: cache keys hash it at C speed (calling
        # __hash__ cost ~0.1 us, a tenth of the warm 1 x 128 table).
        object.__setattr__(self, "_token", _token(fields))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]  # set in __init__ (frozen)

    def __reduce__(self):
        # Rebuilt from its fields: the cached hash of a string depends on the process's hash
        # seed, so a pickled one would be wrong wherever it is unpickled (every spawn worker).
        return (Convention, tuple(getattr(self, f.name) for f in fields(self)))

    def column_map(self, d_model: int) -> ColumnMap:
        """The column map for a row of ``d_model`` columns."""
        if self.count == "ceil":
            h = (d_model + 1) // 2
            n_sin, n_cos, pad = h, d_model // 2, -1
        else:
            h = d_model // 2
            n_sin, n_cos, pad = h, h, (d_model - 1 if d_model % 2 else -1)
        if self.layout == "interleaved":
            return ColumnMap(h, 0, 1, 2, n_sin, n_cos, pad)
        if self.layout == "sin_cos":
            return ColumnMap(h, 0, n_sin, 1, n_sin, n_cos, pad)
        return ColumnMap(h, n_cos, 0, 1, n_sin, n_cos, pad)

    def frequency_key(self, d_model: int, base: float) -> tuple:
        """Arguments of ``_frequencies.frequency_vector``: ``(h, base, numerator, denominator,
        scale)``; raises ``ValueError`` where the rule has no finite value."""
        h = self.column_map(d_model).frequencies
        base = float(self.base if self.base is not None else base)
        if self.denominator == "half_width":
            return (h, base, 2, float(d_model), float(self.scale))
        if self.denominator == "half_minus_one":
            return (h, base, 1, float(max(d_model // 2 - 1, 1)), float(self.scale))
        denominator = d_model // 2 - self.shift
        if denominator == 0 and h > 1:
            raise ValueError(
                f"convention {self.name!r}: d_model // 2 - downscale_freq_shift is 0 for "
                f"d_model={d_model}; the frequencies are undefined"
            )
        return (h, base, 1, float(denominator or 1.0), float(self.scale))


VASWANI = Convention("vaswani")
TENSOR2TENSOR = Convention(
    "tensor2tensor", layout="sin_cos", count="floor", denominator="half_minus_one"
)
HF_MARIAN = Convention("hf-marian", layout="sin_cos", count="ceil")


def _finite_real(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r:.60}")
    try:
        value = float(value)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def diffusers(
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1.0,
    scale: float = 1.0,
    max_period: float = 10000,
) -> Convention:
    """diffusers' ``get_timestep_embedding`` with these arguments.

    ``h = d//2``, ``w_i = scale * exp(-ln(max_period) i / (h - downscale_freq_shift))``,
    columns ``[sin | cos]`` (``[cos | sin]`` when ``flip_sin_to_cos``), a zero column appended
    when ``d`` is odd. ``max_period`` replaces the ``base`` argument of the call.
    Where ``h - downscale_freq_shift`` is 0 and ``h == 1`` diffusers computes 0/0 (NaN); sinpe
    uses the limit ``w_0 = 1``; with ``h > 1`` it raises ``ValueError``.
    """
    if not isinstance(flip_sin_to_cos, (bool, np.bool_)):
        raise TypeError(f"flip_sin_to_cos must be a bool, got {type(flip_sin_to_cos).__name__}")
    flip_sin_to_cos = bool(flip_sin_to_cos)
    downscale_freq_shift = _finite_real("downscale_freq_shift", downscale_freq_shift)
    scale = _finite_real("scale", scale)
    if scale == 0:
        raise ValueError("scale must be non-zero (every frequency would be 0)")
    max_period = _finite_real("max_period", max_period)
    if max_period <= 0:
        raise ValueError(f"max_period must be > 0, got {max_period!r}")
    return Convention(
        f"diffusers(flip_sin_to_cos={flip_sin_to_cos}, downscale_freq_shift="
        f"{downscale_freq_shift}, scale={scale}, max_period={max_period})",
        layout="cos_sin" if flip_sin_to_cos else "sin_cos",
        count="floor",
        denominator="half_minus_shift",
        shift=downscale_freq_shift,
        scale=scale,
        base=max_period,
    )


_PRESETS = {
    "vaswani": VASWANI,
    "tensor2tensor": TENSOR2TENSOR,
    "fairseq": TENSOR2TENSOR,
    "hf-marian": HF_MARIAN,
    "diffusers": diffusers(),
}


def names() -> tuple[str, ...]:
    """The preset names ``get`` accepts."""
    return tuple(_PRESETS)


def get(convention: str | Convention) -> Convention:
    """Resolve a preset name, or pass a ``Convention`` through; unknown names: ``ValueError``."""
    if isinstance(convention, Convention):
        return convention
    if not isinstance(convention, str):
        raise TypeError(
            "convention must be a name or a sinpe.conventions.Convention, got "
            f"{type(convention).__name__}"
        )
    try:
        return _PRESETS[convention]
    except KeyError:
        raise ValueError(
            f"unknown convention {convention!r}; known: {', '.join(names())} "
            "(or sinpe.conventions.diffusers(...))"
        ) from None
