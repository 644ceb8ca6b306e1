"""Every model family from its real config: rope_config against what transformers 5.24 reads
(tests/data/configs, checked by tools/transformers_rope.py --published), M-RoPE and axial tables
against the exact values recomposed as transformers does (mpmath + a float64 transcription),
engine cache formats, and the errors of bad configs."""

import json
import math
import os
import pickle
import re
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import numpy as np
import oracle
import pytest
import references as ref

import sinpe
from sinpe._rope import rope_types
from sinpe._tables import backends

CONFIGS = Path(__file__).parent / "data" / "configs"

# file -> model_type, rotary width, base, scaling, max_position_embeddings: what transformers
# 5.24 builds from the published file (its own rotary modules agree, tools/...).
FLAT = {
    "deepseek-v3.json": (
        "deepseek_v3",
        64,
        10000.0,
        {
            "rope_type": "yarn",
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
        },
        163840,
    ),
    "kimi-k2-instruct.json": (
        "deepseek_v3",
        64,
        50000.0,
        {
            "rope_type": "yarn",
            "beta_fast": 1.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
        },
        131072,
    ),
    "qwen2-vl-2b-instruct-awq.json": (
        "qwen2_vl_text",
        128,
        1e6,
        {"rope_type": "default", "mrope_section": (16, 24, 24), "mrope_interleaved": False},
        32768,
    ),
    "qwen2.5-vl-7b-instruct.json": (
        "qwen2_5_vl_text",
        128,
        1e6,
        {"rope_type": "default", "mrope_section": (16, 24, 24), "mrope_interleaved": False},
        128000,
    ),
    "qwen3-vl-4b-instruct.json": (
        "qwen3_vl_text",
        128,
        5e6,
        {"rope_type": "default", "mrope_section": (24, 20, 20), "mrope_interleaved": True},
        262144,
    ),
    "qwen3.5-27b.json": (
        "qwen3_5_text",
        64,
        1e7,
        {"rope_type": "default", "mrope_section": (11, 11, 10), "mrope_interleaved": True},
        262144,
    ),
    "phi-3.5-mini-instruct.autoconfig-dump.json": ("phi3", 96, 10000.0, None, 131072),
    # "type": "su": longrope, as transformers 5.25 reads it (5.24 refused it)
    "phi-3-mini-128k-instruct.dotnet.json": ("phi3", 96, 10000.0, None, 131072),
    "phi-2.json": ("phi", 32, 10000.0, {"rope_type": "default"}, 2048),
    "qwen3-next-80b-a3b-thinking.json": ("qwen3_next", 64, 1e7, {"rope_type": "default"}, 262144),
    # "dynamic" with alpha: a fixed NTK-alpha base; its YaRN keys are read by nothing
    "hunyuan-promptenhancer-7b.json": (
        "hunyuan_v1_dense",
        128,
        10000.0,
        {"rope_type": "ntk_alpha", "alpha": 1000.0, "factor": 1.0},
        32768,
    ),
    # HYV4Config forces head_dim = qk_rope_head_dim (64) whatever the file says (256)
    "hy-v4.head-dim-256.constructed.json": ("hy_v4", 64, 10000.0, {"rope_type": "default"}, 262144),
    "llama-3.1-8b.json": (
        "llama",
        128,
        500000.0,
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        131072,
    ),
    "gpt-oss-20b.json": (
        "gpt_oss",
        64,
        150000.0,
        {
            "rope_type": "yarn",
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "truncate": False,
        },
        131072,
    ),
    "pixtral-12b.vision_config.json": ("pixtral", 64, 10000.0, {"rope_type": "axial"}, None),
    # rotary_dim 64 of head_dim 128: MiniMaxM2Config's partial factor rotary_dim / head_dim
    "minimax-m2.7.json": ("minimax_m2", 64, 5e6, {"rope_type": "default"}, 204800),
    # low_freq_factor == high_freq_factor: no middle band (Meta's and vLLM's formula)
    "llama-4-scout-17b-16e-instruct.trimmed.json": (
        "llama4_text",
        128,
        500000.0,
        {
            "rope_type": "llama3",
            "factor": 16.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
        },
        10485760,
    ),
}
PER_LAYER = {
    "gemma-3-4b-it.json": (
        "gemma3_text",
        {
            "full_attention": (256, 1e6, {"rope_type": "linear", "factor": 8.0}),
            "sliding_attention": (256, 1e4, {"rope_type": "default"}),
        },
    ),
    "gemma-3-4b-it.transformers-5.json": (
        "gemma3_text",
        {
            "full_attention": (256, 1e6, {"rope_type": "linear", "factor": 8.0}),
            "sliding_attention": (256, 1e4, {"rope_type": "default"}),
        },
    ),
    "gemma-4-e2b-it.json": (
        "gemma4_text",
        {
            "full_attention": (
                512,
                1e6,
                {"rope_type": "proportional", "partial_rotary_factor": 0.25},
            ),
            "sliding_attention": (256, 1e4, {"rope_type": "default"}),
        },
    ),
    "laguna-xs.2-fp8.json": (
        "laguna",
        {
            "full_attention": (
                64,
                500000.0,
                {
                    "rope_type": "yarn",
                    "factor": 64.0,
                    "original_max_position_embeddings": 4096,
                    "beta_slow": 1.0,
                    "beta_fast": 64.0,
                    "attention_factor": 1.4158883083359672,
                },
            ),
            "sliding_attention": (128, 1e4, {"rope_type": "default"}),
        },
    ),
}


