"""The RoPE registry against transformers' own classes, by enumeration, not a hand list:
``tests/data/transformers_rope_<version>.json`` (written by ``tools/transformers_rope.py`` in a
throwaway venv per transformers release: 5.24 and 5.25) records what every rotary class does
with its configuration class's defaults and with variants of them (a partial factor, a scaled
type, yarn, a legacy rope_scaling), each read as transformers wrote it (``to_dict``) and as it
was given. Each must agree with ``sinpe.rope_config`` (width, frequencies within float32
precision of the exact ones, attention factor, layout, position axis of every frequency, layer
types) or be refused naming why: zero silent disagreements. The registry's own rules are tested
here too: family types, typed keys, refusals, and ``inv_freq=``."""

import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import oracle
import pytest

import sinpe
from sinpe._rope import rope_types as rope_scaling

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import transformers_rope as harness  # noqa: E402

FILES = {
    v: Path(__file__).parent / "data" / f"transformers_rope_{v}.json" for v in harness.VERSIONS
}
RELEASES = {v: json.loads(path.read_text()) for v, path in FILES.items()}
DATA = RELEASES[harness.NEWEST]


def _entries(release: dict, text: bool) -> list:
    ok = [e for e in release["classes"] if e["status"] == "ok"]
    return [e for e in ok if (not e["vision"] and e.get("primary")) == text]


TEXT = _entries(DATA, True)
OTHER = _entries(DATA, False)
# every release's classes: (version, entry), each compared with the one registry
ALL_TEXT = [(v, e) for v, release in RELEASES.items() for e in _entries(release, True)]
ALL_OTHER = [(v, e) for v, release in RELEASES.items() for e in _entries(release, False)]


def compare(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown keys of generated configs: warned, no more
        return harness.compare_entry(entry, sinpe)


def test_one_data_file_per_release():
    for version, release in RELEASES.items():
        assert release["transformers"] == version and len(release["classes"]) > 200
        assert len(_entries(release, True)) > 170
    assert list(RELEASES) == sorted(RELEASES, key=lambda v: tuple(map(int, v.split("."))))


def test_a_class_leaves_a_release_only_with_a_recorded_reason():
    """Every text class of an older release is in the newer one (ok, or with its status)."""
    versions = list(RELEASES)
    for old, new in zip(versions, versions[1:]):
        newer = {e["class"]: e for e in RELEASES[new]["classes"]}
        gone = [e["class"] for e in _entries(RELEASES[old], True) if e["class"] not in newer]
        assert not gone, f"{gone} left transformers {new} with no recorded reason"


@pytest.mark.parametrize("version, entry", ALL_TEXT, ids=[f"{v}-{e['class']}" for v, e in ALL_TEXT])
def test_every_text_rotary_class_agrees_or_is_refused(version, entry):
    """Every variant and form of the class: agrees, or refused naming why; never a silent
    disagreement."""
    results = compare(entry)
    assert results, "nothing compared"
    wrong = [r for r in results if r["verdict"] not in ("agrees", "refuses")]
    assert not wrong, wrong
    assert all(r["detail"] for r in results if r["verdict"] == "refuses")


@pytest.mark.parametrize(
    "version, entry", ALL_OTHER, ids=[f"{v}-{e['class']}" for v, e in ALL_OTHER]
)
def test_vision_towers_and_other_classes_agree_where_accepted(version, entry):
    """A vision tower's config (or a class built on another family's config) that sinpe
    accepts must agree; the towers sinpe does not build are refused, saying so."""
    results = compare(entry)
    if entry["vision"]:
        wrong = [r for r in results if r["verdict"] not in ("agrees", "refuses")]
        assert not wrong, wrong
        if entry["model_type"] != "pixtral":
            assert all(r["verdict"] == "refuses" for r in results if r["variant"] == "defaults")
    else:  # another package's module on this family's config: counted in docs/rope.md
        assert results


def counts(version=harness.NEWEST):
    """``(agree, refuse, {reason: n})`` over a release's text classes' defaults (the to_dict
    form)."""
    agree = refuse = 0
    reasons = {}
    for entry in _entries(RELEASES[version], True):
        results = [r for r in compare(entry) if r["variant"] == "defaults"]
        results = [r for r in results if r["form"] == "to_dict"] or results
        if all(r["verdict"] == "agrees" for r in results):
            agree += 1
            continue
        refuse += 1
        reason = harness.refusal_reason(next(r for r in results if r["verdict"] == "refuses"))
        reasons[reason] = reasons.get(reason, 0) + 1
    return agree, refuse, reasons


def test_the_counts_in_docs_are_these():
    """docs/rope.md states the enumeration's counts of each release (and the newest's
    reasons): they are the data files'."""
    text = (ROOT / "docs" / "rope.md").read_text()
    for version in RELEASES:
        agree, refuse, reasons = counts(version)
        pattern = rf"{re.escape(version)}: (\d+) of (\d+) text classes agree, (\d+) are refused"
        found = re.search(pattern, text)
        assert found, f"docs/rope.md has no enumeration counts for {version}"
        assert tuple(map(int, found.groups())) == (agree, agree + refuse, refuse), version
    for reason, n in reasons.items():
        assert f"| {reason} | {n} |" in text, (reason, n)


def test_the_largest_float32_difference_is_within_the_bound():
    """transformers' float32 frequencies against sinpe's exact ones, over every agreeing
    class: the largest, in float32 ulps (docs/rope.md states it)."""
    worst = max(r["ulps"] for e in TEXT for r in compare(e) if r["verdict"] == "agrees")
    text = (ROOT / "docs" / "rope.md").read_text()
    found = re.search(r"largest difference measured is ([0-9.]+) float32 ulps", text)
    assert found and abs(float(found.group(1)) - worst) < 0.05, worst


# --------------------------------------------------------------------------- the rows


def test_olmo3_puts_a_legacy_mapping_on_full_attention_only():
    config = {
        "model_type": "olmo3",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "max_position_embeddings": 65536,
        "rope_theta": 500000,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 8.0,
            "original_max_position_embeddings": 8192,
            "attention_factor": 1.2079441541679836,
            "beta_fast": 32,
            "beta_slow": 1,
        },
    }
    spec = sinpe.rope_config(config)
    full, sliding = spec.layer("full_attention"), spec.layer("sliding_attention")
    assert full.scaling["rope_type"] == "yarn" and full.frequencies()[1] == 1.2079441541679836
    assert dict(sliding.scaling) == {"rope_type": "default"} and sliding.frequencies()[1] == 1.0
    w = sliding.frequencies()[0]
    assert np.array_equal(w, sinpe.rope_frequencies(128, base=500000.0)[0])


