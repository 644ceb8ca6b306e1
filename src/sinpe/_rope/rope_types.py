"""RoPE types as data: one record per rope type (its keys, each with a type and a range, its
frequency rule, its attention-factor rule, how the current length changes its values, and
whether it copies the original length), and the parsing and evaluation that read them.

The formulas, key names, defaults and required keys are those of transformers 5.24
(``modeling_rope_utils.py``: ``_compute_*_parameters`` and ``_validate_*_rope_parameters``;
the family types ``ntk_alpha`` and ``longrope_mscale`` are HunYuan's and PhiMoE's own, reached
only through their family records, ``_rope/families.py``). Every step is evaluated in
float64, and the steps whose rounding the formula would amplify are carried as
double-doubles, so that each inverse frequency is within 4 ulp of the real-number value of
the formula for the given float64 parameters (the bound tests/test_rope.py checks against
mpmath):

- the powers ``base**(-2i/d)`` are rounded once (``_frequencies``), and so are ``dynamic``'s
  and ``ntk_alpha``'s powers of the rescaled base, whose logarithm is formed as a
  double-double;
- ``yarn``'s correction range (logarithms) and ramp, and ``llama3``'s smoothing factor,
  are double-doubles: both blend ``w/factor`` and ``w`` with a weight whose error the blend
  multiplies by up to ``factor``.

A key is validated by its record in ``KEYS`` (booleans are never numbers); a key that some
record reads and the mapping's type does not is refused (it would change values where it is
read); a key no record knows is warned about once. Transformers forms the angle and the
powers in float32; that, not the formulas, is where its tables drift (see the README).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

import numpy as np

from .._exactmath.dd import dd_add, dd_mul, fast_two_sum, two_prod_split, two_sum
from .._exactmath.exact_constants import TWO_PI_HI, TWO_PI_LO
from .._tables.backends import DEFAULT as _BACKEND
from .._tables.frequencies import frequency_vector, power_vector_from_log
from .._tables.types import Scaling

__all__ = [
    "KEYS",
    "MAX_FACTOR",
    "ROPE_TYPES",
    "TYPES",
    "Key",
    "RopeScaling",
    "RopeType",
    "inverse_frequencies",
    "length_key",
    "parse",
]

# No published model scales by more than a few hundred; a larger factor is a mistake (and
# 1e300 makes every frequency vanish).
MAX_FACTOR = 1e4
# HunYuan's NTK alpha is 1000 in its published config; the base grows as alpha**(d/(d-2)).
MAX_ALPHA = 1e8
# Every frequency a rule does not set to 0 on purpose must be a normal double: smaller, the
# table is constant (cos = 1) at every position below 2**53.
MIN_FREQUENCY = 2.0**-1022


# --------------------------------------------------------------------------- keys


class Key(NamedTuple):
    """How one mapping key is read: ``kind`` is ``"number"`` (a finite real, ``> 0`` where
    ``positive``, at most ``maximum``), ``"integer"`` (>= 1), ``"numbers"`` (a list of
    finite reals > 0), ``"flag"`` (true or false) or ``"sections"`` (3 integers >= 0);
    ``None`` as a value means "not given" where ``none_is_absent`` (transformers' rule)."""

    kind: str
    positive: bool = True
    maximum: float | None = None
    none_is_absent: bool = False


KEYS: dict[str, Key] = {
    "factor": Key("number", maximum=MAX_FACTOR, none_is_absent=True),
    "attention_factor": Key("number", none_is_absent=True),
    "beta_fast": Key("number", none_is_absent=True),
    "beta_slow": Key("number", none_is_absent=True),
    "mscale": Key("number", positive=False, none_is_absent=True),
    "mscale_all_dim": Key("number", positive=False, none_is_absent=True),
    "truncate": Key("flag"),
    "original_max_position_embeddings": Key("integer"),
    "max_position_embeddings": Key("integer"),
    "low_freq_factor": Key("number"),
    "high_freq_factor": Key("number"),
    "short_factor": Key("numbers"),
    "long_factor": Key("numbers"),
    "partial_rotary_factor": Key("number", maximum=1.0),
    "mrope_section": Key("sections"),
    "mrope_interleaved": Key("flag"),
    "mrope_paired": Key("flag"),
    "alpha": Key("number", maximum=MAX_ALPHA, none_is_absent=True),
    "short_mscale": Key("number"),
    "long_mscale": Key("number"),
}
# Keys any type may carry: M-RoPE's sections (Qwen2-VL, Qwen3-VL), and partial_rotary_factor,
# kept so that sinpe.rope can refuse it where its head_dim is already the rotary width.
ANY_TYPE = ("mrope_section", "mrope_interleaved", "mrope_paired", "partial_rotary_factor")
# Keys every mapping may carry besides its type's own: the type, the base, the model's length.
NAMES = ("rope_type", "type", "rope_theta", "max_position_embeddings")
# transformers' older names of types: Qwen2-VL's "mrope" is the default type with sections
ALIASES = {"mrope": "default"}
_WARNED: set = set()


def warn_ignored(rope_type: str, keys, where: str = "scaling") -> None:
    """Once per type and key set: keys of a rope mapping that no record reads, as
    transformers warns of them (a key in the wrong place is otherwise lost in silence)."""
    token = (where, rope_type, tuple(keys))
    if token in _WARNED:
        return
    _WARNED.add(token)
    warnings.warn(
        f"{where} for rope_type {rope_type!r}: ignoring the keys {', '.join(map(repr, keys))} "
        "(no rope type or model family reads them)",
        UserWarning,
        stacklevel=4,
    )


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def number(key: str, value, *, positive: bool = True, integer: bool = False, maximum=None):
    """A finite real (an int where ``integer``), > 0 where ``positive``, at most ``maximum``;
    names ``scaling[key]``. Booleans are not numbers."""
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
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
    if maximum is not None and result > maximum:
        raise ValueError(f"scaling[{key!r}] must be at most {maximum:g}, got {value!r}")
    return result


def _numbers(key: str, values) -> tuple:
    """A list of finite numbers > 0 (no booleans), checked at once where NumPy can (a long
    list in milliseconds), else entry by entry for the error."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise TypeError(f"scaling[{key!r}] must be a list of numbers, got {values!r:.60}")
    try:
        array = np.asarray(values)
    except (ValueError, TypeError):
        array = None
    if array is not None and array.ndim == 1 and array.dtype.kind in "iuf":
        with np.errstate(all="ignore"):
            floats = array.astype(np.float64)
        if np.isfinite(floats).all() and (floats > 0).all():
            if array.dtype.kind != "f" or not any(map(_is_bool, values)):  # [1.0, True]: float
                return tuple(floats.tolist())
    return tuple(number(f"{key}[{i}]", v) for i, v in enumerate(values))


def check_key(key: str, value):
    """``value`` checked by ``KEYS[key]``; errors name ``scaling[key]``."""
    spec = KEYS[key]
    if spec.kind == "number":
        return number(key, value, positive=spec.positive, maximum=spec.maximum)
    if spec.kind == "integer":
        return number(key, value, integer=True)
    if spec.kind == "numbers":
        return _numbers(key, value)
    if spec.kind == "flag":
        if not _is_bool(value):
            raise TypeError(f"scaling[{key!r}] must be true or false, got {value!r:.60}")
        return bool(value)
    # sections
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__") or len(value) != 3:
        raise ValueError(
            f"scaling[{key!r}] must be a list of 3 integers (temporal, height, width "
            f"frequencies, summing to head_dim // 2), got {value!r:.60}"
        )
    sections = tuple(
        number(f"{key}[{i}]", v, positive=False, integer=True) for i, v in enumerate(value)
    )
    if min(sections) < 0:
        raise ValueError(f"scaling[{key!r}] must not be negative, got {value!r}")
    return sections


# --------------------------------------------------------------------------- the parsed form


class RopeScaling(NamedTuple):
    """A validated scaling mapping: the type and its parameters as a hashable tuple of
    ``(key, value)`` pairs (lists become tuples), and the base it fixes (``rope_theta``)."""

    rope_type: str
    parameters: tuple
    theta: float | None

    def get(self, key: str, default: Any = None) -> Any:
        for name, value in self.parameters:
            if name == key:
                return value
        return default

    def mapping(self) -> dict:
        """The mapping this was parsed from (lists as tuples)."""
        mapping = dict(self.parameters, rope_type=self.rope_type)
        if self.theta is not None:
            mapping["rope_theta"] = self.theta
        return mapping

    def without(self, *keys: str) -> RopeScaling:
        """This scaling without ``keys`` (M-RoPE's sections, for the frequencies alone)."""
        return self._replace(parameters=tuple(kv for kv in self.parameters if kv[0] not in keys))


# --------------------------------------------------------------------------- rope types


class RopeType(NamedTuple):
    """One rope type: its required and optional keys (besides ``NAMES`` and ``ANY_TYPE``),
    its frequency rule ``(scaling, head_dim, base, seq_len) -> inv_freq`` and attention
    rule ``(scaling, seq_len) -> factor``, what of the current length changes its values
    (``(scaling, seq_len) -> key``, ``None`` when nothing does), whether transformers copies
    ``max_position_embeddings`` into a missing ``original_max_position_embeddings``, and
    whether a mapping may name it (the family types are reached through a family record).

    The rest is what code elsewhere asks of a type, so that no file outside these records
    tests a type's name: ``plain`` (the default type: the base's powers, nothing scaled),
    ``axes`` (position axes its frequencies read: 2 for Pixtral's axial grid), ``zeros``
    (``(scaling, head_dim) -> n``: trailing frequencies set to 0 on purpose), ``factor_needed``
    (``factor`` must be given), ``factor_from_lengths`` (a missing ``factor`` is
    ``max_position_embeddings / original_max_position_embeddings``), ``partial_as_default``
    (a family's default partial rotary factor applies to it as to the default type) and
    ``length_state``: how the current length changes the values, ``"grows"`` (dynamic: the
    base re-derived once a call passes the trained length, kept until a shorter call resets
    it, transformers' ``dynamic_rope_update``), ``"switches"`` (longrope: short factors up
    to the trained length, long past it, per call) or ``None``; ``title``, its name in prose
    (``"Llama-3"``); ``gguf``, how llama.cpp's GGUF files carry it: ``"plain"`` (nothing to
    carry), ``"scale"`` (``rope.scaling.type`` linear and its factor), ``"freq_factors"`` (a
    ``rope_freqs`` tensor the frequencies are divided by), ``"ramp"`` (YaRN's keys),
    ``"factor_sets"`` (LongRoPE's long and short factor tensors; ``"factor_sets_mscale"``
    with attention factors GGUF has no key for), ``"base"`` (folded into ``rope.freq_base``
    by the converter) or ``None`` (no form in GGUF); ``odd_width``, whether transformers'
    rule runs on an odd rotary width ``d`` (its frequencies the powers ``base**(-2i/d)``,
    ``i < (d + 1) // 2``, taken one by one; YaRN's ramp and LongRoPE's factor lists have
    ``d // 2`` entries there, and their modules fail)."""

    name: str
    required: tuple
    optional: tuple
    frequencies: Callable
    attention: Callable
    length: Callable
    copies_original: bool = False
    public: bool = True
    check: Callable | None = None  # cross-key checks, after each key is valid
    plain: bool = False
    axes: int = 1
    zeros: Callable | None = None
    factor_needed: bool = False
    factor_from_lengths: bool = False
    partial_as_default: bool = False
    length_state: str | None = None
    title: str = ""
    gguf: str | None = None
    odd_width: bool = False

    def needs_model_length(self, parameters: Mapping) -> bool:
        """Whether ``max_position_embeddings`` is needed to evaluate ``parameters``."""
        return "max_position_embeddings" in self.required or (
            self.factor_from_lengths and parameters.get("factor") is None
        )

    def probe_lengths(self, original: int | None, cached: int | None) -> tuple:
        """The lengths whose frequencies a module of this type may hold in its buffer, besides
        the trained one (``None``): a dynamic module's last grown length (``cached``), a
        longrope module's long factors (past ``original``)."""
        if self.length_state == "grows" and cached:
            return (int(cached),)
        if self.length_state == "switches" and original is not None:
            return (int(original) + 1,)
        return ()


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
    return _BACKEND.log_dd(float(value))


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


_LOG_TWO_PI = dd_add(*_BACKEND.log_dd(TWO_PI_HI), TWO_PI_LO / TWO_PI_HI, 0.0)  # type: ignore[call-arg]


def frequency_count(head_dim: int) -> int:
    """How many frequencies a rotary width rotates: ``len(range(0, head_dim, 2))``, as
    transformers' ``arange(0, dim, 2)`` (an odd width ``d`` has ``(d + 1) // 2``, and its
    tables are ``d + 1`` columns wide)."""
    return (head_dim + 1) // 2


def powers(head_dim: int, base: float) -> np.ndarray:
    """``base**(-2i/head_dim)``, ``i < frequency_count(head_dim)``, each rounded once."""
    return frequency_vector(frequency_count(head_dim), base, 2, float(head_dim))


def _powers_of_scaled_base(head_dim: int, base: float, log_ratio_hi, log_ratio_lo, exponent):
    """``(base * X**exponent)**(-2i/head_dim)`` with ``log X`` a dd and ``exponent`` exact:
    the logarithm of the new base formed as a dd, the powers rounded once from it."""
    log_base = dd_add(*_dd_log(base), *dd_mul(*_dd(exponent), log_ratio_hi, log_ratio_lo))
    return power_vector_from_log(frequency_count(head_dim), *log_base, 2, float(head_dim))


def _one(s, seq_len) -> float:
    return 1.0


def _no_length(s, seq_len):
    return None


def _default(s, head_dim, base, seq_len):
    return powers(head_dim, base)


def _linear(s, head_dim, base, seq_len):
    return powers(head_dim, base) / s.get("factor")


def _dynamic_length(s, seq_len):
    limit = s.get("max_position_embeddings")
    return limit if seq_len is None else max(seq_len, limit)


def _dynamic(s, head_dim, base, seq_len):
    from fractions import Fraction

    if head_dim < 4:
        raise ValueError(
            f"rope_type 'dynamic' needs head_dim >= 4 (it raises to d/(d-2)), got {head_dim}"
        )
    factor = s.get("factor")
    limit = s.get("max_position_embeddings")
    length = _dynamic_length(s, seq_len)
    # base' = base * X**(d/(d-2)), X = factor*length/limit - (factor - 1), exactly as a rational
    ratio = Fraction(factor) * Fraction(length) / limit - (Fraction(factor) - 1)
    if ratio == 1:  # within the trained length: the base itself
        return powers(head_dim, base)
    x_hi, x_lo = _dd(ratio)
    log_x = dd_add(*_dd_log(x_hi), x_lo / x_hi, 0.0)  # log(x_hi + x_lo), x_lo/x_hi < 2**-53
    return _powers_of_scaled_base(head_dim, base, *log_x, Fraction(head_dim, head_dim - 2))


def _ntk_alpha(s, head_dim, base, seq_len):
    """HunYuan's fixed NTK alpha: base' = base * alpha**(d/(d-2)), whatever the length."""
    from fractions import Fraction

    if head_dim < 4:
        raise ValueError(
            f"rope_type 'dynamic' with alpha needs head_dim >= 4 (it raises alpha to d/(d-2)), "
            f"got {head_dim}"
        )
    return _powers_of_scaled_base(
        head_dim, base, *_dd_log(s.get("alpha")), Fraction(head_dim, head_dim - 2)
    )


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


def _yarn_attention(s, seq_len):
    attention = s.get("attention_factor")
    if attention is not None:
        return attention
    factor = _factor_or_ratio(s, "yarn")
    mscale, mscale_all_dim = s.get("mscale"), s.get("mscale_all_dim")
    if mscale and mscale_all_dim:
        return float(_mscale(factor, mscale) / _mscale(factor, mscale_all_dim))
    return _mscale(factor)


def _yarn(s, head_dim, base, seq_len):
    from fractions import Fraction

    w = powers(head_dim, base)
    factor = _factor_or_ratio(s, "yarn")
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
    return _round_product(w, g_hi, g_lo)


def _longrope_length(s, seq_len):
    original = s.get("original_max_position_embeddings")
    return original + 1 if seq_len and seq_len > original else None


def _longrope_attention(s, seq_len):
    attention = s.get("attention_factor")
    if attention is not None:
        return attention
    factor = _factor_or_ratio(s, "longrope")
    original = s.get("original_max_position_embeddings")
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))