def every_spec():
    for name in FLAT:
        yield name, sinpe.rope_config(CONFIGS / name)
    for name, (_, layers) in PER_LAYER.items():
        for layer_type in layers:
            yield f"{name}:{layer_type}", sinpe.rope_config(CONFIGS / name, layer_type=layer_type)


SPECS = dict(every_spec())


@pytest.mark.parametrize("name", FLAT)
def test_flat_configs_read_as_transformers_reads_them(name):
    model_type, head_dim, base, scaling, max_position = FLAT[name]
    spec = sinpe.rope_config(CONFIGS / name)
    assert (spec.model_type, spec.head_dim, spec.base) == (model_type, head_dim, base)
    assert spec.max_position_embeddings == max_position and spec.layer_types is None
    if scaling is not None:
        assert dict(spec.scaling) == scaling
    else:  # Phi-3.5's longrope: its lists, the top-level original length
        raw = json.loads((CONFIGS / name).read_text())["rope_scaling"]
        assert spec.scaling["rope_type"] == "longrope"
        assert spec.scaling["long_factor"] == tuple(raw["long_factor"])
        assert spec.scaling["original_max_position_embeddings"] == 4096


@pytest.mark.parametrize("name", PER_LAYER)
def test_per_layer_configs_give_a_spec_per_layer_type(name):
    model_type, layers = PER_LAYER[name]
    spec = sinpe.rope_config(CONFIGS / name)
    assert spec.layer_types == tuple(sorted(layers)) and spec.model_type == model_type
    assert spec.head_dim is None and spec.base is None and spec.scaling is None
    for layer_type, (head_dim, base, scaling) in layers.items():
        for layer in (
            spec.layer(layer_type),
            sinpe.rope_config(CONFIGS / name, layer_type=layer_type),
        ):
            assert (layer.head_dim, layer.base, dict(layer.scaling)) == (head_dim, base, scaling)
            assert layer.layer_type == layer_type
    for method, args in (
        ("rope", (4,)),
        ("rope_at", ([1, 2],)),
        ("frequencies", ()),
        ("rope_cache", (4,)),
    ):
        with pytest.raises(ValueError, match="full_attention, sliding_attention"):
            getattr(spec, method)(*args)
    with pytest.raises(ValueError, match="layer_type must be one of"):
        spec.layer("local")
    with pytest.raises(ValueError, match="layer_type must be one of"):
        sinpe.rope_config(CONFIGS / name, layer_type="global")


def test_gemma4_full_layers_rotate_a_quarter_of_512_columns():
    """Gemma 4's full-attention layers: proportional over global_head_dim 512 with factor
    0.25: 64 frequencies base**(-2i/512), then zeros (cos 1, sin 0)."""
    layer = sinpe.rope_config(CONFIGS / "gemma-4-e2b-it.json", layer_type="full_attention")
    inv_freq, factor = layer.frequencies()
    assert inv_freq.shape == (256,) and factor == 1.0
    exact = [float(oracle.power_rule(1e6, 2, i, 512)) for i in range(64)]
    assert np.all(np.abs(inv_freq[:64] - exact) <= 4 * np.spacing(np.array(exact)))
    assert np.all(inv_freq[64:] == 0)
    cos, sin = layer.rope(3, offset=1000)
    assert np.all(cos[:, 64:256] == 1) and np.all(sin[:, 64:256] == 0)