@pytest.mark.parametrize(
    "config, width",
    [
        ({"model_type": "zamba2", "hidden_size": 2560, "num_attention_heads": 32}, 160),
        ({"model_type": "zamba2", "hidden_size": 2048, "num_attention_heads": 32}, 128),
        (
            {"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64, "hidden_size": 3072},
            64,
        ),
    ],
)
def test_family_head_dimension_rules(config, width):
    """Zamba2 rotates attention_head_dim = 2 x hidden / heads; MiniMax-M2 rotary_dim."""
    spec = sinpe.rope_config({**config, "num_attention_heads": 32, "rope_theta": 1e4})
    assert spec.head_dim == width


def test_hunyuan_ntk_alpha_stretches_the_base():
    """HunYuan's "dynamic" with alpha is a fixed base theta * alpha**(d/(d-2)) (transformers'
    compute_ntk_alpha_rope_parameters), at every length; checked against mpmath."""
    config = {
        "model_type": "hunyuan_v1_dense",
        "head_dim": 128,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "rope_theta": 10000.0,
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0},
    }
    spec = sinpe.rope_config(config)
    w, factor = spec.frequencies()
    base = oracle.mpf(10000) * oracle.CTX.power(oracle.mpf(1000), oracle.CTX.mpf(128) / 126)
    exact = [float(oracle.CTX.power(base, -oracle.CTX.mpf(2 * i) / 128)) for i in range(64)]
    assert factor == 1.0 and np.abs(w / np.array(exact) - 1).max() < 4 * 2.0**-52
    assert np.array_equal(spec.frequencies(10**6)[0], w)  # fixed: no length dependence
    assert not spec.length_dependent()
    llama = {**config, "model_type": "llama"}
    with pytest.raises(ValueError, match="'alpha'"):  # a family that does not read alpha
        sinpe.rope_config(llama)


