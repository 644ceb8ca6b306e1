"""The common RotaryEmbedding's compiled forward (one RoPE, one set of frequencies, one
position axis), which reads the module through one attribute and tensor methods: the same
rows and layout as eager, bit for bit, in every layout and dtype; what it does not take
(bool ids, a dtype without tables, complex output) goes the general way, with its errors."""

import pytest

torch = pytest.importorskip("torch")

from test_torch import LLAMA3  # noqa: E402

import sinpe.torch as st  # noqa: E402
from sinpe._tables.checks import bfloat16  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # torch's, in compile
    pytest.mark.filterwarnings("ignore:Torchinductor does not support code generation for comp"),
]

ERNIE = {  # a family whose module returns float32 whatever x's dtype
    "model_type": "ernie4_5",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 4096,
    "rope_theta": 500000.0,
}
DTYPES = [torch.float32, torch.float16, torch.float64] + (
    [torch.bfloat16] if bfloat16() is not None else []
)


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
        assert torch.equal(a, b)


@pytest.mark.parametrize("layout", ["half", "interleaved", "compact", "complex"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compiled_rows_and_layout_are_eagers(layout, dtype):
    module = st.RotaryEmbedding(LLAMA3, layout=layout, max_positions=4096)
    x = torch.zeros(1, 3, 4, dtype=dtype)
    module(x, torch.tensor([[0]]))  # eager: makes x's dtype's tables
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True)
    for ids in ([[0, 1, 4095]], [[7]], [[3, 2], [1, 0]]):
        _same(compiled(x, torch.tensor(ids)), module(x, torch.tensor(ids)))
    assert module._compiled_path == (None if layout == "complex" else layout)


def test_a_fixed_output_dtype_is_kept_compiled():
    module = st.RotaryEmbedding(ERNIE)
    assert module._compiled_path == "half/float32"
    x = torch.zeros(1, 2, 4, dtype=torch.float16)
    torch._dynamo.reset()
    got = torch.compile(module, fullgraph=True)(x, torch.tensor([[5, 4095]]))
    assert got[0].dtype == torch.float32
    _same(got, module(x, torch.tensor([[5, 4095]])))


def test_what_the_common_path_does_not_take_goes_the_general_way():
    module = st.RotaryEmbedding(LLAMA3, max_positions=64)
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True)
    x = torch.zeros(1, 2, 4)
    with pytest.raises(Exception, match="position_ids must be integers or floats"):
        compiled(x, torch.tensor([[True, False]]))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="no float16 table was made"):
        compiled(x.half(), torch.tensor([[1, 2]]))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="x must be float64, float32"):
        compiled(torch.zeros(1, 2, dtype=torch.int32), torch.tensor([[1, 2]]))
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match=r"index out of bounds: 0 <= tmp\d* < 64"):
        compiled(x, torch.tensor([[-1, 3]]))  # sent past the end, never wrapped


def test_other_modules_take_the_general_path():
    phi3 = {
        "model_type": "phi3",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "max_position_embeddings": 8192,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 8},
    }
    phi3["rope_scaling"]["long_factor"] = [2.0] * 8
    qwen2_vl = {
        "model_type": "qwen2_vl",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "default", "mrope_section": [2, 3, 3]},
    }
    for config in (phi3, qwen2_vl):
        assert st.RotaryEmbedding(config)._compiled_path is None
    assert st.RotaryEmbedding(LLAMA3, layout="complex", max_positions=8)._compiled_path is None