def test_text_config_path_mapping_and_to_dict_read_alike():
    path = CONFIGS / "qwen3-vl-4b-instruct.json"
    data = json.loads(path.read_text())

    class Config:  # a transformers config, as far as rope_config is concerned
        def to_dict(self):
            return data

    specs = [sinpe.rope_config(x) for x in (path, str(path), data, Config())]
    assert all(s == specs[0] for s in specs)
    assert sinpe.rope_config(data["text_config"] | {"model_type": "qwen3_vl_text"}) == specs[0]


def test_specs_are_frozen_and_pickle():
    spec = SPECS["qwen3-vl-4b-instruct.json"]
    with pytest.raises(FrozenInstanceError):
        spec.base = 1.0
    with pytest.raises(TypeError):
        spec.scaling["rope_type"] = "linear"
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and dict(again.scaling) == dict(spec.scaling)
    layered = sinpe.rope_config(CONFIGS / "gemma-3-4b-it.json")
    assert pickle.loads(pickle.dumps(layered)).layer("full_attention") == layered.layer(
        "full_attention"
    )


def _inverse_frequencies_exact(spec, seq_len):
    scaling = dict(spec.scaling)
    if spec.max_position_embeddings is not None:
        scaling["max_position_embeddings"] = spec.max_position_embeddings
    kind = scaling["rope_type"]
    if kind in ("axial",) or "mrope_section" in scaling:
        scaling = {"rope_type": "default"}
    inv, attention = ref.transformers_rope_parameters(scaling, spec.head_dim, spec.base, seq_len)
    inv = np.array([float(v) for v in inv])
    return (ref.pixtral_inv_freq(inv) if kind == "axial" else inv), float(attention)


@pytest.mark.parametrize("name", SPECS)
def test_frequencies_within_4_ulp_of_transformers_formula(name):
    spec = SPECS[name]
    for seq_len in (None, 100_000):
        inv_freq, attention = spec.frequencies(seq_len)
        exact, exact_attention = _inverse_frequencies_exact(spec, seq_len)
        assert np.all(np.abs(inv_freq - exact) <= 4 * np.spacing(np.abs(exact)))
        assert attention == pytest.approx(exact_attention, rel=1e-15)


def _positions(spec, rng):
    """Positions as the model's forward takes them: three axes for M-RoPE, (h, w) pairs for
    axial, else token ids; near 0 and near 2**40."""
    if spec.scaling.get("mrope_section"):
        return rng.integers(0, 3000, (3, 2, 5)) + np.array([0, 2**40, 7])[:, None, None]
    if spec.scaling["rope_type"] == "axial":
        return rng.integers(0, 64, (7, 2))
    return np.concatenate([rng.integers(0, 5000, 4), rng.integers(2**40, 2**40 + 9, 3)])


def _exact_tables(spec, positions):
    """Exact cos, sin (mpmath) at each axis's positions, recomposed as transformers does."""
    inv_freq, attention = spec.frequencies(int(positions.max()) + 1)
    scaling = spec.scaling
    if scaling.get("mrope_section"):
        flat = positions.reshape(3, -1)
        cs = np.stack([oracle.cos_sin(list(axis), inv_freq, attention) for axis in flat])
        recompose = (
            ref.qwen3_vl_recompose if scaling["mrope_interleaved"] else ref.qwen2_vl_recompose
        )
        shape = positions.shape[1:] + (2 * inv_freq.size,)
        return tuple(
            recompose(cs[:, :, k], scaling["mrope_section"]).reshape(shape) for k in (0, 1)
        )
    if scaling["rope_type"] == "axial":
        cs = np.stack([oracle.cos_sin(list(axis), inv_freq, attention) for axis in positions.T])
        return tuple(ref.pixtral_recompose(np.moveaxis(cs[:, :, k], 0, 1)) for k in (0, 1))
    cs = oracle.cos_sin(list(positions), inv_freq, attention)
    return tuple(np.concatenate([cs[:, k], cs[:, k]], axis=-1) for k in (0, 1))


