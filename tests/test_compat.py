"""``sinpe.compat``: each function against a float64 transcription of the original (no
diffusers, transformers, fairseq, TensorFlow or torch needed), the mpmath oracle where the
positions are fractional, the originals' refusals, and torch hand-over where torch exists."""

import numpy as np
import oracle
import pytest
import references as ref

from sinpe.compat import diffusers, fairseq, mae, tensor2tensor, transformers

# Transcriptions in float64 differ from the exact values by about |p * w| * 2**-52; every
# position here keeps |p * w| below ~2000.
ATOL = 1e-12
F32_ATOL = 2.0**-24  # one float32 ulp at 1: exact-then-rounded against rounded-from-float64


def close(got, expected, atol=ATOL):
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol)


# --------------------------------------------------------------------------- diffusers


@pytest.mark.parametrize(
    "args",
    [
        dict(embed_dim=768, grid_size=14),  # SD3 / PixArt: positions scaled by 16/14
        dict(embed_dim=64, grid_size=(4, 6)),  # non-square
        dict(embed_dim=32, grid_size=(5, 3), interpolation_scale=2.0, base_size=8),
        dict(embed_dim=16, grid_size=3, cls_token=True, extra_tokens=2),
        dict(embed_dim=16, grid_size=3, cls_token=True, extra_tokens=0),  # both are needed
        dict(embed_dim=16, grid_size=3, cls_token=False, extra_tokens=2),
        dict(embed_dim=8, grid_size=(0, 3)),
    ],
)
def test_diffusers_2d(args):
    close(diffusers.get_2d_sincos_pos_embed(**args, output_type="np"), ref.diffusers_2d(**args))


def test_diffusers_2d_is_exact_at_its_fractional_positions():
    """SD3's default scaling puts x and y at multiples of 16/14: every value within 1e-15 of
    mpmath's at those (float64) positions and sinpe's frequencies."""
    got = diffusers.get_2d_sincos_pos_embed(
        16, (3, 5), interpolation_scale=1.5, base_size=7, output_type="np"
    )
    xs = np.arange(5, dtype=np.float64) / (5 / 7) / 1.5
    ys = np.arange(3, dtype=np.float64) / (3 / 7) / 1.5
    along_x = oracle.encoding(list(xs), 8, "hf-marian")
    along_y = oracle.encoding(list(ys), 8, "hf-marian")
    for y in range(3):
        for x in range(5):
            expected = np.concatenate([along_x[x], along_y[y]])
            np.testing.assert_allclose(got[y * 5 + x], expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "args",
    [
        dict(embed_dim=64, spatial_size=(6, 4), temporal_size=3),  # width first
        dict(embed_dim=32, spatial_size=5, temporal_size=2, s_scale=1.875, t_scale=0.5),
        dict(embed_dim=16, spatial_size=(3, 2), temporal_size=0),
    ],
)
def test_diffusers_3d(args):
    s_scale, t_scale = args.pop("s_scale", 1.0), args.pop("t_scale", 1.0)
    got = diffusers.get_3d_sincos_pos_embed(
        **args,
        spatial_interpolation_scale=s_scale,
        temporal_interpolation_scale=t_scale,
        output_type="np",
    )
    close(got, ref.diffusers_3d(**args, s_scale=s_scale, t_scale=t_scale))


def test_diffusers_from_grid_functions():
    grid = np.random.default_rng(3).uniform(0, 30, (2, 1, 4, 5))
    close(
        diffusers.get_2d_sincos_pos_embed_from_grid(16, grid, output_type="np"),
        ref.two_d_from_grid(16, grid),
    )
    pos = np.linspace(0, 50, 12).reshape(3, 4)
    close(diffusers.get_1d_sincos_pos_embed_from_grid(10, pos, "np"), ref.one_d(10, pos))
    close(
        diffusers.get_1d_sincos_pos_embed_from_grid(10, pos, "np", flip_sin_to_cos=True),
        ref.one_d(10, pos, flip=True),
    )
    close(mae.get_1d_sincos_pos_embed_from_grid(6, pos), ref.one_d(6, pos))
    close(mae.get_2d_sincos_pos_embed_from_grid(8, grid), ref.two_d_from_grid(8, grid))


