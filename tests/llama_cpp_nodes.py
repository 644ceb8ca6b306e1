"""llama.cpp's RoPE as it runs: every ``GGML_OP_ROPE`` node of a decode, caught by ggml's
eval callback (``llama_context_params.cb_eval``, as llama.cpp's own ``eval-callback`` tool
catches them), with its input (read when the scheduler asks for the node, before it is
computed, so an in-place rope cannot have overwritten it), its output, its positions, its
factor tensor and the parameters llama.cpp gave it (``op_params``: n_dims, mode, the original
context, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow; ggml.c's
``ggml_rope_impl``). ``reference`` rotates the same input in float64 by sinpe's reading of the
GGUF file (``sinpe._check.llama_cpp.read_rope``), so a transcription of llama.cpp's rules
that differs from its runtime shows as a difference far past float32's noise."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np

MAX_DIMS, MAX_SRC = 4, 10  # GGML_MAX_DIMS, GGML_MAX_SRC (ggml.h)


class Tensor(ctypes.Structure):
    """ggml.h's ``struct ggml_tensor``."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("buffer", ctypes.c_void_p),
        ("ne", ctypes.c_int64 * MAX_DIMS),
        ("nb", ctypes.c_size_t * MAX_DIMS),
        ("op", ctypes.c_int),
        ("op_params", ctypes.c_int32 * 16),
        ("flags", ctypes.c_int32),
        ("src", ctypes.c_void_p * MAX_SRC),
        ("view_src", ctypes.c_void_p),
        ("view_offs", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("name", ctypes.c_char * 64),
        ("extra", ctypes.c_void_p),
        ("padding", ctypes.c_char * 8),
    ]


def rope_op(llama_cpp_dir) -> int:
    """``GGML_OP_ROPE``'s value, read from the pinned ggml.h (its enum's order)."""
    text = (Path(llama_cpp_dir) / "ggml" / "include" / "ggml.h").read_text()
    body = re.search(r"enum ggml_op \{(.*?)\};", text, re.S).group(1)
    return re.findall(r"^\s*(GGML_OP_\w+)", body, re.M).index("GGML_OP_ROPE")


def values(address: int, dtype) -> np.ndarray:
    """A host tensor's values (a copy), by its dims and strides."""
    t = Tensor.from_address(address)
    ne, nb = list(t.ne), list(t.nb)
    span = sum((n - 1) * s for n, s in zip(ne, nb)) + np.dtype(dtype).itemsize
    buffer = (ctypes.c_char * span).from_address(t.data)
    return np.ndarray(ne[::-1], dtype, buffer, strides=nb[::-1]).copy()


class RopeNodes:
    """The eval callback (``callback``, for ``cb_eval``) and the ROPE nodes it caught
    (``found``: one dict per node per decode)."""

    def __init__(self, llama, op: int):
        self.found: list = []
        self._pending: dict = {}

        @llama.ggml_backend_sched_eval_callback
        def callback(address, ask, user_data):
            t = Tensor.from_address(address)
            if t.op != op:
                return True  # every node on its own: a rope's input is read before it runs
            if ask:
                factors = values(t.src[2], np.float32) if t.src[2] else None
                source = (values(t.src[0], np.float32), values(t.src[1], np.int32), factors)
                self._pending[address] = source
                return True
            x, positions, factors = self._pending.pop(address)
            params = list(t.op_params)
            floats = np.array(params[5:11], np.int32).view(np.float32).astype(np.float64)
            self.found.append(
                dict(
                    name=t.name.decode(),
                    n_dims=params[1],
                    mode=params[2],
                    n_ctx_orig=params[4],
                    freq_base=floats[0],
                    freq_scale=floats[1],
                    attn_factor=floats[3],
                    x=x[0],  # (tokens, heads, head dim)
                    y=values(address, np.float32)[0],
                    positions=positions.reshape(-1)[: x.shape[1]].astype(np.float64),
                    factors=factors,
                )
            )
            return True

        self.callback = callback


def reference(node: dict, reading) -> np.ndarray:
    """The node's input rotated in float64 by sinpe's reading of the file: each pair's
    inverse frequency, the magnitude, the width and the rotation (NORM: pairs; NEOX:
    halves), the elements past the width kept."""
    x = node["x"].astype(np.float64)
    n, h = reading.n_rot, reading.n_rot // 2
    angle = node["positions"][:, None] * reading.inv_freq[None, :h]
    cos = (np.cos(angle) * reading.attention_factor)[:, None, :]
    sin = (np.sin(angle) * reading.attention_factor)[:, None, :]
    y = x.copy()
    if reading.rope_type == "NORM":
        a, b = x[..., 0:n:2], x[..., 1:n:2]
        y[..., 0:n:2], y[..., 1:n:2] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = x[..., :h], x[..., h:n]
        y[..., :h], y[..., h:n] = a * cos - b * sin, a * sin + b * cos
    return y


def noise(node: dict, reading) -> float:
    """What float32 makes of the node's rotation, at most: 64 ulps of the magnitude, and
    4 ulps of each radian of its largest angle (llama.cpp forms ``p * theta_scale**i`` in
    float32; it measured within 0.7 of one such ulp here)."""
    largest = float(np.abs(node["x"]).max()) * reading.attention_factor
    angle = float(node["positions"].max()) * float(reading.inv_freq.max())
    return largest * 2.0**-24 * (64 + 4 * angle)