@pytest.mark.parametrize("name", SPECS)
def test_tables_within_the_bound_of_the_exact_recomposed_values(backend, name):
    spec = SPECS[name]
    positions = _positions(spec, np.random.default_rng(len(name)))
    exact = _exact_tables(spec, positions)
    _, attention = spec.frequencies(int(positions.max()) + 1)
    tables = spec.rope_at(positions, backend=backend)
    for got, want in zip(tables, exact):
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= 1e-15 * max(1.0, attention)
    for dtype in (np.float32, np.float16):  # rounded once from the float64 values
        narrow = spec.rope_at(positions, dtype=dtype, backend=backend)
        assert all(np.array_equal(n, t.astype(dtype)) for n, t in zip(narrow, tables))


@pytest.mark.parametrize("name", [n for n in SPECS if SPECS[n].scaling.get("mrope_section")])
@pytest.mark.parametrize("layout", sinpe._rope.rope.LAYOUTS)
def test_mrope_text_positions_are_the_plain_table_bit_for_bit(name, layout):
    """Text tokens have the same position on every axis: rope(n) is that table, rope_at of
    the broadcast positions the same bits, in every layout, on both backends alike."""
    spec = SPECS[name]
    ids = np.arange(900, 1000)
    plain = sinpe.rope(100, spec.head_dim, base=spec.base, offset=900, layout=layout)
    for backend in backends.BACKENDS:
        table = spec.rope(100, offset=900, layout=layout, backend=backend)
        at = spec.rope_at(np.broadcast_to(ids, (3, 100)), layout=layout, backend=backend)
        for a, b, c in zip(table, at, plain):
            assert np.array_equal(a, b) and np.array_equal(a, c)


def test_mrope_layouts_place_each_axis_section():
    """Interleaved and compact layouts carry the same values as half, in their columns."""
    spec = SPECS["qwen3-vl-4b-instruct.json"]
    positions = np.array([[5, 70000], [6, 3], [9, 123456]])
    half = spec.rope_at(positions)
    compact = spec.rope_at(positions, layout="compact")
    interleaved = spec.rope_at(positions, layout="interleaved")
    for h, c, i in zip(half, compact, interleaved):
        assert np.array_equal(h[:, :64], c) and np.array_equal(h[:, 64:], c)
        assert np.array_equal(i[:, 0::2], c) and np.array_equal(i[:, 1::2], c)


def test_multi_axis_positions_are_checked():
    mrope = SPECS["qwen2-vl-2b-instruct-awq.json"]
    with pytest.raises(ValueError, match=r"shape \(3, \.\.\.\)"):
        mrope.rope_at(np.arange(10))
    axial = SPECS["pixtral-12b.vision_config.json"]
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 2\)"):
        axial.rope_at(np.arange(10))
    with pytest.raises(ValueError, match="rope_at"):
        axial.rope(10)
    with pytest.raises(ValueError, match="mrope_section.*sum to the 32 frequencies"):
        sinpe.rope_at(np.zeros((3, 4)), 64, scaling={"mrope_section": [16, 24, 24]})


# --------------------------------------------------------------------------- sinpe.rope's keys


def test_partial_rotary_factor_in_the_mapping_is_never_applied_twice_or_ignored():
    scaling = {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.5}
    with pytest.raises(ValueError, match=r"head_dim=40 \(int\(80 \* 0.5\)\).*rope_config"):
        sinpe.rope(16, 80, scaling=scaling)
    config = {
        "model_type": "phi",
        "hidden_size": 2560,
        "num_attention_heads": 32,
        "rope_parameters": scaling,
    }
    spec = sinpe.rope_config(config)
    assert spec.head_dim == 40 and "partial_rotary_factor" not in spec.scaling
    cos, _ = spec.rope(16)
    assert cos.shape == (16, 40) and np.array_equal(cos, sinpe.rope(16, 40)[0])
    # proportional keeps head_dim and takes the factor as its zero tail
    cos, _ = sinpe.rope(4, 80, scaling={"rope_type": "proportional", "partial_rotary_factor": 0.5})
    assert cos.shape == (4, 80)


