"""Hostile input and files: every case of the hostile-input issue, each a clear TypeError or
ValueError naming the argument or config key (the CLI: one line, exit 2), nothing written on
failure, nothing read forever, memory bounded by what was asked for."""

import os
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
    for path in ("/dev/zero", fifo, tmp_path):
        result = sinpe_cli("rope", path)
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
