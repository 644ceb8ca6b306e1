"""``sinpe check``: verdicts with meaning and exit codes, every cache form, bounded memory,
one line for every error."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import command
import numpy as np
import pytest

import sinpe
from sinpe import cli

CONFIGS = Path(__file__).parent / "data" / "configs"
LLAMA = CONFIGS / "llama-3.1-8b.json"


def sinpe_cli(*args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def check(*args):
    return command.run("check", *args)


def refused(result, message: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("sinpe: error: ")
    assert message in result.stderr, result.stderr


def textbook(spec, n: int, layout: str = "half", offset: int = 0):
    """transformers' and vLLM's computation: the angle p * w formed in float32."""
    inv_freq, attention = spec.frequencies()
    angle = np.arange(offset, offset + n, dtype=np.float32)[:, None] * inv_freq.astype(np.float32)
    cos = np.cos(angle) * np.float32(attention)
    sin = np.sin(angle) * np.float32(attention)
    if layout == "compact":
        return cos, sin
    if layout == "interleaved":
        return np.repeat(cos, 2, axis=1), np.repeat(sin, 2, axis=1)
    return np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)


def save_safetensors(path, tensors: dict) -> None:
    """The .safetensors format by hand (8-byte header length, JSON header, raw data)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even bfloat16 bit patterns of float64 values (through float32)."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize("layout", ["half", "interleaved", "compact", "vllm", "complex", "pairs"])
def test_an_exact_cache_of_every_layout_matches(tmp_path, layout):
    spec = sinpe.rope_config(LLAMA)
    if layout in ("half", "interleaved", "compact"):
        cos, sin = spec.rope(3000, offset=7, layout=layout, dtype="float32")
        np.savez(tmp_path / "cache.npz", cos=cos, sin=sin)
        path = tmp_path / "cache.npz"
    else:
        np.save(tmp_path / "cache.npy", spec.rope_cache(3000, offset=7, format=layout))
        path = tmp_path / "cache.npy"
    result = check(path, "--config", LLAMA, "--offset", 7, "--max-error", 1e-7)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"layout {layout}" in result.stdout and "3000 rows from position 7" in result.stdout
    assert "verdict: matches the exact table at float" in result.stdout


@pytest.mark.parametrize(
    "make, layout",
    [
        (lambda c, s: np.stack([c, s]), "half (stacked)"),  # np.stack([cos, sin])
        (lambda c, s: np.stack([c, s], axis=-1), "pairs (half)"),  # (n, d, 2)
        (lambda c, s: np.stack([c[:, :64], s[:, :64]], axis=-1), "pairs"),  # (n, d/2, 2)
    ],
)
def test_one_array_of_both_tables_is_read_in_each_form(tmp_path, make, layout):
    cos, sin = sinpe.rope_config(LLAMA).rope(500, dtype="float32")
    np.save(tmp_path / "cache.npy", make(cos, sin))
    result = check(tmp_path / "cache.npy", LLAMA)
    assert result.returncode == 0, result.stderr
    assert f"layout {layout}," in result.stdout and "500 rows" in result.stdout
    assert "matches the exact table at float32 rounding" in result.stdout


def test_a_leading_batch_of_one_is_taken(tmp_path):
    cos, sin = sinpe.rope_config(LLAMA).rope(50, dtype="float32")
    np.savez(tmp_path / "hf.npz", cos=cos[None], sin=sin[None])  # transformers' (1, n, d)
    result = check(tmp_path / "hf.npz", LLAMA)
    assert result.returncode == 0 and "50 rows" in result.stdout, result.stderr


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_the_float32_angle_drift_is_named_and_exits_0(tmp_path, layout):
    cos, sin = textbook(sinpe.rope_config(LLAMA), 20000, layout)
    np.savez(tmp_path / "hf.npz", cos=cos, sin=sin)
    result = check(tmp_path / "hf.npz", "--config", LLAMA)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"layout {layout}," in result.stdout
    assert "verdict: drifts with the position: float32 angles" in result.stdout
    errors = [float(line.split()[-1]) for line in result.stdout.splitlines() if " .. " in line]
    assert errors == sorted(errors) and errors[-1] > 1e-4
    result = check(tmp_path / "hf.npz", "--config", LLAMA, "--max-error", 1e-4)
    assert result.returncode == 1 and "exceeds --max-error" in result.stdout


