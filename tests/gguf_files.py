"""GGUF files for the tests, written without the gguf package: a minimal writer (the format of
ggml's docs/gguf.md, version 3, little-endian) and the RoPE keys and tensors llama.cpp's
converter (``convert_hf_to_gguf.py``, llama-cpp-python 0.3.36) writes for each family, with
the configs they come from. The engine leg runs the converter itself (tests/test_llama_cpp.py);
these files are what it writes, by its rules (research: conversion/llama.py:298-326, phi.py:
148-211, base.py:1470-1483, gemma.py:141-159, deepseek.py:374-386)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

from sinpe._files.gguf import VALUE_TYPES

TYPES = {name: (kind, code) for kind, (name, code, _) in VALUE_TYPES.items()}


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _typed(value) -> tuple:
    """A value's GGUF type: ``(type, value)`` as given, else UINT32 for an int, FLOAT32 for
    a float, BOOL, STRING, and ``ARRAY[...]`` for a list of one of those."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, bool):
        return "BOOL", value
    if isinstance(value, int):
        return "UINT32", value
    if isinstance(value, float):
        return "FLOAT32", value
    if isinstance(value, str):
        return "STRING", value
    inner = _typed(value[0])[0] if len(value) else "FLOAT32"
    return f"ARRAY[{inner}]", list(value)


def _value(kind: str, value) -> bytes:
    if kind.startswith("ARRAY["):
        inner = kind[6:-1]
        body = b"".join(_value(inner, v) for v in value)
        return struct.pack("<IQ", TYPES[inner][0], len(value)) + body
    if kind == "STRING":
        return _string(value)
    return struct.pack("<" + TYPES[kind][1], value)


def encode(kv: dict, tensors: dict, *, alignment: int = 32) -> bytes:
    """A GGUF v3 file: ``kv`` (key -> value, typed as ``_typed``) and ``tensors`` (name ->
    an array written as F32, or ``(ggml type id, dims, bytes)``)."""
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv))]
    for key, value in kv.items():
        kind, value = _typed(value)
        code = TYPES["ARRAY"][0] if kind.startswith("ARRAY[") else TYPES[kind][0]
        out += [_string(key), struct.pack("<I", code), _value(kind, value)]
    blobs, offset = [], 0
    for name, tensor in tensors.items():
        if isinstance(tensor, tuple):
            ggml_type, dims, data = tensor
        else:
            array = np.ascontiguousarray(tensor, np.float32)
            ggml_type, dims, data = 0, array.shape[::-1], array.tobytes()
        out += [_string(name), struct.pack("<I", len(dims))]
        out += [struct.pack("<q", d) for d in dims]
        out += [struct.pack("<iQ", ggml_type, offset)]
        padded = data + b"\0" * (-len(data) % alignment)
        blobs.append(padded)
        offset += len(padded)
    head = b"".join(out)
    head += b"\0" * (-len(head) % alignment) if tensors else b""
    return head + b"".join(blobs)


def write(path, kv: dict, tensors: dict | None = None):
    path.write_bytes(encode(kv, tensors or {}))
    return path


def write_split(folder, stem: str, kv: dict, tensors: dict, count: int) -> list:
    """A split set as gguf-split and gguf-py write one: ``count`` shards named
    ``<stem>-0000k-of-0000n.gguf``, the metadata in the first, every shard with the split
    keys, the tensors (and a weight of its own per shard) spread over them, the RoPE tensors
    in the last shards."""
    tensors = dict(tensors)
    for k in range(count):
        tensors[f"blk.{k}.attn_norm.weight"] = np.ones(8, np.float32)
    names = list(tensors)[::-1]  # the RoPE tensors go last
    shards = [names[k::count] for k in range(count)]
    paths = []
    for k in range(count):
        split = {
            "split.no": ("UINT16", k),
            "split.count": ("UINT16", count),
            "split.tensors.count": ("INT32", len(tensors)),
        }
        shard_kv = {**kv, **split} if k == 0 else split
        path = folder / f"{stem}-{k + 1:05d}-of-{count:05d}.gguf"
        paths.append(write(path, shard_kv, {n: tensors[n] for n in shards[k]}))
    return paths


# --------------------------------------------------------------------------- families


CONFIGS_DIR = Path(__file__).with_name("data") / "configs"
# published configs where one is stored (tests/data/configs), constructed ones beside them
CONFIGS = {
    "llama31": json.loads((CONFIGS_DIR / "llama-3.1-8b.json").read_text()),
    "phi3": json.loads((CONFIGS_DIR / "phi-3-mini-128k-instruct.dotnet.json").read_text()),
    "deepseek3": json.loads((CONFIGS_DIR / "deepseek-v3.json").read_text()),
    "gemma4": json.loads((CONFIGS_DIR / "gemma-4-e2b-it.json").read_text()),
    "qwen3": {
        "model_type": "qwen3",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "head_dim": 128,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 40960,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 32768,
        },
    },
    "gemma3": {
        "model_type": "gemma3_text",
        "hidden_size": 2560,
        "num_attention_heads": 8,
        "head_dim": 256,
        "num_hidden_layers": 34,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    },
}


