"""``sinpe check model.gguf config.json``: llama.cpp's reading of a GGUF file's RoPE against the
config, on files written here by the converter's rules (tests/gguf_files.py; the engine leg
runs the converter itself, tests/test_llama_cpp.py), each published misreading called wrong
with its reason, and hostile files refused in one line, in bounded memory."""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from command import run
from gguf_files import CONFIGS, CONFIGS_DIR, converted, encode, write

import sinpe
from sinpe._check import llama_cpp_types
from sinpe._check.llama_cpp import LLAMA_CPP
from sinpe._files import gguf as gguf_file


def _file(tmp_path, name, edit=None, config=None):
    """The converted ``name`` (gguf_files' families, and ``"hunyuan"``: ``_hunyuan``), with
    ``edit(kv, tensors)`` applied, and its config's path."""
    kv, tensors = _hunyuan() if name == "hunyuan" else converted(name)
    if edit is not None:
        edit(kv, tensors)
    path = write(tmp_path / f"{name}.gguf", kv, tensors)
    config_path = tmp_path / f"{name}.json"
    config_path.write_text(json.dumps(config or {**CONFIGS, "hunyuan": HUNYUAN}[name]))
    return path, config_path


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_what_the_converter_writes_reads_as_the_config(tmp_path, name):
    path, config = _file(tmp_path, name)
    report = sinpe.check_gguf(path, config)
    assert report.verdict == "match", report.reasons
    assert report.reasons == ()
    assert all(part.largest < 2e-7 for part in report.parts)
    result = run("check", path, config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: reads as the config" in result.stdout


def test_each_kind_of_layer_and_each_longrope_context_is_judged(tmp_path):
    gemma = sinpe.check_gguf(*_file(tmp_path, "gemma3"))
    assert [p.layer_type for p in gemma.parts] == ["full_attention", "sliding_attention"]
    assert [p.reading.base for p in gemma.parts] == [1e6, 1e4]
    phi = sinpe.check_gguf(*_file(tmp_path, "phi3"))
    assert [(p.context, p.reading.factors) for p in phi.parts] == [
        (4096, "rope_factors_short.weight"),
        (131072, "rope_factors_long.weight"),
    ]
    at = sinpe.check_gguf(*_file(tmp_path, "phi3"), n_ctx=4097)  # padded to 4352: long
    assert [(p.context, p.reading.factors) for p in at.parts] == [
        (4352, "rope_factors_long.weight")
    ]
    deepseek = sinpe.check_gguf(*_file(tmp_path, "deepseek3"))
    softmax = (1 + 0.1 * math.log(40)) ** 2  # yarn_get_mscale(40, mscale_all_dim 1) ** 2
    assert deepseek.parts[0].softmax_scale == pytest.approx(softmax, rel=1e-12)
    assert deepseek.parts[0].reading.softmax_scale == pytest.approx(softmax, rel=1e-6)


def test_gemma4s_sliding_layers_rotate_without_the_full_layers_factors(tmp_path, monkeypatch):
    """llama.cpp's Gemma 4 graph passes rope_freqs (the full layers' proportional RoPE: 64
    factors of 1, then 1e30 for the pairs left unrotated) to its full layers only
    (src/models/gemma4.cpp: ``if (!hparams.is_swa(il))``); the sliding layers rotate
    without it. A file whose unrotated pairs would turn is called wrong, and so would the
    sliding layers be, were the tensor read there."""
    report = sinpe.check_gguf(*_file(tmp_path, "gemma4"))
    assert [(p.layer_type, p.reading.factors) for p in report.parts] == [
        ("full_attention", "rope_freqs.weight"),
        ("sliding_attention", None),
    ]
    assert report.verdict == "match", report.reasons

    def turning(kv, tensors):
        tensors["rope_freqs.weight"] = np.where(tensors["rope_freqs.weight"] > 1, 1e3, 1.0)

    wrong = sinpe.check_gguf(*_file(tmp_path, "gemma4", turning))
    assert wrong.reasons == (
        "full_attention layers: rope_freqs differ from the config's proportional factors",
    )
    rules = dict(llama_cpp_types.ARCH_RULES["gemma4"])
    del rules["swa_factors"]
    monkeypatch.setitem(llama_cpp_types.ARCH_RULES, "gemma4", rules)
    misread = sinpe.check_gguf(*_file(tmp_path, "gemma4"))
    assert misread.reasons == (
        "sliding_attention layers: a rope_freqs.weight tensor where the config has no such scaling",
    )


def _drop(*names):
    def edit(kv, tensors):
        for name in names:
            kv.pop(name, None)
            tensors.pop(name, None)

    return edit


def _set(key, value):
    def edit(kv, tensors):
        kv[key] = value

    return edit


def _swap(kv, tensors):
    long, short = tensors["rope_factors_long.weight"], tensors["rope_factors_short.weight"]
    tensors["rope_factors_long.weight"], tensors["rope_factors_short.weight"] = short, long


def _smoothing_bent(kv, tensors):  # llama.cpp #8676's formula: smooth without the 1/factor
    tensors["rope_freqs.weight"] = np.where(
        (tensors["rope_freqs.weight"] > 1) & (tensors["rope_freqs.weight"] < 8),
        tensors["rope_freqs.weight"] * 1.5,
        tensors["rope_freqs.weight"],
    ).astype(np.float32)


def _renamed(arch):
    def edit(kv, tensors):
        old = kv["general.architecture"]
        for key in [k for k in kv if k.startswith(old + ".")]:
            kv[arch + key[len(old) :]] = kv.pop(key)
        kv["general.architecture"] = arch

    return edit


def _as_longrope(kv, tensors):
    """The factors as a LongRoPE pair (the short set all ones) under scaling type longrope:
    llama.cpp reads the short set at the trained length (no original length in the file)."""
    factors = tensors.pop("rope_freqs.weight")
    tensors["rope_factors_long.weight"] = factors
    tensors["rope_factors_short.weight"] = np.ones_like(factors)
    kv["llama.rope.scaling.type"] = "longrope"


QWEN_KEYS = ("qwen3.rope.scaling.type", "qwen3.rope.scaling.factor")
ATTENTION_1 = {**CONFIGS["qwen3"], "rope_scaling": {**CONFIGS["qwen3"]["rope_scaling"]}}
ATTENTION_1["rope_scaling"]["attention_factor"] = 1.0
BETA_16 = {**CONFIGS["qwen3"], "rope_scaling": {**CONFIGS["qwen3"]["rope_scaling"]}}
BETA_16["rope_scaling"]["beta_fast"] = 16.0

# the published misreadings: (file, edit, config or None, the reason said)
MISREADINGS = {
    "unsloth #6197: Llama-3.1 scaling dropped": (
        "llama31",
        _drop("rope_freqs.weight"),
        None,
        "Llama-3 scaling missing: no rope_freqs tensor",
    ),
    "Llama-3 factors written as a LongRoPE pair": (
        "llama31",
        _as_longrope,
        None,
        "Llama-3 scaling read from rope_factors_short.weight, not rope_freqs",
    ),
    "llama.cpp #8676: a bent smoothing formula": (
        "llama31",
        _smoothing_bent,
        None,
        "rope_freqs differ from the config's Llama-3 factors",
    ),
    "llama.cpp #24820: Phi-3 LongRoPE factors dropped": (
        "phi3",
        _drop("rope_factors_long.weight", "rope_factors_short.weight"),
        None,
        "LongRoPE factors missing: no rope_factors_long or rope_factors_short tensor",
    ),
    "Phi-3 short factors only": (
        "phi3",
        _drop("rope_factors_long.weight"),
        None,
        "LongRoPE short factors only: no rope_factors_long tensor",
    ),
    "Phi-3 factors swapped": (
        "phi3",
        _swap,
        None,
        "LongRoPE factors swapped: rope_factors_short holds the config's long ones",
    ),
    "llama.cpp #17945: the attention factor reset": (
        "phi3",
        _set("phi3.rope.scaling.attn_factor", 1.0),
        None,
        "LongRoPE attention factor 1.0 where the config gives 1.19024 "
        "(rope.scaling.attn_factor 1.0)",
    ),
    "llama.cpp #13322: Qwen3 YaRN not converted": (
        "qwen3",
        _drop(*QWEN_KEYS),
        None,
        "YaRN scaling missing: no rope.scaling.type where the config gives YaRN x4.0",
    ),
    "llama.cpp #22612: a YaRN attention_factor llama.cpp does not read": (
        "qwen3",
        _set("qwen3.rope.scaling.yarn_attn_factor", 1.0),
        ATTENTION_1,
        "YaRN attention factor 1.13863 where the config gives 1.0 (llama.cpp does not read "
        "rope.scaling.yarn_attn_factor for 'qwen3')",
    ),
    "a YaRN beta llama.cpp does not read": (
        "qwen3",
        _set("qwen3.rope.scaling.yarn_beta_fast", 16.0),
        BETA_16,
        "YaRN beta_fast 16.0 in the config: llama.cpp reads none for 'qwen3' "
        "(rope.scaling.yarn_beta_fast is not read)",
    ),
    "the YaRN factor changed": (
        "qwen3",
        _set("qwen3.rope.scaling.factor", 2.0),
        None,
        "YaRN factor 2.0 where the config gives 4.0",
    ),
    "the base changed": (
        "llama31",
        _set("llama.rope.freq_base", 10000.0),
        None,
        "base 10000.0 where the config gives 500000.0",
    ),
    "the sliding layers' base changed": (
        "gemma3",
        _set("gemma3.rope.freq_base_swa", 1000000.0),
        None,
        "sliding_attention layers: base 1000000.0 where the config gives 10000.0",
    ),
    "the width changed": (
        "llama31",
        _set("llama.rope.dimension_count", 64),
        None,
        "rotary width 64 where the config gives 128",
    ),
    "DeepSeek's log multiplier written raw": (
        "deepseek3",
        _set("deepseek2.rope.scaling.yarn_log_multiplier", 1.0),
        None,
        "softmax scale x21.9856 where the config gives x1.87385 (yarn mscale_all_dim)",
    ),
    "an architecture llama.cpp does not know": (
        "qwen3",
        _renamed("qwen9"),
        None,
        f"llama.cpp {LLAMA_CPP} does not know the architecture 'qwen9'",
    ),
}


@pytest.mark.parametrize("case", sorted(MISREADINGS))
def test_each_published_misreading_is_called_wrong_with_its_reason(tmp_path, case):
    name, edit, config, reason = MISREADINGS[case]
    path, config_path = _file(tmp_path, name, edit, config)
    report = sinpe.check_gguf(path, config_path)
    assert report.verdict == "mismatch"
    assert reason in report.reasons, report.reasons
    result = run("check", path, config_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "verdict: does not read as the config" in result.stdout
    assert reason in result.stdout
    data = json.loads(run("check", path, config_path, "--json").stdout)
    assert data["verdict"] == "mismatch" and reason in [r["text"] for r in data["reasons"]]
    assert data["exit_code"] == 1


def test_a_big_endian_file_is_read_and_called_wrong(tmp_path):
    path, config = _file(tmp_path, "qwen3")
    data = bytearray(path.read_bytes())
    swapped = tmp_path / "big.gguf"
    swapped.write_bytes(_big_endian(bytes(data)))
    report = sinpe.check_gguf(swapped, config)
    assert report.reasons == ("a big-endian file: llama.cpp reads little-endian GGUF only",)
    assert [p.largest < 1e-12 for p in report.parts] == [True]  # its values read right


def _big_endian(data: bytes) -> bytes:
    """The converted qwen3 file (no tensors) with every number byte-swapped."""
    from gguf_files import TYPES

    out = bytearray(b"GGUF")
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    out += struct.pack(">IQQ", version, n_tensors, n_kv)
    pos = 24
    codes = {code: fmt for code, fmt in TYPES.values()}
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", data, pos)
        out += struct.pack(">Q", n) + data[pos + 8 : pos + 8 + n]
        pos += 8 + n
        (kind,) = struct.unpack_from("<I", data, pos)
        out += struct.pack(">I", kind)
        pos += 4
        if kind == 8:
            (n,) = struct.unpack_from("<Q", data, pos)
            out += struct.pack(">Q", n) + data[pos + 8 : pos + 8 + n]
            pos += 8 + n
        else:
            fmt = codes[kind]
            (value,) = struct.unpack_from("<" + fmt, data, pos)
            out += struct.pack(">" + fmt, value)
            pos += struct.calcsize(fmt)
    return bytes(out)


def test_a_key_written_in_vain_is_a_note_not_a_verdict(tmp_path):
    """ik_llama.cpp #2003 wrote ``yarn_ext_factor`` 64; llama.cpp reads it for grok only."""
    edit = _set("qwen3.rope.scaling.yarn_ext_factor", 64.0)
    report = sinpe.check_gguf(*_file(tmp_path, "qwen3", edit))
    assert report.verdict == "match"
    assert (
        "written but never read by llama.cpp for 'qwen3': qwen3.rope.scaling.yarn_ext_factor"
        in report.notes
    )


def test_the_rotation_is_said_beside_the_config_s(tmp_path):
    report = sinpe.check_gguf(*_file(tmp_path, "llama31"))
    assert any("NORM (pairs)" in note and "rotates halves" in note for note in report.notes)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("llama.rope.freq_base", ("FLOAT64", 5e5), "llama.rope.freq_base is FLOAT64"),
        ("llama.context_length", ("INT32", 8192), "llama.context_length is INT32"),
        ("llama.rope.scaling.type", "ntk", "llama.cpp aborts on llama.rope.scaling.type 'ntk'"),
    ],
)
def test_what_llama_cpp_refuses_is_one_line_and_exit_2(tmp_path, key, value, message):
    path, config = _file(tmp_path, "llama31", _set(key, value))
    result = run("check", path, config)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_options_for_caches_are_refused_for_a_gguf(tmp_path):
    path, config = _file(tmp_path, "llama31")
    result = run("check", path, config, "--offset", "3", "--layout", "half")
    assert result.returncode == 2
    assert "--offset, --layout: for a cos/sin cache, not a .gguf model file" in result.stderr
    result = run("check", path, config, "--n-ctx", "0")
    assert result.returncode == 2 and "n_ctx must be an integer >= 1" in result.stderr
    cache = tmp_path / "c.npy"
    np.save(cache, np.zeros((4, 128), np.float32))
    result = run("check", cache, config, "--n-ctx", "4096")
    assert result.returncode == 2 and "--n-ctx is for a .gguf model file" in result.stderr


