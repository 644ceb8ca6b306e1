"""What llama.cpp makes of a GGUF file's RoPE: the inverse frequency of each rotated pair, the
cos/sin magnitude (attention factor), the rotary width, the rotation and the softmax scale it
will use, in real-number (float64) arithmetic from the file's float32 keys and tensors.

The rules are llama.cpp's (0c1e57098bba, the one vendored in llama-cpp-python 0.3.36;
references into its tree):

- keys: the generic loader (src/llama-model.cpp:1406-1469) reads ``context_length``,
  ``attention.key_length``, ``rope.dimension_count``, ``rope.freq_base``,
  ``rope.scaling.{type, factor, attn_factor, original_context_length}`` (``rope.scale_linear``
  where ``factor`` is absent); each architecture's own loader reads the rest
  (``ARCH_RULES``, extracted from src/models/*.cpp: a YaRN key it does not read is written in
  vain); the types are strict (a key of another type is refused: llama-model-loader.cpp:166);
- the context (src/llama-context.cpp:114-214): ``n_ctx`` padded up to 256; YaRN's
  ``ext_factor`` 1; the attention factor ``get_mscale`` (DeepSeek-2's ``mscale`` from
  ``yarn_log_multiplier``), times ``rope.scaling.attn_factor``;
- the factors (get_rope_factors, llama-model.cpp:2337-2350): ``rope_freqs`` if present, else
  ``rope_factors_long`` when the context is longer than the original, else the short ones;
  none on the sliding-window layers of a graph that passes none there (``swa_factors``:
  Gemma 4, whose ``rope_freqs`` carry the full layers' proportional RoPE; Step-3.5);
- the angle (ggml-cpu/ops.cpp:6180-6218, ggml.c:4476-4490): ``theta_i = p base^(-2i/d) / f_i``
  times ``freq_scale``, mixed with the unscaled one by YaRN's ramp between
  ``floor(corr_dim(beta_fast))`` and ``ceil(corr_dim(beta_slow))``; the magnitude
  ``attn_factor (1 + 0.1 ln(1/freq_scale))`` under YaRN.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._verdict.judge import MAX_POSITION, MAX_WIDTH, bounded
from .llama_cpp_types import ARCH_RULES, LLAMA_CPP, ROPE_TYPES, SCALING_TYPES

__all__ = ["FACTOR_TENSORS", "LLAMA_CPP", "Reading", "read_rope"]

FACTOR_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")
# the type llama.cpp's loader requires of each key it reads (arch prefix omitted)
KEY_TYPES = {
    "context_length": ("UINT32",),
    "embedding_length": ("UINT32",),
    "attention.head_count": ("UINT32", "ARRAY[UINT32]", "ARRAY[INT32]"),
    "attention.key_length": ("UINT32",),
    "rope.dimension_count": ("UINT32",),
    "rope.dimension_count_swa": ("UINT32",),
    "rope.freq_base": ("FLOAT32",),
    "rope.freq_base_swa": ("FLOAT32",),
    "rope.scale_linear": ("FLOAT32",),
    "rope.scaling.type": ("STRING",),
    "rope.scaling.factor": ("FLOAT32",),
    "rope.scaling.attn_factor": ("FLOAT32",),
    "rope.scaling.original_context_length": ("UINT32",),
    "rope.scaling.yarn_beta_fast": ("FLOAT32",),
    "rope.scaling.yarn_beta_slow": ("FLOAT32",),
    "rope.scaling.yarn_ext_factor": ("FLOAT32",),
    "rope.scaling.yarn_attn_factor": ("FLOAT32",),
    "rope.scaling.yarn_log_multiplier": ("FLOAT32",),
}
# the YaRN keys only an architecture's own loader reads
_ARCH_ONLY = (
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
    "rope.scaling.yarn_ext_factor",
    "rope.scaling.yarn_attn_factor",
    "rope.scaling.yarn_log_multiplier",
)
LONGROPE = ("phi3", "phimoe", "minicpm", "minicpm3")  # load the long and short factors always
_DEEPSEEK_SOFTMAX = ("deepseek2", "deepseek32", "glm-dsa")  # graphs that scale the softmax


class Reading(NamedTuple):
    """llama.cpp's RoPE for one kind of layer (full or sliding-window) at a context size."""

    arch: str
    rope_type: str  # "NORM", "NEOX", ..., "A|B" (by the file), "unknown"
    n_rot: int
    base: float
    scaling: str
    freq_scale: float
    factors: str | None  # the factor tensor used, if any
    inv_freq: np.ndarray
    attention_factor: float
    softmax_scale: float
    ignored: tuple  # keys written that this architecture's loader never reads
    context: int  # the context size (padded to 256) the reading is for
    factor: float  # the scaling factor as the file gives it (0: none)