def test_vllms_whole_cache_keeps_its_decade_table(tmp_path):
    """vLLM's Llama-3.1 cos_sin_cache (float32 angles, 131072 rows): the decade table of
    docs/rope.md, from 4.7e-7 at positions 0-9 to 9.3e-3 at 100,000-131,071."""
    spec = sinpe.rope_config(LLAMA)
    cos, sin = textbook(spec, 131072, "compact")
    np.save(tmp_path / "vllm.npy", np.concatenate([cos, sin], axis=1))
    result = check(tmp_path / "vllm.npy", LLAMA, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["layout"] == "vllm" and report["verdict"] == "drift"
    assert report["drift"] == "float32"
    first, last = report["decades"][0], report["decades"][-1]
    assert (first["first"], first["last"], last["first"], last["last"]) == (0, 9, 100000, 131071)
    assert 1e-7 < first["error"] < 1e-6 and 1e-3 < last["error"] < 2e-2


def test_a_cache_of_another_base_does_not_match_and_the_base_is_named(tmp_path):
    w = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    angle = np.arange(4096)[:, None] * w
    cos, sin = (np.concatenate([f(angle)] * 2, 1).astype(np.float32) for f in (np.cos, np.sin))
    np.savez(tmp_path / "b.npz", cos=cos, sin=sin)
    result = check(tmp_path / "b.npz", "--config", LLAMA, "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "mismatch" and report["exit_code"] == 1
    found = {r["code"]: r for r in report["reasons"]}
    assert found["base"]["engine"] == "10000.0" and found["base"]["config"] == "500000.0"
    assert "scaling_not_applied" in found
    result = check(tmp_path / "b.npz", "--config", LLAMA)
    assert "does not match this config" in result.stdout
    assert "  base 10000.0 where the config gives 500000.0\n" in result.stdout
    assert "  Llama-3 scaling not applied\n" in result.stdout


def test_an_offset_by_one_is_named(tmp_path):
    cos, sin = sinpe.rope_config(LLAMA).rope(300, offset=1, dtype="float32")
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    result = check(tmp_path / "c.npz", LLAMA)
    assert result.returncode == 1
    assert "the rows are the exact table +1 positions on (off by +1)" in result.stdout


def test_the_width_without_partial_rotary_factor_is_named(tmp_path):
    config = CONFIGS / "phi-2.json"  # partial_rotary_factor 0.4: rotary width 32 of 80
    spec = sinpe.rope_config(config)
    full = sinpe.rope(200, head_dim=80, base=spec.base, dtype="float32")
    np.savez(tmp_path / "c.npz", cos=full[0], sin=full[1])
    result = check(tmp_path / "c.npz", config)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rotary width 80 where the config gives 32" in result.stdout


def test_values_of_a_narrower_dtype_are_named(tmp_path):
    cos, sin = sinpe.rope_config(LLAMA).rope(1000, dtype="float16")
    np.savez(tmp_path / "c.npz", cos=cos.astype(np.float32), sin=sin.astype(np.float32))
    result = check(tmp_path / "c.npz", LLAMA)
    assert result.returncode == 1
    assert "the values are rounded to float16 (stored as float32)" in result.stdout


def test_a_cos_without_its_sin_is_refused_then_read_with_sin(tmp_path):
    cos, sin = textbook(sinpe.rope_config(LLAMA), 2000)
    np.save(tmp_path / "cos.npy", cos)
    np.save(tmp_path / "sin.npy", sin)
    refused(check(tmp_path / "cos.npy", LLAMA), "pass its sin with --sin FILE")
    result = check(tmp_path / "cos.npy", LLAMA, "--sin", tmp_path / "sin.npy")
    assert result.returncode == 0 and "drifts with the position" in result.stdout


def test_layouts_that_fit_equally_are_both_named():
    spec = sinpe.rope_config(LLAMA)
    cos, sin = spec.rope(1)  # row 0: every layout reads the same
    from sinpe._check.compare import compare
    from sinpe._files.caches import Stored

    report = compare(spec, [Stored(cos, "float64", "cos"), Stored(sin, "float64", "sin")])
    assert report.verdict == "match" and "interleaved fits equally" in report.note
    # a cache that is no layout of this config: none "fits", each is as near
    wrong = [Stored(np.full_like(cos, 0.5), "float64", n) for n in ("cos", "sin")]
    report = compare(spec, wrong)
    assert report.verdict == "mismatch" and report.note.endswith("as near: neither matches")
    assert "fits" not in report.note


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: np.save(p, np.zeros((0, 128), np.float32)), "no rows"),
        (lambda p: np.save(p, np.zeros((100, 128), np.int32)), "holds integers"),
        (lambda p: np.save(p, np.zeros((10, 10, 128), np.float32)), "none of the forms read"),
        (lambda p: np.save(p, np.zeros((4, 7))), "do not fit any layout"),
        (lambda p: np.save(p, np.array(["a"])), "not a table of floats"),
        (lambda p: p.write_bytes(b"not numpy"), "cannot read"),
        (None, "No such file or directory"),
    ],
)
def test_tables_that_are_not_tables_are_refused_with_exit_2(tmp_path, make, message):
    path = tmp_path / "cache.npy"
    if make is not None:
        make(path)
    refused(check(path, "--config", LLAMA), message)


