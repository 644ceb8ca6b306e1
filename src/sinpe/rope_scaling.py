"""RoPE scaling rules: a model's ``rope_scaling`` / ``rope_parameters`` mapping -> inverse
frequencies and attention factor, one small function per Hugging Face rope type.

The formulas, key names, defaults and required keys are those of transformers 5.x
(``modeling_rope_utils.py``: ``_compute_*_parameters`` and ``_validate_*_rope_parameters``);
every step is evaluated in float64, and the steps whose rounding the formula would amplify are
carried as double-doubles, so that each inverse frequency is within 4 ulp of
the real-number value of the formula for the given float64 parameters (the bound
tests/test_rope.py checks against mpmath):

- the powers ``base**(-2i/d)`` are rounded once (``_frequencies``), and so are ``dynamic``'s
  powers of the rescaled base, whose logarithm is formed as a double-double;
- ``yarn``'s correction range (logarithms) and ramp, and ``llama3``'s smoothing factor,
  are double-doubles: both blend ``w/factor`` and ``w`` with a weight whose error the blend
  multiplies by up to ``factor``.

Transformers forms the angle and the powers in float32; that, not the formulas, is where its
tables drift (see the README).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ._front.frequencies import frequency_vector, power_vector_from_log
from ._twin.dd import dd_add, dd_mul, fast_two_sum, two_prod_split, two_sum
from ._twin.exact_constants import TWO_PI_HI, TWO_PI_LO
from ._twin.frequencies import log_dd

__all__ = ["ROPE_TYPES", "RopeScaling", "parse", "inverse_frequencies"]

# rope_type -> (required keys, optional keys), as transformers validates them ("rope_type"
# and "rope_theta" aside; max_position_embeddings is read from the model's config there).
ROPE_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "default": ((), ()),
    "linear": (("factor",), ()),
    "dynamic": (("factor", "max_position_embeddings"), ()),
    "yarn": (
        ("factor", "original_max_position_embeddings"),
        ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"),
    ),
    "longrope": (
        ("short_factor", "long_factor", "original_max_position_embeddings"),
        ("attention_factor", "factor"),
    ),
    "llama3": (
        ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
        (),
    ),
    "proportional": ((), ("factor", "partial_rotary_factor")),
    # Pixtral's 2-D RoPE: the default powers reordered, even ones for height, odd for width
    "axial": ((), ()),
}
# Legacy names transformers rewrites: Qwen2-VL's "mrope" is the default type with sections.
_ALIASES = {"mrope": "default"}
# Keys any type may carry: M-RoPE's sections (Qwen2-VL, Qwen3-VL), and partial_rotary_factor,
# kept so that sinpe.rope can refuse it where its head_dim is already the rotary width.
_ANY_TYPE = ("mrope_section", "mrope_interleaved", "partial_rotary_factor")
# Types whose transformers config standardisation fills original_max_position_embeddings from
# max_position_embeddings when it is missing.
_ORIGINAL_FROM_MAX = ("llama3", "yarn", "longrope")
# keys every mapping may carry besides its type's own
_NAMES = ("rope_type", "type", "rope_theta", "max_position_embeddings")
_WARNED: set = set()


def warn_ignored(rope_type: str, keys, where: str = "scaling") -> None:
    """Once per type and key set: the keys of a rope mapping that nothing reads, as
    transformers warns of them (a key in the wrong place is otherwise lost in silence)."""
    token = (where, rope_type, tuple(keys))
    if token in _WARNED:
        return
    _WARNED.add(token)
    warnings.warn(
        f"{where} for rope_type {rope_type!r}: ignoring the keys {', '.join(map(repr, keys))} "
        "(not read by this type)",
        UserWarning,
        stacklevel=4,
    )


_LOG_TWO_PI = dd_add(*log_dd(TWO_PI_HI), TWO_PI_LO / TWO_PI_HI, 0.0)


class RopeScaling(NamedTuple):
    """A validated scaling mapping: the type and its parameters as a hashable tuple of
    ``(key, value)`` pairs (lists become tuples), and the base it fixes (``rope_theta``)."""

    rope_type: str
    parameters: tuple
    theta: float | None

    def get(self, key: str, default=None):
        for name, value in self.parameters:
            if name == key:
                return value
        return default


def _number(key: str, value, *, positive: bool = True, integer: bool = False):
    """A finite real (an int where ``integer``), > 0 where ``positive``; names ``scaling[key]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"scaling[{key!r}] must be a number, got {type(value).__name__} {value!r:.60}"
        )
    try:
        if integer and not float(value).is_integer():
            raise ValueError(f"scaling[{key!r}] must be an integer, got {value!r}")
        result = int(value) if integer else float(value)
    except OverflowError:  # an int past float range, an inf that int() refuses
        raise ValueError(f"scaling[{key!r}] must be finite, got {value!r:.60}") from None
    if not math.isfinite(result) or (positive and not result > 0):
        raise ValueError(
            f"scaling[{key!r}] must be finite{' and > 0' if positive else ''}, got {value!r}"
        )
    return result


