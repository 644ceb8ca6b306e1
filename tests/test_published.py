"""The run model in its published layout (``sinpe/_check/published.py``, ``mxfp4.py``):
MXFP4 against a decoder written from the format's definition (OCP Microscaling: an E8M0
scale, E2M1 values by sign, exponent and mantissa bits, the lower nibble first, as
keras-hub's ``convert_gpt_oss.dequantize_mxfp4`` decodes gpt-oss's checkpoints), the nearest
values chosen, and gpt-oss's run model written in that layout. The parts that need
safetensors or torch run in the engines' legs (.ci/engines: the llama.cpp, MLX and keras-hub
leg), where the layout is read by the engines themselves."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sinpe._check import mxfp4 as _mxfp4


def _decoded(blocks, scales):
    """The format's definition, value by value (no table): code s e1 e0 m, 2^(e - 1) (1 + m/2)
    for e > 0, m/2 for e = 0, times 2^(scale - 127)."""
    out = np.empty((*scales.shape, 32))
    for index in np.ndindex(scales.shape):
        for j in range(32):
            byte = int(blocks[index][j // 2])
            code = byte & 15 if j % 2 == 0 else byte >> 4
            s, e, m = code >> 3, (code >> 1) & 3, code & 1
            value = 2.0 ** (e - 1) * (1 + m / 2) if e else m / 2
            out[index + (j,)] = (-1) ** s * value * 2.0 ** (int(scales[index]) - 127)
    return out.reshape(*scales.shape[:-1], -1)


def test_a_hand_packed_block():
    row = np.zeros(32)
    row[:6] = [6, -3, 0.5, -0.25, 1.5, 4]  # the largest, 6: scale 2^0; -0.25 ties 0 and -0.5
    row *= 2.0**-8
    blocks, scales = _mxfp4.pack(_mxfp4.to_grid(row))
    assert scales.tolist() == [127 - 8]
    # codes: 6 -> 0111, -3 -> 1101, 0.5 -> 0001, -0.25 -> 0 (the smaller), 1.5 -> 0011, 4 -> 0110
    assert blocks[0].tolist() == [0xD7, 0x01, 0x63] + [0] * 13
    assert _decoded(blocks, scales)[:6].tolist() == [v * 2.0**-8 for v in (6, -3, 0.5, 0, 1.5, 4)]


def _least_scale(largest: float) -> int:
    """The least e >= -127 (E8M0's least) with largest <= 6 x 2^e."""
    e = math.ceil(math.log2(largest / 6))
    return max(e - (6 * 2.0 ** (e - 1) >= largest), -127)


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 3), st.sampled_from([32, 64, 96])),
        elements=st.floats(-1e3, 1e3, width=32, allow_subnormal=False),
    )
)
def test_to_grid_takes_the_nearest_value_of_the_least_scale_and_packs_it_exactly(rows):
    grid = _mxfp4.to_grid(rows)
    blocks, scales = _mxfp4.pack(grid)
    assert np.array_equal(_decoded(blocks, scales), grid.astype(np.float64))
    assert np.array_equal(_mxfp4.unpack(blocks, scales), grid)
    for r in range(rows.shape[0]):
        for b in range(rows.shape[1] // 32):
            x = rows[r, 32 * b : 32 * b + 32].astype(np.float64)
            largest = np.abs(x).max()
            if largest == 0:
                assert not grid[r, 32 * b : 32 * b + 32].any()
                continue
            e = _least_scale(largest)
            assert scales[r, b] == _least_scale(np.abs(grid[r, 32 * b : 32 * b + 32]).max()) + 127
            held = np.array([s * v * 2.0**e for s in (1, -1) for v in _mxfp4.E2M1])
            nearest = np.abs(x[:, None] - held).min(axis=1)
            assert np.array_equal(np.abs(grid[r, 32 * b : 32 * b + 32] - x), nearest)


def test_pack_refuses_what_mxfp4_does_not_hold():
    with pytest.raises(ValueError, match="to_grid first"):
        _mxfp4.pack(np.full(32, 0.3))
    with pytest.raises(ValueError, match="multiple of 32"):
        _mxfp4.to_grid(np.ones(33))
    with pytest.raises(ValueError, match="E8M0's range"):
        _mxfp4.to_grid(np.full(32, 2.0**127 * 7))
    with pytest.raises(ValueError, match="finite"):
        _mxfp4.to_grid(np.r_[np.ones(31), np.nan])
    with pytest.raises(ValueError, match="do not pair"):
        _mxfp4.unpack(np.zeros((2, 16), np.uint8), np.zeros(3, np.uint8))


def _run_model(folder, model_type="gpt_oss", on_grid=True):
    """A run model's folder as save_run_model leaves it: transformers' unquantized experts
    (``gate_up_proj`` [experts, hidden, 2 x intermediate], ``down_proj`` [experts,
    intermediate, hidden]), a tokenizer file beside."""
    safetensors = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(0)
    gate_up = rng.normal(0, 0.02, (2, 64, 64)).astype(np.float32)
    down = rng.normal(0, 0.02, (2, 32, 64)).astype(np.float32)
    if on_grid:
        gate_up = np.swapaxes(_mxfp4.to_grid(np.swapaxes(gate_up, 1, 2)), 1, 2).copy()
        down = np.swapaxes(_mxfp4.to_grid(np.swapaxes(down, 1, 2)), 1, 2).copy()
    tensors = {
        "model.layers.0.mlp.experts.gate_up_proj": gate_up,
        "model.layers.0.mlp.experts.gate_up_proj_bias": np.ones((2, 64), np.float32),
        "model.layers.0.mlp.experts.down_proj": down,
        "model.norm.weight": np.ones(64, np.float32),
    }
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(safetensors.save(tensors))
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    (folder / "tokenizer.json").write_text("{}")
    return tensors


def test_gpt_oss_run_model_written_as_its_published_checkpoint(tmp_path):
    load_file = pytest.importorskip("safetensors.numpy").load_file

    from sinpe._check.published import PUBLISHED_MXFP4, published_layout

    tensors = _run_model(tmp_path / "run-model")
    out = published_layout(tmp_path / "run-model", "mlx-lm")
    assert out == tmp_path / "run-model-published-mlx-lm"
    assert json.loads((out / "config.json").read_text()) == {
        "model_type": "gpt_oss",
        "quantization_config": PUBLISHED_MXFP4,
    }
    assert (out / "tokenizer.json").read_text() == "{}"
    held = load_file(out / "model.safetensors")
    assert sorted(held) == sorted(
        [
            "model.layers.0.mlp.experts.gate_up_proj_blocks",
            "model.layers.0.mlp.experts.gate_up_proj_scales",
            "model.layers.0.mlp.experts.gate_up_proj_bias",
            "model.layers.0.mlp.experts.down_proj_blocks",
            "model.layers.0.mlp.experts.down_proj_scales",
            "model.norm.weight",
        ]
    )
    prefix = "model.layers.0.mlp.experts."
    # the checkpoint's rows are the outputs: gate_up [experts, 2 x intermediate, hidden / 32, 16]
    assert held[prefix + "gate_up_proj_blocks"].shape == (2, 64, 2, 16)
    assert held[prefix + "down_proj_scales"].shape == (2, 64, 1)
    for name in ("gate_up_proj", "down_proj"):
        rows = _decoded(held[prefix + name + "_blocks"], held[prefix + name + "_scales"])
        assert np.array_equal(np.swapaxes(rows, 1, 2), tensors[prefix + name])
    assert np.array_equal(held["model.norm.weight"], tensors["model.norm.weight"])
    with pytest.raises(ValueError, match="exists|taken|already"):
        published_layout(tmp_path / "run-model", "mlx-lm")  # never over a folder that is there
    (tmp_path / "elsewhere.json").write_text("{}")
    (tmp_path / "run-model" / "vocab.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ValueError, match="a link in the run model's folder"):
        published_layout(tmp_path / "run-model", "keras-hub")
    assert not (tmp_path / "run-model-published-keras-hub").exists()  # nothing half-written


def test_another_model_is_its_own_published_layout_and_off_grid_experts_are_refused(tmp_path):
    from sinpe._check.published import published_layout

    _run_model(tmp_path / "llama", model_type="llama")
    assert published_layout(tmp_path / "llama", "keras-hub") == tmp_path / "llama"
    _run_model(tmp_path / "raw", on_grid=False)
    with pytest.raises(ValueError, match="to_grid first"):
        published_layout(tmp_path / "raw", "keras-hub")
    assert not (tmp_path / "raw-published-keras-hub").exists()


def test_on_grid_puts_gpt_oss_experts_on_mxfp4_values_along_their_inputs():
    torch = pytest.importorskip("torch")
    from sinpe._check.published import on_grid

    class Experts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up_proj = torch.nn.Parameter(torch.randn(2, 64, 32) * 0.02)
            self.down_proj = torch.nn.Parameter(torch.randn(2, 32, 64) * 0.02)
            self.gate_up_proj_bias = torch.nn.Parameter(torch.randn(2, 32) * 0.02)

    model = torch.nn.Module()
    model.mlp = torch.nn.Module()
    model.mlp.experts = Experts()
    before = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    assert on_grid(model, {"model_type": "llama"}) == 0
    assert on_grid(model, {"model_type": "gpt_oss"}) == 2
    after = {n: p.detach().numpy() for n, p in model.named_parameters()}
    assert np.array_equal(
        after["mlp.experts.gate_up_proj_bias"], before["mlp.experts.gate_up_proj_bias"]
    )
    for name in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):
        rows = np.swapaxes(before[name], 1, 2)  # blocks run along the inputs, axis 1
        assert np.array_equal(np.swapaxes(after[name], 1, 2), _mxfp4.to_grid(rows))
        assert not np.array_equal(after[name], before[name])
    with pytest.raises(ValueError, match="without its experts"):
        on_grid(torch.nn.Linear(2, 2), {"model_type": "gpt_oss"})


@pytest.fixture(scope="module")
def gpt_oss_run_model(tmp_path_factory):
    """gpt-oss's run model (``_run.save_run_model`` on its twin) and its experts as
    transformers holds them."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from safetensors.numpy import load_file

    from sinpe._engines._run import save_run_model
    from sinpe._engines._shrink import shrink

    folder = tmp_path_factory.mktemp("gpt-oss")
    config = json.loads(Path("tests/data/configs/gpt-oss-20b.json").read_text(encoding="utf-8"))
    (folder / "twin").mkdir()
    (folder / "twin" / "config.json").write_text(json.dumps(shrink(config)))
    model = save_run_model(folder / "twin", folder / "run-model")
    return model, load_file(model / "model.safetensors")


def test_mlx_lm_reads_gpt_oss_run_model_in_its_published_layout_as_the_same_numbers(
    gpt_oss_run_model,
):
    """The published layout is what MLX-LM's loader takes (it refuses transformers'), and its
    dequantized experts are the run model's, value for value."""
    mx = pytest.importorskip("mlx.core")
    utils = pytest.importorskip("mlx_lm.utils")
    from sinpe._check.published import published_layout

    model, held = gpt_oss_run_model
    with pytest.raises(ValueError, match="parameters not in model"):
        utils.load_model(model)
    loaded, _ = utils.load_model(published_layout(model, "mlx-lm"))
    experts = loaded.model.layers[0].mlp.experts
    gate_up = held["model.layers.0.mlp.experts.gate_up_proj"]  # [experts, hidden, 2 x inner]
    for name, want in (("gate_proj", gate_up[..., ::2]), ("up_proj", gate_up[..., 1::2])):
        layer = getattr(experts, name)
        got = mx.dequantize(layer.weight, layer.scales, group_size=32, bits=4, mode="mxfp4")
        assert np.array_equal(np.array(got.astype(mx.float32)), np.swapaxes(want, 1, 2)), name
    down = experts.down_proj
    got = mx.dequantize(down.weight, down.scales, group_size=32, bits=4, mode="mxfp4")
    want = np.swapaxes(held["model.layers.0.mlp.experts.down_proj"], 1, 2)
    assert np.array_equal(np.array(got.astype(mx.float32)), want)


def test_keras_hub_reads_gpt_oss_run_model_in_its_published_layout_as_the_same_numbers(
    gpt_oss_run_model, monkeypatch
):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    keras_hub = pytest.importorskip("keras_hub")

    from sinpe._check.published import published_layout

    model, held = gpt_oss_run_model
    with pytest.raises(Exception, match="gate_up_proj_blocks"):
        keras_hub.models.CausalLM.from_preset(str(model), preprocessor=None)
    causal_lm = keras_hub.models.CausalLM.from_preset(
        str(published_layout(model, "keras-hub")), preprocessor=None
    )
    experts = causal_lm.backbone.transformer_layers[0].sparse_moe_block.experts
    for name in ("gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias"):
        got = getattr(experts, name).value.detach().cpu().numpy()  # Keras 3 on torch
        assert np.array_equal(got, held["model.layers.0.mlp.experts." + name]), name