@pytest.mark.parametrize("value, row", [(np.nan, 0), (np.inf, 0), (-np.inf, 3), (np.nan, 4095)])
def test_a_cache_holding_what_is_not_a_number_is_a_mismatch_never_a_match(tmp_path, value, row):
    """One NaN or infinity anywhere (the first row, the last) is a mismatch with its place,
    and the JSON stays strict: the error that does not exist is null, the reason beside it."""
    cache = sinpe.rope_config(LLAMA).rope_cache(4096, format="vllm", dtype="float32")
    cache[row, 5] = value
    np.save(tmp_path / "c.npy", cache)
    result = check(tmp_path / "c.npy", LLAMA)
    assert result.returncode == 1, result.stdout + result.stderr
    text = f"the entry at position {row:,}, column 5 is {value}: not a value a RoPE can use"
    assert f"  {text}\n" in result.stdout
    result = check(tmp_path / "c.npy", LLAMA, "--json")
    report = json.loads(result.stdout)  # strict: json.loads takes bare NaN, so check the text
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    assert report["verdict"] == "mismatch" and report["largest_error"] is None
    assert [r["code"] for r in report["reasons"]] == ["not_a_number"]
    assert report["reasons"][0]["text"] == text


def test_a_complex_cos_with_a_real_sin_is_refused(tmp_path):
    np.savez(tmp_path / "c.npz", cos=np.ones((4, 64), np.complex64), sin=np.zeros((4, 64)))
    refused(check(tmp_path / "c.npz", LLAMA), "a complex array comes with a real one")


@pytest.mark.parametrize(
    "args, message",
    [
        (("--layout", "complex"), "do not fit layout 'complex'"),
        (("--offset", -1), "--offset must be >= 0"),
        (("--max-error", -1), "--max-error must be"),
    ],
)
def test_bad_arguments_are_refused(tmp_path, args, message):
    np.save(tmp_path / "c.npy", sinpe.rope_config(LLAMA).rope_cache(4, format="vllm"))
    refused(check(tmp_path / "c.npy", LLAMA, *args), message)


def test_sin_is_for_a_cos_alone(tmp_path):
    cos, sin = sinpe.rope_config(LLAMA).rope(4)
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    refused(check(tmp_path / "c.npz", LLAMA, "--sin", tmp_path / "c.npz"), "--sin is for a CACHE")


# --------------------------------------------------------------------------- every form