def test_phimoe_attention_factor_is_its_mscale():
    """PhiMoE's module multiplies by short_mscale / long_mscale (by the length), with
    short_factor frequencies at every length (its forward builds them without the length)."""
    config = {
        "model_type": "phimoe",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0 + i / 64 for i in range(64)],
            "long_factor": [2.0 + i / 8 for i in range(64)],
            "short_mscale": 1.243163121016122,
            "long_mscale": 1.3,
            "original_max_position_embeddings": 4096,
        },
    }
    spec = sinpe.rope_config(config)
    w_short, short = spec.frequencies()
    w_long, long = spec.frequencies(200000)
    assert (short, long) == (1.243163121016122, 1.3)
    assert np.array_equal(w_short, w_long)
    plain = sinpe.rope_frequencies(128, base=1e4)[0]
    assert np.allclose(w_short, plain / np.array(config["rope_scaling"]["short_factor"]), 0, 1e-15)


def test_llama3_with_equal_band_factors_has_no_middle_band():
    """Llama 4 Scout: low_freq_factor == high_freq_factor == 1: frequencies whose wavelength
    exceeds the original length / 1 are divided by the factor, the others kept (Meta's and
    vLLM's formula)."""
    scaling = {
        "rope_type": "llama3",
        "factor": 16.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
    }
    w, _ = sinpe.rope_frequencies(128, base=500000.0, scaling=scaling)
    plain = sinpe.rope_frequencies(128, base=500000.0)[0]
    long = 2 * np.pi / plain > 8192
    assert np.array_equal(w[long], plain[long] / 16) and np.array_equal(w[~long], plain[~long])
    assert long.any() and (~long).any()


def test_a_width_key_without_a_known_family_is_refused():
    with pytest.raises(ValueError, match="qk_rope_head_dim.*no model_type"):
        sinpe.rope_config({"hidden_size": 3584, "num_attention_heads": 64, "qk_rope_head_dim": 64})


@pytest.mark.parametrize("model_type", ["cohere", "cohere2"])
def test_cohere_tables_are_interleaved(model_type):
    config = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4}
    spec = sinpe.rope_config(config)
    assert spec.layout == "interleaved"


# --------------------------------------------------------------------------- typed keys


@pytest.mark.parametrize(
    "scaling, error, match",
    [
        ({"rope_type": "proportional", "partial_rotary_factor": True}, TypeError, "number"),
        (
            {
                "rope_type": "longrope",
                "short_factor": [1.0, True],
                "long_factor": [1.0, 1.0],
                "original_max_position_embeddings": 8,
            },
            TypeError,
            r"short_factor\[1\]",
        ),
        ({"rope_type": "linear", "factor": 1e300}, ValueError, "at most 10000"),
        (
            {
                "rope_type": "llama3",
                "factor": 1e308,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8,
            },
            ValueError,
            "at most",
        ),
        ({"rope_type": "proportional", "partial_rotary_factor": 1e-300}, ValueError, "rotates no"),
        (
            {
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 64,
                "beta_fast": -5.0,
            },
            ValueError,
            r"beta_fast.*> 0",
        ),
        ({"rope_type": "linear", "factor": 2.0, "mscale": 1.0}, ValueError, "has 'mscale', which"),
        ({"rope_type": "default", "alpha": 1000.0}, ValueError, "has 'alpha', which"),
        (
            {
                "rope_type": "yarn",
                "factor": 2.0,
                "original_max_position_embeddings": 64,
                "short_mscale": 1.2,
            },
            ValueError,
            "short_mscale",
        ),
        ({"rope_type": "ntk_alpha", "alpha": 2.0}, ValueError, "unknown rope_type"),
    ],
)
def test_typed_keys_refuse_what_they_cannot_take(scaling, error, match):
    """Booleans are not numbers, a factor has a bound, a value-changing key the type does
    not read is refused (never dropped), and a family type is not named by a mapping."""
    with pytest.raises(error, match=match):
        sinpe.rope_frequencies(4 if "short_factor" in scaling else 8, scaling=scaling)


def test_a_frequency_below_the_normal_range_is_refused():
    """A base far out of range makes frequencies of 2**-1022 and less: the table would be
    constant, so it is refused (a factor cannot: it is bounded)."""
    with pytest.raises(ValueError, match="below 2\\*\\*-1022"):
        sinpe.rope_frequencies(4096, base=1.7e308)


def test_booleans_in_a_config_are_refused():
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        sinpe.rope_config(
            {
                "model_type": "phi",
                "hidden_size": 64,
                "num_attention_heads": 2,
                "partial_rotary_factor": True,
                "rope_theta": 1e4,
            }
        )


def test_a_key_no_record_knows_is_warned_about_once():
    scaling = {"rope_type": "linear", "factor": 2.0, "sharpness": 3}
    rope_scaling._WARNED.clear()
    with pytest.warns(UserWarning, match="'sharpness'"):
        sinpe.rope_frequencies(8, scaling=scaling)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sinpe.rope_frequencies(8, scaling=scaling)  # once


