"""Hostile input and files: every case of the hostile-input issue, each a clear TypeError or
ValueError naming the argument or config key (the CLI: one line, exit 2), nothing written on
failure, nothing read forever, memory bounded by what was asked for."""

import functools
import json
import os
import re
import resource
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sinpe
from sinpe import conventions
from sinpe._files import caches as files
from sinpe._files import gguf as gguf_file
from sinpe._files import onnx as onnx_file
from sinpe.compat import mae
from sinpe.rope_scaling import RopeScaling

TIMEOUT = 120  # seconds: only catches a hang


def sinpe_cli(*args, limits=None, stdin=None):
    def preexec():
        for which, value in (limits or {}).items():
            resource.setrlimit(which, (value, value))

    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=preexec if limits else None,
    )


# --------------------------------------------------------------------------- wrong exceptions

YARN = {"rope_type": "yarn", "original_max_position_embeddings": 4096}
LLAMA3 = {
    "rope_type": "llama3",
    "original_max_position_embeddings": 8192,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
}


@pytest.mark.parametrize(
    "scaling, offset, match",
    [
        ({"rope_type": "linear", "factor": 10**400}, 0, r"scaling\['factor'\] must be finite"),
        ({**YARN, "factor": 5e-324}, 0, "no finite inverse frequencies"),
        ({**LLAMA3, "factor": 5e-324}, 0, "no finite inverse frequencies"),
        (
            {"rope_type": "dynamic", "factor": 1e306, "max_position_embeddings": 2048},
            10**6,
            r"scaling\['factor'\] must be at most 10000",
        ),
        ({**YARN, "factor": 4.0, "beta_fast": -1.0}, 0, r"scaling\['beta_fast'\].*> 0"),
        ({**YARN, "factor": 4.0, "beta_slow": 0.0}, 0, r"scaling\['beta_slow'\].*> 0"),
        ({"rope_type": "proportional", "factor": 1e-320}, 0, "no finite inverse frequencies"),
        (RopeScaling("bogus", (), None), 0, "unknown rope_type 'bogus'"),
        ({"rope_type": "linear", "factor": float("inf")}, 0, "finite"),
    ],
)
def test_bad_scaling_values_are_value_errors_naming_the_scaling(backend, scaling, offset, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray RuntimeWarning either
        with pytest.raises(ValueError, match=match):
            sinpe.rope(8, 64, scaling=scaling, offset=offset, backend=backend)


@settings(max_examples=60, deadline=None)
@given(
    rope_type=st.sampled_from(["linear", "dynamic", "yarn", "llama3", "proportional"]),
    factor=st.one_of(
        st.floats(min_value=5e-324, max_value=1e308), st.integers(1, 10**400), st.just(1e-320)
    ),
)
def test_any_factor_is_a_table_or_a_value_error(rope_type, factor):
    scaling = {"rope_type": rope_type, "factor": factor, "max_position_embeddings": 2048}
    scaling |= {"original_max_position_embeddings": 4096} if rope_type == "yarn" else {}
    scaling |= LLAMA3 | {"factor": factor} if rope_type == "llama3" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            cos, sin = sinpe.rope(4, 16, scaling=scaling, offset=10**6)
        except ValueError as exc:
            assert "scaling" in str(exc) or "attention factor" in str(exc)
        else:
            assert np.isfinite(cos).all() and np.isfinite(sin).all()


def test_object_arrays_of_exact_numbers_are_positions(backend):
    ints = np.array([0, 1, 2, 2**52], dtype=object)
    got = sinpe.encode(ints, 4, backend=backend)
    assert np.array_equal(got, sinpe.encode(np.array([0, 1, 2, 2**52]), 4, backend=backend))
    mixed = np.array([1, 2.5], dtype=object)
    assert np.array_equal(sinpe.encode(mixed, 4), sinpe.encode([1.0, 2.5], 4))
    with pytest.raises(ValueError, match=r"\|p\| < 2\*\*53, got 1152921504606846976"):
        sinpe.encode(np.array([2**60], dtype=object), 4)
    with pytest.raises(TypeError, match="got a str in an object array"):
        sinpe.encode(np.array([1, "a"], dtype=object), 4)
    with pytest.raises(TypeError, match="masked array"):
        sinpe.encode(np.ma.masked_array([1.0, 2.0], mask=[True, False]), 4)


def test_offset_messages_are_true(backend):
    assert sinpe.sinusoidal_positional_encoding(0, 4, offset=2**53, backend=backend).shape == (0, 4)
    assert sinpe.rope(0, 4, offset=2**53, backend=backend)[0].shape == (0, 4)
    with pytest.raises(
        ValueError, match="the last row's, offset \\+ seq_len - 1, is 9007199254740992"
    ):
        sinpe.sinusoidal_positional_encoding(1, 4, offset=2**53, backend=backend)


# --------------------------------------------------------------------------- silently wrong


@pytest.mark.parametrize(
    "dtype, factor", [("float32", 1e300), ("float16", 1e5), ("bfloat16", 1e39)]
)
def test_an_attention_factor_the_dtype_cannot_hold_is_refused(dtype, factor):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    scaling = {**YARN, "factor": 4.0, "attention_factor": factor}
    with pytest.raises(ValueError, match=f"larger than dtype {dtype}"):
        sinpe.rope(8, 64, scaling=scaling, dtype=dtype)
    assert np.isfinite(sinpe.rope(8, 64, scaling=scaling)[0]).all()  # float64 holds it


def test_grid_blocks_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="grid's blocks have 5 and 1 points"):
        mae.get_2d_sincos_pos_embed_from_grid(8, [np.arange(5.0), np.arange(1.0)])