def _key(gguf, arch: str, name: str, default=None):
    """A key's value (``arch.`` + ``name``), refused where llama.cpp refuses its type."""
    key = f"{arch}.{name}"
    if key not in gguf.kv:
        return default
    kind = gguf.types[key]
    if kind not in KEY_TYPES[name]:
        raise ValueError(
            f"llama.cpp refuses this file: {key} is {kind}, where it reads "
            + " or ".join(KEY_TYPES[name])
        )
    return gguf.kv[key]


def _width(gguf, arch: str, swa: bool) -> int:
    """``n_rot``: ``rope.dimension_count`` (``_swa`` on sliding layers), else the key length,
    else ``embedding_length / head_count``."""
    heads = _key(gguf, arch, "attention.head_count")
    if isinstance(heads, np.ndarray):
        heads = int(heads.flat[0]) if heads.size else None
    embedding = _key(gguf, arch, "embedding_length")
    guess = embedding // heads if embedding and heads else None
    width = _key(
        gguf, arch, "rope.dimension_count", _key(gguf, arch, "attention.key_length", guess)
    )
    if swa:
        width = _key(gguf, arch, "rope.dimension_count_swa", width)
    if not isinstance(width, int):
        raise ValueError(f"{gguf.path}: no rotary width (rope.dimension_count) in the file")
    return bounded(f"{gguf.path}: the rotary width (rope.dimension_count)", width, MAX_WIDTH, 2)


def _scaling(gguf, arch: str) -> tuple:
    """``(type, freq_scale)`` of the full layers."""
    kind = _key(gguf, arch, "rope.scaling.type", SCALING_TYPES["LINEAR"])
    if kind not in SCALING_TYPES.values():
        raise ValueError(
            f"llama.cpp aborts on {arch}.rope.scaling.type {kind!r} (it reads "
            + ", ".join(SCALING_TYPES.values())
            + ")"
        )
    factor = _key(gguf, arch, "rope.scaling.factor", _key(gguf, arch, "rope.scale_linear", 0.0))
    if factor == 0 or kind == SCALING_TYPES["NONE"]:
        return kind, 1.0, float(factor)
    with np.errstate(divide="ignore", invalid="ignore"):
        return kind, float(np.float64(1.0) / np.float64(factor)), float(factor)


