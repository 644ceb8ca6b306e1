"""The implementations every benchmark compares, shared by the pytest-benchmark suite and
ratios.py: sinpe's two paths, the textbook NumPy formula, the np.ones write limit, and
PyTorch's tutorial module when torch is installed."""

import math

import numpy as np

from sinpe import sinusoidal_positional_encoding
from sinpe.cli.bench import ones, textbook  # noqa: F401  (re-exported peers)

# (seq_len, d_model, dtype, threads) - the shapes of the performance targets.
SHAPES = [
    (1, 128, "float64"),
    (128, 64, "float64"),
    (2048, 512, "float64"),
    (2048, 512, "float32"),
    (8192, 1024, "float64"),
    (32768, 1024, "float64"),
    (2048, 512, "float16"),
]
try:
    import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)

    SHAPES.append((2048, 512, "bfloat16"))
except ImportError:
    pass


def shape_id(shape):
    n, d, dtype = shape
    return f"{n}x{d}-{dtype}"


def sinpe_cython(seq_len, d_model, dtype="float64", threads=None):
    return sinusoidal_positional_encoding(
        seq_len, d_model, dtype=dtype, backend="cython", threads=threads
    )


def sinpe_numpy(seq_len, d_model, dtype="float64"):
    return sinusoidal_positional_encoding(seq_len, d_model, dtype=dtype, backend="numpy")


def torch_tutorial():
    """PyTorch's tutorial PositionalEncoding buffer, on one CPU thread; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)

    def build(seq_len, d_model, dtype="float64"):
        dt = getattr(torch, dtype)
        position = torch.arange(seq_len, dtype=dt).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=dt) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(seq_len, d_model, dtype=dt)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        return pe

    return build


# Two Python threads, one table each with threads=1: finishes in clearly less time than the
# two calls one after the other only if the kernel releases the GIL (2+ cores).
GIL_SHAPE = (8192, 1024, "float64")


def two_tables_serial(seq_len, d_model, dtype="float64"):
    return [sinpe_cython(seq_len, d_model, dtype, threads=1) for _ in range(2)]


def two_tables_threaded(seq_len, d_model, dtype="float64"):
    import threading

    tables = [None, None]

    def build(i):
        tables[i] = sinpe_cython(seq_len, d_model, dtype, threads=1)

    workers = [threading.Thread(target=build, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return tables


def textbook_at(positions, d_model):
    """The textbook formula at arbitrary positions (what ``encode`` replaces); inexact at
    large positions."""
    import numpy as np

    position = np.asarray(positions, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = np.zeros((len(position), d_model))
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return table


def diffusers_timesteps(timesteps, dim, max_period=10000.0, downscale_freq_shift=1.0):
    """diffusers' get_timestep_embedding transcribed to NumPy float64 (default flags)."""
    import numpy as np

    half = dim // 2
    exponent = -math.log(max_period) * np.arange(half, dtype=np.float64)
    emb = (
        np.asarray(timesteps, dtype=np.float64)[:, None]
        * np.exp(exponent / (half - downscale_freq_shift))[None, :]
    )
    return np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)


# RoPE: Llama-3.1's scaling (rope_theta 500000, head_dim 128), the shape of the RoPE targets.
LLAMA31_ROPE = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_theta": 500000.0,
}
ROPE_SHAPE = (8192, 128)


def diffusers_2d_formula(embed_dim, grid_size, base_size=16, interpolation_scale=1.0):
    """diffusers' ``get_2d_sincos_pos_embed_np`` as diffusers writes it (float32 positions,
    ``np.sin`` of the float64 outer product): what ``sinpe.compat.diffusers`` replaces."""
    h, w = (grid_size, grid_size) if isinstance(grid_size, int) else grid_size
    grid_h = np.arange(h, dtype=np.float32) / (h / base_size) / interpolation_scale
    grid_w = np.arange(w, dtype=np.float32) / (w / base_size) / interpolation_scale
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0).reshape([2, 1, w, h])
    halves = []
    for axis in (grid[0], grid[1]):
        omega = np.arange(embed_dim // 4, dtype=np.float64)
        omega /= embed_dim / 4.0
        omega = 1.0 / 10000**omega
        out = np.einsum("m,d->md", axis.reshape(-1), omega)
        halves.append(np.concatenate([np.sin(out), np.cos(out)], axis=1))
    return np.concatenate(halves, axis=1)


def sinpe_rope(seq_len, head_dim, layout="half", dtype="float32", threads=1, backend="cython"):
    from sinpe import rope

    return rope(
        seq_len,
        head_dim,
        scaling=LLAMA31_ROPE,
        layout=layout,
        dtype=dtype,
        threads=threads,
        backend=backend,
    )


def ones_pair(rows, width, dtype="float32"):
    """Two np.ones tables: the write limit of a (cos, sin) pair."""
    return ones(rows, width, dtype), ones(rows, width, dtype)


def torch_llama_rope():
    """``LlamaRotaryEmbedding.forward`` as transformers computes it (float32 angle, cos and
    sin of ``cat(freqs, freqs)``, times the attention scaling), one CPU thread, for inverse
    frequencies fixed at construction (as the module's buffer is); None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    from sinpe import rope_frequencies

    inv_freq, scaling = rope_frequencies(ROPE_SHAPE[1], scaling=LLAMA31_ROPE)
    inv_freq = torch.tensor(inv_freq, dtype=torch.float32)

    def forward(seq_len, head_dim):
        position_ids = torch.arange(seq_len)[None, :]
        inv_freq_expanded = inv_freq[None, :, None].float().expand(1, -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * scaling, emb.sin() * scaling

    return forward


def float32_llama_rope(positions, inv_freq):
    """The same float32 computation in NumPy (for the drift measurement without torch)."""
    import numpy as np

    angle = np.asarray(positions, dtype=np.float32)[:, None] * inv_freq.astype(np.float32)
    return np.cos(angle), np.sin(angle)