@pytest.mark.parametrize(
    "get",
    [
        lambda: sinpe.frequencies(16),
        lambda: sinpe.rope_frequencies(16)[0],
        lambda: sinpe.rope_config({"head_dim": 16, "rope_theta": 1e4}).frequencies()[0],
    ],
)
def test_frequency_vectors_handed_out_are_copies_a_write_cannot_reach_the_cache(get):
    """Each call hands out a copy (the cached vector, read-only in immutable memory, is
    tested in test_reliability): a caller that writes into it changes no later call."""
    array = get()
    before = array.copy()
    array[:] = -1.0
    assert np.array_equal(get(), before)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
def test_ndarray_subclasses_as_out_one_rule_on_both_backends(backend):
    want = sinpe.sinusoidal_positional_encoding(4, 6)
    matrix = np.matrix(np.zeros((4, 6)))
    got = sinpe.sinusoidal_positional_encoding(4, 6, out=matrix, backend=backend)
    assert type(got) is np.ndarray and np.shares_memory(got, matrix)
    assert np.array_equal(np.asarray(matrix), want)
    masked = np.ma.masked_array(np.zeros((4, 6)), mask=np.zeros((4, 6), dtype=bool))
    masked.mask[1, 2] = True
    sinpe.sinusoidal_positional_encoding(4, 6, out=masked, backend=backend)
    assert masked.mask[1, 2] and masked.mask.sum() == 1  # the mask is the user's
    assert np.array_equal(masked.data, want)