def llama3_factors(config: dict) -> np.ndarray:
    """The converter's ``rope_freqs`` (conversion/llama.py:298-326), in float32 as it is."""
    scaling = config["rope_scaling"]
    dim = config["hidden_size"] // config["num_attention_heads"]
    freqs = 1.0 / (
        np.float32(config["rope_theta"]) ** (np.arange(0, dim, 2, dtype=np.float32) / dim)
    )
    original, factor = scaling["original_max_position_embeddings"], scaling["factor"]
    low, high = original / scaling["low_freq_factor"], original / scaling["high_freq_factor"]
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high:
            out.append(1.0)
        elif wavelen > low:
            out.append(factor)
        else:
            smooth = (original / wavelen - scaling["low_freq_factor"]) / (
                scaling["high_freq_factor"] - scaling["low_freq_factor"]
            )
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def converted(name: str) -> tuple:
    """``(kv, tensors)`` as the converter writes the RoPE of ``CONFIGS[name]``."""
    c = CONFIGS[name]
    arch = {"llama31": "llama", "deepseek3": "deepseek2", "gemma3": "gemma3"}.get(name, name)
    text = c.get("text_config", c)
    kv: dict = {
        "general.architecture": arch,
        f"{arch}.context_length": text["max_position_embeddings"],
        f"{arch}.embedding_length": text["hidden_size"],
        f"{arch}.attention.head_count": text["num_attention_heads"],
    }
    tensors: dict = {}
    if name == "llama31":
        kv[f"{arch}.rope.dimension_count"] = 128
        kv[f"{arch}.rope.freq_base"] = 500000.0
        tensors["rope_freqs.weight"] = llama3_factors(c)
    elif name == "phi3":
        scale = c["max_position_embeddings"] / c["original_max_position_embeddings"]
        kv[f"{arch}.rope.scaling.original_context_length"] = 4096
        kv[f"{arch}.rope.dimension_count"] = 96
        kv[f"{arch}.rope.freq_base"] = 10000.0
        kv[f"{arch}.rope.scaling.attn_factor"] = math.sqrt(1 + math.log(scale) / math.log(4096))
        for kind in ("long", "short"):
            factors = np.array(c["rope_scaling"][f"{kind}_factor"], np.float32)
            tensors[f"rope_factors_{kind}.weight"] = factors
    elif name == "qwen3":
        kv[f"{arch}.attention.key_length"] = 128
        kv[f"{arch}.rope.freq_base"] = 1000000.0
        kv[f"{arch}.rope.scaling.type"] = "yarn"
        kv[f"{arch}.rope.scaling.factor"] = 4.0
        kv[f"{arch}.rope.scaling.original_context_length"] = 32768
    elif name == "gemma4":  # conversion/gemma.py:720-762: proportional RoPE in rope_freqs
        kv[f"{arch}.attention.key_length"] = 512
        kv[f"{arch}.attention.key_length_swa"] = 256
        kv[f"{arch}.rope.freq_base"] = 1000000.0
        kv[f"{arch}.rope.freq_base_swa"] = 10000.0
        kv[f"{arch}.rope.dimension_count"] = 512
        kv[f"{arch}.rope.dimension_count_swa"] = 256
        kv[f"{arch}.attention.sliding_window"] = 512
        kv[f"{arch}.attention.sliding_window_pattern"] = [True] * 4 + [False]
        tensors["rope_freqs.weight"] = np.array([1.0] * 64 + [1e30] * 192, np.float32)
    elif name == "gemma3":
        kv[f"{arch}.attention.key_length"] = 256
        kv[f"{arch}.rope.freq_base"] = 1000000.0
        kv[f"{arch}.rope.freq_base_swa"] = 10000.0
        kv[f"{arch}.rope.scaling.type"] = "linear"
        kv[f"{arch}.rope.scaling.factor"] = 8.0
        kv[f"{arch}.attention.sliding_window"] = 1024
    else:  # deepseek3
        kv[f"{arch}.rope.dimension_count"] = 64
        kv[f"{arch}.rope.freq_base"] = 10000.0
        kv[f"{arch}.rope.scaling.type"] = "yarn"
        kv[f"{arch}.rope.scaling.factor"] = 40.0
        kv[f"{arch}.rope.scaling.original_context_length"] = 4096
        kv[f"{arch}.rope.scaling.yarn_beta_fast"] = 32.0
        kv[f"{arch}.rope.scaling.yarn_beta_slow"] = 1.0
        kv[f"{arch}.rope.scaling.yarn_log_multiplier"] = 0.1
    return kv, tensors


# --------------------------------------------------------------------------- editing


def rewrite(source, target, *, kv: dict | None = None, drop=(), tensors: dict | None = None):
    """A copy of the GGUF ``source`` written with gguf-py (the [gguf] extra) to ``target``:
    the keys in ``kv`` set (a value, typed as the key already is, or a new FLOAT32/UINT32
    by its Python type), the keys and tensors named in ``drop`` left out, the tensors in
    ``tensors`` (name -> F32 values) replaced or added."""
    import gguf

    kv, tensors = dict(kv or {}), dict(tensors or {})
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(target, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in drop:
            continue
        kind = field.types[0]
        sub = field.types[1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, kv.pop(name, field.contents()), kind, sub_type=sub)
    for name, value in kv.items():
        kind = gguf.GGUFValueType.FLOAT32 if isinstance(value, float) else gguf.GGUFValueType.UINT32
        writer.add_key_value(name, value, kind)
    stored = [t for t in reader.tensors if t.name not in drop]
    tensors = {name: np.asarray(values, np.float32) for name, values in tensors.items()}
    data = {t.name: tensors.pop(t.name, t.data) for t in stored}
    data.update(tensors)
    types = {t.name: t.tensor_type for t in stored}
    for name, values in data.items():  # as gguf-py's own gguf_new_metadata.py copies them
        kind = types.get(name, gguf.GGMLQuantizationType.F32)
        writer.add_tensor_info(name, values.shape, values.dtype, values.nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for values in data.values():
        writer.write_tensor_data(values)
    writer.close()
    return target