def test_what_sinpe_rope_writes_is_read_back_per_layer(tmp_path):
    config = CONFIGS / "gemma-3-4b-it.json"
    result = sinpe_cli("rope", config, "--seq-len", 1000, "-o", tmp_path / "g.npz")
    assert result.returncode == 0, result.stderr
    for layer_type in ("sliding_attention", "full_attention"):
        result = check(tmp_path / "g.npz", "--config", config, "--layer-type", layer_type)
        assert result.returncode == 0, result.stderr
        assert "matches the exact table at float32 rounding" in result.stdout
    refused(check(tmp_path / "g.npz", config), "pass --layer-type")
    # a plain pair beside per-layer ones: never judged alone while the others go unread
    cos, sin = sinpe.rope_config(LLAMA).rope(64, layout="compact", dtype="float32")
    junk = np.full_like(cos, 0.5)
    np.savez(tmp_path / "h.npz", cos=cos, sin=sin, cos_other=junk, sin_other=junk)
    refused(check(tmp_path / "h.npz", LLAMA), "holds a cache per layer type (other)")


def test_bfloat16_from_sinpe_rope_is_read_back_as_bfloat16(tmp_path):
    pytest.importorskip("ml_dtypes")
    result = sinpe_cli(
        "rope", LLAMA, "--seq-len", 3000, "--dtype", "bfloat16", "-o", tmp_path / "b"
    )
    assert result.returncode == 0, result.stderr
    assert "recorded in its 'dtype' member" in result.stdout
    assert str(np.load(tmp_path / "b.npz")["dtype"]) == "bfloat16"
    result = check(tmp_path / "b.npz", LLAMA)
    assert result.returncode == 0, result.stderr
    assert "bfloat16 (rounding bound 0.00195)" in result.stdout
    assert "matches the exact table at bfloat16 rounding" in result.stdout


@pytest.mark.parametrize(
    "dtype, encode, name, bound",
    [
        ("BF16", lambda v: bfloat16_bits(v).tobytes(), "bfloat16", "0.00195"),
        ("F16", lambda v: v.astype(np.float16).tobytes(), "float16", "0.000244"),
        ("F32", lambda v: v.astype(np.float32).tobytes(), "float32", "2.98e-08"),
        ("F64", lambda v: v.tobytes(), "float64", "5.55e-17"),
    ],
)
def test_safetensors_of_every_float_dtype_are_read_without_safetensors(
    tmp_path, dtype, encode, name, bound
):
    cos, sin = sinpe.rope_config(LLAMA).rope(300)
    save_safetensors(
        tmp_path / "c.safetensors",
        {"cos": (dtype, cos.shape, encode(cos)), "sin": (dtype, sin.shape, encode(sin))},
    )
    result = check(tmp_path / "c.safetensors", LLAMA)
    assert result.returncode == 0, result.stderr
    assert f"{name} (rounding bound {bound})" in result.stdout
    assert f"matches the exact table at {name} rounding" in result.stdout