def test_a_gguf_is_known_by_its_magic_whatever_its_name(tmp_path):
    path, config = _file(tmp_path, "qwen3")
    renamed = path.rename(tmp_path / "model.bin")
    result = run("check", renamed, config, "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["architecture"] == "qwen3" and data["llama_cpp"] == LLAMA_CPP
    assert data["parts"][0]["llama_cpp"]["rope_type"] == "NEOX"


# --------------------------------------------------------------------------- the reader


def test_the_reader_keeps_values_and_walks_the_rest(tmp_path):
    kv = {
        "general.architecture": "llama",
        "u8": ("UINT8", 7),
        "i64": ("INT64", -3),
        "f64": ("FLOAT64", 0.1),
        "flag": True,
        "name": "x" * 10,
        "long": "y" * ((1 << 20) + 1),
        "floats": [0.5, 1.5],
        "tokens": ["a", "bc"] * 5000,
        "big": ("ARRAY[INT32]", list(range(5000))),
    }
    path = write(tmp_path / "v.gguf", kv, {"rope_freqs.weight": np.arange(4, dtype=np.float32)})
    found = gguf_file.read(path, tensors=("rope_freqs.weight", "absent"))
    assert found.kv["u8"] == 7 and found.kv["i64"] == -3 and found.kv["f64"] == 0.1
    assert found.kv["flag"] is True and found.kv["name"] == "x" * 10
    assert found.kv["long"] == gguf_file.Unread("STRING", (1 << 20) + 1)
    assert found.kv["floats"].tolist() == [0.5, 1.5] and found.types["floats"] == "ARRAY[FLOAT32]"
    assert found.kv["tokens"] == gguf_file.Unread("ARRAY[STRING]", 10000)
    assert found.kv["big"] == gguf_file.Unread("ARRAY[INT32]", 5000)
    assert found.data == {"rope_freqs.weight": pytest.approx([0, 1, 2, 3])}
    assert found.tensors["rope_freqs.weight"].dims == (4,)


def _header(n_tensors: int, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def _hostile() -> dict:
    key = struct.pack("<Q", 4) + b"arch"
    tensor = struct.pack("<Q", 17) + b"rope_freqs.weight"
    return {
        "wrong magic": b"GGML" + bytes(60),
        "empty": b"",
        "version 1": b"GGUF" + struct.pack("<IQQ", 1, 0, 0),
        "version 4": b"GGUF" + struct.pack("<IQQ", 4, 0, 0),
        "2^63 keys": _header(0, 1 << 63) + bytes(16),
        "a lying key count": _header(0, 60000) + key + struct.pack("<I", 4) + bytes(4),
        "a 2^40-tensor header": _header(1 << 40, 0) + bytes(64),
        "a lying tensor count": _header(3, 0) + tensor + struct.pack("<IqiQ", 1, 64, 0, 0),
        "a 2^40-element array": _header(0, 1)
        + key
        + struct.pack("<IIQ", 9, 6, 1 << 40)
        + bytes(64),
        "a 2^40-string array": _header(0, 1) + key + struct.pack("<IIQ", 9, 8, 1 << 40) + bytes(64),
        "a 2^62-byte string": _header(0, 1) + key + struct.pack("<IQ", 8, 1 << 62) + bytes(64),
        "a 2^62-byte key": _header(0, 1) + struct.pack("<Q", 1 << 62) + bytes(64),
        "lying tensor sizes": _header(1, 0)
        + tensor
        + struct.pack("<IqiQ", 1, 1 << 40, 0, 0)
        + bytes(64),
        "a 2^66-element tensor": _header(1, 0)
        + tensor
        + struct.pack("<Iqqi", 2, 1 << 33, 1 << 33, 0)
        + struct.pack("<Q", 0),
        "an array of arrays": _header(0, 1) + key + struct.pack("<IIQ", 9, 9, 1) + bytes(64),
        "an unknown value type": _header(0, 1) + key + struct.pack("<I", 13) + bytes(64),
        "an unknown ggml type": _header(1, 0) + tensor + struct.pack("<IqiQ", 1, 4, 99, 0),
        "a lying tensor offset": _header(1, 0)
        + tensor
        + struct.pack("<IqiQ", 1, 4, 0, 32)
        + bytes(64),
        "a duplicate key": _header(0, 2) + (key + struct.pack("<II", 4, 1)) * 2,
        "a zero alignment": _header(0, 1)
        + struct.pack("<Q", 17)
        + b"general.alignment"
        + struct.pack("<II", 4, 0),
    }


def _hostile_file(tmp_path, case):
    """The hostile file of ``case`` and Llama-3.1's config, written under ``tmp_path``."""
    path = tmp_path / "hostile.gguf"
    path.write_bytes(_hostile()[case])
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIGS["llama31"]))
    return path, config


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_a_hostile_gguf_is_one_line_exit_2_in_bounded_memory(tmp_path, case):
    path, config = _hostile_file(tmp_path, case)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as found:
            gguf_file.read(path, tensors=("rope_freqs.weight",))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert "\n" not in str(found.value)
    result = run("check", path, config)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("sinpe: error:") and result.stderr.count("\n") == 1


