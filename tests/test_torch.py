"""sinpe.torch: tensors rounded once, RotaryEmbedding against transformers' module semantics
(transcribed: shapes, layouts, the per-call length rules of dynamic and longrope), patch() on
tiny random transformers models (where transformers is installed: the torch CI leg), and the
diffusers modules against float64 transcriptions."""

import re
import threading
import warnings
from pathlib import Path

import numpy as np
import oracle
import pytest
import references as ref
from rope_cases import phi3_longrope

torch = pytest.importorskip("torch")
import sinpe  # noqa: E402
import sinpe.torch as st  # noqa: E402
from sinpe._tables.checks import bfloat16  # noqa: E402

LLAMA3 = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
DYNAMIC = {
    "model_type": "llama",
    "head_dim": 16,
    "max_position_embeddings": 2048,
    "rope_theta": 10000.0,
    "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
}
PHI3 = phi3_longrope(96, 4, 131072, 4096, partial_rotary_factor=0.5)
QWEN2_VL = {
    "model_type": "qwen2_vl",
    "hidden_size": 128,
    "num_attention_heads": 4,
    "rope_theta": 1e6,
    "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]},
}
QWEN3_VL = {
    "model_type": "qwen3_vl",
    "text_config": {
        "model_type": "qwen3_vl_text",
        "head_dim": 32,
        "rope_theta": 5e6,
        "rope_scaling": {"rope_type": "default", "mrope_section": [6, 5, 5]},
    },
}
PIXTRAL = {"model_type": "pixtral", "head_dim": 16, "rope_theta": 10000.0}
GEMMA3 = {
    "model_type": "gemma3_text",
    "head_dim": 32,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},
}


def exact(spec, positions, dtype="float32", length=None):
    """sinpe's exact table at ``positions`` (numpy), half layout: the reference values."""
    kwargs = dict(base=spec.base, scaling=dict(spec.scaling), dtype=dtype)
    kwargs["max_position_embeddings"] = spec.max_position_embeddings
    return sinpe.rope_at(np.asarray(positions), spec.head_dim, **kwargs)


# --------------------------------------------------------------------------- functions


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_tensors_are_the_numpy_tables(dtype):
    name = str(dtype).replace("torch.", "")
    cos, sin = st.rope(50, 64, base=500000.0, scaling=LLAMA3["rope_scaling"], dtype=dtype)
    want = sinpe.rope(50, 64, base=500000.0, scaling=LLAMA3["rope_scaling"], dtype=name)
    assert cos.dtype == dtype and np.array_equal(cos.numpy(), want[0])
    cos, _ = st.rope_at(torch.tensor([[3, 70000]]), 64, dtype=dtype)
    assert tuple(cos.shape) == (1, 2, 64)
    cache = st.rope_cache(5, 8, format="complex")
    assert cache.dtype == torch.complex64 and tuple(cache.shape) == (5, 4)  # torch's default
    assert st.rope_cache(5, 8, format="complex", dtype=torch.complex128).dtype == torch.complex128


def test_the_default_dtype_is_torchs_and_out_tensors_are_filled():
    assert st.rope(3, 8)[0].dtype == torch.get_default_dtype()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert st.rope_at([1, 2], 8)[0].dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
    assert sinpe.rope(2, 8, dtype=torch.float16)[0].dtype == np.float16  # NumPy arrays still
    for dtype in (torch.float32, torch.bfloat16):
        cos, sin = torch.empty(4, 8, dtype=dtype), torch.empty(4, 8, dtype=dtype)
        got = st.rope(4, 8, out=(cos, sin), offset=3)
        assert got[0] is cos and got[1] is sin
        want = st.rope(4, 8, dtype=dtype, offset=3)
        assert torch.equal(cos, want[0]) and torch.equal(sin, want[1])
        ids = torch.tensor([[5, 9]])
        cos, sin = torch.empty(1, 2, 8, dtype=dtype), torch.empty(1, 2, 8, dtype=dtype)
        st.rope_at(ids, 8, out=(cos, sin))
        assert torch.equal(cos, st.rope_at(ids, 8, dtype=dtype)[0])
    cache = torch.empty(6, 8)
    assert st.rope_cache(6, 8, out=cache) is cache
    assert torch.equal(cache, st.rope_cache(6, 8, dtype=torch.float32))
    before = torch.full((4, 8), 7.0)
    for bad, match in (
        ((before, torch.empty(4, 8)[:, ::2]), "not contiguous"),
        ((before, torch.empty(4, 8, dtype=torch.float64)), "dtype"),
        ((before, torch.empty(3, 8)), "shape"),
    ):
        with pytest.raises(ValueError, match=match):
            st.rope(4, 8, out=bad)
        assert torch.equal(before, torch.full((4, 8), 7.0))  # nothing written
    with pytest.raises(TypeError, match="tuple of 2"):
        st.rope(4, 8, out=before)


def test_boolean_position_ids_are_refused():
    m = st.RotaryEmbedding(LLAMA3)
    with pytest.raises(TypeError, match="position_ids"):
        m(torch.zeros(1), torch.tensor([[True, False]]))