@pytest.mark.parametrize(
    "t, dim, kwargs",
    [
        (np.array([0.0, 1.0, 999.0, 500.5]), 320, {}),
        (np.array([3.0, 250.0]), 7, dict(flip_sin_to_cos=True, downscale_freq_shift=0)),
        (np.arange(0, 1000, 37.5), 64, dict(scale=1000, max_period=5000)),  # float32 drifts 0.1
        (np.array([1.0, 2.0]), 1, {}),
    ],
)
def test_diffusers_timesteps_float32(t, dim, kwargs):
    got = diffusers.get_timestep_embedding(t, dim, **kwargs)
    expected = ref.diffusers_timestep(
        t,
        dim,
        flip=kwargs.get("flip_sin_to_cos", False),
        shift=kwargs.get("downscale_freq_shift", 1),
        scale=kwargs.get("scale", 1),
        max_period=kwargs.get("max_period", 10000),
    )
    # |t * w| reaches 1e6 with scale=1000: the float64 transcription is good to ~1e-10 there
    close(got, expected.astype(np.float32), atol=F32_ATOL + 1e-10)


def test_diffusers_timesteps_list_and_zero_width():
    assert diffusers.get_timestep_embedding([1, 2, 3], 0).shape == (3, 0)
    close(
        diffusers.get_timestep_embedding([5, 6], 4),
        ref.diffusers_timestep([5, 6], 4).astype(np.float32),
    )


# --------------------------------------------------------------------------- MAE


@pytest.mark.parametrize(
    "embed_dim, grid_size, cls_token", [(16, 4, False), (64, 7, True), (8, 0, True)]
)
def test_mae_2d(embed_dim, grid_size, cls_token):
    close(
        mae.get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token),
        ref.mae_2d(embed_dim, grid_size, cls_token),
    )


# --------------------------------------------------------------------------- fairseq, t2t


@pytest.mark.parametrize(
    "n, d, padding_idx", [(50, 16, None), (20, 9, 1), (8, 4, -1), (5, 1, None)]
)
def test_fairseq(n, d, padding_idx):
    torch = pytest.importorskip("torch")
    got = fairseq.get_embedding(n, d, padding_idx)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32  # as fairseq returns
    got = got.numpy()
    expected = ref.fairseq(np.arange(n), d, padding_idx) if d > 1 else np.zeros((n, 1))
    close(got, expected.astype(np.float32), atol=F32_ATOL)


def test_fairseq_without_rows():
    """fairseq's own view(0, -1) fails here; an empty table is the useful answer."""
    pytest.importorskip("torch")
    assert tuple(fairseq.get_embedding(0, 6).shape) == (0, 6)


@pytest.mark.parametrize(
    "args",
    [
        dict(length=40, channels=16),
        dict(length=7, channels=9, start_index=100),
        dict(length=6, channels=8, start_index=-3),
        dict(length=5, channels=6, min_timescale=2.0, max_timescale=500.0),
        dict(length=4, channels=3),  # one timescale: max(n - 1, 1)
        dict(length=3, channels=1),
        dict(length=0, channels=4),
    ],
)
def test_tensor2tensor(args):
    close(
        tensor2tensor.get_timing_signal_1d(**args),
        ref.tensor2tensor(**args).astype(np.float32),
        atol=F32_ATOL,
    )


# --------------------------------------------------------------------------- transformers