def test_float8_safetensors_are_read(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    cos, sin = sinpe.rope_config(LLAMA).rope(300)

    def encode(values):
        return values.astype(ml_dtypes.float8_e4m3fn).tobytes()

    save_safetensors(
        tmp_path / "c.safetensors",
        {"cos": ("F8_E4M3", cos.shape, encode(cos)), "sin": ("F8_E4M3", sin.shape, encode(sin))},
    )
    result = check(tmp_path / "c.safetensors", LLAMA)
    assert result.returncode == 0, result.stderr
    assert "matches the exact table at float8_e4m3fn rounding" in result.stdout


def test_float8_bits_decode_as_ml_dtypes_does():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from sinpe._check.compare import _decode

    bits = np.arange(256, dtype=np.uint8)
    for name in ("float8_e4m3fn", "float8_e5m2"):
        want = bits.view(getattr(ml_dtypes, name)).astype(np.float64)
        np.testing.assert_array_equal(_decode(bits, name), want)


def test_torch_files_every_dtype_and_a_legacy_file_without_a_warning(tmp_path):
    torch = pytest.importorskip("torch")
    cos, sin = sinpe.rope_config(LLAMA).rope(200)
    for dtype, name in [
        (torch.bfloat16, "bfloat16"),
        (torch.float16, "float16"),
        (torch.float8_e5m2, "float8_e5m2"),
    ]:
        tensors = {"cos": torch.from_numpy(cos).to(dtype), "sin": torch.from_numpy(sin).to(dtype)}
        torch.save(tensors, tmp_path / "c.pt")
        result = check(tmp_path / "c.pt", LLAMA)
        assert result.returncode == 0, result.stderr
        assert f"matches the exact table at {name} rounding" in result.stdout
    cache = sinpe.rope_config(LLAMA).rope_cache(100, format="vllm", dtype="float32")
    torch.save(
        {"cos_sin_cache": torch.from_numpy(cache)},
        tmp_path / "legacy.pt",
        _use_new_zipfile_serialization=False,
    )
    result = check(tmp_path / "legacy.pt", LLAMA)
    assert result.returncode == 0 and "layout vllm" in result.stdout and result.stderr == ""


def test_a_torch_file_with_code_in_it_is_one_line(tmp_path):
    torch = pytest.importorskip("torch")

    class Payload:
        def __reduce__(self):
            return (print, ("code ran",))

    torch.save({"cos": Payload()}, tmp_path / "evil.pt")
    result = check(tmp_path / "evil.pt", LLAMA)
    refused(result, "holds Python objects beyond tensors")
    assert "code ran" not in result.stdout


# --------------------------------------------------------------------------- bounded memory


def _npz_member(archive: zipfile.ZipFile, name: str, shape, dtype, body: bytes = b"") -> None:
    """A member whose npy header says ``shape`` (its body may be shorter: never read)."""
    header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": tuple(shape)}
    with archive.open(name + ".npy", "w", force_zip64=True) as stream:
        np.lib.format.write_array_header_1_0(stream, header)
        stream.write(body)


def test_an_npz_member_is_sized_before_it_is_inflated(tmp_path):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _npz_member(archive, "cos", (2**31, 128), np.float16)  # 512 GiB said, nothing there
        _npz_member(archive, "sin", (2**31, 128), np.float16)
    refused(check(path, LLAMA), "more than --max-bytes 16 GiB")
    cos, sin = sinpe.rope_config(LLAMA).rope(1000, dtype="float16")
    np.savez_compressed(tmp_path / "c.npz", cos=cos, sin=sin)
    refused(check(tmp_path / "c.npz", LLAMA, "--max-bytes", 100_000), "more than --max-bytes")


def test_members_not_needed_are_never_read(tmp_path):
    path = tmp_path / "c.npz"
    cos, sin = sinpe.rope_config(LLAMA).rope(100, dtype="float32")
    with zipfile.ZipFile(path, "w") as archive:
        for name, values in (("cos", cos), ("sin", sin)):
            with archive.open(name + ".npy", "w") as stream:
                np.lib.format.write_array(stream, values)
        _npz_member(archive, "inv_freq_unused", (2**40,), np.float64)  # 8 TiB said
    result = check(path, LLAMA)
    assert result.returncode == 0 and "matches" in result.stdout, result.stderr


# VmHWM: this process's own peak (ru_maxrss carries pytest's peak across exec, and growth
# below it read as 0: these tests measured nothing); ru_maxrss where /proc is absent
PEAK = """
import resource, sys
import numpy as np
{imports}
from sinpe import cli

def peak():
    try:
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) * 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

before = peak()
code = cli.main(sys.argv[1:])
after = peak()
print("PEAK", after - before, code)
"""


def _peak(tmp_path, imports: str, *args) -> tuple[int, int]:
    script = tmp_path / "peak.py"
    script.write_text(PEAK.format(imports=imports))
    result = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = [x for x in result.stdout.splitlines() if x.startswith("PEAK")]
    assert line, result.stdout + result.stderr
    _, grown, code = line[0].split()
    return int(grown), int(code)


@pytest.mark.skipif(os.environ.get("SINPE_SANITIZED") == "1", reason="ASan's allocator")
def test_an_npy_cache_is_mapped_and_compared_in_blocks(tmp_path):
    cos, sin = textbook(sinpe.rope_config(LLAMA), 262144, "compact")
    cache = np.concatenate([cos, sin], 1)  # 128 MiB float32
    np.save(tmp_path / "vllm.npy", cache)
    del cos, sin
    grown, code = _peak(tmp_path, "", "check", tmp_path / "vllm.npy", LLAMA)
    assert code == 0
    assert grown < 2 * cache.nbytes + (100 << 20), grown


@pytest.mark.skipif(os.environ.get("SINPE_SANITIZED") == "1", reason="ASan's allocator")
def test_a_deflated_npz_of_zeros_stays_within_its_own_bytes(tmp_path):
    """The issue's 510 KB file at an eighth of its rows: deflated zeros, float16 cos and sin
    of 131072 x 128 (64 MiB expanded) from a file of about 65 KB."""
    zeros = np.zeros((131072, 128), np.float16)
    np.savez_compressed(tmp_path / "z.npz", cos=zeros, sin=zeros)
    assert os.path.getsize(tmp_path / "z.npz") < 1 << 20
    grown, code = _peak(tmp_path, "", "check", tmp_path / "z.npz", LLAMA)
    assert code == 1  # zeros match nothing
    assert grown < 2 * 2 * zeros.nbytes + (100 << 20), grown


@pytest.mark.skipif(os.environ.get("SINPE_SANITIZED") == "1", reason="ASan's allocator")
def test_a_stride_0_torch_tensor_is_never_expanded(tmp_path):
    torch = pytest.importorskip("torch")
    one = torch.tensor([0.5], dtype=torch.float16).expand(262144, 128)  # 64 MiB said, 2 bytes
    torch.save({"cos": one, "sin": one}, tmp_path / "e.pt")
    assert os.path.getsize(tmp_path / "e.pt") < 10_000
    grown, code = _peak(tmp_path, "import torch", "check", tmp_path / "e.pt", LLAMA)
    assert code == 1  # 0.5 everywhere matches nothing
    assert grown < 2 * 2 * 262144 * 128 * 2 + (100 << 20), grown


# --------------------------------------------------------------------------- messages


def test_json_holds_exactly_the_documented_fields(tmp_path):
    np.save(tmp_path / "c.npy", sinpe.rope_config(LLAMA).rope_cache(10, format="vllm"))
    report = json.loads(check(tmp_path / "c.npy", LLAMA, "--json").stdout)
    text = (Path(__file__).parents[1] / "docs" / "rope.md").read_text()
    assert all(f"`{field}`" in text for field in report)
    assert report["verdict"] == "match" and report["exit_code"] == 0 and report["rows"] == 10


def test_a_symlink_loop_and_a_huge_integer_are_named(tmp_path):
    (tmp_path / "a.npy").symlink_to(tmp_path / "b.npy")
    (tmp_path / "b.npy").symlink_to(tmp_path / "a.npy")
    refused(check(tmp_path / "a.npy", LLAMA), "Too many levels of symbolic links")
    text = LLAMA.read_text().replace(
        '"max_position_embeddings": 131072', '"max_position_embeddings": ' + "9" * 5000
    )
    (tmp_path / "huge.json").write_text(text)
    refused(
        sinpe_cli("rope", tmp_path / "huge.json"),
        "max_position_embeddings must be an integer, got a 5000-digit integer",
    )


@pytest.mark.parametrize(
    "error, code, line",
    [
        (KeyboardInterrupt(), 130, "sinpe: interrupted\n"),
        (MemoryError(), 2, "sinpe: error: out of memory\n"),
        (
            OSError(28, "No space left on device"),
            2,
            "sinpe: error: [Errno 28] No space left on device\n",
        ),
    ],
)
def test_every_exit_is_one_line(monkeypatch, capsys, error, code, line):
    def raising(args):
        raise error

    monkeypatch.setattr(cli.info, "info_command", raising)
    assert cli.main(["info"]) == code
    assert capsys.readouterr().err == line


def test_check_plot_starts_where_errors_exist(tmp_path):
    pytest.importorskip("matplotlib")
    cos, sin = textbook(sinpe.rope_config(LLAMA), 5000)
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    result = check(tmp_path / "c.npz", LLAMA, "--plot", tmp_path / "e")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from sinpe._check.compare import compare
    from sinpe._files.caches import Stored

    spec = sinpe.rope_config(LLAMA)
    report = compare(spec, [Stored(cos, "float32", "cos"), Stored(sin, "float32", "sin")])
    figure = cli.plot.error_figure(report, 0, "c.npz")
    axes = figure.axes[0]
    assert axes.get_xscale() == axes.get_yscale() == "log" and axes.get_xlim()[0] == 1
    (line,) = [x for x in axes.get_lines() if x.get_label() == "cache"]
    assert line.get_xdata().min() >= 1 and (line.get_ydata() > 0).all()
    assert axes.get_ylim()[0] >= report.errors[report.errors > 0].min() / 4
    bound = [x for x in axes.get_lines() if "rounding" in x.get_label()]
    assert bound and bound[0].get_ydata()[0] == report.rounding


def test_transformers_computation_keeps_its_decade_table(tmp_path):
    """LlamaRotaryEmbedding's computation in torch (inv_freq and the angle in float32,
    cat(freqs, freqs)): the drift verdict, 4.7e-7 at positions 0-9 (docs/rope.md)."""
    torch = pytest.importorskip("torch")
    spec = sinpe.rope_config(LLAMA)
    inv_freq = torch.from_numpy(spec.frequencies()[0].copy()).float()
    freqs = torch.outer(torch.arange(131072, dtype=torch.float32), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    np.savez(tmp_path / "hf.npz", cos=emb.cos().numpy(), sin=emb.sin().numpy())
    result = check(tmp_path / "hf.npz", LLAMA, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    # the whole report in every message: this test failed once on the NumPy path in a whole
    # suite and passed alone (issue 67), and its inputs were not kept
    said = json.dumps({k: report.get(k) for k in ("layout", "verdict", "decades", "reasons")})
    assert report["layout"] == "half" and report["verdict"] == "drift", said
    decades = report["decades"]
    assert 1e-7 < decades[0]["error"] < 1e-6 and 1e-3 < decades[-1]["error"] < 2e-2, said
    assert [d["error"] for d in decades] == sorted(d["error"] for d in decades), said


# --------------------------------------------------------------------------- any offset

PLAIN = {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 4096}


def _float32_angles(positions, config=PLAIN):
    """vLLM's computation: float32 inverse frequencies and float32 angles."""
    inv_freq, _ = sinpe.rope_config(config).frequencies(None)
    angle = positions.astype(np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
    return np.cos(angle), np.sin(angle)


@pytest.mark.parametrize("offset", [100_000, 3_000_000, 7_777_777])
@pytest.mark.parametrize("kind", ["float32 angles", "flat", "next position", "two back"])
def test_drift_means_drift_at_any_offset(tmp_path, offset, kind):
    """A table of 64 rows standing for positions ``offset ..``: float32 angles there drift;
    a flat error of 2e-5 (cos and sin off the circle: not an angle's error) and the table
    of the next position, or of two back (each pair moved by k w_i, which float32 angles'
    bound at 3,000,000 hides), are mismatches that say so. The drift bound grows with the
    position, so "consistent with growth" was once read only from a cache at position 0."""
    positions = np.arange(offset, offset + 64)
    spec = sinpe.rope_config(PLAIN)
    shift = {"next position": 1, "two back": -2}.get(kind, 0)
    if kind == "float32 angles":
        cos, sin = _float32_angles(positions)
    else:
        cos, sin = spec.rope_at(positions + shift, layout="compact", dtype="float32")
    if kind == "flat":
        cos = cos + np.float32(2e-5)
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    (tmp_path / "config.json").write_text(json.dumps(PLAIN))
    result = check(tmp_path / "c.npz", tmp_path / "config.json", "--offset", offset, "--json")
    report = json.loads(result.stdout)
    if kind == "float32 angles":
        assert (report["verdict"], report["drift"], result.returncode) == ("drift", "float32", 0)
        return
    assert report["verdict"] == "mismatch" and result.returncode == 1, report["verdict_text"]
    (reason,) = report["reasons"]
    if kind == "flat":
        assert reason["code"] == "radius" and "not an angle's error" in reason["text"]
    else:
        assert reason["code"] == "shifted" and reason["engine"] == shift
        assert reason["text"].startswith(f"the rows are the exact table {shift:+d} positions on")


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("base 10001", "base 10001.0 where the config gives 10000.0"),
        ("next position", "the rows are the exact table +1 positions on (off by +1)"),
        ("float16 values", "the values are rounded to float16 (stored as float64)"),
        ("bfloat16 values", "the values are rounded to bfloat16 (stored as float32)"),
    ],
)
def test_the_explanation_is_the_one_that_accounts_for_the_error(tmp_path, kind, reason):
    """A float64 table at base 10,001 (config 10,000) was "rounded to float8_e4m3fn", and an
    off-by-one table "rounded to bfloat16": a narrower dtype explains a table only where
    every value is one of that dtype's."""
    spec = sinpe.rope_config(PLAIN)
    dtype = "float32" if kind == "bfloat16 values" else "float64"
    if kind == "base 10001":
        cos, sin = sinpe.rope_config({**PLAIN, "rope_theta": 10001.0}).rope(4096, dtype=dtype)
    elif kind == "next position":
        cos, sin = spec.rope(4096, offset=1, dtype=dtype)
    else:
        narrow = kind.split()[0]
        if narrow == "bfloat16":
            pytest.importorskip("ml_dtypes")
        cos, sin = (a.astype(dtype) for a in spec.rope(4096, dtype=narrow))
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    (tmp_path / "config.json").write_text(json.dumps(PLAIN))
    result = check(tmp_path / "c.npz", tmp_path / "config.json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"  {reason}" in result.stdout, result.stdout
    assert "float8" not in result.stdout


@pytest.mark.parametrize("offset", [0, 100_000])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_table_scaled_by_another_factor_says_its_factor_at_any_offset(tmp_path, offset, dtype):
    """Every entry's radius 1.1 where the config's attention factor is 1 (or YaRN's 1.1386
    left out): the core reads the factor off the radius, wherever the rows stand (the fit
    from positions 0 and 1 needs the table's start); a factor and a base both wrong is never
    put down to the factor alone (from position 0, the fit names both)."""
    positions = np.arange(offset, offset + 64)
    spec = sinpe.rope_config(PLAIN)
    cos, sin = (a * 1.1 for a in spec.rope_at(positions, layout="compact"))
    (tmp_path / "config.json").write_text(json.dumps(PLAIN))
    np.savez(tmp_path / "c.npz", cos=cos.astype(dtype), sin=sin.astype(dtype))
    report = json.loads(
        check(tmp_path / "c.npz", tmp_path / "config.json", "--offset", offset, "--json").stdout
    )
    factor = "attention factor 1.1 where the config gives 1.0"
    assert report["verdict"] == "mismatch"
    assert [r["text"] for r in report["reasons"]] == [factor]
    other = sinpe.rope_config({**PLAIN, "rope_theta": 2e4})
    cos, sin = (a * 1.1 for a in other.rope_at(positions, layout="compact"))
    np.savez(tmp_path / "d.npz", cos=cos.astype(dtype), sin=sin.astype(dtype))
    report = json.loads(
        check(tmp_path / "d.npz", tmp_path / "config.json", "--offset", offset, "--json").stdout
    )
    texts = [r["text"] for r in report["reasons"]]
    assert report["verdict"] == "mismatch" and texts != [factor]
    if offset == 0:  # positions 0 and 1 held: the angles' fit says both
        assert texts == ["base 20000.0 where the config gives 10000.0", factor]
