"""The run line's judgment (``_verdict/run.py``) on made-up log-probabilities: match within
float32 noise, drift within what float32 angles allow at each p, mismatch at the first p
past it (with the first layer that departs), unchecked where a p was not run or the twin's
positions do not move its logits; and the arrays' strict JSON form (``_run.encode``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sinpe._check.run import decode, encode
from sinpe._verdict.run import (
    DRIFT_MARGIN,
    FLOOR,
    NOISE_MARGIN,
    SIGNAL,
    allowances,
    first_departure,
    judge_run,
)
from sinpe._verdict.verdict import DRIFT, MATCH, MISMATCH, UNCHECKED

PS = (0, 32_736, 100_000)
RNG = np.random.default_rng(0)
REFERENCE = {p: np.log(RNG.dirichlet(np.ones(16), 4)) for p in PS}
DRIFTS = {0: 0.0, 32_736: 1e-3, 100_000: 4e-3}
NOISE = {0: 1e-6, 32_736: 1e-6, 100_000: 5e-6}  # bounds: FLOOR, FLOOR, 2e-5


def moved(by: dict) -> dict:
    """The reference with each p's log-probabilities moved by ``by[p]`` at one entry."""
    out = {p: a.copy() for p, a in REFERENCE.items()}
    for p, d in by.items():
        out[p][1, 3] += d
    return out