def test_unknown_keys_warn_once_naming_them():
    scaling = {"rope_type": "linear", "factor": 2.0, "factr": 3.0, "extra_thing": 1}
    with pytest.warns(UserWarning, match="ignoring the keys 'extra_thing', 'factr'"):
        sinpe.rope(4, 8, scaling=scaling)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sinpe.rope(4, 8, scaling=scaling)  # said once
    config = {
        "model_type": "llama",
        "head_dim": 8,
        "rope_scaling": {"rope_type": "default", "mystery": 1},
    }
    with pytest.warns(UserWarning, match="ignoring the keys 'mystery'"):
        sinpe.rope_config(config)


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"num_attention_heads": 0, "hidden_size": 64, "rope_theta": 1e4}', "num_attention_heads"),
        ('{"head_dim": 1e400, "rope_theta": 1e4}', "head_dim must be an integer, got inf"),
        (
            '{"head_dim": 64, "partial_rotary_factor": 1e400, "rope_theta": 1e4, '
            '"rope_scaling": {"rope_type": "linear", "factor": 2}}',
            "partial_rotary_factor",
        ),
        (
            '{"head_dim": 1' + "0" * 400 + ', "rope_theta": 1e4}',
            "head_dim must be an integer, got a 401-digit integer",
        ),
        ('{"head_dim": "64", "rope_theta": 1e4}', "head_dim must be an integer, got '64'"),
        ('{"head_dim": 64.5, "rope_theta": 1e4}', "head_dim must be an integer, got 64.5"),
        ('{"head_dim": 64, "rope_theta": 1e400}', "rope_theta must be a finite number"),
        ('{"a":' * 100000 + "1" + "}" * 100000, "nested too deeply"),
    ],
)
def test_bad_configs_at_the_command_line(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    result = sinpe_cli("rope", path, "--seq-len", 4)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr


def test_files_that_are_not_configs_are_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # open() would block forever
    for path in ("/dev/zero", fifo):
        result = sinpe_cli("rope", path)
        assert result.returncode == 2 and "not a regular file" in result.stderr
    # a folder is a model's: its config.json is read, refused the same way when it is not one
    result = sinpe_cli("rope", tmp_path)
    assert result.returncode == 2 and "holds no config.json" in result.stderr
    os.mkfifo(tmp_path / "config.json")
    result = sinpe_cli("rope", tmp_path)
    assert result.returncode == 2 and "not a regular file" in result.stderr
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(17 << 20)
    result = sinpe_cli("rope", big)
    assert result.returncode == 2 and "larger than 16 MiB" in result.stderr


def test_a_reader_that_leaves_ends_the_command_quietly():
    process = subprocess.Popen(
        [sys.executable, "-m", "sinpe", "table", "3000", "512", "--dtype", "float16"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.readline()  # `| head -1`
    process.stdout.close()
    _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0 and stderr == b""


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    previous = tmp_path / "prev.npy"
    assert sinpe_cli("table", 4, 4, "-o", previous).returncode == 0
    result = sinpe_cli("table", 5000, 512, "-o", previous, limits={resource.RLIMIT_FSIZE: 64 << 10})
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert np.load(previous).shape == (4, 4)  # still the valid old table
    assert os.listdir(tmp_path) == ["prev.npy"]  # no temporary file left behind
    result = sinpe_cli("rope", "/dev/null", "-o", previous)  # a refused config writes nothing
    assert result.returncode == 2 and np.load(previous).shape == (4, 4)


def test_output_names_are_the_files_written(tmp_path):
    pytest.importorskip("matplotlib")
    result = sinpe_cli("plot", 8, 8, "-o", tmp_path / "noext")
    assert result.returncode == 0 and f"wrote {tmp_path / 'noext.png'}" in result.stdout
    assert (tmp_path / "noext.png").exists()
    for verb in (("plot", 8, 8), ("table", 4, 4)):
        result = sinpe_cli(*verb, "-o", "")
        assert result.returncode == 2 and "-o needs a file name" in result.stderr


# --------------------------------------------------------------------------- memory


def test_entries_without_arrays_are_bounded_too():
    previous = sinpe.set_cache_limit(0)
    try:
        for i in range(2000):
            sinpe.encode([1.0], 1, base=2 + i, convention="fairseq")
        assert sinpe.cache_info().entries == 0
    finally:
        sinpe.set_cache_limit(previous)


def test_distinct_conventions_do_not_grow_without_bound():
    from sinpe.compat import diffusers

    for i in range(conventions._MAX_TOKENS + 500):
        diffusers.get_timestep_embedding([1.0], 4, scale=1 + i * 1e-6)
    assert len(conventions._TOKENS) <= conventions._MAX_TOKENS
    a = conventions.diffusers(scale=3.0)
    sinpe.clear_cache()
    assert len(conventions._TOKENS) == 0
    b = conventions.diffusers(scale=3.0)
    assert a == b and a._token != b._token  # a fresh token: a miss, never a wrong hit
    assert np.array_equal(
        sinpe.encode([5.0], 8, convention=a), sinpe.encode([5.0], 8, convention=b)
    )


# --------------------------------------------------------------------------- hostile files
# Each refused with its own reason (asserted: a later step refusing anyway must not hide a
# missing guard), and the bombs in a process of their own, its peak memory measured.

LLAMA_CONFIG = {
    "model_type": "llama",
    "head_dim": 64,
    "max_position_embeddings": 4096,
    "rope_theta": 5e5,
}
SEGMENT = 16 << 20  # bytes of zeros deflated once, repeated: a bomb built in milliseconds


def _deflated_zeros(head: bytes, zeros: int) -> tuple[bytes, int]:
    """A raw deflate stream of ``head`` then ``zeros`` zero bytes (a multiple of SEGMENT),
    and its CRC-32: blocks ended by a full flush, so that copies of one segment chain."""
    import zlib

    def flushed(data: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)

    block = bytes(SEGMENT)
    crc = zlib.crc32(head)
    for _ in range(zeros // SEGMENT):
        crc = zlib.crc32(block, crc)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    return flushed(head) + flushed(block) * (zeros // SEGMENT) + final, crc


def _zip(path, members: dict) -> None:
    """A zip of ``members`` (name -> (deflated bytes, crc, expanded size)), written by hand:
    zipfile cannot store bytes deflated elsewhere."""
    import struct

    local, central = b"", b""
    for name, (data, crc, size) in members.items():
        raw = name.encode()
        fields = (20, 0, 8, 0, 0x21, crc, len(data), size, len(raw), 0)
        central += struct.pack("<4s2H", b"PK\x01\x02", 20, 20) + struct.pack("<4H3L2H", *fields[1:])
        central += struct.pack("<3H2L", 0, 0, 0, 0, len(local)) + raw
        local += struct.pack("<4sH4H3L2H", b"PK\x03\x04", *fields) + raw + data
    count = len(members)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(local), 0)
    path.write_bytes(local + central + end)


def _npy_head(shape, dtype) -> bytes:
    import io

    stream = io.BytesIO()
    header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": tuple(shape)}
    np.lib.format.write_array_header_1_0(stream, header)
    return stream.getvalue()


def _npz_bomb(path, rows: int = 1 << 20) -> None:
    """cos and sin of ``rows`` x 64 float64 zeros, each deflated ~1000x."""
    head = _npy_head((rows, 64), np.float64)
    data, crc = _deflated_zeros(head, rows * 64 * 8)
    member = (data, crc, len(head) + rows * 64 * 8)
    _zip(path, {"cos.npy": member, "sin.npy": member})


# VmHWM: the peak resident memory of this process's own image (ru_maxrss would carry the
# forking parent's peak, pytest's, across exec, and hide any growth below it)
PEAK = """
import sys
import sinpe
from sinpe._files import caches as files
from sinpe._files import gguf as gguf_file
from sinpe._files import onnx as onnx_file
from sinpe._rope import config

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

before = peak()
try:
    {call}
except ValueError as exc:
    print("REFUSED", exc)
print("GROWN", (peak() - before) * 1024)
"""


def _refused_in_bounded_memory(path, call: str, words: str) -> int:
    """Run ``call`` (of ``path``) in a fresh interpreter: it must refuse with ``words``, its
    peak memory over its baseline (after imports) at most twice the file plus 64 MiB."""
    script = PEAK.format(call=call.format(path=str(path)))
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT
    )
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert "REFUSED" in lines, result.stdout + result.stderr
    assert words in lines["REFUSED"], lines["REFUSED"]
    grown, size = int(lines["GROWN"]), os.path.getsize(path)
    print(f"{os.path.basename(path)}: {size} bytes, peak grown by {grown} bytes")
    assert grown <= 2 * size + (64 << 20), (grown, size)
    return grown


def test_an_npz_bomb_is_refused_before_it_is_inflated_in_bounded_memory(tmp_path):
    path = tmp_path / "bomb.npz"
    _npz_bomb(path)  # 2 x 512 MiB declared, about 1 MB on disk
    assert os.path.getsize(path) < 2 << 20
    words = "member 'cos.npy' expands"
    _refused_in_bounded_memory(path, "files.load({path!r})", words)
    with pytest.raises(ValueError, match=f"{words} .* to 536871040, more than 16 times"):
        files.load(str(path))
    result = sinpe_cli("check", path, _config_file(tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and words in result.stderr


def test_an_npz_member_declaring_more_than_it_holds_is_refused(tmp_path):
    """An .npy header asking for more than the member inflates to (a stored member, no
    ratio to exceed): refused by what the member holds, before the array is allocated."""
    path = tmp_path / "lying.npz"
    head = _npy_head((1 << 20, 64), np.float64)  # 512 MiB declared
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name in ("cos.npy", "sin.npy"):
            archive.writestr(name, head + bytes(4096))
    words = f"member 'cos.npy' declares 536870912 bytes of values after its {len(head)}-byte"
    _refused_in_bounded_memory(path, "files.load({path!r})", words)
    with pytest.raises(ValueError, match=words + " header; the member holds 4096"):
        files.load(str(path))


def test_a_torch_zip_bomb_is_refused_before_torch_reads_it(tmp_path):
    """torch.load maps a zip .pt by name: its members are bounded first, with or without
    torch installed (the check comes before torch is imported)."""
    path = tmp_path / "bomb.pt"
    data, crc = _deflated_zeros(b"", 32 * SEGMENT)
    pickle_bytes = b"\x80\x02}q\x00."  # an empty dict
    _zip(path, {"archive/data.pkl": (*_deflated_zeros(pickle_bytes, 0), len(pickle_bytes))})
    _zip(path, {"archive/data.pkl": (b"", 0, 0), "archive/data/0": (data, crc, 32 * SEGMENT)})
    words = "member 'archive/data/0' expands"
    _refused_in_bounded_memory(path, "files.load({path!r})", words)
    with pytest.raises(ValueError, match=f"{words} .* to {32 * SEGMENT}, more than 16 times"):
        files.load(str(path))


def _many_ifs(count: int = 40) -> bytes:
    """``count`` If nodes, each with a then-branch of 2**18 - 8 empty nodes: each graph under
    the old per-graph bound, the file far over it (20 MB, 10 million records)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from onnx_files import graph, model, node

    branch = graph([b""] * ((1 << 18) - 8))
    return model(graph([node("If", ["c"], ["d"], then_branch=("graph", branch))] * count))


def test_an_onnx_of_many_subgraphs_is_refused_by_one_budget_for_the_file(tmp_path):
    path = tmp_path / "ifs.onnx"
    path.write_bytes(_many_ifs())
    words = "more than 262144 nodes, initializers, values, attributes and subgraphs in the file"
    _refused_in_bounded_memory(path, "onnx_file.read({path!r})", words)
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    result = sinpe_cli("check", path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and words in result.stderr


def _gguf_tensors(count: int) -> bytes:
    """A GGUF header declaring ``count`` tensors, every record there (empty F32 tensors)."""
    import struct

    records = [b"GGUF", struct.pack("<IQQ", 3, count, 0)]
    for i in range(count):
        name = b"%06x" % i
        records.append(struct.pack("<Q", 6) + name + struct.pack("<IqiQ", 1, 0, 0, 0))
    return b"".join(records)


@pytest.mark.parametrize(
    "case, words",
    [
        ("2^20 tensors, every record there", "1048576 tensors, more than 65536"),
        ("a 2^40-element array, 16 MiB there", "has 1099511627776 elements, more than 16777216"),
        (
            "2^24 numbers said, 16 MiB there",
            "(16777216 x FLOAT32) needs 67108864 bytes at offset 52, but only 16777216",
        ),
    ],
)
def test_a_gguf_declaring_a_huge_count_is_refused_in_bounded_memory(tmp_path, case, words):
    import struct

    def array(count: int) -> bytes:  # one key "arch": an array of ``count`` float32, 16 MiB there
        key = struct.pack("<Q", 4) + b"arch"
        head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + key
        return head + struct.pack("<IIQ", 9, 6, count) + bytes(16 << 20)

    data = {
        "2^20 tensors, every record there": lambda: _gguf_tensors(1 << 20),
        "a 2^40-element array, 16 MiB there": lambda: array(1 << 40),
        "2^24 numbers said, 16 MiB there": lambda: array(1 << 24),
    }[case]()
    path = tmp_path / "count.gguf"
    path.write_bytes(data)
    _refused_in_bounded_memory(path, "gguf_file.read({path!r})", words)
    with pytest.raises(ValueError, match=re.escape(words)):
        gguf_file.read(path)


def _config_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_CONFIG))
    return path


@functools.cache
def _onnx_cases() -> dict:
    """name: (the .onnx bytes, the words of its refusal)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from onnx_files import field, graph, model, nested, node, tensor, text, varint

    head = field(1, 0, 8)  # ir_version 8

    def external(location, offset=0, length=16, dims=(2, 2)):
        place = {"location": location, "offset": offset, "length": length}
        return model(graph([], [tensor("cos_cache", dims=dims, external=place)]))

    outside = "is not a file in the model's folder (refused: a model names only its own files)"
    packed = text(4, "C") + field(5, 2, text(1, "x") + field(8, 2, b"\x01" * (1 << 17)))
    return {
        "empty": (b"", "empty, not an ONNX model"),
        "not protobuf": (b"\xff" * 64, "a number longer than 10 bytes at byte"),
        "an 11-byte varint": (head + b"\x38" + b"\xff" * 11, "a number longer than 10 bytes"),
        "a 2^40-byte field": (head + b"\x3a" + varint(1 << 40), "a field of 1099511627776 bytes"),
        "a field past the end": (head + field(7, 2, b"x" * 10)[:-3], "a field of 10 bytes where 7"),
        "a group wire type": (head + b"\x3b", "the wire type 3 (groups and unknown types are"),
        "no graph": (head, "no ir_version or no graph: not an ONNX model"),
        "graphs 17 deep": (nested(17), "graphs nested more than 16 deep"),
        "an external path outside the folder": (external("../secret.data"), outside),
        "an absolute external path": (external("/etc/passwd"), outside),
        "an empty external path": (external(""), outside),
        "an external link out of the folder": (external("link.data"), outside),
        "a negative dim": (external("d", dims=(-1,)), "tensor 'cos_cache' has the dims (-1,)"),
        "a negative external offset": (external("d", offset=-1), "negative external offset"),
        "9 dims": (model(graph([], [field(1, 0, 1) * 9])), "a tensor of more than 8 dims"),
        "a 2^20-byte name": (model(graph([node("A", ["a" * (1 << 20)])])), "a name of 1048576"),
        "2^18 nodes": (model(graph([node("A")] * (1 << 18))), "more than 262144 nodes, init"),
        "2^20 + 1 inputs": (
            model(graph([node("A", [""] * ((1 << 20) + 1))])),
            "more than 1048576 node inputs and outputs in the file",
        ),
        "a packed list of 2^17 numbers": (model(graph([packed])), "a packed list of more than"),
        "17 lists of 2^16 numbers": (
            model(graph([text(4, "C") + field(5, 2, text(1, "x") + field(8, 2, b"\x01" * 65536))]
                        * 17)),
            "more than 1048576 numbers in lists in the file",
        ),
    }  # fmt: skip


ONNX_CASES = sorted(_onnx_cases())


@pytest.mark.parametrize("case", ONNX_CASES)
def test_a_hostile_onnx_file_is_refused_with_its_own_reason(tmp_path, case):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "d").write_bytes(bytes(64))
    (tmp_path / "secret.data").write_bytes(bytes(64))
    (folder / "link.data").symlink_to(tmp_path / "secret.data")
    data, words = _onnx_cases()[case]
    path = folder / "model.onnx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(words)):
        onnx_file.read(path)


def test_an_onnx_external_path_guard_is_what_refuses_the_path(tmp_path):
    """The guard's own words, through the whole check: a data file outside the folder that
    holds the right bytes would otherwise be read."""
    import sinpe

    sys.path.insert(0, os.path.dirname(__file__))
    from onnx_files import graph, model, node, tensor

    cos, sin = sinpe.rope_config(LLAMA_CONFIG).rope(8, layout="compact", dtype="float32")
    (tmp_path / "secret.data").write_bytes(cos.tobytes() + sin.tobytes())
    folder = tmp_path / "m"
    folder.mkdir()
    _config_file(folder)
    inputs = ["q", "k", "v", "pk", "pv", "seqlens", "total", "cos_cache", "sin_cache"]
    gqa = node(
        "GroupQueryAttention", inputs, ["o"], domain="com.microsoft", do_rotary=1,
        name="/model/layers.0/attn/GroupQueryAttention", num_heads=2, kv_num_heads=1,
    )  # fmt: skip
    for location in ("../secret.data", str(tmp_path / "secret.data")):
        caches = [
            tensor(name, dims=(8, 32), external={"location": location, "offset": k * 1024})
            for k, name in enumerate(("cos_cache", "sin_cache"))
        ]
        (folder / "model.onnx").write_bytes(model(graph([gqa], caches)))
        words = f"tensor 'cos_cache''s external data {location!r} is not a file in the model's"
        with pytest.raises(ValueError, match=re.escape(words)):
            sinpe.check_onnx(folder / "model.onnx")


def _gguf_cases() -> dict:
    """name: (the .gguf bytes, the words of its refusal)."""
    import struct

    def header(n_tensors, n_kv, version=3):
        return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)

    key = struct.pack("<Q", 4) + b"arch"
    info = struct.pack("<Q", 17) + b"rope_freqs.weight"
    return {
        "wrong magic": (b"GGML" + bytes(60), "not a GGUF file (it does not start with b'GGUF')"),
        "empty": (b"", "0 bytes, too short for a GGUF header (24)"),
        "version 1": (header(0, 0, 1), "GGUF version 1 (32-bit counts) is not supported"),
        "version 4": (header(0, 0, 4), "unknown GGUF version 4 (2 and 3 are read)"),
        "2^63 keys": (header(0, 1 << 63) + bytes(16), "9223372036854775808 key/value pairs, more"),
        "a lying key count": (
            header(0, 60000) + key + struct.pack("<I", 4) + bytes(4),
            "60000 keys and 0 tensors needs 840000 bytes at offset 24, but only 20 remain",
        ),
        "a 2^40-tensor header": (header(1 << 40, 0) + bytes(64), "tensors, more than 65536"),
        "a lying tensor count": (
            header(3, 0) + info + struct.pack("<IqiQ", 1, 64, 0, 0),
            "0 keys and 3 tensors needs 75 bytes at offset 24, but only 49 remain",
        ),
        "a 2^40-string array": (
            header(0, 1) + key + struct.pack("<IIQ", 9, 8, 1 << 40) + bytes(64),
            "'arch' has 1099511627776 elements, more than 4194304",
        ),
        "a 2^62-byte string": (
            header(0, 1) + key + struct.pack("<IQ", 8, 1 << 62) + bytes(64),
            "'arch' needs 4611686018427387904 bytes",
        ),
        "a 2^62-byte key": (
            header(0, 1) + struct.pack("<Q", 1 << 62) + bytes(64),
            "key 0 needs 4611686018427387904 bytes",
        ),
        "lying tensor sizes": (
            header(1, 0) + info + struct.pack("<IqiQ", 1, 1 << 40, 0, 0) + bytes(64),
            "the tensors need 4398046511200 bytes, the file has 137 (truncated?)",
        ),
        "a 2^66-element tensor": (
            header(1, 0) + info + struct.pack("<Iqqi", 2, 1 << 33, 1 << 33, 0) + bytes(8),
            "tensor 'rope_freqs.weight' has the dims (8589934592, 8589934592)",
        ),
        "an array of arrays": (
            header(0, 1) + key + struct.pack("<IIQ", 9, 9, 1) + bytes(64),
            "'arch' is an array of arrays (ggml refuses them)",
        ),
        "an unknown value type": (
            header(0, 1) + key + struct.pack("<I", 13) + bytes(64),
            "'arch' has the unknown value type 13",
        ),
        "an unknown ggml type": (
            header(1, 0) + info + struct.pack("<IqiQ", 1, 4, 99, 0),
            "tensor 'rope_freqs.weight' has the unknown ggml type 99",
        ),
        "a lying tensor offset": (
            header(1, 0) + info + struct.pack("<IqiQ", 1, 4, 0, 32) + bytes(64),
            "tensor 'rope_freqs.weight' is at offset 32, where 0 is next",
        ),
        "a duplicate key": (
            header(0, 2) + (key + struct.pack("<II", 4, 1)) * 2,
            "key 1 is empty, a duplicate or over 4096 bytes",
        ),
        "a zero alignment": (
            header(0, 1) + struct.pack("<Q", 17) + b"general.alignment" + struct.pack("<II", 4, 0),
            "general.alignment must be a UINT32 power of 2, got 0",
        ),
    }


@pytest.mark.parametrize("case", sorted(_gguf_cases()))
def test_a_hostile_gguf_is_refused_with_its_own_reason(tmp_path, case):
    data, words = _gguf_cases()[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(words)):
        gguf_file.read(path, tensors=("rope_freqs.weight",))


def test_a_split_gguf_set_counts_its_tensors_together(tmp_path, monkeypatch):
    """Each shard under the bound, the set over it: refused at the shard that passes it."""
    sys.path.insert(0, os.path.dirname(__file__))
    from gguf_files import converted, write_split

    kv, tensors = converted("llama31")
    shards = write_split(tmp_path, "s", kv, tensors, 3)
    assert len(gguf_file.read(shards[0]).tensors) == 4
    monkeypatch.setattr(gguf_file, "MAX_TENSORS", 3)  # each shard holds 1 or 2
    words = "1 tensors, more than 0 (what a split set's other shards leave of 3)"
    with pytest.raises(ValueError, match=re.escape(f"{shards[2]}: {words}")):
        gguf_file.read(shards[0])