def test_transformers_rope_parameters_work_beside_max_position_embeddings():
    """transformers 5's config.rope_parameters lacks the length the config holds beside it."""
    dynamic = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    with pytest.raises(ValueError, match="max_position_embeddings"):
        sinpe.rope(8, 64, scaling=dynamic)
    a = sinpe.rope(8, 64, scaling=dynamic, max_position_embeddings=2048)
    b = sinpe.rope(8, 64, scaling={**dynamic, "max_position_embeddings": 2048})
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    phi = sinpe.rope_config(CONFIGS / "phi-3.5-mini-instruct.autoconfig-dump.json")
    params = {**phi.scaling, "rope_theta": phi.base}  # as transformers' rope_parameters
    inv, attention = sinpe.rope_frequencies(96, scaling=params, max_position_embeddings=131072)
    assert attention == pytest.approx((1 + np.log(32) / np.log(4096)) ** 0.5, rel=1e-15)
    with pytest.raises(ValueError, match="disagrees"):
        sinpe.rope(
            8,
            64,
            scaling={**dynamic, "max_position_embeddings": 2048},
            max_position_embeddings=4096,
        )
    with pytest.raises(ValueError, match="max_position_embeddings"):
        sinpe.rope(8, 64, max_position_embeddings=0)


# --------------------------------------------------------------------------- engine caches


@pytest.mark.parametrize("dtype", [None, np.float32, np.float16])
def test_cache_formats_hold_the_rope_values(backend, dtype):
    scaling = FLAT["llama-3.1-8b.json"][3]
    kwargs = dict(base=500000.0, scaling=scaling, offset=70000, backend=backend)
    cos, sin = sinpe.rope(50, 128, layout="compact", dtype=dtype or np.float64, **kwargs)
    vllm = sinpe.rope_cache(50, 128, format="vllm", dtype=dtype, **kwargs)
    pairs = sinpe.rope_cache(50, 128, format="pairs", dtype=dtype, **kwargs)
    sincos = sinpe.rope_cache(50, 128, format="sincos", dtype=dtype, **kwargs)
    assert vllm.shape == sincos.shape == (50, 128) and pairs.shape == (50, 64, 2)
    assert vllm.dtype == cos.dtype and vllm.flags.c_contiguous and sincos.flags.c_contiguous
    assert np.array_equal(vllm, np.concatenate([cos, sin], axis=1))
    assert np.array_equal(sincos, np.concatenate([sin, cos], axis=1))
    assert np.array_equal(pairs, np.stack([cos, sin], axis=-1))
    if dtype is None:
        freqs_cis = sinpe.rope_cache(50, 128, format="complex", **kwargs)
        assert freqs_cis.dtype == np.complex128 and freqs_cis.shape == (50, 64)
        assert np.array_equal(freqs_cis.real, cos) and np.array_equal(freqs_cis.imag, sin)
        small = sinpe.rope_cache(50, 128, format="complex", dtype=np.complex64, **kwargs)
        assert np.array_equal(small, freqs_cis.astype(np.complex64))


def test_cache_arguments_are_checked():
    with pytest.raises(ValueError, match="format must be one of"):
        sinpe.rope_cache(4, 8, format="flashinfer")
    with pytest.raises(TypeError, match="complex64 or complex128"):
        sinpe.rope_cache(4, 8, format="complex", dtype=np.float16)
    with pytest.raises(TypeError, match="dtype"):
        sinpe.rope_cache(4, 8, dtype=np.complex64)
    yarn = SPECS["deepseek-v3.json"]
    _, attention = yarn.frequencies()
    cache = yarn.rope_cache(3)
    assert cache[0, 0] == attention  # the attention factor is in every value


# --------------------------------------------------------------------------- bad configs