def test_within_float32_noise_everywhere_is_a_match():
    v = judge_run(moved({0: 1e-6, 32_736: 5e-6, 100_000: 1.9e-5}), REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == MATCH and v.kind == "logprobs"
    assert v.largest == pytest.approx(1.9e-5) and v.bound == pytest.approx(2e-5)
    assert "runs the config's model" in v.text


def test_within_float32_angles_is_a_drift_and_past_them_a_mismatch_at_the_first_p():
    allowed = allowances(DRIFTS, NOISE)
    assert allowed[100_000] == pytest.approx(NOISE_MARGIN * 5e-6 + DRIFT_MARGIN * 4e-3)
    assert allowed[0] == FLOOR
    v = judge_run(moved({100_000: 0.9 * allowed[100_000]}), REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == DRIFT and v.drift == "float32" and "drifting" in v.text
    v = judge_run(moved({32_736: 0.5, 100_000: 0.5}), REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == MISMATCH and v.worst[0] == 32_736
    (reason,) = v.reasons
    assert reason.startswith("at p = 32,736 its log-probabilities are 0.5 from the exact")
    v = judge_run(moved({0: 2 * FLOOR}), REFERENCE, DRIFTS, NOISE, 1.0)  # no drift at p = 0
    assert v.verdict == MISMATCH and v.worst[0] == 0


def test_a_non_finite_log_probability_is_a_mismatch():
    found = moved({})
    found[100_000][0, 0] = np.nan
    v = judge_run(found, REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == MISMATCH and v.worst[0] == 100_000
    json.dumps(v.as_json(), allow_nan=False)


def test_a_p_not_run_or_a_twin_without_signal_is_not_judged():
    found = moved({})
    del found[100_000]
    v = judge_run(found, REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == UNCHECKED and v.reasons == ("the engine did not run p = 100,000",)
    found = moved({0: 0.5})
    del found[100_000]  # a p not run beside one that breaks: the break is said
    v = judge_run(found, REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == MISMATCH and v.worst[0] == 0
    v = judge_run({}, REFERENCE, DRIFTS, NOISE, 1.0)
    assert v.verdict == UNCHECKED and v.reasons == ("the engine did not run p = 0",)
    v = judge_run(moved({}), REFERENCE, DRIFTS, NOISE, SIGNAL / 2)
    assert v.verdict == UNCHECKED and "move its log-probabilities by" in v.reason
    v = judge_run(moved({}), REFERENCE, DRIFTS, NOISE, float("nan"))
    assert v.verdict == UNCHECKED


def test_a_shape_that_differs_is_refused():
    found = moved({})
    found[0] = found[0][:, :8]
    with pytest.raises(ValueError, match="shape"):
        judge_run(found, REFERENCE, DRIFTS, NOISE, 1.0)


def test_the_first_layer_that_departs_is_named():
    ref = {0: [np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))]}
    got = {0: [np.ones((2, 3)), np.ones((2, 3)) + 1e-6, np.ones((2, 3)) + 0.1]}
    assert first_departure(got, ref, 0) == 2
    assert first_departure(None, ref, 0) is None
    found = moved({0: 0.3})
    hidden = {p: [np.ones(3), np.ones(3) * 2] for p in PS}
    ref_hidden = {p: [np.ones(3), np.ones(3)] for p in PS}
    v = judge_run(found, REFERENCE, DRIFTS, NOISE, 1.0, hidden, ref_hidden)
    assert "decoder layer 1 (from 1) departs first" in v.reason


def test_arrays_travel_as_strict_json_bit_for_bit():
    a = np.array([[1.0, -np.inf], [np.nan, 2.0**-1074]])
    text = json.dumps(encode(a), allow_nan=False)
    b = decode(json.loads(text))
    assert b.tobytes() == a.tobytes()
    with pytest.raises(ValueError, match="do not hold"):
        decode({"shape": [3], "base64": encode(a)["base64"]})
    for bad in (
        {"shape": [-1], "base64": ""},
        {"shape": "2", "base64": ""},
        [1, 2],
        {"shape": [1]},
    ):
        with pytest.raises(ValueError):
            decode(bad)


def test_llama_cpps_run_line_says_when_its_gelu_rounds_to_float16():
    """ggml's CPU GELU reads a float16 table: a GELU family's llama.cpp run line says so
    (Phi-2's flat 0.0004 at every p, Gemma 3's 0.078 at p = 0), a SiLU family's does not."""
    from sinpe._engines.llama_cpp import _gelu_note

    for config in ({"hidden_act": "gelu_new"}, {"text_config": {"hidden_activation":
                   "gelu_pytorch_tanh"}}, {"hidden_act": "gelu"}):  # fmt: skip
        (note,) = _gelu_note(config)
        assert "float16" in note and "ggml_vec_gelu_f32" in note
    for config in ({"hidden_act": "silu"}, {"hidden_act": "gelu_quick"}, {}, {"text_config": 3}):
        assert _gelu_note(config) == ()


def test_keras_hubs_run_skips_a_cache_whose_square_mask_does_not_fit(monkeypatch):
    """keras-hub's Gemma 3 sliding layers build a (cache x cache) mask on every call (85 GiB
    at 131,072): such a p is named, not run (the process would be killed), where the
    machine's free memory is short of it; a model without that attention runs every p."""
    import types

    from sinpe._engines import keras_hub

    class Gemma3Attention:
        def _mask_sliding_window(self):
            pass

    Gemma3Attention.__module__ = "keras_hub.src.models.gemma3.gemma3_attention"
    cached = type("CachedGemma3Attention", (Gemma3Attention,), {})
    backbone = types.SimpleNamespace(transformer_layers=[types.SimpleNamespace(attention=cached())])
    pages = {"SC_AVPHYS_PAGES": (16 << 30) // 4096, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(keras_hub.os, "sysconf", pages.__getitem__)
    why = keras_hub._square_mask(backbone, 131_072)
    assert why == (
        "keras-hub's sliding attention (gemma3_attention.py, Gemma3Attention._mask_sliding_"
        "window) builds a 131,072 x 131,072 mask on every call, about 96 GiB where this "
        "machine has 16 GiB free"
    )
    assert keras_hub._square_mask(backbone, 32_768) == ""  # 6 GiB: fits
    plain = types.SimpleNamespace(transformer_layers=[types.SimpleNamespace(attention=object())])
    assert keras_hub._square_mask(plain, 10**6) == ""