def test_bfloat16_is_correctly_rounded_halfway_cases_included():
    """Positions whose sine lies next to a halfway point of bfloat16 (the half-precision
    tests' hard cases): the tensors hold the NumPy tables' bits, each value the exact one
    correctly rounded (mpmath)."""
    pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(5)
    targets = [
        2.0**e + (m + 0.5) * 2.0 ** (e - 7)
        for e, m in zip(-rng.integers(1, 6, 200), rng.integers(0, 2**7, 200))
    ]
    centres = np.arcsin(np.array(targets))
    positions = np.concatenate([centres + k * np.spacing(centres) for k in (-1, 0, 1)])
    cos, sin = st.rope_at(positions, 2, dtype=torch.bfloat16)
    assert cos.dtype == torch.bfloat16
    full = sinpe.rope_at(positions, 2)
    half = sinpe.rope_at(positions, 2, dtype="bfloat16")
    for got, want in zip((cos, sin), half):
        assert np.array_equal(got.view(torch.int16).numpy(), want.view(np.int16))
    exact = oracle.cos_sin_narrow(positions[:60], [1.0], "bfloat16")
    assert np.array_equal(sin[:60, 0].to(torch.float64).numpy(), exact[:, 1, 0])
    via_float32 = torch.from_numpy(full[1].astype(np.float32)).to(torch.bfloat16)
    assert (via_float32 != sin).any()  # the float32 detour lands on the other neighbour


# --------------------------------------------------------------------------- RotaryEmbedding


