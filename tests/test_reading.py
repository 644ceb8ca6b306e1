"""The reading room (``sinpe._files.reading``): every reader opens regular files only (a FIFO,
socket, device or directory refused at once, naming what it is, never blocking), checks every
declared size against the bytes present, and bounds a zip's directory and its members'
expansion; each format cut short is refused with its reason."""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cache_files import safetensors_bytes
from gguf_files import CONFIGS, converted, write, write_split
from onnx_files import graph, model, node, tensor

import sinpe
from sinpe._files import caches as files
from sinpe._files import gguf as gguf_file
from sinpe._files import onnx as onnx_file
from sinpe._files import reading
from sinpe._rope.config import load_config

HANG = 60  # seconds: only catches a reader blocked on a FIFO
LLAMA = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 5e5}


def _refused_at_once(call, match: str, fifos=()) -> ValueError:
    """``call()`` run in a thread: it must end (a reader blocked on a FIFO fails the test,
    the FIFO then opened for writing to release it) with a ValueError matching ``match``."""
    found: dict = {}

    def target():
        try:
            call()
        except BaseException as exc:  # handed to the test
            found["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG)
    if thread.is_alive():
        for fifo in fifos:  # the blocked open() returns, and the thread ends
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(HANG)
        pytest.fail(f"blocked for {HANG} s on a FIFO")
    error = found.get("error")
    assert isinstance(error, ValueError), repr(error)
    assert re.search(match, str(error)), str(error)
    return error


def _fifo(path):
    os.mkfifo(path)
    return path


def _cache(tmp_path, suffix: str):
    """A small valid cos/sin cache of ``suffix``'s format at ``tmp_path / cache<suffix>``."""
    cos, sin = sinpe.rope_config(LLAMA).rope(8, dtype="float32")
    path = tmp_path / f"cache{suffix}"
    if suffix == ".npy":
        np.save(path, np.concatenate([cos, sin], 1))
    elif suffix == ".npz":
        np.savez(path, cos=cos, sin=sin)
    elif suffix == ".safetensors":
        path.write_bytes(safetensors_bytes({"cos": cos, "sin": sin}))
    return path


def _gqa():
    inputs = ["q", "k", "v", "past_k", "past_v", "seqlens", "total", "cos_cache", "sin_cache"]
    return node(
        "GroupQueryAttention", inputs, ["o"], domain="com.microsoft",
        name="/model/layers.0/attn/GroupQueryAttention", do_rotary=1, rotary_interleaved=0,
        num_heads=2, kv_num_heads=1,
    )  # fmt: skip


def _onnx_model(folder, data=True):
    """``model.onnx`` whose caches (8 x 32 float32) are in ``model.onnx.data``, beside its
    ``config.json``; the data file written when ``data``."""
    cos, sin = sinpe.rope_config(LLAMA).rope(8, layout="compact", dtype="float32")
    place = lambda offset: {"location": "model.onnx.data", "offset": offset, "length": 1024}  # noqa: E731
    caches = [tensor("cos_cache", dims=(8, 32), external=place(0))]
    caches.append(tensor("sin_cache", dims=(8, 32), external=place(1024)))
    folder.mkdir(exist_ok=True)
    (folder / "model.onnx").write_bytes(model(graph([_gqa()], caches, ["input_ids"])))
    (folder / "config.json").write_text(json.dumps(LLAMA))
    if data:
        (folder / "model.onnx.data").write_bytes(cos.tobytes() + sin.tobytes())
    return folder / "model.onnx"


# --------------------------------------------------------------------------- the room itself


def test_the_room_names_what_a_path_is_when_it_is_not_a_regular_file(tmp_path):
    fifo = _fifo(tmp_path / "x.gguf")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s.npz"))
    try:
        cases = {
            fifo: "is a FIFO, not a regular file",
            tmp_path / "s.npz": "is a socket, not a regular file",
            tmp_path: "is a directory, not a regular file",
            "/dev/zero": "is a character device, not a regular file",
            "/dev/null": "is a character device, not a regular file",
        }
        for path, words in cases.items():
            for call in (reading.check_regular, reading.read_json):
                error = _refused_at_once(lambda c=call, p=path: c(p), words, [fifo])
                assert repr(str(path)) in str(error)
            with pytest.raises(ValueError, match=f"config {re.escape(repr(str(path)))} {words}"):
                reading.read_json(path, what="config")
    finally:
        server.close()
    (tmp_path / "link.onnx").symlink_to("/dev/zero")  # a link is followed, to what it names
    with pytest.raises(ValueError, match="'.*link.onnx' is a character device"):
        reading.check_regular(tmp_path / "link.onnx")
    with pytest.raises(FileNotFoundError):  # the caller's own words for a missing file
        reading.check_regular(tmp_path / "absent")


def test_declared_sizes_are_checked_before_a_byte_is_read(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(100)))
    assert reading.read_at(path, 10, 5, what="x") == bytes(range(10, 15))
    assert reading.read_at(path, 100, 0, what="x") == b""
    for offset, length in ((96, 5), (0, 101), (1 << 62, 8), (-1, 4), (0, -1)):
        words = (
            f"f.bin: tensor 'a' declares {length} bytes at offset {offset}; the file has only 100"
        )
        with pytest.raises(ValueError, match=words):
            reading.read_at(path, offset, length, what="tensor 'a'")