@pytest.mark.parametrize("n_pos, dim", [(30, 16), (9, 7), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_create_sinusoidal_embeddings_numpy(n_pos, dim, dtype):
    out = np.full((n_pos, dim), np.nan, dtype=dtype)
    assert transformers.create_sinusoidal_embeddings(n_pos, dim, out) is None
    close(
        out,
        ref.distilbert(n_pos, dim).astype(dtype),
        atol=ATOL if dtype == np.float64 else F32_ATOL,
    )
    # a strided view is filled too
    wide = np.zeros((n_pos, 2 * dim), dtype=dtype)
    transformers.create_sinusoidal_embeddings(n_pos, dim, wide[:, ::2])
    np.testing.assert_array_equal(wide[:, ::2], out)


@pytest.mark.parametrize("n_pos, dim", [(30, 16), (9, 7)])
def test_marian_weight(n_pos, dim):
    close(
        transformers.marian_sinusoidal_weight(n_pos, dim),
        ref.marian(range(n_pos), dim).astype(np.float32),
        atol=F32_ATOL,
    )
    close(
        transformers.marian_sinusoidal_weight(n_pos, dim, dtype=np.float64),
        ref.marian(range(n_pos), dim),
    )


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: diffusers.get_2d_sincos_pos_embed(6, 4), ValueError, "divisible by 4"),
        (lambda: diffusers.get_2d_sincos_pos_embed(8, (4,)), ValueError, "pair of ints"),
        (lambda: diffusers.get_2d_sincos_pos_embed(8, 4.0), TypeError, "grid_size"),
        (
            lambda: diffusers.get_2d_sincos_pos_embed(8, 4, interpolation_scale=0),
            ValueError,
            "interpolation_scale",
        ),
        (
            lambda: diffusers.get_2d_sincos_pos_embed(8, 4, output_type="tf"),
            ValueError,
            "output_type",
        ),
        (lambda: diffusers.get_3d_sincos_pos_embed(18, 4, 2), ValueError, "divisible by 4"),
        (lambda: diffusers.get_3d_sincos_pos_embed(24, 4, 2), ValueError, "divisible by 16"),
        (lambda: diffusers.get_3d_sincos_pos_embed(16, 4, -1), ValueError, "temporal_size"),
        (
            lambda: diffusers.get_1d_sincos_pos_embed_from_grid(5, np.arange(3)),
            ValueError,
            "divisible by 2",
        ),
        (
            lambda: diffusers.get_1d_sincos_pos_embed_from_grid(4, np.arange(3), flip_sin_to_cos=1),
            TypeError,
            "flip_sin_to_cos",
        ),
        (lambda: diffusers.get_2d_sincos_pos_embed_from_grid(8, np.zeros(1)), ValueError, "grid"),
        (lambda: diffusers.get_timestep_embedding(np.zeros((2, 2)), 8), ValueError, "1d-array"),
        (lambda: diffusers.get_timestep_embedding([1.0, np.inf], 8), ValueError, "finite"),
        (
            lambda: diffusers.get_timestep_embedding([1.0], 8, max_period=0),
            ValueError,
            "max_period",
        ),
        (lambda: mae.get_2d_sincos_pos_embed(10, 4), ValueError, "divisible by 4"),
        (lambda: mae.get_2d_sincos_pos_embed(8, (4, 4)), TypeError, "grid_size"),
        (
            lambda: mae.get_1d_sincos_pos_embed_from_grid(3, np.arange(2)),
            ValueError,
            "divisible by 2",
        ),
        (lambda: fairseq.get_embedding(4, 2), ValueError, "not be 2 or 3"),
        (lambda: fairseq.get_embedding(4, 8, padding_idx=4), ValueError, "padding_idx"),
        (lambda: fairseq.get_embedding(4, 8, padding_idx=-5), ValueError, "padding_idx"),
        (lambda: fairseq.get_embedding(4.0, 8), TypeError, "num_embeddings"),
        (
            lambda: tensor2tensor.get_timing_signal_1d(4, 8, min_timescale=0.0),
            ValueError,
            "min_timescale",
        ),
        (
            lambda: tensor2tensor.get_timing_signal_1d(4, 8, max_timescale=-1.0),
            ValueError,
            "max_timescale",
        ),
        (
            lambda: tensor2tensor.get_timing_signal_1d(4, 8, start_index=2**53),
            ValueError,
            "2\\*\\*53",
        ),
        (
            lambda: transformers.create_sinusoidal_embeddings(4, 8, np.zeros((4, 6))),
            ValueError,
            "shape",
        ),
        (
            lambda: transformers.create_sinusoidal_embeddings(4, 8, np.zeros((4, 8), dtype=int)),
            ValueError,
            "float",
        ),
        (
            lambda: transformers.create_sinusoidal_embeddings(4, 8, [[0.0] * 8] * 4),
            TypeError,
            "out",
        ),
    ],
)
def test_refusals(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_refused_out_is_left_untouched():
    out = np.full((4, 6), 3.0)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        transformers.create_sinusoidal_embeddings(4, 6, out)
    assert (out == 3.0).all()


# --------------------------------------------------------------------------- torch


def test_torch_hand_over():
    torch = pytest.importorskip("torch")
    table = diffusers.get_2d_sincos_pos_embed(16, (2, 3), output_type="np")
    tensor = diffusers.get_2d_sincos_pos_embed(16, (2, 3), device="cpu")  # "pt", as diffusers
    assert isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float64
    np.testing.assert_array_equal(tensor.numpy(), table)
    from sinpe.compat._common import hand_over

    assert np.shares_memory(hand_over(table, "pt").numpy(), table)  # no copy
    video = diffusers.get_3d_sincos_pos_embed(32, 3, 2, output_type="pt")
    assert tuple(video.shape) == (2, 9, 32)
    grid = torch.arange(6, dtype=torch.float32).reshape(2, 1, 1, 3)
    out = diffusers.get_2d_sincos_pos_embed_from_grid(8, grid, output_type="pt")
    np.testing.assert_allclose(out.numpy(), ref.two_d_from_grid(8, grid.numpy()), rtol=0, atol=ATOL)


def test_torch_timesteps_and_in_place_fill():
    torch = pytest.importorskip("torch")
    t = torch.tensor([0.0, 10.0, 999.0])
    emb = diffusers.get_timestep_embedding(t, 16, flip_sin_to_cos=True)
    assert isinstance(emb, torch.Tensor) and emb.dtype == torch.float32
    np.testing.assert_array_equal(
        emb.numpy(), diffusers.get_timestep_embedding(t.numpy(), 16, flip_sin_to_cos=True)
    )
    weight = torch.nn.Parameter(torch.empty(12, 10))
    transformers.create_sinusoidal_embeddings(12, 10, weight)
    assert not weight.requires_grad
    close(weight.detach().numpy(), ref.distilbert(12, 10).astype(np.float32), atol=F32_ATOL)


# --------------------------------------------------------------------------- diffusers 0.42


def test_diffusers_sincos_default_to_torch_as_diffusers_0_42():
    torch = pytest.importorskip("torch")
    for table in (
        diffusers.get_2d_sincos_pos_embed(16, 3),
        diffusers.get_3d_sincos_pos_embed(32, 3, 2),
        diffusers.get_1d_sincos_pos_embed_from_grid(8, np.arange(4.0)),
        diffusers.get_2d_sincos_pos_embed_from_grid(8, np.zeros((2, 1, 2, 2))),
    ):
        assert isinstance(table, torch.Tensor) and table.dtype == torch.float64
    pos = torch.arange(5, dtype=torch.float32)
    narrow = diffusers.get_1d_sincos_pos_embed_from_grid(8, pos, dtype=torch.float32)
    assert narrow.dtype == torch.float32  # float32 positions and frequencies: float32
    wide = diffusers.get_1d_sincos_pos_embed_from_grid(8, pos.double(), dtype=torch.float32)
    assert wide.dtype == torch.float64  # float64 positions promote
    np.testing.assert_array_equal(narrow.numpy(), wide.numpy().astype(np.float32))
    with pytest.raises(TypeError, match="torch.float32 or torch.float64"):
        diffusers.get_1d_sincos_pos_embed_from_grid(8, pos, dtype=torch.int32)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        dict(use_real=True),
        dict(use_real=True, repeat_interleave_real=False),
        dict(theta=500.0, linear_factor=2.0, ntk_factor=3.0, use_real=True),
        dict(freqs_dtype="float64"),
    ],
)
@pytest.mark.parametrize("pos", [9, "float32", "float64"])
def test_diffusers_1d_rotary(kwargs, pos):
    torch = pytest.importorskip("torch")
    kwargs = dict(kwargs)
    if kwargs.get("freqs_dtype") == "float64":
        kwargs["freqs_dtype"] = torch.float64
    if pos == "float32":
        pos = torch.arange(7, dtype=torch.float32) * 1.5
    elif pos == "float64":
        pos = np.arange(7, dtype=np.float64) * 0.25 + 1e6
    got = diffusers.get_1d_rotary_pos_embed(16, pos, **kwargs)
    values = np.arange(pos) if isinstance(pos, int) else np.asarray(pos, dtype=np.float64)
    options = {k: kwargs[k] for k in ("theta", "linear_factor", "ntk_factor") if k in kwargs}
    angles = ref.diffusers_rotary_angles(16, values, **options)
    if kwargs.get("use_real"):
        interleave = kwargs.get("repeat_interleave_real", True)
        for table, want in zip(got, (np.cos(angles), np.sin(angles))):
            assert table.dtype == torch.float32 and tuple(table.shape) == (len(values), 16)
            want = np.repeat(want, 2, axis=1) if interleave else np.concatenate([want, want], 1)
            close(table.numpy(), want.astype(np.float32), atol=F32_ATOL)
    else:
        wide = kwargs.get("freqs_dtype") is not None or getattr(pos, "dtype", None) == np.float64
        assert got.dtype == (torch.complex128 if wide else torch.complex64)
        assert tuple(got.shape) == (len(values), 8)
        atol = 1e-9 if wide else F32_ATOL  # (1e6 * 2**-53 of the reference's own angle)
        real = np.float64 if wide else np.float32
        close(got.numpy().real, np.cos(angles).astype(real), atol=atol)
        close(got.numpy().imag, np.sin(angles).astype(real), atol=atol)