def _numbers(key: str, values) -> tuple:
    """A list of finite numbers > 0, checked at once where NumPy can (a long list in
    milliseconds), else entry by entry for the error."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError):
        array = None
    if array is not None and array.ndim == 1 and array.dtype.kind in "iuf":
        with np.errstate(all="ignore"):
            floats = array.astype(np.float64)
        if np.isfinite(floats).all() and (floats > 0).all():
            return tuple(floats.tolist())
    return tuple(_number(f"{key}[{i}]", v) for i, v in enumerate(values))


def _mapping(spec: RopeScaling) -> dict:
    """The mapping a ``RopeScaling`` was parsed from (lists as tuples)."""
    mapping = dict(spec.parameters, rope_type=spec.rope_type)
    if spec.theta is not None:
        mapping["rope_theta"] = spec.theta
    return mapping


def parse(
    scaling, max_position_embeddings: int | None = None, head_dim: int | None = None
) -> RopeScaling:
    """Validate ``scaling`` (``None``, a ``rope_scaling`` or ``rope_parameters`` mapping, or a
    ``RopeScaling``); errors name the key and the allowed values. ``max_position_embeddings``
    is the model config's (transformers reads it beside the mapping): it joins the mapping,
    which must not say otherwise. With ``head_dim``, a factor list of the wrong length is
    refused before its entries are read."""
    if max_position_embeddings is not None:
        max_position_embeddings = _number(
            "max_position_embeddings", max_position_embeddings, integer=True
        )
    if scaling is None:
        scaling = {}
    elif isinstance(scaling, RopeScaling):
        if scaling.rope_type not in ROPE_TYPES:
            raise ValueError(
                f"unknown rope_type {scaling.rope_type!r}; "
                f"known types: {', '.join(sorted(ROPE_TYPES))}"
            )
        scaling = _mapping(scaling)  # checked again: a RopeScaling may be built by hand
    elif not isinstance(scaling, Mapping):
        raise TypeError(
            "scaling must be None or a mapping (a config's rope_scaling or rope_parameters), "
            f"got {type(scaling).__name__}"
        )
    if max_position_embeddings is not None:
        given = scaling.get("max_position_embeddings")
        if given is not None and _number("max_position_embeddings", given) != float(
            max_position_embeddings
        ):
            raise ValueError(
                f"max_position_embeddings={max_position_embeddings} disagrees with the scaling "
                f"mapping's max_position_embeddings={given!r}: pass one of them, or the same value"
            )
        scaling = {**scaling, "max_position_embeddings": max_position_embeddings}
    if not scaling:
        return RopeScaling("default", (), None)
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    if isinstance(rope_type, str):
        rope_type = _ALIASES.get(rope_type, rope_type)
    if rope_type not in ROPE_TYPES:
        raise ValueError(
            f"unknown rope_type {rope_type!r}; known types: {', '.join(sorted(ROPE_TYPES))} "
            "(and 'mrope', transformers' older name of the default type with mrope_section)"
        )
    required, optional = ROPE_TYPES[rope_type]
    optional = (*optional, *(key for key in _ANY_TYPE if key not in optional))
    values = {}
    if rope_type in _ORIGINAL_FROM_MAX and "original_max_position_embeddings" not in scaling:
        if "max_position_embeddings" in scaling:
            values["original_max_position_embeddings"] = scaling["max_position_embeddings"]
    for key in required:
        if key not in scaling and key not in values:
            hint = (
                " (or max_position_embeddings, which transformers copies into it)"
                if key == "original_max_position_embeddings"
                else " (transformers reads it from the model's config; add it to the mapping)"
                if key == "max_position_embeddings"
                else ""
            )
            raise ValueError(
                f"scaling for rope_type {rope_type!r} needs the key {key!r}{hint}; "
                f"required: {', '.join(required)}"
            )
    for key in (*required, *optional, "max_position_embeddings"):
        if key in scaling:
            values[key] = scaling[key]
    ignored = sorted(
        str(key)
        for key in scaling
        if key not in values and key not in _NAMES and key not in required
    )
    if ignored:
        warn_ignored(rope_type, ignored)
    checked = {}
    for key, value in values.items():
        if value is None and key in (
            "factor",
            "attention_factor",
            "mscale",
            "mscale_all_dim",
            "beta_fast",
            "beta_slow",
        ):
            checked[key] = None  # transformers treats None as "not given"
        elif key in ("short_factor", "long_factor"):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                raise TypeError(f"scaling[{key!r}] must be a list of numbers, got {value!r:.60}")
            if head_dim is not None and len(value) != head_dim // 2:
                raise ValueError(
                    f"scaling[{key!r}] must have head_dim/2 = {head_dim // 2} entries, "
                    f"got {len(value)}"
                )
            checked[key] = _numbers(key, value)
        elif key in ("truncate", "mrope_interleaved"):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"scaling[{key!r}] must be true or false, got {value!r}")
            checked[key] = bool(value)
        elif key == "mrope_section":
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
                raise ValueError(
                    "scaling['mrope_section'] must be a list of 3 integers (temporal, height, "
                    f"width frequencies, summing to head_dim // 2), got {value!r:.60}"
                )
            checked[key] = tuple(
                _number(f"mrope_section[{i}]", v, positive=False, integer=True)
                for i, v in enumerate(value)
            )
            if min(checked[key]) < 0:
                raise ValueError(f"scaling['mrope_section'] must not be negative, got {value!r}")
        elif key in ("max_position_embeddings", "original_max_position_embeddings"):
            checked[key] = _number(key, value, integer=True)
        elif key in ("mscale", "mscale_all_dim"):
            checked[key] = _number(key, value, positive=False)
        elif key == "partial_rotary_factor":
            checked[key] = _number(key, value)
            if checked[key] > 1:
                raise ValueError(f"scaling['partial_rotary_factor'] must be <= 1, got {value!r}")
        else:  # factor, attention_factor, low_freq_factor, high_freq_factor
            checked[key] = _number(key, value)
    if rope_type == "llama3" and not checked["high_freq_factor"] > checked["low_freq_factor"]:
        raise ValueError(
            "scaling['high_freq_factor'] must be greater than scaling['low_freq_factor'], got "
            f"{checked['high_freq_factor']} and {checked['low_freq_factor']}"
        )
    if "mrope_interleaved" in checked and "mrope_section" not in checked:
        raise ValueError("scaling['mrope_interleaved'] needs scaling['mrope_section']")
    if rope_type == "axial" and "mrope_section" in checked:
        raise ValueError(
            "rope_type 'axial' (two position axes) and mrope_section (three) do not combine"
        )
    if rope_type == "dynamic" and checked["factor"] is None:
        raise ValueError("scaling['factor'] must be a number > 0 for rope_type 'dynamic'")
    if rope_type in ("linear", "llama3") and checked["factor"] is None:
        raise ValueError(f"scaling['factor'] must be a number > 0 for rope_type {rope_type!r}")
    theta = scaling.get("rope_theta")
    if theta is not None:
        theta = _number("rope_theta", theta)
    return RopeScaling(rope_type, tuple(sorted(checked.items())), theta)


# --------------------------------------------------------------------------- dd helpers


def _dd(value) -> tuple[float, float]:
    """An exact rational (a Fraction, or a float) as the nearest double-double."""
    from fractions import Fraction  # here, not at import: fractions pulls in decimal (~3 ms)

    hi = float(value)
    return hi, float(Fraction(value) - Fraction(hi))


def _dd_div(a_hi, a_lo, b_hi, b_lo):
    """(a_hi + a_lo) / (b_hi + b_lo) as a dd; relative error < 2**-100."""
    q = a_hi / b_hi
    p_hi, p_err = two_prod_split(q, b_hi)
    remainder = (((a_hi - p_hi) - p_err) + a_lo) - q * b_lo
    return fast_two_sum(q, remainder / b_hi)


def _dd_log(value: float) -> tuple[float, float]:
    return log_dd(float(value))


def _dd_less(a, b) -> bool:
    """a < b for dd pairs or floats (normalized pairs: compare heads, then tails)."""
    a_hi, a_lo = a if isinstance(a, tuple) else (a, 0.0)
    b_hi, b_lo = b if isinstance(b, tuple) else (b, 0.0)
    return a_hi < b_hi or (a_hi == b_hi and a_lo < b_lo)


def _floor_dd(x) -> float:
    """floor(hi + lo): the tail matters only when the head is an integer."""
    f = math.floor(x[0])
    return float(f - 1 if x[0] == f and x[1] < 0 else f)


def _ceil_dd(x) -> float:
    c = math.ceil(x[0])
    return float(c + 1 if x[0] == c and x[1] > 0 else c)


def _round_product(w: np.ndarray, g_hi: np.ndarray, g_lo: np.ndarray) -> np.ndarray:
    """RN(w * (g_hi + g_lo)) for float64 arrays: one rounding of an almost exact product."""
    product, error = two_prod_split(w, g_hi)
    return product + (error + w * g_lo)


# --------------------------------------------------------------------------- rules


def _sized(head_dim: int, make, *args) -> np.ndarray:
    """``make(*args)``, a vector of about head_dim/2 values; a length no array can have is a
    ValueError naming head_dim (MemoryError passes through)."""
    try:
        return make(*args)
    except ValueError as exc:
        raise ValueError(f"head_dim={head_dim} is too large ({exc})") from None


def _powers(head_dim: int, base: float) -> np.ndarray:
    """``base**(-2i/head_dim)``, ``i < head_dim/2``, each rounded once."""
    return _sized(head_dim, frequency_vector, head_dim // 2, base, 2, float(head_dim))


def _default(s, head_dim, base, seq_len):
    return _powers(head_dim, base), 1.0


def _linear(s, head_dim, base, seq_len):
    return _powers(head_dim, base) / s.get("factor"), 1.0


def _dynamic(s, head_dim, base, seq_len):
    from fractions import Fraction

    if head_dim < 4:
        raise ValueError(
            f"rope_type 'dynamic' needs head_dim >= 4 (it raises to d/(d-2)), got {head_dim}"
        )
    factor = s.get("factor")
    limit = s.get("max_position_embeddings")
    length = limit if seq_len is None else max(seq_len, limit)
    # base' = base * X**(d/(d-2)), X = factor*length/limit - (factor - 1), exactly as a rational;
    # log(base') is formed as a dd and the powers are rounded once from it.
    ratio = Fraction(factor) * Fraction(length) / limit - (Fraction(factor) - 1)
    if ratio == 1:  # within the trained length: the base itself
        return _powers(head_dim, base), 1.0
    x_hi, x_lo = _dd(ratio)
    log_x = dd_add(*_dd_log(x_hi), x_lo / x_hi, 0.0)  # log(x_hi + x_lo), x_lo/x_hi < 2**-53
    exponent = _dd(Fraction(head_dim, head_dim - 2))
    log_base = dd_add(*_dd_log(base), *dd_mul(*exponent, *log_x))
    w = _sized(head_dim, power_vector_from_log, head_dim // 2, *log_base, 2, float(head_dim))
    return w, 1.0


def _mscale(scale: float, mscale: float = 1.0) -> float:
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _factor_or_ratio(s, name):
    factor = s.get("factor")
    if factor is None:
        limit = s.get("max_position_embeddings")
        if limit is None:
            raise ValueError(
                f"rope_type {name!r} without 'factor' needs 'max_position_embeddings' "
                "(factor = max_position_embeddings / original_max_position_embeddings)"
            )
        factor = limit / s.get("original_max_position_embeddings")
    return factor


def _yarn(s, head_dim, base, seq_len):
    from fractions import Fraction

    w = _powers(head_dim, base)  # first: an impossible head_dim is said before it is used
    factor = _factor_or_ratio(s, "yarn")
    attention = s.get("attention_factor")
    if attention is None:
        mscale, mscale_all_dim = s.get("mscale"), s.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention = float(_mscale(factor, mscale) / _mscale(factor, mscale_all_dim))
        else:
            attention = _mscale(factor)
    beta_fast = s.get("beta_fast") or 32
    beta_slow = s.get("beta_slow") or 1
    original = s.get("original_max_position_embeddings")
    log_base = _dd_log(base)
    if log_base[0] == 0.0:
        raise ValueError(
            "base must not be 1 for rope_type 'yarn': its correction range divides by log(base)"
        )

    def correction_dim(rotations):  # dim * log(original / (rotations * 2 pi)) / (2 log base)
        log_ratio = dd_add(*_dd_log(original), *(-v for v in _dd_log(rotations)))
        log_ratio = dd_add(*log_ratio, *(-v for v in _LOG_TWO_PI))
        return _dd_div(
            *dd_mul(float(head_dim), 0.0, *log_ratio), 2.0 * log_base[0], 2.0 * log_base[1]
        )

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if s.get("truncate", True):
        low, high = (_floor_dd(low), 0.0), (_ceil_dd(high), 0.0)
    if _dd_less(low, 0.0):
        low = (0.0, 0.0)
    if _dd_less(float(head_dim - 1), high):
        high = (float(head_dim - 1), 0.0)
    if low == high:
        high = (high[0] + 0.001, 0.0)  # transformers' guard against a zero-width ramp
    # ramp r_i = clamp((i - low) / (high - low), 0, 1) and the blend weight
    # g_i = r_i/factor + (1 - r_i), so inv_freq_i = w_i * g_i; both as dd.
    width = dd_add(*high, -low[0], -low[1])
    g_hi, g_lo = np.empty_like(w), np.empty_like(w)
    inverse_factor = _dd(Fraction(1) / Fraction(factor))
    for i in range(w.size):
        r = _dd_div(*dd_add(float(i), 0.0, -low[0], -low[1]), *width)
        if _dd_less(r, 0.0):
            r = (0.0, 0.0)
        elif _dd_less(1.0, r):
            r = (1.0, 0.0)
        g = dd_add(*dd_mul(*r, *inverse_factor), *dd_add(1.0, 0.0, -r[0], -r[1]))
        g_hi[i], g_lo[i] = g
    return _round_product(w, g_hi, g_lo), float(attention)


def _longrope(s, head_dim, base, seq_len):
    factor = _factor_or_ratio(s, "longrope")
    original = s.get("original_max_position_embeddings")
    attention = s.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    key = "long_factor" if seq_len and seq_len > original else "short_factor"
    factors = s.get(key)
    if len(factors) != head_dim // 2:
        raise ValueError(
            f"scaling[{key!r}] must have head_dim/2 = {head_dim // 2} entries, got {len(factors)}"
        )
    return _powers(head_dim, base) / np.array(factors), float(attention)


def _llama3(s, head_dim, base, seq_len):
    from fractions import Fraction

    factor = s.get("factor")
    low, high = s.get("low_freq_factor"), s.get("high_freq_factor")
    original = float(s.get("original_max_position_embeddings"))
    w = _powers(head_dim, base)
    # smooth s_i = (original * w_i / (2 pi) - low) / (high - low), as a dd: wavelength
    # 2 pi / w_i > original / low is s_i < 0 (w/factor), < original / high is s_i > 1 (w).
    span = two_sum(high, -low)
    inverse_factor = _dd(Fraction(1) / Fraction(factor))
    result = np.empty_like(w)
    for i, wi in enumerate(w.tolist()):
        turns = _dd_div(*two_prod_split(original, wi), TWO_PI_HI, TWO_PI_LO)
        smooth = _dd_div(*dd_add(*turns, -low, 0.0), *span)
        if _dd_less(smooth, 0.0):
            result[i] = wi / factor
        elif _dd_less(1.0, smooth):
            result[i] = wi
        else:  # (1 - s) * w / factor + s * w = w * ((1 - s)/factor + s)
            g = dd_add(*dd_mul(*dd_add(1.0, 0.0, -smooth[0], -smooth[1]), *inverse_factor), *smooth)
            result[i] = _round_product(np.float64(wi), *g)
    return result, 1.0


def _proportional(s, head_dim, base, seq_len):
    proportion = s.get("partial_rotary_factor", 1.0)
    angles = int(proportion * head_dim // 2)
    w = _sized(head_dim, np.zeros, head_dim // 2)
    w[:angles] = frequency_vector(angles, base, 2, float(head_dim))
    return w / (s.get("factor") or 1.0), 1.0


def _axial(s, head_dim, base, seq_len):
    """Pixtral's order: the even powers (height), then the odd ones (width)."""
    w = _powers(head_dim, base)
    return np.concatenate([w[0::2], w[1::2]]), 1.0