def test_json_is_bounded_and_must_be_an_object(tmp_path):
    path = tmp_path / "genai_config.json"
    path.write_text('{"model": {"context_length": 4096}}')
    assert reading.read_json(path, what="genai config") == {"model": {"context_length": 4096}}
    cases = [
        ("", "is empty: a config.json holds a JSON object"),
        ("[1, 2]", "must hold a JSON object"),
        ("{", "is not valid JSON"),
        (b"\xff{}", "is not valid JSON"),
        ("[" * 100000 + "]" * 100000, "nested too deeply to be a config.json"),
    ]
    for text, words in cases:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(ValueError, match=words):
            reading.read_json(path)
    with open(path, "wb") as handle:  # sparse: nothing is allocated to read past the cap
        handle.truncate((64 << 20) + 1)
    with pytest.raises(ValueError, match="is larger than 64 MiB: not a config.json"):
        reading.read_json(path)
    with pytest.raises(ValueError, match="is larger than 1 MiB: not a genai_config.json"):
        reading.read_json(path, kind="a genai_config.json", max_bytes=1 << 20)


def _zip_with(path, members: dict, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _member(name: str, offset: int, compressed: int, expanded: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.header_offset, info.compress_size, info.file_size = offset, compressed, expanded
    return info


def test_zip_members_are_bounded_by_a_ratio_before_they_are_inflated(tmp_path):
    small = _zip_with(tmp_path / "small.zip", {"a": bytes(1 << 20), "b": os.urandom(1 << 16)})
    with reading.open_zip(small) as (archive, size):
        assert size == os.path.getsize(small)
        reading.check_members(small, archive.infolist(), size)  # 1 MiB of zeros: allowed
    cap = 16 * 1000 + reading.RATIO_ALLOWANCE
    reading.check_members(small, [_member("z", 0, 1000, cap)], 1000)
    with pytest.raises(ValueError, match=f"member 'z' expands 1000 bytes to {cap + 1}, more than"):
        reading.check_members(small, [_member("z", 0, 1000, cap + 1)], 1000)
    with pytest.raises(ValueError, match="member 'z' declares 1000 bytes at offset 10; the file"):
        reading.check_members(small, [_member("z", 10, 1000, 1000)], 1009)
    shared = [_member(name, 0, 1000, reading.RATIO_ALLOWANCE) for name in "abc"]
    words = f"its members expand to {3 * reading.RATIO_ALLOWANCE} bytes, more than 16 times the"
    with pytest.raises(ValueError, match=words):  # members sharing their bytes: the sum counts
        reading.check_members(small, shared, 1000)


def test_a_zip_directory_larger_than_the_cap_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "d.zip"
    cap = reading.MAX_ZIP_DIRECTORY
    end = b"PK\x05\x06" + struct.pack("<4H2LH", 0, 0, 1, 1, cap + 1, 0, 0)
    path.write_bytes(bytes(cap + 2) + end)  # a directory of cap + 1 bytes, said and there
    with pytest.raises(ValueError, match=f"its zip directory declares {cap + 1} bytes"):
        with reading.open_zip(path):
            pass
    path.write_bytes(b"PK\x03\x04" + end)  # said, not there
    with pytest.raises(ValueError, match=f"its zip directory declares {cap + 1} bytes"):
        with reading.open_zip(path):
            pass


def test_an_npy_member_must_declare_the_bytes_it_holds(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, cos=np.zeros((4, 8)))
    with reading.open_zip(path) as (archive, size):
        (info,) = archive.infolist()
        with archive.open(info) as stream:
            shape, _, dtype = reading.npy_header(stream)
            header = stream.tell()
        reading.check_npy_member(path, info, header, shape, dtype)
        with pytest.raises(ValueError, match=f"declares 512 bytes of values after its {header}"):
            reading.check_npy_member(path, info, header, (8, 8), dtype)


# --------------------------------------------------------------------------- FIFOs, every reader


def _fifo_cases(tmp_path) -> dict:
    """name: (the call, the FIFO it must not block on, the words of its refusal)."""
    folder = tmp_path / "m"
    fifo = lambda name: _fifo(tmp_path / name)  # noqa: E731
    cases = {}
    for suffix in (".npy", ".npz", ".safetensors", ".pt"):
        path = fifo(f"cache{suffix}")
        cases[suffix] = (lambda p=path: files.load(str(p)), path)
    path = fifo("model.gguf")
    cases[".gguf"] = (lambda p=path: gguf_file.read(p), path)
    kv, tensors = converted("llama31")
    shards = write_split(tmp_path, "split", kv, tensors, 3)
    shards[1].unlink()
    _fifo(shards[1])
    cases["a split GGUF's second shard"] = (lambda: gguf_file.read(shards[0]), shards[1])
    path = fifo("model.onnx")
    cases[".onnx"] = (lambda p=path: onnx_file.read(p), path)
    model_path = _onnx_model(folder, data=False)
    data = _fifo(folder / "model.onnx.data")
    cases["an ONNX model's external data"] = (lambda: sinpe.check_onnx(model_path), data)
    path = fifo("config.json")
    cases["config.json"] = (lambda: load_config(path), path)
    cases["config.json, as sinpe.rope_config reads it"] = (lambda: sinpe.rope_config(path), path)
    return cases


FIFO_CASES = [
    ".npy", ".npz", ".safetensors", ".pt", ".gguf", "a split GGUF's second shard", ".onnx",
    "an ONNX model's external data", "config.json", "config.json, as sinpe.rope_config reads it",
]  # fmt: skip


@pytest.mark.parametrize("case", FIFO_CASES)
def test_a_fifo_is_refused_at_once_by_every_reader(tmp_path, case):
    call, fifo = _fifo_cases(tmp_path)[case]
    error = _refused_at_once(call, "is a FIFO, not a regular file", [fifo])
    assert str(fifo) in str(error)  # the FIFO itself is named (a shard, the data file)


def test_a_fifo_at_the_command_line_is_one_line_exit_2(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIGS["llama31"]))
    gguf = _fifo(tmp_path / "x.gguf")
    model_path = _onnx_model(tmp_path / "m", data=False)
    data = _fifo(tmp_path / "m" / "model.onnx.data")
    fifo_config = _fifo(tmp_path / "config.json")
    for argv, fifo in (
        (("check", gguf, config), gguf),
        (("check", model_path), data),
        (("check", gguf, fifo_config), fifo_config),
        (("rope", fifo_config, "--seq-len", "4"), fifo_config),
    ):
        try:  # a process of its own: one blocked on a FIFO is killed at the timeout
            result = subprocess.run(
                [sys.executable, "-m", "sinpe", *map(str, argv)],
                capture_output=True, text=True, timeout=HANG,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"sinpe {argv[0]} blocked for {HANG} s on the FIFO {fifo}")
        assert result.returncode == 2 and result.stdout == "", result
        assert result.stderr.count("\n") == 1, result.stderr
        assert f"{str(fifo)!r} is a FIFO, not a regular file" in result.stderr, result.stderr


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".safetensors", ".gguf", ".onnx"])
def test_a_directory_or_a_device_by_a_readers_name_is_refused(tmp_path, suffix):
    folder = tmp_path / f"dir{suffix}"
    folder.mkdir()
    device = tmp_path / f"zero{suffix}"
    device.symlink_to("/dev/zero")
    read = {".gguf": gguf_file.read, ".onnx": onnx_file.read}.get(suffix, files.load)
    for path, words in ((folder, "a directory"), (device, "a character device")):
        _refused_at_once(lambda p=path: read(str(p)), f"is {words}, not a regular file")


