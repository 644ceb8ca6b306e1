"""The engine adapters without their engines (tests/test_vllm.py runs them with vLLM): the
entry point every install declares, importing without the engine, the mode variable, and a
layer's verdict on duck-typed stand-ins for vLLM's rotary layers."""

import logging
import math
from importlib.metadata import entry_points

import numpy as np
import pytest
from subprocesses import run_script

import sinpe


def test_every_install_declares_the_vllm_entry_point():
    found = [e for e in entry_points(group="vllm.general_plugins") if e.name == "sinpe"]
    assert [e.value for e in found] == ["sinpe.vllm:register"]


def test_importing_and_registering_without_vllm_does_nothing():
    """Where vLLM is absent the entry point's function returns, says nothing, imports
    neither vLLM nor torch, and has seen nothing."""
    result = run_script(
        """
        import sys
        sys.modules["vllm"] = None  # vLLM absent, even where it is installed
        import sinpe.vllm as sv
        sv.register()
        sv.register()
        assert "torch" not in sys.modules and sv.seen() == [] and sv.reports() == []
        print("done")
        """
    )
    assert result.stdout == "done\n" and result.stderr == ""


def test_the_mode_variable(monkeypatch, caplog):
    import sinpe.vllm as sv
    from sinpe.vllm import _plugin

    monkeypatch.delenv("SINPE_VLLM", raising=False)
    assert sv.mode() == sv.DEFAULT == "audit"
    for value in ("audit", "exact", "off", " EXACT "):
        monkeypatch.setenv("SINPE_VLLM", value)
        assert sv.mode() == value.strip().lower()
    monkeypatch.setitem(_plugin._STATE, "warned", False)
    monkeypatch.setenv("SINPE_VLLM", "fix-everything")
    with caplog.at_level(logging.WARNING, logger="sinpe.vllm"):
        assert sv.mode() == "off" and sv.mode() == "off"
    warned = [r.getMessage() for r in caplog.records if "SINPE_VLLM" in r.getMessage()]
    assert len(warned) == 1 and "audit" in warned[0] and "fix-everything" in warned[0]


# --------------------------------------------------------------------------- one layer


class _Layer:
    """The attributes sinpe reads of a vLLM rotary layer."""

    def __init__(self, cache, rotary_dim=64, head_size=64, base=10000.0, neox=True):
        self.cos_sin_cache = cache
        self.rotary_dim = rotary_dim
        self.head_size = head_size
        self.base = base
        self.is_neox_style = neox


class RotaryEmbedding(_Layer):
    pass


class FourierRotaryEmbedding(_Layer):
    pass


class LinearScalingRotaryEmbedding(_Layer):
    scaling_factors = [2.0, 4.0]


def _spec(base=10000.0):
    return sinpe.rope_config(
        {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_theta": base}
    )


def _float32_angles(n, base=10000.0):
    """vLLM's cache: float32 inverse frequencies and angles."""
    torch = pytest.importorskip("torch")
    inv_freq = 1.0 / base ** (torch.arange(0, 64, 2, dtype=torch.float) / 64)
    angles = torch.outer(torch.arange(n, dtype=torch.float), inv_freq)
    return torch.cat((angles.cos(), angles.sin()), dim=-1)


def test_a_layer_gets_the_verdict_sinpe_check_gives():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = _spec()
    exact = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32))
    (match,) = audit_layer(RotaryEmbedding(exact), spec, ["model.layers.0.self_attn.rotary_emb"])
    assert match.verdict == "match" and match.reason == "" and match.rows == 4096
    (drift,) = audit_layer(RotaryEmbedding(_float32_angles(4096)), spec, ["l"])
    assert drift.verdict == "drift" and "float32 angles" in drift.text
    assert drift.decades[-1][0] <= 4095 <= drift.decades[-1][1] and drift.largest > 1e-5
    (base,) = audit_layer(RotaryEmbedding(_float32_angles(4096, 5e5)), spec, ["l"])
    assert base.verdict == "mismatch" and "base 500000" in base.reason, base.line()
    (width,) = audit_layer(RotaryEmbedding(exact[:, :32], rotary_dim=32), spec, ["l"])
    assert (
        width.verdict == "mismatch" and width.reason == "rotary width 32 where the config gives 64"
    )
    (pairs,) = audit_layer(RotaryEmbedding(exact, neox=False), spec, ["l"])
    assert pairs.verdict == "mismatch" and "vLLM rotates pairs" in pairs.reason