def test_every_truncation_of_a_converted_file_is_refused(tmp_path):
    kv, tensors = converted("phi3")
    data = encode(kv, tensors)
    path = tmp_path / "cut.gguf"
    short = tensors["rope_factors_short.weight"]  # the last tensor: its padding may be absent
    last = len(data) - (-(short.size * 4) % 32)
    for size in range(last):
        path.write_bytes(data[:size])
        with pytest.raises(ValueError):
            gguf_file.read(path, tensors=("rope_factors_long.weight",))
    path.write_bytes(data[:last])
    gguf_file.read(path)


def test_check_gguf_refuses_bad_arguments(tmp_path):
    path, config = _file(tmp_path, "qwen3")
    for bad in (0, -1, 2.5, True, "4096"):
        with pytest.raises(ValueError, match="n_ctx must be an integer >= 1"):
            sinpe.check_gguf(path, config, n_ctx=bad)
    with pytest.raises(ValueError, match="n_ctx 4611686018427387904 is outside 1 .. 1099511627776"):
        sinpe.check_gguf(path, config, n_ctx=2**62)
    with pytest.raises(FileNotFoundError):
        sinpe.check_gguf(tmp_path / "absent.gguf", config)


def test_import_sinpe_and_a_gguf_check_import_neither_gguf_nor_mlx(tmp_path):
    path, config = _file(tmp_path, "qwen3")
    script = (
        "import sys, sinpe\n"
        f"sinpe.check_gguf({str(path)!r}, {str(config)!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gguf', 'mlx', 'torch')))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"


# --------------------------------------------------------------------------- every reason path


TRUNCATE = {**CONFIGS["qwen3"], "rope_scaling": {**CONFIGS["qwen3"]["rope_scaling"]}}
TRUNCATE["rope_scaling"]["truncate"] = False
PLAIN_LLAMA = {**CONFIGS["llama31"], "rope_scaling": None}
_LONGROPE = {k: v for k, v in CONFIGS["phi3"]["rope_scaling"].items() if k != "type"}
PHIMOE = {
    **CONFIGS["phi3"],
    "model_type": "phimoe",
    "rope_scaling": {**_LONGROPE, "rope_type": "longrope", "short_mscale": 1.243,
                     "long_mscale": 1.243, "original_max_position_embeddings": 4096},
}  # fmt: skip
PHIMOE_LENGTH = {**PHIMOE, "rope_scaling": {**PHIMOE["rope_scaling"]}}
del PHIMOE_LENGTH["rope_scaling"]["original_max_position_embeddings"]  # transformers: 131072


def _phimoe(kv, tensors):
    _renamed("phimoe")(kv, tensors)


def _bent_long(kv, tensors):
    tensors["rope_factors_long.weight"] = tensors["rope_factors_long.weight"] * np.float32(1.01)


def _as_plain(kv, tensors):
    kv.pop("llama.rope.freq_base")
    kv["llama.rope.freq_base"] = 500000.0


REASON_PATHS = {
    "YaRN original length changed": (
        "qwen3",
        _set("qwen3.rope.scaling.original_context_length", 16384),
        None,
        "YaRN original context 16384 where the config gives 32768",
    ),
    "truncate false": (
        "qwen3",
        None,
        TRUNCATE,
        "YaRN truncate false in the config: llama.cpp always rounds the ramp",
    ),
    "a factor tensor where the config has none": (
        "llama31",
        _as_plain,
        PLAIN_LLAMA,
        "a rope_freqs.weight tensor where the config has no such scaling",
    ),
    "an architecture llama.cpp runs without RoPE": (
        "llama31",
        _renamed("gptj"),
        None,
        "llama.cpp runs 'gptj' without RoPE",
    ),
    "PhiMoE's mscale": (
        "phi3",
        _phimoe,
        PHIMOE,
        "LongRoPE attention factor 1.19024 where the config gives 1.243 (rope.scaling.attn_factor "
        "1.19024; GGUF has no key for the config's short_mscale and long_mscale)",
    ),
    "LongRoPE's factors chosen by another original length": (
        "phi3",
        _phimoe,
        PHIMOE_LENGTH,
        "llama.cpp uses rope_factors_long.weight at context 131,072 where the config uses its "
        "LongRoPE short factors (original length 131072 in the config, 4096 in the file)",
    ),
    "long factors differ": (
        "phi3",
        _bent_long,
        None,
        "rope_factors_long differ from the config's long_factor",
    ),
    "the YaRN factor is not written": (
        "qwen3",
        _drop("qwen3.rope.scaling.factor"),
        None,
        "YaRN factor 1.0 where the config gives 4.0",
    ),
}


@pytest.mark.parametrize("case", sorted(REASON_PATHS))
def test_each_reason_path_is_said(tmp_path, case):
    name, edit, config, reason = REASON_PATHS[case]
    report = sinpe.check_gguf(*_file(tmp_path, name, edit, config))
    assert report.verdict == "mismatch"
    assert reason in report.reasons, report.reasons


def test_the_base_alone_is_said_when_it_alone_explains(tmp_path):
    """A changed base in a Llama-3.1 file: the base is the reason, and its rope_freqs,
    which are the config's, are not called different."""
    report = sinpe.check_gguf(*_file(tmp_path, "llama31", _set("llama.rope.freq_base", 1e4)))
    assert report.reasons == ("base 10000.0 where the config gives 500000.0",)


def test_the_rotation_note_says_as_expected_where_they_agree(tmp_path):
    qwen = sinpe.check_gguf(*_file(tmp_path, "qwen3"))
    assert "llama.cpp rotates 'qwen3' as NEOX (halves), as the config's attention does" in (
        qwen.notes
    )
    assert not any("permutes" in note for note in qwen.notes)


def test_a_scaling_carried_by_a_tensor_is_said_so(tmp_path):
    result = run("check", *_file(tmp_path, "llama31"))
    assert "scaling factors rope_freqs.weight," in result.stdout, result.stdout
    assert "scaling none" not in result.stdout


# --------------------------------------------------------------------------- bounded, refused


def _with_width(width):
    def edit(kv, tensors):
        kv["llama.rope.dimension_count"] = width

    return edit


def _peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    except ValueError:
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("width", [2**32 - 2, 2**26, 2**17])
def test_a_width_no_model_has_is_refused_in_the_memory_of_a_valid_check(tmp_path, width):
    """A file of a few hundred bytes claiming a rotary width of 2**32 - 2: one line, exit 2,
    and no more memory than checking the real Llama-3.1 file takes."""
    path, config = _file(tmp_path, "llama31", _with_width(width))
    valid = _file(tmp_path / "..", "llama31")
    normal = _peak(lambda: sinpe.check_gguf(*valid))
    hostile = _peak(lambda: sinpe.check_gguf(path, config))
    assert hostile <= normal, (hostile, normal)
    result = run("check", path, config)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"rope.dimension_count) {width} is outside 2 .. 65536" in result.stderr


def test_a_plausible_width_that_differs_is_a_mismatch_not_a_refusal(tmp_path):
    report = sinpe.check_gguf(*_file(tmp_path, "qwen3", _set("qwen3.rope.dimension_count", 4096)))
    assert report.reasons == ("rotary width 4096 where the config gives 128",)
    assert report.parts[0].largest is None  # not compared: never computed at that width


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_a_hostile_gguf_checked_stays_within_a_valid_check_s_memory(tmp_path, case):
    path, config = _hostile_file(tmp_path, case)
    valid = _file(tmp_path, "llama31")
    normal = _peak(lambda: sinpe.check_gguf(*valid))
    assert _peak(lambda: sinpe.check_gguf(path, config)) <= normal
    with pytest.raises(ValueError):
        sinpe.check_gguf(path, config)


def test_a_refusal_with_json_is_one_object_and_a_usage_error_too(tmp_path):
    path = tmp_path / "hostile.gguf"
    path.write_bytes(_hostile()["a lying tensor count"])
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIGS["llama31"]))
    result = run("check", path, config, "--json")
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["verdict"] == "refused" and data["exit_code"] == 2
    assert data["reason"] in result.stderr and result.stderr.count("\n") == 1
    usage = run("check", path, config, "--json", "--offset", "3")
    assert usage.returncode == 2 and "--offset: for a cos/sin cache" in usage.stderr
    assert json.loads(usage.stdout) == {
        "verdict": "refused",
        "reason": usage.stderr.strip().removeprefix("sinpe: error: "),
        "exit_code": 2,
    }


