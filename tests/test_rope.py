"""RoPE: each rope type against a transcription of transformers' formula (exact, mpmath),
tables against mpmath at every scale, layouts, rope == rope_at bit for bit, bad input."""

import math

import numpy as np
import oracle
import pytest
import references as ref
from rope_cases import CASES, DYNAMIC, LLAMA31, LONGROPE, YARN, YARN_DEEPSEEK

import sinpe
from sinpe._rope.rope import LAYOUTS


@pytest.mark.parametrize("name, scaling, dim, base, seq_len", CASES, ids=[c[0] for c in CASES])
def test_inverse_frequencies_match_the_exact_formula(name, scaling, dim, base, seq_len):
    inv_freq, attention = sinpe.rope_frequencies(dim, base=base, scaling=scaling, seq_len=seq_len)
    exact, exact_attention = ref.transformers_rope_parameters(scaling, dim, base, seq_len)
    assert inv_freq.shape == (dim // 2,) and inv_freq.dtype == np.float64
    exact = np.array([float(v) for v in exact])
    ulps = np.abs(inv_freq - exact) / np.spacing(np.maximum(np.abs(exact), 1e-300))
    assert ulps.max() <= 4, (name, ulps.max())
    assert attention == pytest.approx(float(exact_attention), rel=1e-15, abs=0)


def test_the_types_do_what_they_say():
    w = sinpe.rope_frequencies(128, base=500000.0)[0]
    llama = sinpe.rope_frequencies(128, base=500000.0, scaling=LLAMA31)[0]
    wavelen = 2 * np.pi / w
    assert np.array_equal(llama[wavelen < 8192 / 4], w[wavelen < 8192 / 4])  # high: untouched
    assert np.array_equal(llama[wavelen > 8192], w[wavelen > 8192] / 8)  # low: divided
    medium = (wavelen >= 2048) & (wavelen <= 8192)
    assert medium.any() and np.all((llama[medium] < w[medium]) & (llama[medium] > w[medium] / 8))
    # dynamic keeps the base within its maximum and lowers every frequency beyond it
    below = sinpe.rope_frequencies(64, scaling=DYNAMIC, seq_len=2048)[0]
    above = sinpe.rope_frequencies(64, scaling=DYNAMIC, seq_len=4096)[0]
    assert np.array_equal(below, sinpe.rope_frequencies(64)[0])
    assert above[0] == 1.0 and np.all(above[1:] < below[1:])
    # longrope switches one past the original length
    at = sinpe.rope_frequencies(16, scaling=LONGROPE, seq_len=4096)[0]
    past = sinpe.rope_frequencies(16, scaling=LONGROPE, seq_len=4097)[0]
    plain = sinpe.rope_frequencies(16)[0]
    assert np.allclose(at * LONGROPE["short_factor"], plain, rtol=1e-15)
    assert np.allclose(past * LONGROPE["long_factor"], plain, rtol=1e-15)


# --------------------------------------------------------------------------- tables

POSITIONS = [0, 1, 100, 1023, 1024, 8191, 32767, 131071, 2**20, 2**40 + 5, 2**53 - 1]
TABLE_CASES = [
    ("default", None, 10000.0),
    ("yarn", YARN_DEEPSEEK, 10000.0),
    ("llama3", LLAMA31, 500000.0),
    ("longrope", LONGROPE, 10000.0),
]


@pytest.mark.parametrize("name, scaling, base", TABLE_CASES, ids=[c[0] for c in TABLE_CASES])
@pytest.mark.parametrize("dtype, bound", [(np.float64, 1e-15), (np.float32, 6e-8)])
def test_every_entry_within_the_bound_at_every_scale(backend, name, scaling, base, dtype, bound):
    seq_len = 2**53 - 1 if name == "longrope" else None
    cos, sin = sinpe.rope_at(
        POSITIONS, 16, base=base, scaling=scaling, layout="compact", dtype=dtype, backend=backend
    )
    inv_freq, attention = sinpe.rope_frequencies(16, base=base, scaling=scaling, seq_len=seq_len)
    exact_cos, exact_sin = oracle.rope(POSITIONS, inv_freq, attention)
    limit = bound * max(1.0, attention)
    assert cos.dtype == dtype and cos.shape == (len(POSITIONS), 8)
    assert np.abs(cos - exact_cos).max() <= limit
    assert np.abs(sin - exact_sin).max() <= limit


@pytest.mark.parametrize("offset", [0, 5, 1000, 2**31 + 7, 2**53 - 3000])
def test_runs_within_the_bound(backend, offset):
    cos, sin = sinpe.rope(
        3000, 8, offset=offset, scaling=YARN_DEEPSEEK, layout="compact", backend=backend
    )
    inv_freq, attention = sinpe.rope_frequencies(8, scaling=YARN_DEEPSEEK)
    rows = [0, 1, 15, 16, 1023, 1024, 2047, 2999]
    exact_cos, exact_sin = oracle.rope([offset + r for r in rows], inv_freq, attention)
    assert np.abs(cos[rows] - exact_cos).max() <= 1e-15 * attention
    assert np.abs(sin[rows] - exact_sin).max() <= 1e-15 * attention


def test_fractional_positions_are_exact(backend):
    positions = [0.5, -3.25, 1e6 + 0.125, 2.0**40 + 0.5, -(2.0**52) + 0.5]
    cos, sin = sinpe.rope_at(positions, 8, layout="compact", backend=backend)
    inv_freq, _ = sinpe.rope_frequencies(8)
    exact_cos, exact_sin = oracle.rope(positions, inv_freq, 1)
    assert np.abs(cos - exact_cos).max() <= 1e-15
    assert np.abs(sin - exact_sin).max() <= 1e-15


def test_the_usual_float32_computation_drifts_where_sinpe_does_not():
    """LlamaRotaryEmbedding's float32 angle, emulated in NumPy, against sinpe and the truth."""
    p = 131071
    inv_freq, _ = sinpe.rope_frequencies(128, base=500000.0, scaling=LLAMA31)
    usual = np.cos(np.float32(p) * inv_freq.astype(np.float32))
    cos, _ = sinpe.rope_at(
        [p], 128, base=500000.0, scaling=LLAMA31, layout="compact", dtype=np.float32
    )
    exact, _ = oracle.rope([p], inv_freq, 1)
    assert np.abs(usual - exact[0]).max() > 1e-3
    assert np.abs(cos[0] - exact[0]).max() <= 6e-8


# --------------------------------------------------------------------------- layouts, identity


def test_layouts_place_each_value_twice_or_once(backend):
    compact = sinpe.rope(50, 12, offset=7, layout="compact", backend=backend)
    half = sinpe.rope(50, 12, offset=7, layout="half", backend=backend)
    inter = sinpe.rope(50, 12, offset=7, layout="interleaved", backend=backend)
    for k in (0, 1):
        assert compact[k].shape == (50, 6) and half[k].shape == inter[k].shape == (50, 12)
        assert np.array_equal(half[k], np.concatenate([compact[k], compact[k]], axis=1))
        assert np.array_equal(inter[k], np.repeat(compact[k], 2, axis=1))
        assert half[k].flags.c_contiguous and inter[k].flags.c_contiguous
    cos, sin = sinpe.rope(1, 6, layout="compact", backend=backend)
    assert np.array_equal(cos, [[1.0, 1.0, 1.0]]) and np.array_equal(sin, [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("offset", [0, 1, 1023, 5000, 2**45 + 17])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_equals_rope_at_bit_for_bit(backend, offset, layout, dtype):
    n = 2100
    kwargs = dict(scaling=LLAMA31, base=500000.0, layout=layout, dtype=dtype, backend=backend)
    table = sinpe.rope(n, 32, offset=offset, **kwargs)
    at = sinpe.rope_at(np.arange(offset, offset + n), 32, **kwargs)
    shuffled = np.random.default_rng(offset).permutation(np.arange(offset, offset + n))
    scattered = sinpe.rope_at(shuffled, 32, **kwargs)
    for k in (0, 1):
        assert np.array_equal(table[k], at[k])
        assert np.array_equal(table[k][shuffled - offset], scattered[k])


def test_position_ids_of_any_shape():
    ids = np.array([[0, 1, 2], [10, 11, 12]])
    cos, sin = sinpe.rope_at(ids, 8)
    assert cos.shape == sin.shape == (2, 3, 8)
    flat = sinpe.rope_at(ids.reshape(-1), 8)
    assert np.array_equal(cos.reshape(6, 8), flat[0])
    scalar_cos, _ = sinpe.rope_at(5, 8)
    assert scalar_cos.shape == (8,)
    empty_cos, _ = sinpe.rope_at(np.empty((0, 4)), 8, layout="compact")
    assert empty_cos.shape == (0, 4, 4)
    assert sinpe.rope(0, 8)[0].shape == (0, 8)


def test_current_length_picks_longrope_and_dynamic_frequencies():
    # rope's current length is offset + seq_len; rope_at's is max(positions) + 1
    short = sinpe.rope_at([4095], 16, scaling=LONGROPE, layout="compact")
    long = sinpe.rope_at([4096], 16, scaling=LONGROPE, layout="compact")
    inv_short, af = sinpe.rope_frequencies(16, scaling=LONGROPE, seq_len=4096)
    inv_long, _ = sinpe.rope_frequencies(16, scaling=LONGROPE, seq_len=4097)
    assert np.allclose(short[0][0], af * np.cos(4095 * inv_short), rtol=0, atol=1e-12)
    assert np.allclose(long[0][0], af * np.cos(4096 * inv_long), rtol=0, atol=1e-12)
    table = sinpe.rope(1, 16, offset=4096, scaling=LONGROPE, layout="compact")
    assert np.array_equal(table[0], long[0])
    dyn = sinpe.rope(1, 64, offset=9999, scaling=DYNAMIC, layout="compact")[0]
    inv, _ = sinpe.rope_frequencies(64, scaling=DYNAMIC, seq_len=10000)
    assert np.allclose(dyn[0], np.cos(9999 * inv), rtol=0, atol=1e-11)


def test_base_comes_from_rope_theta_or_the_argument():
    params = {"rope_type": "default", "rope_theta": 500000.0}
    a = sinpe.rope_frequencies(8, scaling=params)[0]
    assert np.array_equal(a, sinpe.rope_frequencies(8, base=500000.0)[0])
    assert np.array_equal(a, sinpe.rope_frequencies(8, base=500000, scaling=params)[0])
    with pytest.raises(ValueError, match="rope_theta"):
        sinpe.rope_frequencies(8, base=10000.0, scaling=params)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(scaling={"rope_type": "ntk"}), ValueError, "known types: axial, default, dynamic"),
        (dict(scaling={"rope_type": "linear"}), ValueError, "'factor'"),
        (dict(scaling={"rope_type": "linear", "factor": 0}), ValueError, "factor"),
        (dict(scaling={"rope_type": "linear", "factor": float("nan")}), ValueError, "factor"),
        (dict(scaling={"rope_type": "linear", "factor": "2"}), TypeError, "factor"),
        (
            dict(scaling={"rope_type": "dynamic", "factor": 2.0}),
            ValueError,
            "max_position_embeddings",
        ),
        (
            dict(scaling={"rope_type": "llama3", "factor": 8.0}),
            ValueError,
            "original_max_position_embeddings",
        ),
        (dict(scaling={**LLAMA31, "high_freq_factor": 0.5}), ValueError, "high_freq_factor"),
        (
            dict(scaling={**LONGROPE, "long_factor": [1.0] * 3}, seq_len=10**6),
            ValueError,
            "long_factor.*8 entries",
        ),
        (dict(scaling={**LONGROPE, "short_factor": "abc"}), TypeError, "short_factor"),
        (dict(scaling={**YARN, "truncate": "no"}), TypeError, "truncate"),
        (dict(scaling=[("rope_type", "linear")]), TypeError, "mapping"),
        (dict(head_dim=15, scaling=YARN), ValueError, "head_dim must be even for rope_type"),
        (dict(head_dim=15, scaling=LONGROPE), ValueError, "short_factor.*7 entries, got 8"),
        (dict(head_dim=15, inv_freq=[1.0] * 7), ValueError, "head_dim must be even with inv_freq"),
        (dict(head_dim=0), ValueError, "head_dim"),
        (dict(head_dim=8.0), TypeError, "head_dim"),
        (dict(base=-1.0), ValueError, "base"),
        (dict(seq_len=-1), ValueError, "seq_len"),
    ],
)
def test_bad_scaling_names_what_is_wrong(kwargs, error, match):
    kwargs = {"head_dim": 16, **kwargs}
    with pytest.raises(error, match=match):
        sinpe.rope_frequencies(kwargs.pop("head_dim"), **kwargs)