def _longrope_factors(s, head_dim, base, key):
    factors = s.get(key)
    if len(factors) != head_dim // 2:
        raise ValueError(
            f"scaling[{key!r}] must have head_dim/2 = {head_dim // 2} entries, got {len(factors)}"
        )
    return powers(head_dim, base) / np.array(factors)


def _longrope(s, head_dim, base, seq_len):
    key = "long_factor" if _longrope_length(s, seq_len) is not None else "short_factor"
    return _longrope_factors(s, head_dim, base, key)


def _short_factor(s, head_dim, base, seq_len):
    """PhiMoE's: its forward builds the frequencies without the length (short_factor)."""
    return _longrope_factors(s, head_dim, base, "short_factor")


def _mscale_by_length(s, seq_len):
    """PhiMoE's attention factor: long_mscale past the original length, else short_mscale."""
    return s.get("long_mscale") if _longrope_length(s, seq_len) else s.get("short_mscale")


def _llama3_check(values: dict) -> None:
    if values["high_freq_factor"] < values["low_freq_factor"]:
        raise ValueError(
            "scaling['high_freq_factor'] must be at least scaling['low_freq_factor'], got "
            f"{values['high_freq_factor']} and {values['low_freq_factor']}"
        )


def _llama3(s, head_dim, base, seq_len):
    from fractions import Fraction

    factor = s.get("factor")
    low, high = s.get("low_freq_factor"), s.get("high_freq_factor")
    original = float(s.get("original_max_position_embeddings"))
    w = powers(head_dim, base)
    # smooth s_i = (original * w_i / (2 pi) - low) / (high - low), as a dd: wavelength
    # 2 pi / w_i > original / low is s_i < 0 (w/factor), < original / high is s_i > 1 (w).
    # With low == high there is no middle band (Llama 4 Scout; Meta's and vLLM's formula).
    span = two_sum(high, -low)
    inverse_factor = _dd(Fraction(1) / Fraction(factor))
    result = np.empty_like(w)
    for i, wi in enumerate(w.tolist()):
        turns = _dd_div(*two_prod_split(original, wi), TWO_PI_HI, TWO_PI_LO)
        below = dd_add(*turns, -low, 0.0)
        if span == (0.0, 0.0):
            if below == (0.0, 0.0):
                raise ValueError(
                    f"inverse frequency {i} lies exactly on the wavelength original / "
                    "low_freq_factor, where low_freq_factor == high_freq_factor leaves its "
                    "scaling undefined"
                )
            result[i] = wi / factor if _dd_less(below, 0.0) else wi
            continue
        smooth = _dd_div(*below, *span)
        if _dd_less(smooth, 0.0):
            result[i] = wi / factor
        elif _dd_less(1.0, smooth):
            result[i] = wi
        else:  # (1 - s) * w / factor + s * w = w * ((1 - s)/factor + s)
            g = dd_add(*dd_mul(*dd_add(1.0, 0.0, -smooth[0], -smooth[1]), *inverse_factor), *smooth)
            result[i] = _round_product(np.float64(wi), *g)
    return result