# --------------------------------------------------------------------------- truncation


def _cut(path, size: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:size])


def test_an_npy_cut_short_is_refused_naming_the_bytes_it_lacks(tmp_path):
    path = _cache(tmp_path, ".npy")  # 8 x 128 float32: 4096 bytes after a 128-byte header
    size = path.stat().st_size
    for cut in (size - 1, size - 3000, 129, 128):
        _cut(path, cut)
        words = f"its array declares 4096 bytes at offset 128; the file has only {cut}"
        with pytest.raises(ValueError, match=words):
            files.load(str(path))
    for cut in (60, 5, 0):
        _cut(path, cut)
        with pytest.raises(ValueError, match=r"cannot read .*(EOF|header|magic)"):
            files.load(str(path))


def test_an_npz_cut_short_is_refused(tmp_path):
    path = _cache(tmp_path, ".npz")
    size = path.stat().st_size
    for cut in (size - 1, size - 30, size // 2, 30, 0):
        _cut(path, cut)
        with pytest.raises(ValueError, match="BadZipFile: File is not a zip file"):
            files.load(str(path))


def test_a_safetensors_cut_short_is_refused(tmp_path):
    path = _cache(tmp_path, ".safetensors")
    size = path.stat().st_size
    (length,) = struct.unpack("<Q", path.read_bytes()[:8])
    for cut in (size - 1, size - 1024, 8 + length):
        _cut(path, cut)
        with pytest.raises(ValueError, match="tensor '(cos|sin)''s offsets do not fit its shape"):
            files.load(str(path))
    for cut in (8 + length - 1, 9):
        _cut(path, cut)
        with pytest.raises(ValueError, match=f"its header claims {length} bytes"):
            files.load(str(path))
    for cut in (7, 0):
        _cut(path, cut)
        with pytest.raises(ValueError, match="too short for a .safetensors file"):
            files.load(str(path))


def test_a_gguf_cut_short_is_refused(tmp_path):
    kv, tensors = converted("llama31")
    path = write(tmp_path / "m.gguf", kv, tensors)
    data = path.read_bytes()
    cases = {
        len(data) - 4: "the tensors need .* bytes, the file has .* \\(truncated\\?\\)",
        100: "needs .* bytes at offset .*, but only .* remain \\(truncated or corrupt\\)",
        30: "needs .* bytes at offset 24, but only 6 remain",
        23: "23 bytes, too short for a GGUF header",
        0: "0 bytes, too short for a GGUF header",
    }
    for cut, words in cases.items():
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=words):
            gguf_file.read(path, tensors=("rope_freqs.weight",))