# --------------------------------------------------------------------------- split files


def _split(tmp_path, name, count, edit=None):
    from gguf_files import write_split

    kv, tensors = converted(name)
    if edit is not None:
        edit(kv, tensors)
    paths = write_split(tmp_path, "Model", kv, tensors, count)
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(CONFIGS[name]))
    return paths, config


@pytest.mark.parametrize("name", ["llama31", "phi3"])
def test_any_shard_of_a_split_set_reads_as_the_whole_file(tmp_path, name):
    """The RoPE tensors are in the last shards, the metadata in the first: from any shard,
    the verdict of the file before it was split."""
    paths, config = _split(tmp_path, name, 3)
    whole = sinpe.check_gguf(*_file(tmp_path, name))
    for path in paths:
        report = sinpe.check_gguf(path, config)
        assert report.verdict == whole.verdict == "match", report.reasons
        assert report.shards == tuple(str(p) for p in paths)
        assert [p.reading.factors for p in report.parts] == [p.reading.factors for p in whole.parts]
    result = run("check", paths[1], config)
    assert result.returncode == 0 and "(split: 3 shards)" in result.stdout


def test_a_split_set_missing_its_scaling_is_still_called_wrong(tmp_path):
    paths, config = _split(tmp_path, "llama31", 2, _drop("rope_freqs.weight"))
    report = sinpe.check_gguf(paths[0], config)
    assert report.reasons == ("Llama-3 scaling missing: no rope_freqs tensor",)