def test_a_scaled_cache_names_the_attention_factor():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = _spec()
    scaled = torch.from_numpy(spec.rope_cache(4096, dtype=np.float32)) * 1.2
    (report,) = audit_layer(RotaryEmbedding(scaled), spec, ["l"])
    assert report.verdict == "mismatch"
    assert report.reason == "attention factor 1.2 where the config gives 1", report.line()


def test_an_unknown_layer_is_unchecked_never_replaced():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = _spec()
    layer = FourierRotaryEmbedding(torch.zeros(16, 2, 128))
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "unchecked" and "learned weights" in report.reason
    assert math.isnan(report.largest) and "unchecked" in report.line()
    assert fill_exact(layer, spec, report) is report and not layer.cos_sin_cache.any()
    stacked = LinearScalingRotaryEmbedding(torch.zeros(24, 64))
    (report,) = audit_layer(stacked, spec, ["l"])
    assert report.verdict == "unchecked" and report.reason.startswith("2 linear scaling factors")


def test_exact_fills_a_drifting_cache_in_place_and_leaves_a_mismatch():
    pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = _spec()
    layer = RotaryEmbedding(_float32_angles(4096))
    memory = layer.cos_sin_cache.data_ptr()
    (report,) = audit_layer(layer, spec, ["l"])
    assert fill_exact(layer, spec, report).replaced
    assert layer.cos_sin_cache.data_ptr() == memory
    assert np.array_equal(layer.cos_sin_cache.numpy(), spec.rope_cache(4096, dtype=np.float32))
    wrong = RotaryEmbedding(_float32_angles(4096, 5e5))
    before = wrong.cos_sin_cache.clone()
    (report,) = audit_layer(wrong, spec, ["l"])
    assert not fill_exact(wrong, spec, report).replaced
    assert wrong.cos_sin_cache.equal(before)


def test_where_vllms_hf_config_reads_another_rope_it_is_said():
    from types import SimpleNamespace

    from sinpe.vllm._model import hf_config_differs

    config = {"model_type": "llama", "head_dim": 64, "rope_theta": 10000.0}
    same = SimpleNamespace(hf_config=SimpleNamespace(to_dict=lambda: dict(config)))
    assert hf_config_differs(config, same) == ""
    edited = SimpleNamespace(
        hf_config=SimpleNamespace(to_dict=lambda: {**config, "rope_theta": 5e5})
    )
    assert hf_config_differs(config, edited) == (
        "vLLM's hf_config reads base 500000.0 where config.json gives 10000.0"
    )
    assert hf_config_differs(config, SimpleNamespace()) == ""


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(_has("mlx") and _has("mlx_lm"), reason="mlx and mlx-lm are installed")
def test_an_mlx_model_folder_without_mlx_is_one_line_and_exit_2(tmp_path):
    import json

    from command import run

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    result = run("check", tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"checking the MLX model folder {tmp_path} needs mlx and mlx-lm" in result.stderr
    assert "pip install 'sinpe[mlx]'" in result.stderr
    result = run("check", tmp_path, "--offset", "2")
    assert result.returncode == 2 and "--offset: not for an MLX model folder" in result.stderr


def test_import_sinpe_mlx_without_mlx_says_what_to_install():
    if _has("mlx"):
        pytest.skip("mlx is installed")
    with pytest.raises(ImportError, match=r"mlx and mlx-lm: pip install 'sinpe\[mlx\]'"):
        import sinpe.mlx  # noqa: F401
