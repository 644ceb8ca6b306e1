"""pytest-benchmark: RoPE tables and the block conventions, peers side by side.

Groups: Llama-3.1 RoPE 8192 x 128 float32 in the "half" and "compact" layouts (against two
np.ones of the same bytes and PyTorch's LlamaRotaryEmbedding computation), rope_at on
position_ids, and 2048 x 768 float64 block conventions on one thread.
"""

import numpy as np
import pytest
from peers import LLAMA31_ROPE, ROPE_SHAPE, ones, ones_pair, sinpe_rope, torch_llama_rope

import sinpe
from sinpe._tables import backends

needs_kernel = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")
N, HEAD_DIM = ROPE_SHAPE


def check_pair(pair, width, dtype="float32"):
    assert all(t.shape == (N, width) and str(t.dtype) == dtype for t in pair)


def test_rope_half_ones(benchmark):
    benchmark.group = "rope-8192x128-f32-half"
    check_pair(benchmark(ones_pair, N, HEAD_DIM), HEAD_DIM)


@needs_kernel
def test_rope_half_sinpe(benchmark):
    benchmark.group = "rope-8192x128-f32-half"
    check_pair(benchmark(sinpe_rope, N, HEAD_DIM), HEAD_DIM)


def test_rope_half_sinpe_numpy_path(benchmark):
    benchmark.group = "rope-8192x128-f32-half"
    check_pair(benchmark(sinpe_rope, N, HEAD_DIM, backend="numpy"), HEAD_DIM)


def test_rope_half_torch(benchmark):
    forward = torch_llama_rope()
    if forward is None:
        pytest.skip("torch not installed (optional: pip install torch==2.13.0)")
    benchmark.group = "rope-8192x128-f32-half"
    cos, sin = benchmark(forward, N, HEAD_DIM)
    assert tuple(cos.shape) == (1, N, HEAD_DIM)


def test_rope_compact_ones(benchmark):
    benchmark.group = "rope-8192x128-f32-compact"
    check_pair(benchmark(ones_pair, N, HEAD_DIM // 2), HEAD_DIM // 2)


@needs_kernel
def test_rope_compact_sinpe(benchmark):
    benchmark.group = "rope-8192x128-f32-compact"
    check_pair(benchmark(sinpe_rope, N, HEAD_DIM, layout="compact"), HEAD_DIM // 2)


POSITION_IDS = {
    "run": np.arange(N)[None, :],
    "batch of runs": np.arange(4 * 2048).reshape(4, 2048) % 3000,
    "scattered": np.random.default_rng(0).integers(0, 2**20, size=(1, N)),
}


@pytest.mark.parametrize("kind", POSITION_IDS)
def test_rope_at_position_ids(benchmark, kind):
    benchmark.group = "rope_at-8192-positions-f32-half"
    ids = POSITION_IDS[kind]
    cos, sin = benchmark(
        sinpe.rope_at,
        ids,
        HEAD_DIM,
        scaling=LLAMA31_ROPE,
        dtype="float32",
    )
    assert cos.shape == ids.shape + (HEAD_DIM,)


@pytest.mark.parametrize("convention", ["vaswani", "fairseq", "hf-marian"])
@pytest.mark.parametrize("backend", ["cython", "numpy"])
def test_block_conventions(benchmark, convention, backend):
    if backend not in backends.BACKENDS:
        pytest.skip("kernel not built")
    benchmark.group = "conventions-2048x768-f64-one-thread"
    table = benchmark(
        sinpe.sinusoidal_positional_encoding,
        2048,
        768,
        convention=convention,
        backend=backend,
        threads=1,
    )
    assert table.shape == (2048, 768)


def test_block_conventions_ones(benchmark):
    benchmark.group = "conventions-2048x768-f64-one-thread"
    assert benchmark(ones, 2048, 768, "float64").shape == (2048, 768)


def test_patch_one_llama_module(benchmark):
    """patch() of one Llama-3.1 rotary module: candidate, buffer and probe checks, swap."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    import sinpe.torch as st

    config = transformers.LlamaConfig(
        hidden_size=4096,
        num_attention_heads=32,
        rope_theta=500000.0,
        max_position_embeddings=131072,
        rope_scaling=LLAMA31_ROPE,
    )
    module = LlamaRotaryEmbedding(config)

    def holder():
        h = torch.nn.Module()
        h.rope = module
        return (h,), {"warn": False}

    report = benchmark.pedantic(st.patch, setup=holder, rounds=20)
    assert report == ["rope"]