def _corrupt_shard(k, key, value):
    def corrupt(paths):
        from gguf_files import TYPES  # noqa: F401 (the writer's types)

        data = paths[k].read_bytes()
        return data, key, value

    return corrupt


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "shard 2, {prefix}-00002-of-00003.gguf, is missing"),
        ("renamed", "but its name is not <prefix>-00001-of-00003.gguf"),
        ("wrong number", "where shard 3 of 3 is expected"),
        ("tensor twice", "is in two shards"),
        ("count", "split.tensors.count 99, where the shards hold"),
    ],
)
def test_a_broken_split_set_is_refused_naming_what_is_wrong(tmp_path, case, message):
    from gguf_files import write_split

    kv, tensors = converted("llama31")
    if case == "count":
        kv["split.tensors.count"] = ("INT32", 99)
    paths = write_split(tmp_path, "Model", kv, tensors, 3)
    if case == "count":  # the writer's own count follows: put 99 back in the first shard
        first_kv = {**kv, "split.no": ("UINT16", 0), "split.count": ("UINT16", 3)}
        first_kv["split.tensors.count"] = ("INT32", 99)
        write(paths[0], first_kv, _shard_tensors(paths[0]))
    if case == "missing":
        paths[1].unlink()
    if case == "renamed":
        paths[0] = paths[0].rename(tmp_path / "model.gguf")
    if case == "wrong number":
        split = {"split.no": ("UINT16", 1), "split.count": ("UINT16", 3)}
        write(paths[2], {**split, "split.tensors.count": ("INT32", 4)}, {})
    if case == "tensor twice":
        write(paths[2], _shard_kv(paths[2]), {"rope_freqs.weight": np.ones(64, np.float32)})
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIGS["llama31"]))
    result = run("check", paths[0], config)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert message.format(prefix=tmp_path / "Model") in result.stderr, result.stderr