def test_every_rope_type_is_one_record():
    """One record per type, each naming its rules; the public names are what a mapping may
    say; the family types are reached only through a family record."""
    assert set(rope_scaling.PUBLIC_TYPES) == {
        "default",
        "linear",
        "dynamic",
        "yarn",
        "longrope",
        "llama3",
        "proportional",
        "axial",
    }
    for record in rope_scaling.TYPES:
        assert callable(record.frequencies) and callable(record.attention)
        assert set(record.required) | set(record.optional) <= set(rope_scaling.KEYS)
    assert {"alpha", "short_mscale", "long_mscale", "mscale"} <= rope_scaling.VALUE_KEYS


# --------------------------------------------------------------------------- inv_freq=


def ltx_video(theta, n):
    """diffusers' LTXVideoRotaryPosEmbed frequencies, in float64: theta**linspace(0, 1, n) *
    pi / 2 (its linspace runs from log_theta(1) = 0 to log_theta(theta) = 1)."""
    return theta ** np.linspace(0.0, 1.0, n) * np.pi / 2


def timm_pixel(max_freq, n):
    """timm's pixel_freq_bands, in float64: linspace(1, max_freq / 2, n) * pi."""
    return np.linspace(1.0, max_freq / 2, n) * np.pi


@pytest.mark.parametrize("w", [ltx_video(10000.0, 8), timm_pixel(224.0, 8)], ids=["ltx", "timm"])
@pytest.mark.parametrize("layout", ["half", "interleaved", "compact"])
def test_given_frequencies_are_exact_in_every_layout(backend, w, layout):
    """Any RoPE's frequencies: the exact cos/sin of each position times each given frequency
    (mpmath), rounded once, in every layout, with an attention factor."""
    positions = np.array([0.0, 1.0, 0.5, -0.25, 17.0, 1000.0, 2.0**40 + 3])
    cos, sin = sinpe.rope_at(
        positions, 16, inv_freq=w, attention_factor=0.75, layout=layout, backend=backend
    )
    want_cos, want_sin = oracle.rope(positions.tolist(), w.tolist(), 0.75)
    compact = {"half": slice(0, 8), "interleaved": slice(0, 16, 2), "compact": slice(0, 8)}[layout]
    assert np.abs(cos[:, compact] - want_cos).max() <= 1e-15
    assert np.abs(sin[:, compact] - want_sin).max() <= 1e-15
    table = sinpe.rope(5, 16, inv_freq=w, offset=17, layout=layout, backend=backend)
    at = sinpe.rope_at(np.arange(17, 22), 16, inv_freq=w, layout=layout, backend=backend)
    assert all(np.array_equal(a, b) for a, b in zip(table, at))


def test_given_frequencies_with_mrope_sections_dtypes_and_caches():
    w = timm_pixel(64.0, 8)
    ids = np.array([[3, 4], [5, 6], [7, 8]])
    cos, _ = sinpe.rope_at(ids, 16, inv_freq=w, scaling={"mrope_section": [2, 3, 3]})
    axes = np.repeat([0, 1, 2], [2, 3, 3])
    for i, axis in enumerate(axes):
        want, _ = oracle.rope(ids[axis].tolist(), [w[i]])
        assert np.abs(cos[:, i] - want[:, 0]).max() <= 1e-15
    for dtype in ("float32", "float16"):
        cos32, _ = sinpe.rope(4, 16, inv_freq=w, dtype=dtype)
        assert cos32.dtype == np.dtype(dtype)
        assert np.array_equal(cos32, sinpe.rope(4, 16, inv_freq=w)[0].astype(dtype))
    cache = sinpe.rope_cache(3, 16, inv_freq=w, format="complex")
    assert np.allclose(cache[2], np.exp(2j * w), 0, 1e-15)
    freqs, factor = sinpe.rope_frequencies(16, inv_freq=w, attention_factor=2.0)
    assert np.array_equal(freqs, w) and factor == 2.0 and freqs is not w


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(inv_freq=[1.0, 0.5], base=100.0), ValueError, "inv_freq or base"),
        (
            dict(inv_freq=[1.0, 0.5], scaling={"rope_type": "linear", "factor": 2.0}),
            ValueError,
            "inv_freq or a scaling",
        ),
        (dict(inv_freq=[1.0]), ValueError, "head_dim // 2 = 2"),
        (dict(inv_freq=[1.0, -0.5]), ValueError, ">= 0"),
        (dict(inv_freq=[1.0, np.nan]), ValueError, "finite"),
        (dict(inv_freq="1.0"), TypeError, "inv_freq"),
        (dict(inv_freq=[[1.0, 0.5]]), TypeError, "1-D"),
        (dict(attention_factor=2.0), ValueError, "attention_factor comes with inv_freq"),
        (dict(inv_freq=[1.0, 0.5], attention_factor=0.0), ValueError, "attention_factor"),
    ],
)
def test_given_frequencies_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        sinpe.rope(2, 4, **kwargs)