def test_a_split_gguf_whose_shard_is_cut_short_is_refused_naming_the_shard(tmp_path):
    kv, tensors = converted("llama31")
    shards = write_split(tmp_path, "s", kv, tensors, 3)
    _cut(shards[2], shards[2].stat().st_size - 8)
    with pytest.raises(ValueError, match=f"{re.escape(str(shards[2]))}: the tensors need"):
        gguf_file.read(shards[0], tensors=("rope_freqs.weight",))


def test_an_onnx_model_or_its_data_cut_short_is_refused(tmp_path):
    path = _onnx_model(tmp_path / "m")
    data = path.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 3):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=r"\(truncated or corrupt ONNX\)|no ir_version"):
            onnx_file.read(path)
    path.write_bytes(data)
    external = tmp_path / "m" / "model.onnx.data"
    for cut in (2047, 1024, 0):
        _cut(external, cut)
        words = "tensor '(cos|sin)_cache' declares 1024 bytes at offset (0|1024); the file "
        with pytest.raises(ValueError, match=words + f"has only {cut}"):
            sinpe.check_onnx(path)


def test_a_config_cut_short_is_refused(tmp_path):
    path = tmp_path / "config.json"
    text = json.dumps(LLAMA)
    for cut in (len(text) - 1, 10, 1):
        path.write_text(text[:cut])
        with pytest.raises(ValueError, match=f"config {re.escape(repr(str(path)))} is not valid"):
            load_config(path)