_RULES = {
    "axial": _axial,
    "default": _default,
    "linear": _linear,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "longrope": _longrope,
    "llama3": _llama3,
    "proportional": _proportional,
}


def inverse_frequencies(
    scaling: RopeScaling, head_dim: int, base: float, seq_len: float | None
) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_factor)`` for a validated ``scaling``: ``head_dim // 2`` float64
    values (a new array) and the factor every cos/sin is multiplied by. ``seq_len`` is the
    current length (``None``: within the trained length), for ``dynamic`` and ``longrope``."""
    try:
        with np.errstate(all="ignore"):  # an overflow shows as a non-finite value, refused
            inv_freq, attention = _RULES[scaling.rope_type](scaling, head_dim, base, seq_len)
            inv_freq, attention = np.array(inv_freq, dtype=np.float64), float(attention)
    except (OverflowError, ZeroDivisionError) as exc:
        raise ValueError(_no_frequencies(scaling, base, exc)) from None
    except ValueError as exc:
        if "math domain" not in str(exc):
            raise
        raise ValueError(_no_frequencies(scaling, base, exc)) from None
    if not (np.isfinite(inv_freq).all() and math.isfinite(attention)):
        raise ValueError(_no_frequencies(scaling, base, "not finite"))
    return inv_freq, attention


def _no_frequencies(scaling: RopeScaling, base: float, why) -> str:
    keys = ", ".join(f"{k}={v!r:.30}" for k, v in scaling.parameters if not isinstance(v, tuple))
    return (
        f"scaling (rope_type {scaling.rope_type!r}, {keys or 'no keys'}) with base={base!r} "
        f"gives no finite inverse frequencies and attention factor ({why})"
    )