def _factors(gguf, n_rot: int, context: int, original: int, longrope: bool) -> tuple:
    """The factor tensor llama.cpp divides the frequencies by, and its name (the long and
    short ones are loaded by the ``LONGROPE`` architectures, and by others with the
    ``longrope`` scaling type: llama.cpp's models/llama.cpp:61-63)."""
    name = None
    if "rope_freqs.weight" in gguf.data:
        name = "rope_freqs.weight"
    elif longrope and "rope_factors_long.weight" in gguf.data and context > original:
        name = "rope_factors_long.weight"
    elif longrope and "rope_factors_short.weight" in gguf.data:
        name = "rope_factors_short.weight"
    if name is None:
        return np.ones(n_rot // 2), None
    values = gguf.data[name]
    if values.size < n_rot // 2:
        raise ValueError(
            f"{gguf.path}: {name} has {values.size} values, fewer than the {n_rot // 2} "
            f"pairs of the rotary width {n_rot} (ggml asserts)"
        )
    return values[: n_rot // 2], name


def _yarn_magnitude(arch: str, freq_scale: float, log_mul: float) -> float:
    """The cos/sin magnitude YaRN gives (llama-context.cpp:177-212, then ggml's factor)."""

    def mscale(scale: float, m: float) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if not (math.isfinite(freq_scale) and freq_scale > 0):
        return math.nan  # no factor a magnitude can be made of: said by the verdict
    factor = 1.0 / freq_scale
    if log_mul:
        m = log_mul if arch == "deepseek2" and log_mul != 1 else 1.0
        attn = mscale(factor, m) / mscale(factor, log_mul)
    else:
        attn = mscale(factor, 1.0)
    # the context divides by 1 + 0.1 ln(factor), which ggml's rope multiplies back in
    return attn


def _ramp(n_rot: int, base: float, original: int, betas: tuple) -> np.ndarray:
    """YaRN's extrapolation weight of each pair (1: the unscaled frequency)."""

    def corr_dim(rotations: float) -> float:
        return n_rot * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    usable = all(math.isfinite(v) and v > 0 for v in (base, *betas)) and base != 1
    if not usable:  # a base or beta that is not a number: said by the verdict
        return np.full(n_rot // 2, math.nan)
    low = max(0.0, math.floor(corr_dim(betas[0])))
    high = min(n_rot - 1.0, math.ceil(corr_dim(betas[1])))
    i = np.arange(n_rot // 2, dtype=np.float64)
    return 1 - np.clip((i - low) / max(0.001, high - low), 0, 1)


def _arch_keys(gguf, arch: str) -> tuple:
    """``(beta_fast, beta_slow, log_mul, ignored keys)`` as this architecture reads them."""
    rules = ARCH_RULES.get(arch, {})
    reads = rules.get("reads", ())
    beta_fast = rules.get("beta_fast", 32.0)
    beta_slow = 1.0
    if "rope.scaling.yarn_beta_fast" in reads:
        beta_fast = _key(gguf, arch, "rope.scaling.yarn_beta_fast", beta_fast)
        beta_slow = _key(gguf, arch, "rope.scaling.yarn_beta_slow", beta_slow)
    log_mul = 0.0
    if "rope.scaling.yarn_log_multiplier" in reads:
        log_mul = _key(gguf, arch, "rope.scaling.yarn_log_multiplier", 0.0)
        log_mul = log_mul / 0.1 if rules.get("log_mul") == "x10" else log_mul
    ignored = tuple(
        f"{arch}.{name}" for name in _ARCH_ONLY if f"{arch}.{name}" in gguf.kv and name not in reads
    )
    return (float(beta_fast), float(beta_slow)), float(log_mul), ignored


def _swa(gguf, arch: str, base: float, freq_scale: float) -> tuple:
    """The sliding-window layers' ``(base, freq_scale)`` (llama-model.cpp:2329-2335)."""
    rules = ARCH_RULES.get(arch, {})
    swa_base = base if rules.get("swa_base") == "full" else 10000.0
    if "rope.freq_base_swa" in rules.get("reads", ()):
        swa_base = _key(gguf, arch, "rope.freq_base_swa", swa_base)
    return float(swa_base), freq_scale if rules.get("swa_scale") == "full" else 1.0


def read_rope(gguf, *, context: int | None = None, swa: bool = False) -> Reading:
    """llama.cpp's RoPE of the full (or ``swa``: sliding-window) layers of a read GGUF file,
    for a context of ``context`` tokens (``None``: the trained length, llama.cpp's default)."""
    arch = gguf.architecture
    if arch is None:
        raise ValueError(f"{gguf.path}: no general.architecture string in the file")
    trained = _key(gguf, arch, "context_length")
    if not isinstance(trained, int) or trained < 1:
        raise ValueError(f"{gguf.path}: no {arch}.context_length in the file")
    bounded(f"{gguf.path}: {arch}.context_length", trained, MAX_POSITION, 1)
    context = -(-(context or trained) // 256) * 256
    n_rot = _width(gguf, arch, swa)
    base = float(_key(gguf, arch, "rope.freq_base", 10000.0))
    kind, freq_scale, factor = _scaling(gguf, arch)
    if swa:
        base, freq_scale = _swa(gguf, arch, base, freq_scale)
    original = _key(gguf, arch, "rope.scaling.original_context_length", 0) or trained
    betas, log_mul, ignored = _arch_keys(gguf, arch)
    longrope = arch in LONGROPE or kind == SCALING_TYPES["LONGROPE"]
    factors, source = _factors(gguf, n_rot, context, original, longrope)
    if swa and ARCH_RULES.get(arch, {}).get("swa_factors") == "none":
        factors, source = np.ones(n_rot // 2), None  # its graph passes none to these layers
    i = np.arange(n_rot // 2, dtype=np.float64)
    with np.errstate(all="ignore"):  # a value that is not a number is the verdict's to say
        inv_freq = np.float64(base) ** (-2.0 * i / n_rot) / factors
    magnitude = float(_key(gguf, arch, "rope.scaling.attn_factor", 1.0))
    with np.errstate(all="ignore"):
        if kind == SCALING_TYPES["YARN"]:  # ext_factor 1 (grok reads yarn_ext_factor)
            mix = _ramp(n_rot, base, original, betas)
            inv_freq = inv_freq * (freq_scale * (1 - mix) + mix)
            magnitude *= _yarn_magnitude(arch, freq_scale, log_mul)
        else:
            inv_freq = inv_freq * freq_scale
    softmax = 1.0
    if arch in _DEEPSEEK_SOFTMAX and kind == SCALING_TYPES["YARN"]:
        softmax = _softmax(magnitude, log_mul, freq_scale)
    rope_type = ROPE_TYPES.get(arch, "unknown")
    return Reading(
        arch, rope_type, n_rot, base, kind, freq_scale, source, inv_freq, magnitude,
        softmax, ignored, context, factor,
    )  # fmt: skip


def _softmax(magnitude: float, log_mul: float, freq_scale: float) -> float:
    """DeepSeek-2's softmax scale (its graph's ``kq_scale`` over ``1/sqrt(d)``)."""
    if not (math.isfinite(freq_scale) and freq_scale > 0):
        return math.nan
    return (magnitude * (1 + 0.1 * log_mul * math.log(1.0 / freq_scale))) ** 2