def _proportional(s, head_dim, base, seq_len):
    proportion = s.get("partial_rotary_factor", 1.0)
    angles = int(proportion * head_dim // 2)
    if angles < 1:
        raise ValueError(
            f"scaling['partial_rotary_factor']={proportion!r} rotates no frequency of head_dim "
            f"{head_dim} (int(p * head_dim // 2) = 0): every table would be constant"
        )
    w = np.zeros(head_dim // 2)
    w[:angles] = frequency_vector(angles, base, 2, float(head_dim))
    return w / (s.get("factor") or 1.0)


def _proportional_zeros(s, head_dim) -> int:
    """How many trailing frequencies proportional sets to 0 on purpose."""
    return head_dim // 2 - int(s.get("partial_rotary_factor", 1.0) * head_dim // 2)


def _axial(s, head_dim, base, seq_len):
    """Pixtral's order: the even powers (height), then the odd ones (width)."""
    w = powers(head_dim, base)
    return np.concatenate([w[0::2], w[1::2]])


_YARN_OPTIONAL = ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim")
_ORIGINAL = "original_max_position_embeddings"
TYPES: tuple[RopeType, ...] = (
    RopeType(
        "default",
        (),
        (),
        _default,
        _one,
        _no_length,
        plain=True,
        partial_as_default=True,
        gguf="plain",
        odd_width=True,
    ),
    RopeType(
        "linear",
        ("factor",),
        (),
        _linear,
        _one,
        _no_length,
        factor_needed=True,
        gguf="scale",
        odd_width=True,
    ),
    RopeType(
        "dynamic",
        ("factor", "max_position_embeddings"),
        (),
        _dynamic,
        _one,
        _dynamic_length,
        factor_needed=True,
        length_state="grows",
        title="dynamic NTK",
        odd_width=True,
    ),
    RopeType(
        "yarn",
        ("factor", _ORIGINAL),
        (*_YARN_OPTIONAL, "truncate"),
        _yarn,
        _yarn_attention,
        _no_length,
        copies_original=True,
        factor_from_lengths=True,
        title="YaRN",
        gguf="ramp",
    ),
    RopeType(
        "longrope",
        ("short_factor", "long_factor", _ORIGINAL),
        ("attention_factor", "factor"),
        _longrope,
        _longrope_attention,
        _longrope_length,
        copies_original=True,
        factor_from_lengths=True,
        length_state="switches",
        title="LongRoPE",
        gguf="factor_sets",
    ),
    RopeType(
        "llama3",
        ("factor", _ORIGINAL, "low_freq_factor", "high_freq_factor"),
        (),
        _llama3,
        _one,
        _no_length,
        copies_original=True,
        check=_llama3_check,
        factor_needed=True,
        title="Llama-3",
        gguf="freq_factors",
        odd_width=True,
    ),
    RopeType(
        "proportional",
        (),
        ("factor", "partial_rotary_factor"),
        _proportional,
        _one,
        _no_length,
        zeros=_proportional_zeros,
        gguf="freq_factors",
    ),
    # Pixtral's 2-D RoPE: the default powers reordered, even ones for height, odd for width
    RopeType("axial", (), (), _axial, _one, _no_length, axes=2, partial_as_default=True),
    # family types (a family record sends a mapping here; see _rope/families.py)
    RopeType(
        "ntk_alpha",
        ("alpha",),
        ("factor",),
        _ntk_alpha,
        _one,
        _no_length,
        public=False,
        partial_as_default=True,
        title="HunYuan NTK alpha",
        gguf="base",
    ),
    RopeType(
        "longrope_mscale",
        ("short_factor", "long_factor", _ORIGINAL, "short_mscale", "long_mscale"),
        ("attention_factor", "factor"),
        _short_factor,
        _mscale_by_length,
        _longrope_length,
        copies_original=True,
        public=False,
        length_state="switches",
        title="LongRoPE",
        gguf="factor_sets_mscale",
    ),
)
# Their public home (pickles name it): sinpe.rope_scaling re-exports this module.
for _public in (Key, RopeScaling, RopeType):
    _public.__module__ = "sinpe.rope_scaling"
ROPE_TYPES: dict[str, RopeType] = {t.name: t for t in TYPES}
PUBLIC_TYPES = tuple(sorted(t.name for t in TYPES if t.public))
# every key some type reads: a mapping that carries one its type does not read is refused
VALUE_KEYS = frozenset(k for t in TYPES for k in (*t.required, *t.optional)) | set(ANY_TYPE)


DEFAULT = "default"  # the type of a mapping that names none
# names transformers 5.24 refuses, and why (sinpe quotes it)
REFUSED = {
    "su": "rope_type 'su' is Phi-3's first name for 'longrope'; transformers reads it only in "
    "Phi-3 and Phi-4-multimodal configs (5.25; 5.24 refused it there too): write 'longrope'"
}


def lookup(name, family_types=()) -> RopeType:
    """The record ``name`` (aliases already resolved) names: a public type, or one of
    ``family_types`` (records or names) that a family record sends here; ``ValueError``
    naming the known types otherwise."""
    record = ROPE_TYPES.get(name) if isinstance(name, str) else None
    allowed = {getattr(t, "name", t) for t in family_types}
    if record is None or not (record.public or record.name in allowed):
        raise ValueError(
            f"unknown rope_type {name!r:.60}; known types: {', '.join(PUBLIC_TYPES)} "
            "(and 'mrope', transformers' older name of the default type with mrope_section)"
        )
    return record


def is_plain(name) -> bool:
    """Whether ``name`` (resolved) is the default type (an unknown name is not)."""
    record = ROPE_TYPES.get(name) if isinstance(name, str) else None
    return record is not None and record.plain


def length_key(scaling: RopeScaling, seq_len: int) -> Hashable:
    """What of the current length changes the values: dynamic's effective length,
    longrope's long/short choice, else ``None`` (one table serves every length)."""
    return ROPE_TYPES[scaling.rope_type].length(scaling, seq_len)


# --------------------------------------------------------------------------- parsing


def parse(
    scaling: Scaling,
    max_position_embeddings: int | None = None,
    head_dim: int | None = None,
    *,
    family_keys: frozenset = frozenset(),
) -> RopeScaling:
    """Validate ``scaling`` (``None``, a ``rope_scaling`` or ``rope_parameters`` mapping, or a
    ``RopeScaling``); errors name the key and the allowed values. ``max_position_embeddings``
    is the model config's (transformers reads it beside the mapping): it joins the mapping,
    which must not say otherwise. With ``head_dim``, a factor list of the wrong length is
    refused before its entries are read. ``family_keys``: keys the model's family record
    reads besides the type's (none outside ``rope_config``)."""
    if max_position_embeddings is not None:
        max_position_embeddings = number(
            "max_position_embeddings", max_position_embeddings, integer=True
        )
    scaling, family_keys = _as_mapping(scaling, family_keys)
    if max_position_embeddings is not None:
        scaling = _with_model_length(scaling, max_position_embeddings)
    if not scaling:
        return RopeScaling("default", (), None)
    name, record = _resolve(scaling, family_keys)
    values = _copied_original(scaling, record)
    _check_required(scaling, values, name, record)
    read, unread = _split_keys(scaling, name, record, family_keys)
    values.update(read)
    if unread:  # warned from here: warn_ignored's stacklevel counts parse's frame
        warn_ignored(name, sorted(unread))
    checked = {key: _check_value(key, value, head_dim) for key, value in values.items()}
    _cross_check(checked, name, record)
    return RopeScaling(name, tuple(sorted(checked.items())), _rope_theta(scaling))


def _as_mapping(scaling, family_keys: frozenset) -> tuple[Mapping, frozenset]:
    """The input form as a mapping (``None``: empty; a ``RopeScaling``: its mapping, its family
    type's keys added to ``family_keys``); ``TypeError`` for anything else."""
    if scaling is None:
        return {}, family_keys
    if isinstance(scaling, RopeScaling):
        if scaling.rope_type not in ROPE_TYPES:
            raise ValueError(
                f"unknown rope_type {scaling.rope_type!r}; known types: {', '.join(PUBLIC_TYPES)}"
            )
        public = ROPE_TYPES[scaling.rope_type].public
        mapping = scaling.mapping()  # checked again: a RopeScaling may be built by hand
        if not public:
            family_keys = family_keys | set(ROPE_TYPES[mapping["rope_type"]].required)
        return mapping, family_keys
    if not isinstance(scaling, Mapping):
        raise TypeError(
            "scaling must be None or a mapping (a config's rope_scaling or rope_parameters), "
            f"got {type(scaling).__name__}"
        )
    return scaling, family_keys


def _with_model_length(scaling: Mapping, max_position_embeddings: int) -> dict:
    """``scaling`` with the model config's length joined; refused where the mapping differs."""
    given = scaling.get("max_position_embeddings")
    if given is not None and number("max_position_embeddings", given) != float(
        max_position_embeddings
    ):
        raise ValueError(
            f"max_position_embeddings={max_position_embeddings} disagrees with the scaling "
            f"mapping's max_position_embeddings={given!r}: pass one of them, or the same value"
        )
    return {**scaling, "max_position_embeddings": max_position_embeddings}


def _resolve(scaling: Mapping, family_keys: frozenset) -> tuple[Any, RopeType]:
    """The mapping's type name (``rope_type``, else ``type``, aliases resolved) and record."""
    name = scaling.get("rope_type", scaling.get("type", DEFAULT))
    if isinstance(name, str):
        name = ALIASES.get(name, name)
    return name, lookup(name, TYPES if family_keys else ())


def _copied_original(scaling: Mapping, record: RopeType) -> dict:
    """The values transformers copies in: ``max_position_embeddings`` as a missing original."""
    values: dict = {}
    if record.copies_original and _ORIGINAL not in scaling and "max_position_embeddings" in scaling:
        values[_ORIGINAL] = scaling["max_position_embeddings"]
    return values


# what a mapping that lacks a required key is told besides the key's name
_MISSING_HINTS = {
    _ORIGINAL: " (or max_position_embeddings, which transformers copies into it)",
    "max_position_embeddings": (
        " (transformers reads it from the model's config; add it to the mapping)"
    ),
}


def _check_required(scaling: Mapping, values: dict, name, record: RopeType) -> None:
    """Refuse a mapping that lacks one of its type's required keys (in the record's order)."""
    for key in record.required:
        if key not in scaling and key not in values:
            raise ValueError(
                f"scaling for rope_type {name!r} needs the key {key!r}"
                f"{_MISSING_HINTS.get(key, '')}; required: {', '.join(record.required)}"
            )


def _split_keys(scaling: Mapping, name, record: RopeType, family_keys: frozenset):
    """``(values, unread)``: the keys the type reads, and those no record reads; a key another
    type or the family record reads is refused."""
    reads = (*record.required, *record.optional, *ANY_TYPE, "max_position_embeddings")
    values: dict = {}
    unread: list = []
    for key, value in scaling.items():
        if key in reads:
            values[key] = value
        elif key not in NAMES and (key in VALUE_KEYS or key in family_keys):
            raise ValueError(
                f"scaling for rope_type {name!r} has {key!r}, which rope_type {name!r} does not "
                f"read (it changes the values where it is read: {_readers(key)}); remove it, or "
                "name the type that reads it"
            )
        elif key not in NAMES:
            unread.append(str(key))
    return values, unread


def _entry_count(key: str, value, head_dim: int) -> None:
    """Refuse a factor list whose length is not ``head_dim // 2``, before its entries are read."""
    if not isinstance(value, (str, bytes)) and hasattr(value, "__len__"):
        if len(value) != head_dim // 2:
            raise ValueError(
                f"scaling[{key!r}] must have head_dim/2 = {head_dim // 2} entries, got {len(value)}"
            )


# checks a key's value passes before ``check_key`` where ``head_dim`` is known
_HEAD_DIM_CHECKS: dict[str, Callable] = {"short_factor": _entry_count, "long_factor": _entry_count}


def _check_value(key: str, value, head_dim: int | None):
    """One key's value checked by its record (``None`` kept where it means "not given")."""
    if value is None and KEYS[key].none_is_absent:
        return None  # transformers treats None as "not given"
    head_dim_check = _HEAD_DIM_CHECKS.get(key)
    if head_dim_check is not None and head_dim is not None:
        head_dim_check(key, value, head_dim)
    return check_key(key, value)


def _cross_check(checked: dict, name, record: RopeType) -> None:
    """The checks across keys, once each key is valid: M-RoPE's, the required numbers, the
    type's own (``record.check``)."""
    for key in ("mrope_interleaved", "mrope_paired"):
        if key in checked and "mrope_section" not in checked:
            raise ValueError(f"scaling[{key!r}] needs scaling['mrope_section']")
    if checked.get("mrope_interleaved") and checked.get("mrope_paired"):
        raise ValueError(
            "scaling['mrope_interleaved'] and scaling['mrope_paired'] are two recompositions: "
            "set one of them"
        )
    if record.axes > 1 and "mrope_section" in checked:
        raise ValueError(
            "rope_type 'axial' (two position axes) and mrope_section (three) do not combine"
        )
    for key in record.required:
        if checked.get(key) is None and KEYS[key].none_is_absent and key != "factor":
            raise ValueError(f"scaling[{key!r}] must be a number > 0 for rope_type {name!r}")
    if record.factor_needed and checked.get("factor") is None:
        raise ValueError(f"scaling['factor'] must be a number > 0 for rope_type {name!r}")
    if record.check is not None:
        record.check(checked)


def _rope_theta(scaling: Mapping) -> float | None:
    """The base the mapping fixes (``rope_theta``), checked, or ``None``."""
    theta = scaling.get("rope_theta")
    return None if theta is None else number("rope_theta", theta)


def _readers(key: str) -> str:
    types = [t.name for t in TYPES if key in (*t.required, *t.optional) and t.public]
    if types:
        return "rope_type " + ", ".join(map(repr, types))
    return "the model families whose records name it (sinpe.rope_config reads those)"


# --------------------------------------------------------------------------- evaluation


def inverse_frequencies(
    scaling: RopeScaling, head_dim: int, base: float, seq_len: float | None
) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_factor)`` for a validated ``scaling``: ``head_dim // 2`` float64
    values (a new array) and the factor every cos/sin is multiplied by. ``seq_len`` is the
    current length (``None``: within the trained length), for ``dynamic`` and ``longrope``.
    A frequency the rule does not set to 0 on purpose must be a normal double (>= 2**-1022):
    below, the table would be constant at every position."""
    record = ROPE_TYPES[scaling.rope_type]
    try:
        with np.errstate(all="ignore"):  # an overflow shows as a non-finite value, refused
            inv_freq = np.array(record.frequencies(scaling, head_dim, base, seq_len), np.float64)
            attention = float(record.attention(scaling, seq_len))
    except (OverflowError, ZeroDivisionError) as exc:
        raise ValueError(_no_frequencies(scaling, base, exc)) from None
    except ValueError as exc:
        if "math domain" not in str(exc):
            raise
        raise ValueError(_no_frequencies(scaling, base, exc)) from None
    if not (np.isfinite(inv_freq).all() and math.isfinite(attention)):
        raise ValueError(_no_frequencies(scaling, base, "not finite"))
    rotated = inv_freq
    if record.zeros is not None:
        rotated = inv_freq[: inv_freq.shape[0] - record.zeros(scaling, head_dim)]
    if rotated.size and not np.abs(rotated).min() >= MIN_FREQUENCY:
        smallest = float(np.abs(rotated).min())
        raise ValueError(
            f"scaling (rope_type {scaling.rope_type!r}) with base={base!r} gives an inverse "
            f"frequency of {smallest:.3g}, below 2**-1022: its cos would be 1 and its sin 0 at "
            "every position below 2**53 (a factor or base far out of any model's range)"
        )
    return inv_freq, attention


def _no_frequencies(scaling: RopeScaling, base: float, why) -> str:
    keys = ", ".join(f"{k}={v!r:.30}" for k, v in scaling.parameters if not isinstance(v, tuple))
    return (
        f"scaling (rope_type {scaling.rope_type!r}, {keys or 'no keys'}) with base={base!r} "
        f"gives no finite inverse frequencies and attention factor ({why})"
    )
