"""MXFP4, the format gpt-oss publishes its experts in (the OCP Microscaling format's FP4):
each block of 32 consecutive input weights of a row is one power-of-two scale (an E8M0 byte,
2^(byte - 127)) times 32 E2M1 values (a sign, two exponent bits and one mantissa bit: 0,
0.5, 1, 1.5, 2, 3, 4, 6), two to a byte, the lower nibble first. gpt-oss's checkpoints hold
an expert's ``W`` (rows: outputs) as ``W_blocks`` (uint8, ``[..., rows, K / 32, 16]``) and
``W_scales`` (uint8, ``[..., rows, K / 32]``).

The run model's experts are made of such values (``to_grid``), so that its float32 weights
and their MXFP4 packing (``pack``) are the same numbers: an engine that reads only the
published MXFP4 layout (keras-hub's and MLX-LM's gpt-oss) runs the very model the reference
runs."""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "pack", "to_grid", "unpack"]

BLOCK = 32  # weights per scale
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])  # code & 7 -> magnitude
_BIAS = 127  # E8M0's


def _blocks(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim < 1 or values.shape[-1] % BLOCK:
        raise ValueError(f"MXFP4 rows: a length that is a multiple of {BLOCK}, got {values.shape}")
    # C order whatever the given layout (a transposed view): what is packed, and saved, is
    # each row's 32 in turn
    return np.ascontiguousarray(values, np.float64).reshape(*values.shape[:-1], -1, BLOCK)


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each block's exponent (``2^e``: the least that puts its largest magnitude within 6),
    each value's E2M1 code, the nearest magnitude (ties to the smaller), and the blocks."""
    blocks = _blocks(values)
    if not np.isfinite(blocks).all():
        raise ValueError("MXFP4 rows: every value finite")
    largest = np.abs(blocks).max(axis=-1)
    _, exponent = np.frexp(largest / 6.0)  # largest / 6 < 2^exponent
    exponent = exponent.astype(np.int64)
    exponent -= np.ldexp(6.0, exponent - 1) >= largest  # the least e with largest <= 6 * 2^e
    # E8M0's least scale, 2^-127, where a block needs less (zeros, tiny values: they round on it)
    exponent = np.maximum(np.where(largest > 0, exponent, -_BIAS), -_BIAS)
    if (exponent > _BIAS).any():
        raise ValueError("MXFP4 rows: a block's scale is past E8M0's range")
    scaled = np.abs(blocks) / np.ldexp(1.0, exponent)[..., None]
    magnitude = np.argmin(np.abs(scaled[..., None] - E2M1), axis=-1)
    sign = (blocks < 0) & (magnitude > 0)
    return exponent, (magnitude | sign << 3).astype(np.uint8), blocks


def to_grid(values: np.ndarray) -> np.ndarray:
    """``values`` (rows along the last axis, a multiple of 32 long) replaced by the nearest
    values MXFP4 holds, as float32: ``unpack(*pack(to_grid(v))) == to_grid(v)``."""
    exponent, codes, _ = _codes(values)
    return _decode(exponent, codes).reshape(np.shape(values)).astype(np.float32)


def _decode(exponent: np.ndarray, codes: np.ndarray) -> np.ndarray:
    sign = np.where(codes & 8, -1.0, 1.0)
    return sign * E2M1[codes & 7] * np.ldexp(1.0, exponent)[..., None]


def pack(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(blocks, scales)`` of values MXFP4 holds exactly (``to_grid``'s): ``blocks`` uint8
    ``[..., K / 32, 16]``, two codes a byte (element 2j in the lower nibble), ``scales`` uint8
    ``[..., K / 32]``. A value MXFP4 does not hold is refused, not rounded."""
    exponent, codes, blocks = _codes(values)
    if not np.array_equal(_decode(exponent, codes), blocks):
        raise ValueError("MXFP4: values it does not hold (make them with to_grid first)")
    packed = codes[..., 0::2] | codes[..., 1::2] << 4
    return packed.astype(np.uint8), (exponent + _BIAS).astype(np.uint8)


def unpack(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The float32 values of ``pack``'s ``(blocks, scales)``, rows along the last axis."""
    blocks, scales = np.asarray(blocks, np.uint8), np.asarray(scales, np.uint8)
    if blocks.shape[-1] != BLOCK // 2 or blocks.shape[:-1] != scales.shape:
        raise ValueError(f"MXFP4: blocks {blocks.shape} and scales {scales.shape} do not pair")
    codes = np.stack([blocks & 15, blocks >> 4], axis=-1).reshape(*scales.shape, BLOCK)
    values = _decode(scales.astype(np.int64) - _BIAS, codes)
    return values.reshape(*scales.shape[:-1], -1).astype(np.float32)
