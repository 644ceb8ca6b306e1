"""Float64 transcriptions of other libraries' formulas, written from their current releases
(read in a throwaway venv, never imported here: no diffusers, transformers, fairseq,
TensorFlow or torch is needed), the one place the tests keep them. Each says what it copies.

These are references for layouts, arguments and shapes; their float64 values differ from the
exact ones by about |p * w| * 2**-52 (exactness is judged against ``oracle``)."""

import math

import mpmath
import numpy as np

# --------------------------------------------------------------------------- sinusoidal tables


def vaswani(positions, d, base=10000.0):
    """The paper's table as the PyTorch tutorial writes it (odd widths end in a sine)."""
    positions = np.asarray(positions, dtype=np.float64)
    div = np.exp(np.arange(0, d, 2) * (-math.log(base) / d))
    out = np.zeros((len(positions), d))
    out[:, 0::2] = np.sin(positions[:, None] * div)
    out[:, 1::2] = np.cos(positions[:, None] * div[: d // 2])
    return out


def fairseq(positions, d, padding_idx=None):
    """fairseq ``SinusoidalPositionalEmbedding.get_embedding`` (and tensor2tensor's
    ``get_timing_signal_1d`` at its default timescales): ``[sin | cos]``, a zero column for an
    odd width, a zero row at ``padding_idx``."""
    positions = np.asarray(positions, dtype=np.float64)
    half = d // 2
    step = math.log(10000.0) / max(half - 1, 1)
    freqs = np.exp(np.arange(half, dtype=np.float64) * -step)
    angles = positions[:, None] * freqs[None, :]
    table = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    if d % 2:
        table = np.concatenate([table, np.zeros((len(positions), 1))], axis=1)
    if padding_idx is not None:
        table[padding_idx, :] = 0
    return table


def marian(positions, d):
    """transformers ``MarianSinusoidalPositionalEmbedding.create_weight`` (``_init_weight``
    before transformers 5): the first ceil(d/2) columns sines, the rest cosines."""
    enc = np.array([[p / np.power(10000, 2 * (j // 2) / d) for j in range(d)] for p in positions])
    sentinel = d // 2 if d % 2 == 0 else d // 2 + 1
    out = np.zeros((len(positions), d))
    out[:, :sentinel] = np.sin(enc[:, 0::2])
    out[:, sentinel:] = np.cos(enc[:, 1::2])
    return out


def distilbert(n_pos, dim):
    """transformers ``create_sinusoidal_embeddings`` (DistilBERT): interleaved."""
    enc = np.array(
        [[p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for p in range(n_pos)]
    )
    out = np.zeros((n_pos, dim))
    out[:, 0::2] = np.sin(enc[:, 0::2])
    out[:, 1::2] = np.cos(enc[:, 1::2])
    return out


def diffusers_timestep(t, dim, flip=False, shift=1.0, scale=1.0, max_period=10000):
    """diffusers ``get_timestep_embedding``, in float64."""
    half = dim // 2
    exponent = -math.log(max_period) * np.arange(half, dtype=np.float64) / (half - shift)
    emb = scale * (np.asarray(t, dtype=np.float64)[:, None] * np.exp(exponent)[None, :])
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)
    if flip:
        emb = np.concatenate([emb[:, half:], emb[:, :half]], axis=-1)
    if dim % 2:
        emb = np.pad(emb, ((0, 0), (0, 1)))
    return emb


def tensor2tensor(length, channels, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    """tensor2tensor ``common_attention.get_timing_signal_1d``."""
    position = np.arange(length, dtype=np.float64) + start_index
    num_timescales = channels // 2
    increment = math.log(float(max_timescale) / float(min_timescale)) / max(num_timescales - 1, 1)
    inv = min_timescale * np.exp(np.arange(num_timescales, dtype=np.float64) * -increment)
    scaled = position[:, None] * inv[None, :]
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    signal = np.pad(signal, [[0, 0], [0, channels % 2]])
    return signal.reshape([1, length, channels])


# --------------------------------------------------------------------------- grids (MAE, diffusers)


def one_d(embed_dim, pos, flip=False):
    """MAE / diffusers ``get_1d_sincos_pos_embed_from_grid`` (NumPy versions), float64."""
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000**omega
    pos = np.asarray(pos, dtype=np.float64).reshape(-1)
    out = np.einsum("m,d->md", pos, omega)
    emb = np.concatenate([np.sin(out), np.cos(out)], axis=1)
    if flip:
        emb = np.concatenate([emb[:, embed_dim // 2 :], emb[:, : embed_dim // 2]], axis=1)
    return emb


def two_d_from_grid(embed_dim, grid):
    return np.concatenate([one_d(embed_dim // 2, grid[0]), one_d(embed_dim // 2, grid[1])], axis=1)


def diffusers_2d(
    embed_dim, grid_size, cls_token=False, extra_tokens=0, interpolation_scale=1.0, base_size=16
):
    if isinstance(grid_size, int):
        grid_size = (grid_size, grid_size)
    grid_h = np.arange(grid_size[0], dtype=np.float64) / (grid_size[0] / base_size)
    grid_h = grid_h / interpolation_scale
    grid_w = np.arange(grid_size[1], dtype=np.float64) / (grid_size[1] / base_size)
    grid_w = grid_w / interpolation_scale
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0)  # here w goes first
    grid = grid.reshape([2, 1, grid_size[1], grid_size[0]])
    emb = two_d_from_grid(embed_dim, grid)
    if cls_token and extra_tokens > 0:
        emb = np.concatenate([np.zeros([extra_tokens, embed_dim]), emb], axis=0)
    return emb


def mae_2d(embed_dim, grid_size, cls_token=False):
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0).reshape([2, 1, grid_size, grid_size])
    emb = two_d_from_grid(embed_dim, grid)
    if cls_token:
        emb = np.concatenate([np.zeros([1, embed_dim]), emb], axis=0)
    return emb


def diffusers_3d(embed_dim, spatial_size, temporal_size, s_scale=1.0, t_scale=1.0):
    if isinstance(spatial_size, int):
        spatial_size = (spatial_size, spatial_size)
    grid_h = np.arange(spatial_size[1], dtype=np.float64) / s_scale
    grid_w = np.arange(spatial_size[0], dtype=np.float64) / s_scale
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0)
    grid = grid.reshape([2, 1, spatial_size[1], spatial_size[0]])
    spatial = two_d_from_grid(3 * embed_dim // 4, grid)
    grid_t = np.arange(temporal_size, dtype=np.float64) / t_scale
    temporal = one_d(embed_dim // 4, grid_t)
    spatial = np.repeat(spatial[np.newaxis], temporal_size, axis=0)
    temporal = np.repeat(temporal[:, np.newaxis], spatial_size[0] * spatial_size[1], axis=1)
    return np.concatenate([temporal, spatial], axis=-1)


def mae_grid(height, width, d):
    """MAE get_2d_sincos_pos_embed, generalised from a square grid to height x width."""

    def one_d(dim, pos):
        omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
        omega = 1.0 / 10000**omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    grid = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    return np.concatenate([one_d(d // 2, grid[0]), one_d(d // 2, grid[1])], axis=1)


# --------------------------------------------------------------------------- RoPE (transformers)

_CTX = mpmath.MPContext()
_CTX.prec = 320


def _original_and_factor(p):
    """YaRN's and LongRoPE's original length and factor (the config's, else the ratio of the
    two lengths), as both their ``_compute_*_parameters`` read them."""
    original = p["original_max_position_embeddings"]
    factor = p.get("factor")
    if factor is None:
        factor = p["max_position_embeddings"] / original
    return original, _CTX.mpf(factor)


def transformers_rope_parameters(scaling, dim, base, seq_len):
    """transformers 5's ``_compute_*_parameters``, transcribed, in exact (320-bit) arithmetic:
    the real-number inverse frequencies and attention factor for these float64 parameters."""
    mpf, log = _CTX.mpf, _CTX.log
    p = dict(scaling or {})
    kind = p.get("rope_type", p.get("type", "default"))
    base = mpf(base)
    if kind in ("llama3", "yarn", "longrope"):
        p.setdefault("original_max_position_embeddings", p.get("max_position_embeddings"))
    pos_freqs = [base ** (mpf(i) / dim) for i in range(0, dim, 2)]
    attention = mpf(1)
    if kind == "default":
        inv = [1 / x for x in pos_freqs]
    elif kind == "linear":
        inv = [1 / x / mpf(p["factor"]) for x in pos_freqs]
    elif kind == "ntk_alpha":  # HunYuan's compute_ntk_alpha_rope_parameters
        new_base = base * mpf(p["alpha"]) ** (mpf(dim) / (dim - 2))
        inv = [1 / new_base ** (mpf(i) / dim) for i in range(0, dim, 2)]
    elif kind == "dynamic":
        factor, limit = mpf(p["factor"]), p["max_position_embeddings"]
        length = limit if seq_len is None else max(seq_len, limit)
        new_base = base * ((factor * length / limit) - (factor - 1)) ** (mpf(dim) / (dim - 2))
        inv = [1 / new_base ** (mpf(i) / dim) for i in range(0, dim, 2)]
    elif kind == "yarn":
        original, factor = _original_and_factor(p)

        def get_mscale(scale, mscale=1):
            return mpf(1) if scale <= 1 else mpf("0.1") * mscale * log(scale) + 1

        attention = p.get("attention_factor")
        if attention is None:
            if p.get("mscale") and p.get("mscale_all_dim"):
                attention = get_mscale(factor, mpf(p["mscale"])) / get_mscale(
                    factor, mpf(p["mscale_all_dim"])
                )
            else:
                attention = get_mscale(factor)
        beta_fast = p.get("beta_fast") or 32
        beta_slow = p.get("beta_slow") or 1

        def correction_dim(rotations):
            return (dim * log(original / (mpf(rotations) * 2 * _CTX.pi))) / (2 * log(base))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if p.get("truncate", True):
            low, high = _CTX.floor(low), _CTX.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += mpf(0.001)
        inv = []
        for i, x in enumerate(pos_freqs):
            ramp = min(max((i - low) / (high - low), 0), 1)
            extrapolation = 1 - ramp
            inv.append((1 / (factor * x)) * (1 - extrapolation) + (1 / x) * extrapolation)
    elif kind == "longrope":
        original, factor = _original_and_factor(p)
        attention = p.get("attention_factor")
        if attention is None:
            attention = 1 if factor <= 1 else _CTX.sqrt(1 + log(factor) / log(original))
        ext = p["long_factor"] if seq_len and seq_len > original else p["short_factor"]
        inv = [1 / (mpf(e) * x) for e, x in zip(ext, pos_freqs)]
    elif kind == "llama3":
        factor = mpf(p["factor"])
        low_ff, high_ff = mpf(p["low_freq_factor"]), mpf(p["high_freq_factor"])
        old = p["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low_ff, old / high_ff
        inv = []
        for x in pos_freqs:
            w = 1 / x
            wavelen = 2 * _CTX.pi / w
            llama = w / factor if wavelen > low_wavelen else w
            if not wavelen < high_wavelen and not wavelen > low_wavelen:  # (empty if equal)
                smooth = (old / wavelen - low_ff) / (high_ff - low_ff)
                llama = (1 - smooth) * llama / factor + smooth * llama
            inv.append(llama)
    elif kind == "proportional":
        angles = int(p.get("partial_rotary_factor", 1.0) * dim // 2)
        inv = [1 / base ** (mpf(i) / dim) for i in range(0, 2 * angles, 2)]
        inv += [mpf(0)] * (dim // 2 - angles)
        inv = [v / mpf(p.get("factor", 1.0)) for v in inv]
    return inv, attention


# --------------------------------------------------------------------------- M-RoPE, axial


def qwen2_vl_recompose(freq, sections):
    """transformers 5.24 ``Qwen2VLRotaryEmbedding.recomposition_frequencies``: ``freq`` is
    ``(3, ..., h)`` (one row per position axis), sections follow one another."""
    parts = np.split(freq, np.cumsum(sections)[:-1], axis=-1)
    half = np.concatenate([m[i % 3] for i, m in enumerate(parts)], axis=-1)
    return np.concatenate([half, half], axis=-1)


def qwen3_vl_recompose(freq, sections):
    """transformers 5.24 ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``: T, H, W
    interleaved (H at 1, 4, 7, ..., W at 2, 5, 8, ...), the rest T."""
    thw = freq[0].copy()
    for dim, offset in enumerate((1, 2), start=1):
        idx = slice(offset, sections[dim] * 3, 3)
        thw[..., idx] = freq[dim][..., idx]
    return np.concatenate([thw, thw], axis=-1)


def ernie_vl_recompose(freq, sections):
    """transformers 5.24 ``Ernie4_5_VLMoeTextRotaryEmbedding``: ``freq`` is ``(3, ..., h)`` in
    sinpe's frequency order; the module pre-permutes its ``inv_freq`` (the first two
    sections' even frequencies, then their odd ones, then the rest), takes section 0 from axis
    1 (H), section 1 from axis 2 (W), section 2 from axis 0 (T), alternates H and W, appends
    T, and repeats each column twice in place."""
    hw = sections[0] + sections[1]
    order = np.concatenate(
        [np.arange(0, hw, 2), np.arange(1, hw, 2), np.arange(hw, freq.shape[-1])]
    )
    parts = np.split(freq[..., order], np.cumsum(sections)[:-1], axis=-1)
    h, w, t = (m[(i + 1) % 3] for i, m in enumerate(parts))
    hwt = np.concatenate([np.stack([h, w], axis=-1).reshape(h.shape[:-1] + (-1,)), t], axis=-1)
    return np.repeat(hwt, 2, axis=-1)


def pixtral_inv_freq(inv_freq):
    """``PixtralVisionRotaryEmbedding.compute_axial_rope_parameters``' reordering."""
    return np.concatenate([inv_freq[0::2], inv_freq[1::2]])


def pixtral_recompose(freq):
    """``PixtralVisionRotaryEmbedding.recomposition_frequencies``: ``freq`` is ``(N, 2, h)``
    (height and width angles per patch); the first chunk of frequencies reads height, the
    second width (torch.chunk: the first chunk the larger), then H-W-H-W."""
    first = -(-freq.shape[-1] // 2)
    half = np.concatenate([freq[:, 0, :first], freq[:, 1, first:]], axis=-1)
    return np.concatenate([half, half], axis=-1)


# --------------------------------------------------------------------------- diffusers rotary


def diffusers_rotary_angles(dim, pos, theta=10000.0, linear_factor=1.0, ntk_factor=1.0):
    """``get_1d_rotary_pos_embed``'s angles ``(S, dim/2)`` in float64 (its ``freqs`` and
    ``torch.outer(pos, freqs)``, transcribed)."""
    freqs = 1.0 / ((theta * ntk_factor) ** (np.arange(0, dim, 2) / dim)) / linear_factor
    return np.outer(np.asarray(pos, dtype=np.float64), freqs)


def diffusers_rotary_blocks(dims, coordinates, theta=10000.0):
    """``cat`` of interleaved ``(cos, sin)`` blocks, block ``k`` of width ``dims[k]`` rotating
    ``coordinates[k]`` (diffusers' 2-D and 3-D rotary embeddings, Flux's axes)."""
    cos, sin = [], []
    for dim, pos in zip(dims, coordinates):
        angles = diffusers_rotary_angles(dim, pos, theta)
        cos.append(np.repeat(np.cos(angles), 2, axis=1))
        sin.append(np.repeat(np.sin(angles), 2, axis=1))
    return np.concatenate(cos, axis=1), np.concatenate(sin, axis=1)