def _shard_kv(path) -> dict:
    found = gguf_file._read_one(str(path), ())
    return {key: (found.types[key], value) for key, value in found.kv.items()}


def _shard_tensors(path) -> dict:
    found = gguf_file._read_one(str(path), ())
    return {name: np.ones(info.dims, np.float32) for name, info in found.tensors.items()}


def test_the_json_of_a_part_is_llama_cpps_reading_beside_the_config_s(tmp_path):
    """Each part's JSON: llama.cpp's reading (not its frequencies or architecture, said once
    above; the factor only where the file has one) beside the config's width, attention
    factor and softmax scale, and the largest frequency difference."""
    path, config = _file(tmp_path, "deepseek3")
    report = sinpe.check_gguf(path, config).as_dict()
    assert report["architecture"] == "deepseek2" and report["shards"] == []
    assert report["file"] == str(path) and report["notes"][0].startswith("written but never")
    (part,) = report["parts"]
    reading = part.pop("llama_cpp")
    assert part == {
        "layer_type": None,
        "config": {
            "rotary_dim": 64,
            "attention_factor": 1.0,
            "softmax_scale": pytest.approx((1 + 0.1 * math.log(40)) ** 2, rel=1e-12),
        },
        "largest_frequency_difference": pytest.approx(0, abs=1e-15),
        "reasons": [],
    }
    assert reading == {
        "rope_type": "NORM",
        "n_rot": 64,
        "base": 10000.0,
        "scaling": "yarn",
        "factors": None,
        "attention_factor": 1.0,
        "softmax_scale": pytest.approx((1 + 0.1 * math.log(40)) ** 2, rel=1e-6),
        "ignored": [
            "deepseek2.rope.scaling.yarn_beta_fast",
            "deepseek2.rope.scaling.yarn_beta_slow",
        ],
        "context": 163840,
        "factor": 40.0,
    }
    llama = sinpe.check_gguf(*_file(tmp_path, "llama31")).as_dict()["parts"][0]
    assert llama["llama_cpp"]["factor"] is None  # no rope.scaling.factor in the file
    assert llama["llama_cpp"]["factors"] == "rope_freqs.weight"
    gemma = sinpe.check_gguf(*_file(tmp_path, "gemma3")).as_dict()["parts"]
    assert [p["layer_type"] for p in gemma] == ["full_attention", "sliding_attention"]


def _qwen3(**keys):
    config = json.loads(json.dumps(CONFIGS["qwen3"]))
    config["rope_scaling"].update(keys)
    return config


_LLAMA_PLAIN = {k: v for k, v in CONFIGS["llama31"].items() if k != "rope_scaling"}
_FACTOR = "YaRN attention factor 1.0 where the config gives 1.13863"