BAD = [
    ({"rope_theta": 1e4, "num_attention_heads": 8}, "no hidden_size", None),
    ({"hidden_size": 64, "num_attention_heads": 2}, "no rope_theta", None),
    (
        {"model_type": "unknown", "head_dim": 64, "rope_theta": 1e4, "partial_rotary_factor": 0.5},
        "partial_rotary_factor=0.5",
        None,
    ),
    (
        {
            "model_type": "ernie4_5_vl",
            "head_dim": 64,
            "rope_theta": 1e4,
            "rope_parameters": {"rope_type": "default", "mrope_section": [8, 12, 12]},
        },
        "mrope_section",
        None,
    ),
    ({"model_type": "llama", "head_dim": 64, "rope_theta": "1e4"}, "rope_theta", None),
    ({"model_type": "llama", "head_dim": 64, "rope_scaling": [1, 2]}, "must be an object", None),
    (
        {"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "linear"}},
        "'factor'",
        None,
    ),
    (
        {
            "model_type": "llama",
            "head_dim": 63,
            "rope_scaling": {"rope_type": "yarn", "factor": 2.0},
            "max_position_embeddings": 4096,
        },
        "head_dim must be even",
        None,
    ),
    (
        {
            "model_type": "phi",
            "hidden_size": 100,
            "num_attention_heads": 2,
            "partial_rotary_factor": 0.1,
            "rope_scaling": {
                "rope_type": "longrope",
                "short_factor": [1.0] * 2,
                "long_factor": [1.0] * 2,
            },
            "original_max_position_embeddings": 64,
            "max_position_embeddings": 128,
        },
        "rotary width of 5",
        None,
    ),
    (
        {
            "model_type": "x",
            "head_dim": 8,
            "rope_theta": 1e4,
            "rope_parameters": {"full_attention": {"rope_type": "default"}},
        },
        "layer_types",
        None,
    ),
    (
        {
            "model_type": "llama",
            "head_dim": 64,
            "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
        },
        None,
        None,
    ),  # max_position_embeddings from Llama's defaults: fine
    (
        {
            "head_dim": 64,
            "rope_theta": 1e4,
            "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
        },
        "no max_position_embeddings",
        None,
    ),
]


@pytest.mark.parametrize("config, message, file", BAD)
def test_bad_configs_name_the_key(config, message, file):
    source = CONFIGS / file if file else config
    if message is None:
        sinpe.rope_config(source)
        return
    with pytest.raises(ValueError, match=message):
        sinpe.rope_config(source)


def test_config_files_are_read_with_care(tmp_path):
    with pytest.raises(ValueError, match="holds no config.json"):
        sinpe.rope_config(tmp_path)  # a folder is the model's: its config.json is read
    with pytest.raises(ValueError, match="not a regular file"):
        sinpe.rope_config("/dev/zero")
    with pytest.raises(ValueError, match="cannot read"):
        sinpe.rope_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_bytes(b"\xff{")
    with pytest.raises(ValueError, match="not valid JSON"):
        sinpe.rope_config(tmp_path / "bad.json")
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(sinpe._rope.config.MAX_CONFIG_BYTES + 1)
    with pytest.raises(ValueError, match="larger than 16 MiB"):
        sinpe.rope_config(big)
    with pytest.raises(TypeError, match="path to a config.json"):
        sinpe.rope_config(42)


# --------------------------------------------------------------------------- command line


def sinpe_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_the_command_line_prints_and_writes_every_layer_type(tmp_path):
    path = CONFIGS / "gemma-3-4b-it.json"
    result = sinpe_cli("rope", path)
    assert result.returncode == 0, result.stderr
    assert "full_attention: rope_type linear, rotary dim 256, base 1e+06" in result.stdout
    assert "sliding_attention: rope_type default, rotary dim 256, base 10000" in result.stdout
    result = sinpe_cli("rope", path, "--seq-len", 16, "-o", tmp_path / "gemma")
    assert result.returncode == 0, result.stderr
    saved = np.load(tmp_path / "gemma.npz")
    spec = sinpe.rope_config(path)
    for layer_type in spec.layer_types:
        cos, sin = spec.layer(layer_type).rope(16, dtype=np.float32)
        assert np.array_equal(saved[f"cos_{layer_type}"], cos)
        assert np.array_equal(saved[f"sin_{layer_type}"], sin)
    result = sinpe_cli("rope", CONFIGS / "qwen3-vl-4b-instruct.json")
    assert "M-RoPE sections [24, 20, 20] (interleaved)" in result.stdout
    result = sinpe_cli("rope", CONFIGS / "phi-3-mini-128k-instruct.dotnet.json")
    assert result.returncode == 0 and "longrope" in result.stdout, result.stderr


# sinpe check: tests/test_check.py


def test_the_softmax_scale_of_the_mla_families():
    """DeepSeek-V3's attention multiplies its softmax scale by yarn_get_mscale(40, 1.0)**2
    (transformers' yarn_apply_mscale); Llama's by nothing; without mscale_all_dim, nothing."""
    deepseek = sinpe.rope_config(CONFIGS / "deepseek-v3.json")
    assert deepseek.softmax_scale == (0.1 * 1.0 * math.log(40) + 1.0) ** 2
    assert sinpe.rope_config(CONFIGS / "llama-3.1-8b.json").softmax_scale == 1.0
    linear = {"model_type": "deepseek_v3", "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert sinpe.rope_config(linear).softmax_scale == 1.0


def test_the_rotation_says_which_elements_turn_together():
    """Llama's attention rotates halves; DeepSeek-V3's published config has no
    rope_interleave, whose class default (true) rotates pairs while the module still returns
    halves; rope_interleave false rotates halves; NanoChat turns by the negative angle; a
    family sinpe has no record of says nothing; a rope_interleave that is not a bool is an
    error naming the key. (tests/test_transformers_live.py runs every family's own rotation
    function on sinpe's table.)"""
    llama = sinpe.rope_config(CONFIGS / "llama-3.1-8b.json")
    assert (llama.layout, llama.rotation, llama.sin_sign) == ("half", "halves", 1)
    deepseek = sinpe.rope_config(CONFIGS / "deepseek-v3.json")
    assert (deepseek.layout, deepseek.rotation) == ("half", "pairs")
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    assert sinpe.rope_config({**config, "rope_interleave": False}).rotation == "halves"
    assert sinpe.rope_config(CONFIGS / "kimi-k2-instruct.json").rotation == "pairs"
    assert sinpe.rope_config({"model_type": "glm4", "head_dim": 128}).rotation == "pairs"
    assert sinpe.rope_config({"model_type": "nanochat"}).sin_sign == -1
    unknown = {"model_type": "not_a_family", "head_dim": 64, "rope_theta": 10000.0}
    assert sinpe.rope_config(unknown).rotation is None
    with pytest.raises(ValueError, match="rope_interleave must be true or false"):
        sinpe.rope_config({**config, "rope_interleave": "yes"})


def test_keys_a_family_module_never_reads_are_accepted_and_listed():
    """HunYuan's published "dynamic" mapping with alpha carries YaRN's keys; its module
    (compute_ntk_alpha_rope_parameters) reads rope_theta, alpha and head_dim only, so they
    cannot change a value: accepted, listed, and the frequencies are the NTK-alpha ones."""
    spec = sinpe.rope_config(CONFIGS / "hunyuan-promptenhancer-7b.json")
    assert spec.ignored_keys == ("beta_fast", "beta_slow", "mscale", "mscale_all_dim")
    w, factor = spec.frequencies()
    exact, _ = ref.transformers_rope_parameters(
        {"rope_type": "ntk_alpha", "alpha": 1000}, 128, 1e4, None
    )
    exact = np.array([float(v) for v in exact])
    assert factor == 1.0
    assert np.all(np.abs(w - exact) <= 4 * np.spacing(exact))
    # a family whose module has no such rule refuses the keys its type does not read
    raw = json.loads((CONFIGS / "hunyuan-promptenhancer-7b.json").read_text())
    raw["model_type"] = "llama"
    with pytest.raises(ValueError, match="'alpha', which rope_type 'dynamic' does not read"):
        sinpe.rope_config(raw)
    assert sinpe.rope_config(CONFIGS / "llama-3.1-8b.json").ignored_keys == ()


@pytest.mark.parametrize("model_type", ["ministral3", "mistral4"])
def test_llama_4_scaling_beta_is_the_attentions_not_the_rotary_modules(model_type, monkeypatch):
    """Ministral-3's and Mistral-4's YaRN mappings carry llama_4_scaling_beta, which their
    attention reads (a query scale) and their rotary modules never do: listed, no warning
    (the suite turns warnings into errors); a family without that rule is warned."""
    scaling = {
        "rope_type": "yarn",
        "factor": 16.0,
        "original_max_position_embeddings": 16384,
        "llama_4_scaling_beta": 0.1,
    }
    config = {
        "model_type": model_type,
        "head_dim": 128,
        "qk_rope_head_dim": 64,
        "max_position_embeddings": 262144,
        "rope_parameters": {**scaling, "rope_theta": 1e6},
    }
    assert sinpe.rope_config(config).ignored_keys == ("llama_4_scaling_beta",)
    monkeypatch.setattr(rope_types, "_WARNED", set())  # warned once a process: not yet here
    with pytest.warns(UserWarning, match="ignoring the keys 'llama_4_scaling_beta'"):
        sinpe.rope_config({**config, "model_type": "llama"})


@pytest.mark.parametrize(
    "name, config_class",
    [
        ("hunyuan-promptenhancer-7b.json", "HunYuanDenseV1Config"),
        ("hy-v4.head-dim-256.constructed.json", "HYV4Config"),
    ],
)
def test_raw_config_files_read_as_the_config_class_reads_them(name, config_class):
    """The raw file, not the config object's post-init values: what the class makes of it
    (transformers, where installed) is what rope_config reads."""
    transformers = pytest.importorskip("transformers")
    raw = json.loads((CONFIGS / name).read_text())
    config = getattr(transformers, config_class)(
        **{k: v for k, v in raw.items() if k != "model_type"}
    )
    spec = sinpe.rope_config(CONFIGS / name)
    assert spec.head_dim == config.head_dim


def test_su_is_longrope_only_where_transformers_maps_it():
    """transformers 5.25 maps Phi-3's first name "su" (under rope_type or type) to longrope in
    Phi-3 and Phi-4-multimodal configs (5.24 refused it); sinpe follows the newer release.
    Any other family's config naming it is refused, saying what to write."""
    raw = json.loads((CONFIGS / "phi-3-mini-128k-instruct.dotnet.json").read_text())
    su = sinpe.rope_config(raw)
    raw["rope_scaling"] = {**raw["rope_scaling"], "type": "longrope"}
    assert su == sinpe.rope_config(raw)
    raw["model_type"] = "phi4_multimodal"
    raw["rope_scaling"]["type"] = "su"
    assert sinpe.rope_config(raw).scaling == su.scaling
    raw["model_type"] = "llama"
    with pytest.raises(ValueError, match="rope_type 'su' is Phi-3's first name for 'longrope'"):
        sinpe.rope_config(raw)


ERNIE_VL = {"rope_type": "default", "mrope_section": [22, 22, 20], "mrope_paired": True}


def test_paired_mrope_is_ernie_4_5_vl_recomposition_within_the_exact_bound():
    """ERNIE-4.5-VL's sections: H and W alternate over the first two, then T, each column
    twice in place (its interleaved layout), against mpmath recomposed as its module does."""
    positions = np.array([[0, 5, 70000, 2**40], [1, 6, 3, 2**40 + 1], [9, 2, 123456, 17]])
    inv_freq, _ = sinpe.rope_frequencies(128, base=5e5, scaling=ERNIE_VL)
    cs = np.stack([oracle.cos_sin(list(axis), inv_freq, 1.0) for axis in positions])
    for backend in backends.BACKENDS:
        got = sinpe.rope_at(
            positions, 128, base=5e5, scaling=ERNIE_VL, layout="interleaved", backend=backend
        )
        for k in (0, 1):
            want = ref.ernie_vl_recompose(cs[:, :, k], [22, 22, 20])
            assert got[k].shape == want.shape == (4, 128)
            assert np.max(np.abs(got[k] - want)) <= 1e-15
    # text tokens: every axis at the same position is the plain table, bit for bit
    ids = np.broadcast_to(np.arange(50, 60), (3, 10))
    text = sinpe.rope_at(ids, 128, base=5e5, scaling=ERNIE_VL)
    plain = sinpe.rope(10, 128, base=5e5, offset=50)
    assert all(np.array_equal(a, b) for a, b in zip(text, plain))


@pytest.mark.parametrize(
    ("scaling", "words"),
    [
        ({"rope_type": "default", "mrope_section": [22, 20, 22], "mrope_paired": True}, "paired"),
        ({"rope_type": "default", "mrope_section": [22, 22, 19], "mrope_paired": True}, "sum"),
        ({"rope_type": "default", "mrope_paired": True}, "needs scaling['mrope_section']"),
        (dict(ERNIE_VL, mrope_interleaved=True), "two recompositions"),
        (dict(ERNIE_VL, mrope_paired="yes"), "mrope_paired"),
    ],
)
def test_paired_mrope_sections_that_cannot_pair_are_refused(scaling, words):
    with pytest.raises((ValueError, TypeError), match=re.escape(words)):
        sinpe.rope_at(np.zeros((3, 2), dtype=int), 128, base=5e5, scaling=scaling)