def test_valid_files_still_read_through_the_room(tmp_path):
    """What the room lets through reads as before: each format's values, by mapping."""
    cos, sin = sinpe.rope_config(LLAMA).rope(8, dtype="float32")
    for suffix in (".npz", ".safetensors"):
        got = files.load(str(_cache(tmp_path, suffix)))
        assert [a.name for a in got] == ["cos", "sin"]
        assert np.array_equal(got[0].values, cos) and np.array_equal(got[1].values, sin)
    (got,) = files.load(str(_cache(tmp_path, ".npy")))
    assert isinstance(got.values, np.memmap)
    assert np.array_equal(got.values, np.concatenate([cos, sin], 1))
    np.save(tmp_path / "f.npy", np.asfortranarray(cos))
    (fortran,) = files.load(str(tmp_path / "f.npy"))
    assert fortran.values.flags.f_contiguous and np.array_equal(fortran.values, cos)
    kv, tensors = converted("llama31")
    shards = write_split(tmp_path, "s", kv, tensors, 2)
    found = gguf_file.read(shards[1], tensors=("rope_freqs.weight",))
    assert np.array_equal(found.data["rope_freqs.weight"], tensors["rope_freqs.weight"])
    assert found.kv["llama.rope.freq_base"] == 500000.0 and len(found.shards) == 2
    model_path = _onnx_model(tmp_path / "m")
    cache = onnx_file.read(model_path).graph.initializers["sin_cache"]
    values = onnx_file.tensor_values(onnx_file.read(model_path), cache)
    exact = sinpe.rope_config(LLAMA).rope(8, layout="compact", dtype="float32")[1]
    assert np.array_equal(values, exact)


FUZZ = Path(__file__).with_name("data") / "fuzz"


@pytest.mark.parametrize("fmt", ["npy", "npz", "safetensors", "pt", "gguf", "onnx"])
def test_the_fuzzers_seeds_are_valid_files_each_read(fmt):
    """tools/fuzz's seed corpora (tools/fuzz/seeds.py) read as they were written: a seed
    refused would start the fuzzer from refusals only."""
    if fmt == "pt":
        pytest.importorskip("torch")
    seeds = sorted((FUZZ / fmt).iterdir())
    assert seeds
    for seed in seeds:
        if fmt == "gguf":
            assert gguf_file.read(seed).kv["general.architecture"] in ("llama", "phi3", "qwen3")
        elif fmt == "onnx":
            assert onnx_file.read(seed).graph.nodes[-1].op_type == "GroupQueryAttention"
        else:
            arrays = files.load(str(seed))
            assert arrays[0].shape[0] == 4 and all(np.isfinite(a.values).all() for a in arrays)