def test_diffusers_2d_and_3d_rotary():
    torch = pytest.importorskip("torch")
    cos, sin = diffusers.get_2d_rotary_pos_embed(32, ((1, 2), (9, 11)), (4, 6))
    grid_h, grid_w = np.linspace(1, 9 * 3 / 4, 4), np.linspace(2, 11 * 5 / 6, 6)
    rows, cols = np.repeat(grid_h, 6), np.tile(grid_w, 4)  # token i * 6 + j
    want = ref.diffusers_rotary_blocks([16, 16], [cols, rows])  # [column | row], as diffusers
    for table, w in zip((cos, sin), want):
        assert table.dtype == torch.float32 and tuple(table.shape) == (24, 32)
        close(table.numpy(), w.astype(np.float32), atol=F32_ATOL)
    freqs_cis = diffusers.get_2d_rotary_pos_embed(32, ((1, 2), (9, 11)), (4, 6), use_real=False)
    assert freqs_cis.dtype == torch.complex64 and tuple(freqs_cis.shape) == (24, 16)
    close(freqs_cis.numpy().real, cos.numpy()[:, 0::2], atol=0)
    for grid_type, extra in (("linspace", {}), ("slice", dict(max_size=(6, 8)))):
        cos, sin = diffusers.get_3d_rotary_pos_embed(
            64, ((0, 0), (3, 5)), (3, 5), 4, theta=500, grid_type=grid_type, **extra
        )
        t, i, j = (
            a.reshape(-1)
            for a in np.meshgrid(np.arange(4), np.arange(3), np.arange(5), indexing="ij")
        )
        want = ref.diffusers_rotary_blocks([16, 24, 24], [t, i, j], theta=500)
        for table, w in zip((cos, sin), want):
            assert table.dtype == torch.float32 and tuple(table.shape) == (60, 64)
            close(table.numpy(), w.astype(np.float32), atol=F32_ATOL)
    with pytest.raises(ValueError, match="use_real = False"):
        diffusers.get_3d_rotary_pos_embed(64, ((0, 0), (3, 5)), (3, 5), 4, use_real=False)
    with pytest.raises(ValueError, match="max_size"):
        diffusers.get_3d_rotary_pos_embed(64, None, (3, 5), 4, grid_type="slice")
    with pytest.raises(ValueError, match="grid_type"):
        diffusers.get_3d_rotary_pos_embed(64, None, (3, 5), 4, grid_type="cube")
    with pytest.raises(ValueError, match="crops_coords"):
        diffusers.get_2d_rotary_pos_embed(32, (0, 1), (4, 6))


def test_torch_is_imported_only_where_a_tensor_is_returned():
    """Without torch: import sinpe works and never imports it; the NumPy paths work; the
    torch-returning functions raise ImportError naming pip install torch."""
    code = """
import sys
sys.modules["torch"] = None  # as if torch were not installed
import numpy as np, sinpe
from sinpe.compat import diffusers, fairseq
assert diffusers.get_2d_sincos_pos_embed(8, 2, output_type="np").shape == (4, 8)
for call in (lambda: diffusers.get_2d_sincos_pos_embed(8, 2),
             lambda: diffusers.get_1d_rotary_pos_embed(8, 4),
             lambda: fairseq.get_embedding(4, 8)):
    try:
        call()
    except ImportError as exc:
        assert "pip install torch" in str(exc), exc
    else:
        raise AssertionError("no ImportError")
print("ok")
"""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
