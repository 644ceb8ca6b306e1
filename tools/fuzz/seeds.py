"""Write the fuzzers' seed corpora (``tests/data/fuzz/<format>/``): small valid files of each
format sinpe reads, written by the test suite's own helpers (tests/gguf_files.py,
tests/onnx_files.py, tests/openvino_files.py) and by NumPy and torch as users write them.

    python tools/fuzz/seeds.py            # every format (pt only where torch is installed)
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from cache_files import safetensors_bytes  # noqa: E402

import sinpe  # noqa: E402

LLAMA = {"model_type": "llama", "head_dim": 16, "max_position_embeddings": 64, "rope_theta": 1e4}


def _tables(rows: int = 4, dtype: str = "float32"):
    return sinpe.rope_config(LLAMA).rope(rows, dtype=dtype)


def _npz(arrays: dict, compressed: bool = False) -> bytes:
    stream = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(stream, **arrays)
    return stream.getvalue()


def _npy(array) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array)
    return stream.getvalue()


def _onnx() -> dict:
    from onnx_files import FLOAT16, graph, model, node, tensor

    cos, sin = sinpe.rope_config(LLAMA).rope(4, layout="compact", dtype="float32")
    inputs = ["q", "k", "v", "pk", "pv", "seqlens", "total", "cos_cache", "sin_cache"]
    gqa = node(
        "GroupQueryAttention", inputs, ["o"], domain="com.microsoft", do_rotary=1,
        name="/model/layers.0/attn/GroupQueryAttention", num_heads=2, kv_num_heads=1,
    )  # fmt: skip
    caches = [tensor("cos_cache", cos), tensor("sin_cache", sin)]
    half = [
        tensor("cos_cache", cos, data_type=FLOAT16),
        tensor("sin_cache", sin, data_type=FLOAT16),
    ]
    branch = graph([node("Constant", [], ["c"], value=("tensor", tensor("c", cos)))])
    longrope = node("If", ["long"], ["cos_cache"], then_branch=("graph", branch))
    return {
        "gqa.onnx": model(graph([gqa], caches, ["input_ids"])),
        "gqa-float16.onnx": model(graph([gqa], half, ["input_ids"])),
        "if-branch.onnx": model(graph([longrope, gqa], caches[1:], ["long"])),
    }


def _openvino() -> dict:
    """IRs' XML (the fuzzer writes a fixed .bin beside each: offsets within 4096 bytes)."""
    from openvino_files import tables, traced

    inv_freq = 1e4 ** (-np.arange(0, 16, 2) / 16)
    cos, sin = sinpe.rope_config(LLAMA).rope(4, layout="compact", dtype="float32")
    return {
        "traced.openvino": traced(inv_freq, factor=1.25)[0].encode(),
        "longrope.openvino": traced(inv_freq, 1.1, second=inv_freq / 2, switch=64)[0].encode(),
        "tables.openvino": tables(cos, sin)[0].encode(),
    }


def _gguf() -> dict:
    from gguf_files import converted, encode

    return {f"{name}.gguf": encode(*converted(name)) for name in ("llama31", "phi3", "qwen3")}


def _pt() -> dict:
    try:
        import torch
    except ImportError:
        return {}
    cos, sin = _tables()
    out = {}
    for name, value in (
        ("dict.pt", {"cos": torch.from_numpy(cos), "sin": torch.from_numpy(sin)}),
        ("pair.pt", (torch.from_numpy(cos), torch.from_numpy(sin))),
    ):
        stream = io.BytesIO()
        torch.save(value, stream)
        out[name] = stream.getvalue()
    return out


def seeds() -> dict:
    """format -> {file name: bytes}."""
    cos, sin = _tables()
    half_cos, half_sin = _tables(dtype="float16")
    return {
        "npy": {
            "vllm.npy": _npy(np.concatenate([cos, sin], 1)),
            "half.npy": _npy(half_cos),
            "fortran.npy": _npy(np.asfortranarray(cos)),
        },
        "npz": {
            "stored.npz": _npz({"cos": cos, "sin": sin}),
            "deflated.npz": _npz({"cos": half_cos, "sin": half_sin}, compressed=True),
            "bfloat16.npz": _npz(
                {
                    n: (a.view(np.uint32) >> 16).astype(np.uint16)
                    for n, a in (("cos", cos), ("sin", sin))
                }
                | {"dtype": np.array("bfloat16")}
            ),
        },
        "safetensors": {
            "cos-sin.safetensors": safetensors_bytes({"cos": cos, "sin": sin}),
            "metadata.safetensors": safetensors_bytes({"cos": cos, "sin": sin}, {"format": "pt"}),
        },
        "gguf": _gguf(),
        "onnx": _onnx(),
        "openvino": _openvino(),
        "pt": _pt(),
    }


def main() -> None:
    """Write every format's seeds under tests/data/fuzz/."""
    for fmt, found in seeds().items():
        folder = ROOT / "tests" / "data" / "fuzz" / fmt
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in found.items():
            (folder / name).write_bytes(data)
            print(f"{folder / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