def _refused_within(call, limit: int = 1 << 20) -> str:
    """The words of ``call()``'s refusal, Python's peak allocation meanwhile under ``limit``."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as found:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit, peak
    return str(found.value)


# found by tools/fuzz/fuzz_readers.py (npy, seconds in): an .npy of version 250.255; NumPy
# read it as 2.0 and read the 4-byte header length it declares (~4 GiB) before bounding it
NPY_FUZZ_FINDING = base64.b64decode(
    "k05VTVBZ+v///4n/hNibmnNjcic6IKc8ZjQnLCAnZm9ydHJhIFRydWUsP97/fz+1/X8/AACAP///fz/9/38/"
    "+P9/PwAAgD9AUQo/MxHVviZwfb8AAIA/ak5zP+x7Tj9XLxU/AACAP5i4fj+l5Xo/gD9qTnM/7HtOP1cvFT8A"
    "AIA/mLh+P6Xlej/vkHQ/AACD4n8/AD8AAACAP6z/fz+w/n8/Df1/PwAAgD/4/38/3v9/P7X/fz8AAIA///9/"
    "P/3/fz/4/38/"
)
# found by tools/fuzz/fuzz_readers.py (pt): a legacy .pt whose pickle opens with a string of
# 2**32 - 4 bytes; torch's weights_only unpickler read (allocated) that much from 19 bytes
PT_FUZZ_FINDING = bytes.fromhex("582afcffffffffffff4b03084b03617450 4b08".replace(" ", ""))


def test_an_npy_header_length_is_bounded_before_it_is_read(tmp_path):
    path = tmp_path / "found.npy"
    path.write_bytes(NPY_FUZZ_FINDING)
    words = _refused_within(lambda: files.load(str(path)))
    assert "an .npy of version 250.255 (1.0 to 3.0 are read)" in words
    for version in (b"\x02\x00", b"\x03\x00"):  # a header of 2**32 - 1 bytes declared
        path.write_bytes(b"\x93NUMPY" + version + b"\xff\xff\xff\xff" + bytes(64))
        words = _refused_within(lambda: files.load(str(path)))
        assert "an .npy header of 4294967295 bytes (at most 10000 are read)" in words
        with zipfile.ZipFile(tmp_path / "m.npz", "w") as archive:
            for name in ("cos.npy", "sin.npy"):
                archive.writestr(name, path.read_bytes())
        words = _refused_within(lambda: files.load(str(tmp_path / "m.npz")))
        assert "an .npy header of 4294967295 bytes" in words
    path.write_bytes(b"\x93NUMPY\x01\x00\x50\x00{'descr'")
    with pytest.raises(ValueError, match="an .npy header of 80 bytes, cut short at 8"):
        files.load(str(path))


def test_a_legacy_pt_is_read_through_a_cap_on_its_lengths(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "found.pt"
    path.write_bytes(PT_FUZZ_FINDING)
    words = _refused_within(lambda: files.load(str(path)))
    assert words.startswith(f"cannot read {str(path)!r}: ")


def test_a_bounded_reader_never_reads_past_the_end(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(10)))
    with reading.bounded(path) as stream:
        assert stream.read(4) == bytes(range(4))
        assert stream.read(1 << 40) == bytes(range(4, 10))  # no 1 TiB buffer asked for
        assert stream.read() == b"" and stream.tell() == 10
        stream.seek(8)
        buffer = bytearray(5)
        assert stream.readinto(buffer) == 2 and buffer[:2] == bytes([8, 9])
        with pytest.raises(OSError):
            stream.fileno()  # a library reads through the cap, never around it


def test_a_small_text_file_is_read_bounded_and_a_fifo_refused(tmp_path):
    """``read_text`` (a checkout's .git/HEAD): its text; too long, not UTF-8 or a FIFO is
    refused naming it."""
    head = tmp_path / "HEAD"
    head.write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert (
        reading.read_text(head, what="HEAD").strip() == "0123456789abcdef0123456789abcdef01234567"
    )
    head.write_bytes(b"x" * 4097)
    with pytest.raises(ValueError, match="is larger than 4096 bytes"):
        reading.read_text(head, what="HEAD")
    head.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        reading.read_text(head, what="HEAD")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO, not a regular file"):
        reading.read_text(fifo, what="HEAD")


# --------------------------------------------------------------------------- from mutation testing


def test_a_small_text_files_refusals_name_it_and_nothing_past_the_cap_is_read(tmp_path):
    """``read_text``: a file of exactly ``max_bytes`` is read; each refusal names the file as
    the caller said it; a large (sparse) file is refused having read only the cap."""
    head = tmp_path / "HEAD"
    named = f"HEAD {str(head)!r}"
    head.write_bytes(b"x" * 4096)
    assert reading.read_text(head, what="HEAD") == "x" * 4096
    head.write_bytes(b"x" * 4097)
    with pytest.raises(ValueError, match=re.escape(f"{named} is larger than 4096 bytes")):
        reading.read_text(head, what="HEAD")
    head.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match=re.escape(f"{named} is not UTF-8 text")):
        reading.read_text(head, what="HEAD")
    head.unlink()
    os.mkfifo(head)
    with pytest.raises(ValueError, match=re.escape(f"{named} is a FIFO, not a regular file")):
        reading.read_text(head, what="HEAD")
    head.unlink()
    with open(head, "wb") as handle:  # sparse: a read of the whole file would allocate 64 MiB
        handle.truncate(64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="is larger than 4096 bytes"):
            reading.read_text(head, what="HEAD")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_a_bounded_reader_reads_only_the_bytes_the_file_had_when_opened(tmp_path):
    """``BoundedReader``: a file grown after it was opened is read to its size then, never
    past; ``read(0)`` reads nothing, ``read(None)`` the rest; ``seek`` takes its whence."""
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(10)))
    with reading.bounded(path) as stream:
        with open(path, "ab") as grower:
            grower.write(bytes(range(10, 20)))
        assert stream.readable() and stream.seekable()
        assert stream.read(0) == b"" and stream.tell() == 0
        assert stream.seek(2) == 2 and stream.seek(2, os.SEEK_CUR) == 4
        assert stream.read(1 << 40) == bytes(range(4, 10))
        assert stream.read() == b"" and stream.read(-1) == b"" and stream.tell() == 10
        stream.seek(6)
        assert stream.read(None) == bytes(range(6, 10))


def test_a_caches_size_refusal_says_both_sizes(tmp_path):
    """``--max-bytes``: the refusal says the cache's size and the cap, each in MiB or GiB."""
    path = tmp_path / "c.npy"
    np.save(path, np.zeros(1 << 19, np.float32))  # 2 MiB of values
    words = f"{path}: the cache holds 2 MiB of values, more than --max-bytes 1 MiB:"
    with pytest.raises(ValueError, match=re.escape(words)):
        files.load(str(path), max_bytes=1 << 20)
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({3 << 28},), }}"
    header += " " * (63 - len(header) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    with pytest.raises(ValueError, match="holds 3 GiB of values, more than --max-bytes 1 GiB:"):
        files.load(str(path), max_bytes=1 << 30)  # said before a byte of values is looked for


def _safetensors_of(path, tensors: dict, metadata=None):
    """A .safetensors file of ``tensors`` (name: (dtype word, shape, bytes))."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


def test_a_safetensors_cache_per_layer_type_narrow_or_recorded_or_empty_is_read(tmp_path):
    """A .safetensors cache: ``--layer-type`` picks its pair; a BF16 tensor is its bits;
    sinpe's own ``dtype`` record makes 16-bit integers bfloat16 bits (a metadata that is not
    an object is no record); an empty tensor is an empty array of its dtype."""
    table = np.arange(8, dtype=np.float32).reshape(2, 4)
    layers = {
        f"{part}_{kind}": ("F32", [2, 4], (table + i).tobytes())
        for i, (part, kind) in enumerate(
            (p, k) for k in ("full", "sliding") for p in ("cos", "sin")
        )
    }
    path = _safetensors_of(tmp_path / "layers.safetensors", layers)
    cos, sin = files.load(path, layer_type="sliding")
    assert (cos.name, sin.name, cos.dtype) == ("cos_sliding", "sin_sliding", "float32")
    assert np.array_equal(cos.values, table + 2) and np.array_equal(sin.values, table + 3)
    bits = np.array([[0x3F80, 0x4000]], np.uint16)  # 1.0 and 2.0 in bfloat16
    path = _safetensors_of(
        tmp_path / "bf16.safetensors", {"cache": ("BF16", [1, 2], bits.tobytes())}
    )
    (cache,) = files.load(path)
    assert (cache.name, cache.dtype, cache.values.dtype) == ("cache", "bfloat16", np.uint16)
    assert np.array_equal(cache.values, bits)
    pair = {name: ("U16", [1, 2], bits.tobytes()) for name in ("cos", "sin")}
    path = _safetensors_of(tmp_path / "record.safetensors", pair, {"dtype": "bfloat16"})
    assert [(s.name, s.dtype) for s in files.load(path)] == [
        ("cos", "bfloat16"),
        ("sin", "bfloat16"),
    ]
    path = _safetensors_of(tmp_path / "plain.safetensors", pair, ["not", "an", "object"])
    assert [s.dtype for s in files.load(path)] == ["uint16", "uint16"]
    one = np.array([[1234.5]], np.float32)
    path = _safetensors_of(tmp_path / "one.safetensors", {"cache": ("F32", [1, 1], one.tobytes())})
    (cache,) = files.load(path)
    assert np.array_equal(cache.values, one)
    path = _safetensors_of(tmp_path / "empty.safetensors", {"cache": ("F32", [0, 4], b"")})
    (cache,) = files.load(path)
    assert cache.values.shape == (0, 4) and cache.values.dtype == np.float32
    assert cache.dtype == "float32"


def test_a_reader_failing_without_words_is_still_one_line(tmp_path, monkeypatch):
    """An exception with no message from a reader's library reads as its type, one line."""
    path = tmp_path / "c.npy"
    np.save(path, np.zeros(4))

    def silent(*args):
        raise RuntimeError()

    monkeypatch.setattr(files, "_from_npy", silent)
    with pytest.raises(ValueError) as caught:
        files.load(str(path))
    assert str(caught.value) == f"cannot read {str(path)!r}: RuntimeError: RuntimeError"