def test_given_frequencies_are_cached_by_their_bytes():
    w = np.array([1.0, 0.25])
    first = sinpe.rope(3, 4, inv_freq=w)
    w[1] = 0.5  # the caller's array changes: a new vector, a new entry
    second = sinpe.rope(3, 4, inv_freq=w)
    assert not np.array_equal(first[0], second[0])
    assert np.array_equal(second[0], sinpe.rope(3, 4, inv_freq=[1.0, 0.5])[0])


def test_the_public_module_reexports_the_records():
    """``sinpe.rope_scaling`` (public) is the records' module as before the house moved: the
    same objects, the public ``__module__`` that pickles name."""
    import sinpe.rope_scaling as public

    assert public.__all__ == rope_scaling.__all__
    for name in public.__all__:
        assert getattr(public, name) is getattr(rope_scaling, name)
    for cls in (public.Key, public.RopeScaling, public.RopeType):
        assert cls.__module__ == "sinpe.rope_scaling"
    assert sinpe.RopeSpec.__module__ == "sinpe"


def test_pickles_made_by_0_4_0_still_load():
    """A ``RopeSpec`` pickled by sinpe 0.4.0 (it names ``sinpe._front.spec``) loads and equals
    the spec read today; so does a whole ``RotaryEmbedding`` saved by ``torch.save``, whose
    output keeps its bits."""
    import pickle

    data = Path(__file__).parent / "data"
    spec = pickle.loads((data / "rope_spec_0.4.0.pkl").read_bytes())
    llama3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    fresh = sinpe.rope_config(
        {
            "model_type": "llama",
            "hidden_size": 64,
            "num_attention_heads": 2,
            "max_position_embeddings": 64,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "original_max_position_embeddings": 32,
                **llama3,
            },
        }
    )
    assert isinstance(spec, sinpe.RopeSpec)
    assert spec == fresh
    positions = np.array([0, 1, 63, 10**6])
    for old, new in zip(spec.rope_at(positions), fresh.rope_at(positions)):
        assert np.array_equal(old, new)
    torch = pytest.importorskip("torch")
    module = torch.load(data / "rotary_0.4.0.pt", weights_only=False)
    assert module.spec == fresh
    cos, sin = module(torch.zeros(1), torch.tensor([[0, 5, 63]]))
    cos64, sin64 = fresh.rope_at(np.array([0, 5, 63]))
    assert np.array_equal(cos[0].numpy(), cos64.astype(np.float32))
    assert np.array_equal(sin[0].numpy(), sin64.astype(np.float32))


def test_modules_the_enumeration_cannot_probe_are_refused_not_read_as_the_nearest_thing():
    """A rotary module that takes no position ids (DINOv3's 2-D rotary on pixel_values, EoMT,
    Sapiens2, MusicFlamingo's timestamps) has no table sinpe can check: its model_type is
    refused, naming the module; a composite whose own module is one of them names the way to
    its text model's RoPE instead of reading that silently."""
    from sinpe._rope.families import FAMILIES

    unprobed = {
        e["model_type"]: e["class"]
        for release in RELEASES.values()
        for e in release["classes"]
        if e["status"].startswith("forward does not take") and e.get("model_type")
    }
    assert {"dinov3_vit", "eomt_dinov3", "musicflamingo"} <= set(unprobed)
    for model_type, name in unprobed.items():
        assert name in (FAMILIES[model_type].refused or ""), model_type
        with pytest.raises(ValueError, match=f"{model_type}.*{name}"):
            sinpe.rope_config(
                {"model_type": model_type, "hidden_size": 64, "num_attention_heads": 2}
            )
    flamingo = {
        "model_type": "musicflamingo",
        "text_config": {"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 2},
    }
    with pytest.raises(ValueError, match="pass the config's text_config"):
        sinpe.rope_config(flamingo)
    assert sinpe.rope_config(flamingo["text_config"]).model_type == "qwen2"