@pytest.mark.parametrize(
    "name, edit, config, n_ctx, reasons",
    [
        (
            "qwen3",
            _set("qwen3.rope.scaling.type", "linear"),
            None,
            None,
            (
                "YaRN scaling missing: rope.scaling.type is 'linear' where the config gives "
                "YaRN x4.0",
                _FACTOR,
            ),
        ),
        (
            "qwen3",
            _drop("qwen3.rope.scaling.type"),
            None,
            None,
            (
                "YaRN scaling missing: no rope.scaling.type where the config gives YaRN x4.0",
                _FACTOR,
            ),
        ),
        (
            "qwen3",
            _set("qwen3.rope.scaling.original_context_length", 16384),
            None,
            None,
            ("YaRN original context 16384 where the config gives 32768",),
        ),
        (
            "qwen3",
            None,
            _qwen3(beta_slow=2.0),
            None,
            (
                "YaRN beta_slow 2.0 in the config: llama.cpp reads none for 'qwen3' "
                "(rope.scaling.yarn_beta_slow is not read)",
            ),
        ),
        ("qwen3", None, _qwen3(beta_fast=32.0, beta_slow=1.0), None, ()),  # its defaults
        (  # the factor is the reason, not betas at llama.cpp's defaults
            "qwen3",
            _set("qwen3.rope.scaling.factor", 2.0),
            _qwen3(beta_fast=32.0, beta_slow=1.0),
            None,
            (
                "YaRN factor 2.0 where the config gives 4.0",
                "YaRN attention factor 1.06931 where the config gives 1.13863",
            ),
        ),
        (
            "llama31",
            lambda kv, tensors: (
                tensors.pop("rope_freqs.weight"),
                kv.update({"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 4.0}),
            ),
            _LLAMA_PLAIN,
            None,
            ("linear scaling x4.0 where the config has none",),
        ),
        (
            "llama31",
            _drop("rope_freqs.weight"),
            {**_LLAMA_PLAIN, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
            262144,
            ("llama.cpp has no dynamic NTK scaling",),
        ),
        (  # within the trained length, dynamic NTK is the plain RoPE
            "llama31",
            _drop("rope_freqs.weight"),
            {**_LLAMA_PLAIN, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
            None,
            (),
        ),
    ],
)
def test_each_scaling_reason_of_a_file_is_said(tmp_path, name, edit, config, n_ctx, reasons):
    """The reasons of a scaling the file carries otherwise: its type (another, or none), its
    original length, a YaRN key llama.cpp does not read for the architecture (a value at
    llama.cpp's default is no reason), a scaling where the config has none, and a type
    llama.cpp has no form for once it changes the values."""
    report = sinpe.check_gguf(*_file(tmp_path, name, edit, config), n_ctx=n_ctx)
    assert report.reasons == reasons
    assert report.verdict == ("mismatch" if reasons else "match")


# --------------------------------------------------------------------------- the mutation gaps


_PARAMETERS_ONLY = (
    "a file holds parameters: llama.cpp forms its angles in float32 at run time "
    "(docs/engines.md), which no file can show"
)


def test_a_config_of_one_layer_type_reads_as_the_file_at_any_context(tmp_path):
    """A Qwen3 config with its RoPE nested under its one layer type (``rope_parameters``
    keyed by ``full_attention``) is judged as that type, and reads as the converted file at
    its trained length and at ``n_ctx=1`` (the smallest context, padded to 256)."""
    config = {k: v for k, v in CONFIGS["qwen3"].items() if k not in ("rope_scaling", "rope_theta")}
    config["rope_parameters"] = {
        "full_attention": {**CONFIGS["qwen3"]["rope_scaling"], "rope_theta": 1e6}
    }
    path, config_path = _file(tmp_path, "qwen3", config=config)
    report = sinpe.check_gguf(path, config_path)
    assert report.verdict == "match", report.reasons
    assert [p.layer_type for p in report.parts] == ["full_attention"]
    assert "llama.cpp rotates 'qwen3' as NEOX (halves), as the config's attention does" in (
        report.notes
    )
    smallest = sinpe.check_gguf(path, config_path, n_ctx=1)
    assert smallest.verdict == "match", smallest.reasons
    assert [(p.layer_type, p.context) for p in smallest.parts] == [("full_attention", 256)]


def test_a_big_endian_file_says_so_before_its_other_reasons(tmp_path):
    """A big-endian file whose base is also wrong: the byte order, which stops llama.cpp
    reading it at all, is the first reason, the base the second."""
    path, config = _file(tmp_path, "qwen3", _set("qwen3.rope.freq_base", 1e4))
    swapped = tmp_path / "big.gguf"
    swapped.write_bytes(_big_endian(path.read_bytes()))
    assert sinpe.check_gguf(swapped, config).reasons == (
        "a big-endian file: llama.cpp reads little-endian GGUF only",
        "base 10000.0 where the config gives 1000000.0",
    )


def test_a_llama3_factor_of_0_in_the_last_pair_is_said(tmp_path):
    """A Llama-3.1 ``rope_freqs`` with 0 for its last pair (63 of 64): the tensor's value is
    said as well as the infinite frequency it makes."""

    def zero_last(kv, tensors):
        tensors["rope_freqs.weight"] = tensors["rope_freqs.weight"].copy()
        tensors["rope_freqs.weight"][63] = 0.0

    report = sinpe.check_gguf(*_file(tmp_path, "llama31", zero_last))
    assert report.reasons == (
        "rope_freqs.weight is 0.0: not a value a RoPE can use",
        "the inverse frequency of pair 63 is inf: not a value a RoPE can use",
    )


HUNYUAN = json.loads((CONFIGS_DIR / "hunyuan-promptenhancer-7b.json").read_text())
_HY = "hunyuan-dense"


def _hunyuan() -> tuple:
    """``(kv, tensors)`` as llama.cpp's converter writes HunYuan's NTK alpha
    (conversion/hunyuan.py, HunYuanModel): ``rope_theta * alpha ** (d / (d - 2))``
    folded into ``rope.freq_base``, scaling type none, factor 1, a 256K context."""
    kv = {
        "general.architecture": _HY,
        f"{_HY}.context_length": 256 * 1024,
        f"{_HY}.embedding_length": 4096,
        f"{_HY}.attention.head_count": 32,
        f"{_HY}.attention.key_length": 128,
        f"{_HY}.rope.freq_base": 10000.0 * 1000.0 ** (128 / 126),
        f"{_HY}.rope.scaling.type": "none",
        f"{_HY}.rope.scaling.factor": 1.0,
        f"{_HY}.rope.scaling.original_context_length": 256 * 1024,
    }
    return kv, {}


def test_hunyuans_base_folded_by_the_converter_is_the_config_s(tmp_path):
    """HunYuan's NTK alpha, folded into ``rope.freq_base`` (1.11588e7 for rope_theta 1e4):
    the file reads as the config, the folded base called no wrong base; a stray
    ``rope_freqs`` tensor is its only reason, and a NaN base is said once, by the
    frequencies it makes, not also as a base."""
    report = sinpe.check_gguf(*_file(tmp_path, "hunyuan"))
    assert report.verdict == "match", report.reasons
    assert report.parts[0].reading.base == pytest.approx(11158839.9251, rel=1e-7)

    def stray(kv, tensors):
        tensors["rope_freqs.weight"] = np.full(64, 2.0, np.float32)

    assert sinpe.check_gguf(*_file(tmp_path, "hunyuan", stray)).reasons == (
        "a rope_freqs.weight tensor where the config has no such scaling",
    )
    nan = sinpe.check_gguf(*_file(tmp_path, "hunyuan", _set(f"{_HY}.rope.freq_base", math.nan)))
    assert nan.reasons == ("the inverse frequency of pair 1 is nan: not a value a RoPE can use",)


def test_hunyuans_linear_scaling_is_not_blamed_on_its_folded_base(tmp_path):
    """A HunYuan file with linear scaling x2 added: the scaling is the reason, and the folded
    base, which is the config's, is not called wrong."""
    scaled = {f"{_HY}.rope.scaling.type": "linear", f"{_HY}.rope.scaling.factor": 2.0}
    report = sinpe.check_gguf(*_file(tmp_path, "hunyuan", lambda kv, tensors: kv.update(scaled)))
    assert report.verdict == "mismatch"
    assert report.reasons == ("every frequency divided by 2.0",), report.reasons


def test_phimoes_attention_factor_is_the_config_s_at_each_context(tmp_path):
    """PhiMoE with short_mscale 1.1 and long_mscale 1.243: the part at the original length
    (4096) is judged against 1.1, the part past it (131072) against 1.243."""
    config = {**PHIMOE, "rope_scaling": {**PHIMOE["rope_scaling"], "short_mscale": 1.1}}
    report = sinpe.check_gguf(*_file(tmp_path, "phi3", _phimoe, config))
    causes = (
        "(rope.scaling.attn_factor 1.19024; GGUF has no key for the config's short_mscale "
        "and long_mscale)"
    )
    assert [(p.context, p.attention_factor) for p in report.parts] == [(4096, 1.1), (131072, 1.243)]
    assert [p.reasons[-1] for p in report.parts] == [
        f"LongRoPE attention factor 1.19024 where the config gives {want} {causes}"
        for want in ("1.1", "1.243")
    ]


@pytest.mark.parametrize(
    "name, edit, reason",
    [
        (
            "phi3",
            _set("phi3.rope.freq_base", 1e5),
            "base 100000.0 where the config gives 10000.0",
        ),
        (
            "llama31",
            _drop("llama.rope.freq_base"),  # llama.cpp's default base, 10000
            "base 10000.0 where the config gives 500000.0",
        ),
    ],
)
def test_the_base_alone_is_said_where_the_config_s_base_alone_explains(
    tmp_path, name, edit, reason
):
    """The file re-read with the config's base at each part's context reads as the config:
    a Phi-3 file's base is its one reason (its factor tensors, short at 4096, are the
    config's), and so is a Llama-3.1 file's that writes no base at all."""
    assert sinpe.check_gguf(*_file(tmp_path, name, edit)).reasons == (reason,)


@pytest.mark.parametrize("arch", ["grok", "mistral3"])
def test_a_yarn_beta_the_architecture_reads_is_no_reason(tmp_path, arch):
    """grok and mistral3 read ``rope.scaling.yarn_beta_fast``: a file that writes the
    config's beta_fast 16 beside a wrong factor is called wrong for the factor only, not
    for a beta llama.cpp would not read."""

    def edit(kv, tensors):
        _renamed(arch)(kv, tensors)
        kv[f"{arch}.rope.scaling.factor"] = 2.0
        kv[f"{arch}.rope.scaling.yarn_beta_fast"] = 16.0

    report = sinpe.check_gguf(*_file(tmp_path, "qwen3", edit, _qwen3(beta_fast=16.0)))
    assert report.reasons == (
        "YaRN factor 2.0 where the config gives 4.0",
        "YaRN attention factor 1.06931 where the config gives 1.13863",
    )


def test_phi3s_swapped_factors_are_said_swapped_at_each_context(tmp_path):
    """Phi-3's long and short factor tensors swapped: at 4096 the short tensor holds the
    config's long factors, at 131072 the long tensor holds its short ones."""
    assert sinpe.check_gguf(*_file(tmp_path, "phi3", _swap)).reasons == (
        "LongRoPE factors swapped: rope_factors_short holds the config's long ones",
        "LongRoPE factors swapped: rope_factors_long holds the config's short ones",
    )


@pytest.mark.parametrize("arch", ["qwen9", "gptj"])
def test_no_rotation_is_noted_where_llama_cpp_rotates_none(tmp_path, arch):
    """A file of an architecture llama.cpp does not know, or runs without RoPE (gptj): no
    note on how llama.cpp rotates it, only the note every file gets."""
    report = sinpe.check_gguf(*_file(tmp_path, "qwen3", _renamed(arch)))
    assert report.notes == (_PARAMETERS_ONLY,)


def test_a_linear_factor_the_file_changed_is_said_and_its_base_alone_too(tmp_path):
    """(``_explain_scale``, which no test reached: Gemma 3's full layers scale linearly.) A
    file whose rope.scaling.factor is 4 where the config gives 8: that factor is the reason,
    for the full layers only; with the factor right and the base doubled, the base."""
    factor = sinpe.check_gguf(*_file(tmp_path, "gemma3", _set("gemma3.rope.scaling.factor", 4.0)))
    assert factor.reasons == (
        "full_attention layers: linear factor 4.0 where the config gives 8.0",
    )
    base = sinpe.check_gguf(*_file(tmp_path, "gemma3", _set("gemma3.rope.freq_base", 2e6)))
    assert base.reasons == (
        "full_attention layers: base 2000000.0 where the config gives 1000000.0",
    )