def test_an_npy_cache_empty_or_not_keeps_its_dtype_and_name(tmp_path):
    path = tmp_path / "c.npy"
    np.save(path, np.zeros((0, 4), np.float32))
    (cache,) = files.load(str(path))
    assert (cache.name, cache.dtype, cache.values.shape) == ("array", "float32", (0, 4))
    assert cache.values.dtype == np.float32
    np.save(path, np.full((2, 4), 0.25, np.float32))
    (cache,) = files.load(str(path))
    assert (cache.name, cache.dtype) == ("array", "float32")
    assert np.array_equal(cache.values, np.full((2, 4), 0.25, np.float32))


def test_a_pt_cache_in_each_form_it_is_saved_in(tmp_path):
    """A .pt cache: one tensor, a (cos, sin) pair, named tensors (one pair per layer type),
    narrow dtypes as their bits whatever their strides; anything else refused, and never a
    Python object run (legacy format or zip)."""
    torch = pytest.importorskip("torch")
    cos = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    sin = cos + 100
    path = tmp_path / "c.pt"

    def load(value, legacy=False, **options):
        path.unlink(missing_ok=True)
        torch.save(value, path, _use_new_zipfile_serialization=not legacy)
        return files.load(str(path), **options)

    for legacy in (False, True):
        (one,) = load(cos, legacy)
        assert one.name == "cache" and np.array_equal(one.values, cos.numpy())
        pair = load((cos, sin), legacy)
        assert [s.name for s in pair] == ["cos", "sin"]
        assert np.array_equal(pair[0].values, cos.numpy())
        assert np.array_equal(pair[1].values, sin.numpy())
        layers = {"cos_full": cos, "sin_full": sin, "cos_sliding": cos + 1, "sin_sliding": sin + 1}
        found = load(layers, legacy, layer_type="sliding")
        assert [s.name for s in found] == ["cos_sliding", "sin_sliding"]
        assert np.array_equal(found[0].values, cos.numpy() + 1)
        for value, words in (
            ({0: cos, 1: sin}, "holds a dict, not named tensors"),
            ([cos, sin, cos], "holds a list, not named tensors"),
            ({"cos": 1, "sin": sin}, "'cos' is a int, not a tensor"),
            ({"cos": cos, "sin": sin, "when": datetime.date(2026, 1, 1)}, "beyond tensors"),
        ):
            with pytest.raises(ValueError, match=re.escape(words)):
                load(value, legacy)
    half = torch.arange(6, dtype=torch.int16).reshape(3, 2).view(torch.bfloat16).t()
    (bits,) = load(half)  # a transposed view: its last axis is not contiguous
    assert (bits.name, bits.dtype, bits.values.dtype) == ("cache", "bfloat16", np.uint16)
    assert np.array_equal(bits.values, np.arange(6, dtype=np.uint16).reshape(3, 2).T)
    fp8 = torch.arange(6, dtype=torch.uint8).reshape(2, 3).view(torch.float8_e4m3fn)
    (bits,) = load(fp8)  # an odd width: no 16-bit view of it exists
    assert (bits.dtype, bits.values.dtype) == ("float8_e4m3fn", np.uint8)
    assert np.array_equal(bits.values, np.arange(6, dtype=np.uint8).reshape(2, 3))