@pytest.mark.parametrize(
    "scaling",
    [None, {"rope_type": "linear", "factor": 4.0}, DYNAMIC, LLAMA31],
    ids=["default", "linear", "dynamic", "llama3"],
)
@pytest.mark.parametrize("dim", [5, 21, 73])
def test_an_odd_width_rotates_its_frequencies_as_transformers_arange_does(scaling, dim):
    """transformers' ``arange(0, dim, 2) / dim`` at an odd ``dim`` (GLM-4-MoE's class
    defaults: 21; Qwen3-Omni's: 73): ``(dim + 1) // 2`` powers of exponent ``2i/dim``, and
    tables ``dim + 1`` wide, each entry within sinpe's 1e-15 of the exact value."""
    seq_len = 2 * (scaling or {}).get("max_position_embeddings", 64)
    w, attention = sinpe.rope_frequencies(dim, scaling=scaling, seq_len=seq_len)
    exact, _ = ref.transformers_rope_parameters(scaling, dim, 10000.0, seq_len)
    assert w.shape == ((dim + 1) // 2,) == (len(exact),)
    exact = np.array([float(v) for v in exact])
    assert (np.abs(w - exact) <= 4 * np.spacing(exact)).all()
    positions = [0, 1, 7, 1000, 65535]
    cos, sin = sinpe.rope_at(positions, dim, scaling=scaling, seq_len=seq_len)
    assert cos.shape == (len(positions), 2 * w.shape[0])
    c, s = oracle.rope(positions, w, attention)
    h = w.shape[0]
    for table, exact in ((cos, c), (sin, s)):
        assert np.array_equal(table[:, :h], table[:, h:])
        assert np.abs(table[:, :h] - exact.astype(np.float64)).max() <= 1e-15


def test_bad_table_arguments():
    with pytest.raises(ValueError, match="layout must be one of"):
        sinpe.rope(4, 8, layout="neox")
    with pytest.raises(TypeError, match="layout"):
        sinpe.rope(4, 8, layout=1)
    with pytest.raises(TypeError, match="dtype"):
        sinpe.rope(4, 8, dtype=np.int32)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        sinpe.rope(4, 8, offset=2**53 - 2)
    with pytest.raises(ValueError, match="positions"):
        sinpe.rope_at([1.0, np.nan], 8)
    with pytest.raises(ValueError, match="below 2\\*\\*900"):
        sinpe.rope(4, 8, scaling={"rope_type": "linear", "factor": 1e-300})
    with pytest.raises(ValueError, match="backend"):
        sinpe.rope(4, 8, backend="torch")


def test_frequencies_of_2_to_the_32_and_more_are_exact(backend):
    """Inverse frequencies past the evaluator's fast range (2**32) take the big-integer path
    for the anchors and grid, then the same rotations: exact, and rope == rope_at."""
    scaling = {"rope_type": "linear", "factor": 1e-12}  # inv_freq up to 1e12
    inv_freq, _ = sinpe.rope_frequencies(8, scaling=scaling)
    assert inv_freq.max() > 2.0**32
    cos, sin = sinpe.rope(40, 8, offset=2**40, scaling=scaling, layout="compact", backend=backend)
    rows = [0, 1, 17, 39]
    exact_cos, exact_sin = oracle.rope([2**40 + r for r in rows], inv_freq)
    assert np.abs(cos[rows] - exact_cos).max() <= 1e-15
    assert np.abs(sin[rows] - exact_sin).max() <= 1e-15
    at = sinpe.rope_at(
        np.arange(2**40, 2**40 + 40), 8, scaling=scaling, layout="compact", backend=backend
    )
    assert np.array_equal(at[0], cos) and np.array_equal(at[1], sin)


def test_dynamic_needs_a_head_dim_of_four():
    with pytest.raises(ValueError, match="head_dim >= 4"):
        sinpe.rope_frequencies(2, scaling=DYNAMIC, seq_len=10**5)
    assert math.isfinite(sinpe.rope_frequencies(4, scaling=DYNAMIC, seq_len=10**5)[0][1])