@pytest.mark.parametrize(
    "config", [LLAMA3, PHI3, GEMMA3, QWEN2_VL], ids=["llama3", "phi3", "gemma3", "qwen2vl"]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_forward_is_the_exact_table_in_the_module_shape(config, dtype):
    if dtype == torch.bfloat16:
        pytest.importorskip("ml_dtypes")
    module = st.RotaryEmbedding(config)
    spec = sinpe.rope_config(config)
    layer = "full_attention" if spec.layer_types else None
    if layer:
        spec = spec.layer(layer)
    ids = torch.tensor([[0, 1, 5, 3000], [9, 70000, 12, 4]])
    x = torch.zeros(2, 4, 8, dtype=dtype)
    cos, sin = module(x, ids) if layer is None else module(x, ids, layer)
    name = str(dtype).replace("torch.", "")
    want = (
        exact(spec, ids.numpy(), name)
        if not spec.scaling.get("mrope_section")
        else exact(spec, np.broadcast_to(ids.numpy(), (3, 2, 4)), name)
    )
    assert cos.dtype == dtype and tuple(cos.shape) == (2, 4, spec.head_dim)
    for got, w in zip((cos, sin), want):
        got = got.view(torch.int16).numpy() if dtype == torch.bfloat16 else got.numpy()
        w = w.view(np.int16) if dtype == torch.bfloat16 else w
        assert np.array_equal(got, w)


def test_mrope_and_axial_positions():
    for config in (QWEN2_VL, QWEN3_VL):
        module, spec = st.RotaryEmbedding(config), sinpe.rope_config(config)
        ids = torch.tensor([[[0, 5, 9]], [[1, 2, 300]], [[7, 7, 70000]]])  # (3, batch, seq)
        cos, sin = module(torch.zeros(1, 3, 4), ids)
        want = exact(spec, ids.numpy())
        assert tuple(cos.shape) == (1, 3, spec.head_dim)
        assert np.array_equal(cos.numpy(), want[0]) and np.array_equal(sin.numpy(), want[1])
    module, spec = st.RotaryEmbedding(PIXTRAL), sinpe.rope_config(PIXTRAL)
    hw = torch.tensor([[0, 0], [0, 1], [3, 7], [63, 2]])
    cos, sin = module(torch.zeros(4, 4), hw)
    want = exact(spec, hw.numpy())
    assert tuple(cos.shape) == (4, 16) and np.array_equal(cos.numpy(), want[0])


def _dynamic_reference(calls):
    """transformers' dynamic_rope_update, transcribed: the length each call's frequencies
    are made for (None: the original ones)."""
    original = cached = DYNAMIC["max_position_embeddings"]
    current, lengths = None, []
    for seq_len in calls:
        if seq_len > cached:
            current, cached = seq_len, seq_len
        if seq_len < original and cached > original:
            current, cached = None, original
        lengths.append(current)
    return lengths


def test_dynamic_and_longrope_follow_transformers_per_call():
    module = st.RotaryEmbedding(DYNAMIC)
    spec = sinpe.rope_config(DYNAMIC)
    calls = [100, 5000, 3000, 9000, 4000, 1000, 2500]
    for seq_len, length in zip(calls, _dynamic_reference(calls)):
        ids = torch.arange(seq_len - 3, seq_len)[None]
        cos, _ = module(torch.zeros(1, 3, 4), ids)
        inv_freq, _ = spec.frequencies(length)
        angles = np.outer(ids.numpy()[0], inv_freq)
        np.testing.assert_allclose(cos.numpy()[0, :, :8], np.cos(angles), rtol=0, atol=2e-7)
    module, spec = st.RotaryEmbedding(PHI3), sinpe.rope_config(PHI3)
    for top, factors in ((4095, "short_factor"), (4096, "long_factor")):
        cos, _ = module(torch.zeros(1, 2, 4), torch.tensor([[10, top]]))
        inv_freq, attention = spec.frequencies(top + 1)
        base = sinpe.rope_frequencies(12, base=spec.base)[0]
        np.testing.assert_allclose(inv_freq, base / np.array(PHI3["rope_scaling"][factors]))
        np.testing.assert_allclose(
            cos.numpy()[0, 0, :6], attention * np.cos(10 * inv_freq), rtol=0, atol=3e-7
        )


def test_tables_are_not_buffers_and_survive_casts():
    module = st.RotaryEmbedding(LLAMA3)
    ids = torch.tensor([[1, 2, 100000]])
    before = module(torch.zeros(1, 3, 4), ids)
    assert module.state_dict() == {}  # nothing persistent
    module.to(torch.float16)  # as model.to(float16) would
    after = module(torch.zeros(1, 3, 4), ids)  # float32 x: float32 tables, still exact
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    half = module(torch.zeros(1, 3, 4, dtype=torch.float16), ids)
    assert half[0].dtype == torch.float16
    assert np.array_equal(
        half[0].numpy(), exact(sinpe.rope_config(LLAMA3), ids.numpy(), "float16")[0]
    )
    module.clear()
    assert all(torch.equal(a, b) for a, b in zip(before, module(torch.zeros(1, 3, 4), ids)))


def test_growing_tables_is_safe_under_concurrent_forwards():
    module = st.RotaryEmbedding(DYNAMIC | {"rope_scaling": None})
    spec = sinpe.rope_config(DYNAMIC | {"rope_scaling": None})
    errors = []

    def work(k):
        try:
            for top in range(100 + k, 200000, 9973):
                ids = torch.tensor([[0, top]])
                cos, _ = module(torch.zeros(1, 2, 4), ids)
                assert np.array_equal(cos.numpy(), exact(spec, ids.numpy())[0])
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_the_readme_s_table_bytes_for_llama_3_1():
    """The README's figure: Llama-3.1's tables in float32 take 64 MiB (2 tables of 131,072
    positions by 64 frequencies, 4 bytes each)."""
    root = Path(__file__).resolve().parent.parent
    config = root / "tests" / "data" / "configs" / "llama-3.1-8b.json"
    module = st.RotaryEmbedding(config)
    assert module.max_positions == 131072 and module.table_bytes == 64 << 20
    readme = root / "README.md"
    if readme.exists():  # beside a checkout's tests
        assert "64 MiB for Llama-3.1 in float32" in " ".join(readme.read_text().split())


def test_ids_past_the_table_are_exact_rows_in_eager_mode_and_grow_nothing():
    """On the CPU in eager mode, an id past the table (max_positions; here 2**40 or 2**53 - 1)
    or a negative one is the exact row, computed alone: nothing grows, what is kept is the
    table made at build time."""
    m = st.RotaryEmbedding(LLAMA3)
    before = m.table_bytes
    assert m.max_positions == 131072 and before == 2 * 131072 * 8 * 4
    x = torch.zeros(1, dtype=torch.float32)
    ids = torch.tensor([[2**40, 7, 2**53 - 1, 4_000_000, -5]])
    cos, sin = m(x, ids)
    want_cos, want_sin = sinpe.rope_at(
        ids.numpy(), 16, base=500000.0, scaling=LLAMA3["rope_scaling"], dtype="float32"
    )
    assert torch.equal(cos, torch.from_numpy(want_cos)) and cos.shape == (1, 5, 16)
    assert torch.equal(sin, torch.from_numpy(want_sin))
    assert m.table_bytes == before and m._layers[None].tables == {}
    near = torch.tensor([[131071, 7]])  # the table's last row: the same bits
    assert torch.equal(m(x, near)[0][0, 1], cos[0, 1])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_forks_while_a_table_grows_never_hang():
    """A thread makes a RotaryEmbedding's table again and again (its lock held all the
    while) and the main thread forks 200 times, as often as it can while that lock is held;
    each child's forward needs the lock (and makes its table again). Not one child hangs,
    and each gets the parent's rows."""
    from subprocesses import FORK_STRESS, FORKS, fork_counts, run_script

    result = run_script(
        FORK_STRESS
        + f"""
import torch, sinpe.torch as st
m = st.RotaryEmbedding({LLAMA3!r})
x = torch.zeros(1, dtype=torch.float32)
# a few ids: torch's own OpenMP ops (tensors of 32768 elements and more) cannot run in a
# forked child at all (torch.set_num_threads(1) there, as DataLoader workers do)
ids = torch.tensor([[0, 1, 4095, 199_999, 200_000]])
WANT = m(x, ids)
layer = m._layers[None]
def grow(stop):
    while not stop.is_set():
        m.clear()
        m(x, torch.tensor([[5]]))  # remade under the lock
def child():
    m.clear()
    got = m(x, ids)
    return torch.equal(got[0], WANT[0]) and torch.equal(got[1], WANT[1])
def window():
    for _ in range(2000):  # until the grower holds the lock (or 0.2 s)
        if layer.lock.locked():
            return True
        time.sleep(0.0001)
    return False
fork_stress({FORKS}, grow, child, wait_for_window=window)
"""
    )
    forks, hung, wrong, caught = fork_counts(result)
    assert (forks, hung, wrong) == (FORKS, 0, 0), result.stdout
    assert caught > 0, result.stdout  # some forks came with the lock held: the case tested


def test_layer_types_are_checked():
    module = st.RotaryEmbedding(GEMMA3)
    x, ids = torch.zeros(1, 2, 4), torch.tensor([[1, 2]])
    full, sliding = module(x, ids, "full_attention"), module(x, ids, "sliding_attention")
    assert not torch.equal(full[0], sliding[0])
    with pytest.raises(ValueError, match="layer_type must be one of"):
        module(x, ids)
    with pytest.raises(ValueError, match="one table for every layer"):
        st.RotaryEmbedding(LLAMA3)(x, ids, "full_attention")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, inside compile
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, inside compile
@pytest.mark.parametrize("config", [LLAMA3, GEMMA3, QWEN2_VL], ids=["llama3", "gemma3", "mrope"])
def test_forward_compiles_as_one_graph_and_is_the_same_lookup(config):
    """fullgraph=True: no graph break (torch._dynamo.explain counts 0); the compiled rows
    are eager's bit for bit (a gather is exact)."""
    module = st.RotaryEmbedding(config)
    layer_type = next(iter(module._layers))
    ids = torch.tensor([[0, 1, 2, module.max_positions // 3]])
    if module._layers[layer_type].n_axes == 3:
        ids = torch.stack([ids, ids + 5, ids * 2])
    args = (torch.zeros(1, 4, 4), ids) + (() if layer_type is None else (layer_type,))
    assert torch._dynamo.explain(module)(*args).graph_break_count == 0
    got = torch.compile(module, fullgraph=True)(*args)
    assert all(torch.equal(a, b) for a, b in zip(got, module(*args)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dynamic_ntk_compiles_with_its_one_graph_break():
    """dynamic re-derives its base from the largest id (transformers' own module branches on
    that value too): the exact path runs eagerly, outside the graph (fullgraph=True refuses
    it, as it refuses transformers' own), with the same values."""
    module = st.RotaryEmbedding(DYNAMIC)
    x = torch.zeros(1, 3, 4)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="disable"):
        torch.compile(module, fullgraph=True)(x, torch.tensor([[0, 5, 9000]]))
    torch._dynamo.reset()
    compiled = torch.compile(module)
    for ids in ([[0, 5, 9000]], [[1, 2, 3]]):
        want = st.RotaryEmbedding(DYNAMIC)(x, torch.tensor(ids))
        assert all(torch.equal(a, b) for a, b in zip(compiled(x, torch.tensor(ids)), want))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ids_outside_the_table_raise_when_compiled_never_wrap():
    """Compiled, an id at or past max_positions, or a negative one (sent past the end, where
    the compiled gather would wrap it), raises in the gather's own bounds check (no host
    sync); eager on the CPU computes it exactly."""
    module = st.RotaryEmbedding(LLAMA3, max_positions=1000)
    compiled = torch.compile(module, fullgraph=True)
    x = torch.zeros(1, 2, 4)
    assert torch.equal(
        compiled(x, torch.tensor([[999, 3]]))[0], module(x, torch.tensor([[999, 3]]))[0]
    )
    for bad in ([[1000, 3]], [[-1, 3]], [[3, 2**40]]):
        with pytest.raises(RuntimeError, match=r"index out of bounds: 0 <= tmp\d* < 1000"):
            compiled(x, torch.tensor(bad))  # Inductor's check, inside the fused gather
        want = sinpe.rope_at(np.array(bad), 16, base=500000.0, scaling=LLAMA3["rope_scaling"])
        assert np.array_equal(module(x, torch.tensor(bad))[0].numpy(), want[0].astype(np.float32))


def test_tables_are_non_persistent_buffers_remade_exactly_on_a_cast():
    """.to(dtype) remakes the tables in that dtype, exactly (a cast would round twice):
    after .half() the bits are sinpe's float16 table; .to(device) moves them; the
    state_dict holds none of them; a fixed output dtype keeps its tables."""
    module = st.RotaryEmbedding(LLAMA3, max_positions=4096)
    spec = sinpe.rope_config(LLAMA3)
    assert module.state_dict() == {} and module.table_bytes == 2 * 4096 * 8 * 4
    assert module.cos_float32.dtype == torch.float32
    ids = torch.tensor([[0, 1, 4095, 77]])
    for cast, dtype in (
        (lambda m: m.half(), "float16"),
        (lambda m: m.to(torch.bfloat16), "bfloat16"),
        (lambda m: m.double(), "float64"),
        (lambda m: m.float(), "float32"),
    ):
        if dtype == "bfloat16" and bfloat16() is None:
            continue
        cast(module)
        held = sorted(name for name, _ in module.named_buffers() if name.startswith("cos_"))
        assert held == [f"cos_{dtype}"], held
        assert module.table_bytes == 2 * 4096 * 8 * np.dtype(numpy_dtype_name(dtype)).itemsize
        table = getattr(module, f"cos_{dtype}")
        want = spec.rope(4096, layout="compact", dtype=dtype)[0]
        assert np.array_equal(
            table.view(torch.int16).numpy() if dtype == "bfloat16" else table.numpy(),
            want.view(np.int16) if dtype == "bfloat16" else want,
        )
        x = torch.zeros(1, 4, 4, dtype=getattr(torch, dtype))
        cos, _ = module(x, ids)
        assert cos.dtype == getattr(torch, dtype)
    complex_module = st.RotaryEmbedding(LLAMA3, layout="complex", max_positions=64)
    complex_module.half()
    assert complex_module.cos_float32.dtype == torch.float32  # freqs_cis: float32 angles
    assert complex_module(torch.zeros(1), torch.tensor([[3]])).dtype == torch.complex64


def numpy_dtype_name(name):
    return bfloat16() if name == "bfloat16" else np.dtype(name)


def test_another_dtype_gets_its_own_exact_table_once():
    """A forward with x of another dtype than the tables' (autocast) makes that dtype's
    tables once, exactly, beside the others; clear() frees them all."""
    module = st.RotaryEmbedding(LLAMA3, max_positions=512)
    x16 = torch.zeros(1, 2, 4, dtype=torch.float16)
    cos, _ = module(x16, torch.tensor([[5, 500]]))
    assert module.table_bytes == 2 * 512 * 8 * (4 + 2)
    want = sinpe.rope_at(
        np.array([[5, 500]]), 16, base=500000.0, scaling=LLAMA3["rope_scaling"], dtype="float16"
    )
    assert np.array_equal(cos.numpy(), want[0])
    module.clear()
    assert module.table_bytes == 0
    assert torch.equal(module(x16, torch.tensor([[5, 500]]))[0], cos)  # remade


def test_max_positions_sets_the_table_and_its_memory_is_checked_first():
    assert st.RotaryEmbedding(LLAMA3).max_positions == 131072  # the trained length
    no_length = {"model_type": "somebody_new", "hidden_size": 64, "num_attention_heads": 4}
    no_length["rope_theta"] = 1e4
    assert st.RotaryEmbedding(no_length, layout="half").max_positions == 8192
    long = LLAMA3 | {"max_position_embeddings": 10_485_760}
    assert st.RotaryEmbedding(long).max_positions == st.MAX_POSITIONS == 2**18
    with pytest.raises(ValueError, match="max_positions must be"):
        st.RotaryEmbedding(LLAMA3, max_positions=0)
    with pytest.raises(MemoryError, match=r"max_positions=1099511627776"):
        st.RotaryEmbedding(LLAMA3, max_positions=2**40)


# --------------------------------------------------------------------------- patch()


TINY = dict(  # a tiny random model's sizes
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_hidden_layers=2,
    intermediate_size=64,
    vocab_size=64,
)
# DeepSeek's multi-head latent attention at a tiny model's widths (V2 and V3 alike)
TINY_MLA = dict(
    qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=16, kv_lora_rank=16, q_lora_rank=16
)


def _tiny(name):
    """A tiny random config and the transformers rotary module of one family."""
    transformers = pytest.importorskip("transformers")
    common = TINY
    if name == "llama":
        config = transformers.LlamaConfig(
            **common,
            max_position_embeddings=131072,
            rope_theta=500000.0,
            rope_scaling=LLAMA3["rope_scaling"],
        )
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding as cls
    elif name == "mistral":
        config = transformers.MistralConfig(**common, rope_theta=1e6)
        from transformers.models.mistral.modeling_mistral import MistralRotaryEmbedding as cls
    elif name == "qwen2":
        config = transformers.Qwen2Config(
            **common,
            rope_scaling={
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 4096,
            },
        )
        from transformers.models.qwen2.modeling_qwen2 import Qwen2RotaryEmbedding as cls
    elif name == "qwen3":
        config = transformers.Qwen3Config(**common, head_dim=32)
        from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding as cls
    elif name == "phi3":
        config = transformers.Phi3Config(
            **{k: v for k, v in PHI3.items() if k != "model_type"},
            num_hidden_layers=2,
            vocab_size=64,
        )
        from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding as cls
    elif name == "gemma3":
        config = transformers.Gemma3TextConfig(
            **{**common, "num_hidden_layers": 6},  # 5 sliding layers, then a full one
            head_dim=16,
            rope_scaling={"rope_type": "linear", "factor": 8.0},
        )
        from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding as cls
    elif name == "deepseek_v3":
        config = transformers.DeepseekV3Config(
            **common,
            **TINY_MLA,
            max_position_embeddings=163840,
            rope_scaling={
                "type": "yarn",
                "factor": 40,
                "original_max_position_embeddings": 4096,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
            },
        )
        from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
            DeepseekV3RotaryEmbedding as cls,
        )
    elif name == "qwen2_vl":
        config = transformers.Qwen2VLConfig(
            **{k: v for k, v in QWEN2_VL.items() if k != "model_type"}
        ).text_config
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding as cls
    elif name == "qwen2_5_vl":
        config = transformers.Qwen2_5_VLConfig(
            **{k: v for k, v in QWEN2_VL.items() if k != "model_type"}
        ).text_config
        from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import (
            Qwen2_5_VLRotaryEmbedding as cls,
        )
    elif name == "qwen3_vl":
        config = transformers.Qwen3VLConfig(text_config=QWEN3_VL["text_config"]).text_config
        from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding as cls
    elif name == "pixtral":
        config = transformers.PixtralVisionConfig(hidden_size=64, num_attention_heads=4)
        from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding as cls
    return config, cls(config)


FAMILIES = [
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "phi3",
    "gemma3",
    "deepseek_v3",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "pixtral",
]


@pytest.mark.parametrize("family", FAMILIES)
def test_patch_replaces_each_family_with_the_same_shapes_and_exact_values(family):
    config, original = _tiny(family)
    holder = torch.nn.Module()
    holder.rotary_emb = original
    if family == "pixtral":
        ids = torch.tensor([[0, 0], [1, 5], [30, 2]])
        x = torch.zeros(3, 8)
    elif family in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"):
        ids = torch.tensor([[[0, 4, 90]], [[1, 2, 3]], [[5, 6, 7000]]])
        x = torch.zeros(1, 3, 8)
    else:
        ids = torch.tensor([[0, 1, 17, 5000]])
        x = torch.zeros(1, 4, 8)
    extra = ("full_attention",) if family == "gemma3" else ()
    want = original(x, ids, *extra)
    assert st.patch(holder) == ["rotary_emb"]
    assert isinstance(holder.rotary_emb, st.RotaryEmbedding)
    got = holder.rotary_emb(x, ids, *extra)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.device == w.device
        # transformers' float32 angle drifts with the position; sinpe's value is exact
        assert (g - w).abs().max() < 1e-3
    spec = holder.rotary_emb.spec.layer("full_attention") if extra else holder.rotary_emb.spec
    assert np.array_equal(got[0].numpy(), exact(spec, ids.numpy())[0])


def test_patch_verifies_the_complex_freqs_cis_of_deepseek_v2():
    transformers = pytest.importorskip("transformers")
    config = transformers.DeepseekV2Config(
        **TINY, **TINY_MLA, moe_intermediate_size=32, n_routed_experts=2, num_experts_per_tok=1
    )
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2RotaryEmbedding

    holder = torch.nn.Module()
    holder.rope = DeepseekV2RotaryEmbedding(config)  # complex freqs_cis
    real = holder.rope(torch.zeros(1), torch.arange(100)[None])
    assert st.patch(holder) == ["rope"] and isinstance(holder.rope, st.RotaryEmbedding)
    mine = holder.rope(torch.zeros(1), torch.arange(100)[None])
    assert mine.dtype == real.dtype == torch.complex64 and mine.shape == real.shape
    assert (mine - real).abs().max() < 2e-5


def _llama_module():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, rope_theta=1e4)
    holder = torch.nn.Module()
    holder.rope = LlamaRotaryEmbedding(config)
    return holder


@pytest.mark.parametrize(
    "spoil, reason",
    [
        (lambda m: m.inv_freq.mul_(1.001), r"inv_freq\[\d+\] is .* ulps"),
        (lambda m: setattr(m, "attention_scaling", 1.5), "attention_scaling is 1.5"),
        (lambda m: m.config.__setattr__("rope_parameters", {"rope_type": "bogus"}), "refuses"),
        (lambda m: delattr(m, "config"), "no config"),
    ],
)
def test_patch_leaves_a_module_that_differs_alone_saying_why(spoil, reason):
    """A module whose buffers, factor or config disagree with what sinpe would build stays,
    named with the check that failed and the numbers; probing never changes it."""
    holder = _llama_module()
    spoil(holder.rope)
    before = {k: v.clone() for k, v in holder.rope.named_buffers()}
    with pytest.warns(RuntimeWarning, match="rope"):
        report = st.patch(holder)
    assert report == [] and re.search(reason, report.left["rope"]), report.left
    assert type(holder.rope).__name__ == "LlamaRotaryEmbedding"
    assert all(torch.equal(before[k], v) for k, v in holder.rope.named_buffers())


def test_patch_leaves_a_meta_device_module_alone():
    holder = _llama_module().to("meta")
    report = st.patch(holder, warn=False)
    assert report == [] and "meta device" in report.left["rope"]


def test_patch_after_a_cast_to_bfloat16():
    """model.to(bfloat16) rounds inv_freq to bfloat16, and the real module rotates by those:
    the buffer agrees within bfloat16's ulps, the probe within the buffer's own error; the
    replacement is exact."""
    holder = _llama_module().to(torch.bfloat16)
    assert st.patch(holder) == ["rope"]
    cos, _ = holder.rope(torch.zeros(1, dtype=torch.bfloat16), torch.arange(8)[None])
    want = sinpe.rope_at(np.arange(8)[None], 16, dtype="bfloat16")[0]
    assert cos.dtype == torch.bfloat16 and np.array_equal(
        cos.view(torch.int16).numpy(), want.view(np.int16)
    )


def test_patched_llama_logits():
    """A tiny random Llama 3.1 model: the logits move by transformers' float32 drift only."""
    transformers = pytest.importorskip("transformers")
    config, _ = _tiny("llama")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    tokens = torch.randint(0, 64, (1, 64))
    near, far = torch.arange(64)[None], torch.arange(64)[None] + 100000
    with torch.no_grad():
        before = [model(tokens, position_ids=p).logits for p in (near, far)]
        assert st.patch(model) == ["model.rotary_emb"]
        after = [model(tokens, position_ids=p).logits for p in (near, far)]
    assert (before[0] - after[0]).abs().max() < 1e-5
    assert (before[1] - after[1]).abs().max() < 1e-3


# --------------------------------------------------------------------------- diffusers


@pytest.mark.parametrize(
    "theta, axes_dim, sizes",
    [
        (10000, [16, 56, 56], (1, 6, 7)),  # Flux (its image ids: axis 0 is 0)
        (256, [16, 56, 56], (3, 4, 5)),  # HunyuanVideo
        (10000, [44, 42, 42], (3, 4, 5)),  # Wan, attention_head_dim 128
    ],
)
def test_axes_modules_against_diffusers_transcribed(theta, axes_dim, sizes):
    ids = st.grid_ids(*sizes)
    if sizes[0] == 1:  # Flux: text ids (zeros) first, then the image grid
        ids = torch.cat([torch.zeros(4, 3), ids])
    cos, sin = st.FluxPosEmbed(theta, axes_dim)(ids)
    want = ref.diffusers_rotary_blocks(axes_dim, ids.numpy().T, theta=theta)
    assert cos.dtype == torch.float32 and tuple(cos.shape) == (ids.shape[0], sum(axes_dim))
    np.testing.assert_allclose(cos.numpy(), want[0], rtol=0, atol=6e-8)
    np.testing.assert_allclose(sin.numpy(), want[1], rtol=0, atol=6e-8)
    with pytest.raises(ValueError, match="ids must have shape"):
        st.FluxPosEmbed(theta, axes_dim)(ids[:, :2])


def test_import_sinpe_never_imports_torch():
    import subprocess
    import sys

    code = (
        "import sinpe, sys; sinpe.rope(4, 8); "
        "sinpe.rope_config({'head_dim': 8, 'rope_theta': 1e4}); print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "False", result.stderr
    warnings.filterwarnings("default")


def _tiny_model(name):
    transformers = pytest.importorskip("transformers")
    config, _ = _tiny(name)
    config.pad_token_id = 0
    cls = {
        "llama": transformers.LlamaForCausalLM,
        "qwen2": transformers.Qwen2ForCausalLM,
        "gemma3": transformers.Gemma3ForCausalLM,
        "phi3": transformers.Phi3ForCausalLM,
    }[name]
    torch.manual_seed(0)
    return cls(config).eval()


def _compiles(model, tokens, positions, fullgraph) -> bool:
    try:
        with torch.no_grad():
            torch.compile(model, fullgraph=fullgraph)(tokens, position_ids=positions)
    except Exception:
        return False
    finally:
        torch._dynamo.reset()
    return True


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own, inside compile
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["llama", "qwen2", "gemma3", "phi3"])
def test_a_patched_model_compiles_wherever_the_unpatched_does(name):
    """Llama-3.1, a YaRN family (Qwen2), Gemma-3 (a RoPE per layer type) and Phi-3
    (LongRoPE: both factor sets held, picked per call on the device, as transformers'
    torch.where does): the unpatched models compile with fullgraph=True, and so do the
    patched ones, with 0 graph breaks, their logits eager's at positions 0-63 and near
    100,000 (past the trained length of some: max_positions= is the way)."""
    model = _tiny_model(name)
    tokens = torch.randint(0, 64, (1, 64), generator=torch.Generator().manual_seed(1))
    near, far = torch.arange(64)[None], torch.arange(100_000, 100_064)[None]
    assert _compiles(model, tokens, near, fullgraph=True)
    report = st.patch(model, max_positions=2**17)  # past the trained length of some
    rotary = model.model.rotary_emb
    assert report == ["model.rotary_emb"] and rotary.max_positions == 2**17
    assert report.table_bytes == rotary.table_bytes > 0
    explained = torch._dynamo.explain(model)(tokens, position_ids=far)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        for positions in (near, far):
            eager = model(tokens, position_ids=positions).logits
            assert (compiled(tokens, position_ids=positions).logits - eager).abs().max() < 1e-5
    torch._dynamo.reset()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_exported_patched_model_holds_no_host_sync():
    """torch.export of a patched Llama-3.1: its graph holds no aten._local_scalar_dense (a
    host read of a tensor value: what a CUDA graph cannot capture) and runs as eager."""
    model = _tiny_model("llama")
    st.patch(model)
    tokens, positions = torch.randint(0, 64, (1, 16)), torch.arange(16)[None] + 100_000
    exported = torch.export.export(
        model, (tokens,), {"position_ids": positions, "use_cache": False}
    )
    graph = str(exported.graph)
    assert "_local_scalar_dense" not in graph
    unbacked = [str(s) for s in exported.range_constraints if str(s).startswith("u")]
    assert not unbacked, unbacked  # no data-dependent size
    with torch.no_grad():
        want = model(tokens, position_ids=positions, use_cache=False).logits
        got = exported.module()(tokens, position_ids=positions, use_cache=False).logits
    assert (got - want).abs().max() < 1e-5


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_generate_with_a_static_cache_under_compile_gives_eagers_tokens():
    model = _tiny_model("llama")
    model.generation_config.pad_token_id = 0
    st.patch(model)
    tokens = torch.randint(2, 64, (1, 8), generator=torch.Generator().manual_seed(3))
    options = dict(max_new_tokens=6, do_sample=False, cache_implementation="static")
    eager = model.generate(tokens, **options)
    model.forward = torch.compile(model.forward, fullgraph=True)
    try:
        assert torch.equal(model.generate(tokens, **options), eager)
    finally:
        torch._dynamo.reset()


def test_a_family_without_a_record_needs_its_layout():
    """RotaryEmbedding never guesses what an unknown family's module returns."""
    config = {
        "model_type": "somebody_new",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "rope_theta": 1e4,
    }
    with pytest.raises(ValueError, match="layout="):
        st.RotaryEmbedding(config)
    cos, sin = st.RotaryEmbedding(config, layout="interleaved")(
        torch.zeros(1), torch.arange(3)[None]
    )
    want = sinpe.rope_at(np.arange(3)[None], 16, layout="interleaved", dtype="float32")[0]
    assert torch.equal(cos, torch.from_numpy(want))
    with pytest.raises(ValueError, match="layout must be one of"):
        st.RotaryEmbedding(config, layout="sideways")


def test_patch_finds_the_layout_of_a_family_without_a_record():
    """A module of a model_type sinpe has no record of: the probe tells its layout."""
    holder = _llama_module()
    holder.rope.config.model_type = "somebody_new"
    assert st.patch(holder) == ["rope"] and holder.rope.layout == "half"


def _tiny_omni_thinker(sections):
    """A tiny random Qwen2.5-Omni thinker (M-RoPE recomposed inside its rotary forward;
    ``sections`` None: the module's own default, [16, 24, 24], so head_dim 128) and the
    (3, batch, seq) ids its own get_rope_index makes for text around an image."""
    pytest.importorskip("transformers")
    from transformers.models.qwen2_5_omni import configuration_qwen2_5_omni as omni_config
    from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as omni

    rope = {"rope_type": "default", "rope_theta": 1e6}
    text = dict(  # head_dim 128: the module's own default sections [16, 24, 24]
        TINY,
        hidden_size=256,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=256,
        rope_parameters=rope if sections is None else {**rope, "mrope_section": sections},
    )
    vision = dict(depth=1, hidden_size=32, intermediate_size=32, num_heads=2, out_hidden_size=256)
    audio = dict(encoder_layers=1, d_model=32, encoder_attention_heads=2, encoder_ffn_dim=32)
    config = omni_config.Qwen2_5OmniThinkerConfig(
        text_config=text,
        vision_config={**vision, "fullatt_block_indexes": [0]},
        audio_config={**audio, "output_dim": 256},
    )
    config.image_token_id, config.vision_start_token_id, config.vision_end_token_id = 250, 251, 252
    torch.manual_seed(0)
    model = omni.Qwen2_5OmniThinkerForConditionalGeneration(config).eval()
    tokens = torch.tensor([[5, 6, 251] + [250] * 4 + [252] + list(range(7, 63))])
    ids, _ = model.get_rope_index(
        tokens, image_grid_thw=torch.tensor([[1, 4, 4]]), attention_mask=torch.ones_like(tokens)
    )
    return model, tokens, ids


@pytest.mark.parametrize("sections", [None, [32, 16, 16]])
def test_patch_replaces_qwen25_omni_recomposing_mrope_exactly(sections):
    """Qwen2.5-Omni's text rotary module takes (3, batch, seq) ids and recomposes the three
    axes inside forward (contiguous sections, [16, 24, 24] when the config has none): sinpe
    reads that from its family record, patch() verifies it on the model's own id forms, and
    the replacement gives spec.rope_at(ids) bit for bit, ids past 100,000 included; the
    model's logits, on the ids its get_rope_index makes around an image, within 1e-6."""
    model, tokens, ids = _tiny_omni_thinker(sections)
    assert not torch.equal(ids[0], ids[1]) and not torch.equal(ids[1], ids[2])
    with torch.no_grad():
        before = model(tokens, position_ids=ids).logits
    report = st.patch(model, warn=False)
    assert report == ["model.language_model.rotary_emb"], report.left
    assert list(report.left) == ["model.visual.rotary_pos_emb"]  # a vision tower sinpe refuses
    rotary = model.model.language_model.rotary_emb
    spec = rotary.spec
    assert spec.scaling["mrope_section"] == tuple(sections or (16, 24, 24))
    x = torch.zeros(1, 1, 4)
    for positions in (ids, ids + 100_000):
        cos, sin = rotary(x, positions)
        want = spec.rope_at(positions.numpy(), dtype="float32")
        assert np.array_equal(cos.numpy(), want[0]) and np.array_equal(sin.numpy(), want[1])
    with torch.no_grad():
        assert (model(tokens, position_ids=ids).logits - before).abs().max() <= 1e-6


def test_patch_leaves_a_module_recomposing_mrope_it_cannot_verify_alone():
    """The same module on a model_type sinpe has no record of: on 2-D ids it looks like a
    plain RoPE, so patch() probes the model's own id form too (three different axes) and,
    finding that each layout's answer has another shape or other values, leaves it alone,
    saying so; the model computes as before."""
    model, tokens, ids = _tiny_omni_thinker(None)
    rotary = model.model.language_model.rotary_emb

    class Unknown:  # its config, under a model_type sinpe has no record of
        def __init__(self, data):
            self.data = data

        def to_dict(self):
            return dict(self.data)

    rotary.config = Unknown({**rotary.config.to_dict(), "model_type": "somebody_new"})
    with torch.no_grad():
        before = model(tokens, position_ids=ids).logits
    with pytest.warns(RuntimeWarning, match="rotary_emb"):
        report = st.patch(model)
    why = report.left["model.language_model.rotary_emb"]
    assert re.search(r"as half: on \(3, batch, seq\) ids, output shape \(2, 67, 128\)", why), why
    assert model.model.language_model.rotary_emb is rotary
    with torch.no_grad():
        assert torch.equal(model(tokens, position_ids=ids).logits, before)


def test_patch_replaces_a_module_that_refuses_the_id_forms_its_model_never_passes():
    """A form of ids the original raises on is not one its model passes: the module is
    still replaced when it agrees on every form it takes."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    class TextOnly(LlamaRotaryEmbedding):
        def forward(self, x, position_ids):
            if position_ids.ndim != 2:
                raise ValueError("position_ids must be (batch, seq)")
            return super().forward(x, position_ids)

    holder = torch.nn.Module()
    holder.rope = TextOnly(transformers.LlamaConfig(hidden_size=64, num_attention_heads=4))
    assert st.patch(holder) == ["rope"]


def test_torch_from_numpy_takes_sinpes_frequencies_without_a_warning():
    """The README's torch.from_numpy(...) on a frequency vector: a writable copy, so torch
    does not warn that it is read-only (the suite turns warnings into errors)."""
    w = sinpe.frequencies(8)
    assert torch.equal(torch.from_numpy(w), torch.from_numpy(sinpe.frequencies(8)))
    inv_freq, _ = sinpe.rope_frequencies(16)
    torch.from_numpy(inv_freq).mul_(2.0)  # writes into the copy only
    assert np.array_equal(sinpe.rope_frequencies(16)[0], inv_freq / 2.0)


def test_the_engines_reader_finds_a_layout_through_a_thread_splits_differences():
    """``sinpe engines``' transformers reader tells the layout of a module's cos from its
    copies of each pair: where torch splits a large tensor between threads, the entries by
    the split take another code path and may differ by 1e-4 (63 of 17,984 entries, seen in
    a 281-row read), which is still that layout; unrelated columns are none, and so is a
    copy differing in more than 1% of its entries."""
    from sinpe.torch._engine import _columns

    positions = np.concatenate([np.arange(64), np.geomspace(64, 131071, 217).astype(int)])
    angles = np.outer(positions, 10000.0 ** -(np.arange(64) / 64))
    cos = np.cos(angles).astype(np.float32)
    row, pair = np.unravel_index(np.random.default_rng(5).choice(cos.size, 63, False), cos.shape)
    halves = np.concatenate([cos, cos], axis=-1)
    halves[row, 64 + pair] += np.float32(1.5e-4)
    assert (halves[:, :64] != halves[:, 64:]).sum() == 63
    assert list(_columns(halves, 64)) == list(range(64))
    pairs = np.repeat(cos, 2, axis=-1)
    pairs[row, 2 * pair + 1] -= np.float32(1.5e-4)
    assert list(_columns(pairs, 64)) == list(range(0, 128, 2))
    other = np.concatenate([cos, np.cos(2 * angles).astype(np.float32)], axis=-1)
    many = np.concatenate([cos, cos], axis=-1)
    many[: len(positions) // 50 + 1, 64:] += np.float32(1e-3)  # 2% of the entries
    for wrong in (other, many):
        with pytest.raises(ValueError, match="in no layout sinpe knows"):
            _columns(wrong, 64)