def test_a_file_shortened_while_read_is_refused_naming_the_bytes_it_had(tmp_path):
    """``read_exactly``: fewer bytes than the size said a moment before (the file cut
    while read) is the same refusal as a size that was short from the start."""
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(20)))

    class Shortened:
        def __init__(self, stream):
            self.stream = stream

        def fileno(self):
            return self.stream.fileno()

        def seek(self, offset):
            return self.stream.seek(offset)

        def read(self, count):
            return self.stream.read(count)[:-1]

    with reading.opened(path) as stream:
        assert reading.read_exactly(stream, 10, 5, path=path, what="x") == bytes(range(10, 15))
        words = "f.bin: tensor 'a' declares 5 bytes at offset 10; the file has only 14"
        with pytest.raises(ValueError, match=re.escape(words)):
            reading.read_exactly(Shortened(stream), 10, 5, path=path, what="tensor 'a'")


@pytest.mark.parametrize("version", [(2, 0), (3, 0)])
def test_an_npy_of_version_2_or_3_is_read(tmp_path, version):
    """Their header's length takes 4 bytes (version 1.0's, 2)."""
    path = tmp_path / "c.npy"
    table = np.full((2, 4), 0.5, np.float32)
    with open(path, "wb") as stream:
        np.lib.format.write_array(stream, table, version=version)
    (cache,) = files.load(str(path))
    assert cache.dtype == "float32" and np.array_equal(cache.values, table)
