"""The shift test every engine leg runs, and the record it leaves for docs/engines.md.

One tiny random Llama-3.1 (the llama3 rope type, base 500,000; its query and key weights
scaled by ``SHARP`` so that the angles matter to the logits), ``K`` tokens at positions
``p .. p + K - 1`` for each ``p`` in ``OFFSETS``. RoPE is relative, so the exact float64
reference (transformers in float64, its RoPE replaced by sinpe's exact table, its softmax and
norms kept in float64) gives the same log-probabilities at every ``p``; an engine's largest
distance from it at ``p`` is how far the engine is from exact there. Each leg writes its
engines' rows with ``record`` to ``$SINPE_ENGINES_OUT/<engine>.json`` (when set);
``benchmarks/engines.py`` combines the files into docs/engines.md's table."""

from __future__ import annotations

import contextlib
import json
import os

import numpy as np

OFFSETS = (0, 10, 100, 1000, 10_000, 100_000)
K = 64
SHARP = 4.0  # q and k each: their dot products grow 16-fold
VOCAB = 512
LLAMA3 = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0)
LLAMA3.update(high_freq_factor=4.0, original_max_position_embeddings=8192)
CONFIG = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2)
CONFIG.update(num_attention_heads=2, num_key_value_heads=1, head_dim=64)
CONFIG.update(bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
CONFIG.update(max_position_embeddings=131072, rope_parameters=LLAMA3)


def save(folder) -> str:
    """The shift model, randomly initialised (seed 0), saved by transformers in ``folder``."""
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(SHARP)
            layer.self_attn.k_proj.weight.mul_(SHARP)
    model.save_pretrained(folder)
    return str(folder)


def tokens() -> list:
    return np.random.default_rng(0).integers(3, VOCAB, K).tolist()


def log_softmax(logits) -> np.ndarray:
    logits = np.asarray(logits, np.float64)
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


@contextlib.contextmanager
def _float64_softmax():
    """transformers' eager attention asks softmax for float32 even in a float64 model."""
    import torch

    softmax = torch.nn.functional.softmax

    def float64(input, dim=None, _stacklevel=3, dtype=None):
        if dtype == torch.float32 and input.dtype == torch.float64:
            dtype = torch.float64
        return softmax(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

    torch.nn.functional.softmax = float64
    try:
        yield
    finally:
        torch.nn.functional.softmax = softmax


def _float64_norms(model) -> None:
    """RMSNorm in float64 (transformers' computes in float32 whatever the model's dtype)."""
    import torch

    for module in model.modules():
        if type(module).__name__.endswith("RMSNorm"):
            eps, weight = module.variance_epsilon, module.weight

            def forward(x, eps=eps, weight=weight):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.to(x.dtype)

            module.forward = forward


def transformers_logprobs(folder, offsets=OFFSETS, *, exact=False, patched=False) -> dict:
    """``{p: (K, vocab) log-probabilities}``: transformers float32 as it runs, float32 with
    its RoPE replaced by sinpe's table (``patched``), or (``exact``) the float64 reference."""
    import torch
    import transformers

    dtype = torch.float64 if exact else torch.float32
    model = transformers.LlamaForCausalLM.from_pretrained(
        folder, dtype=dtype, attn_implementation="eager"
    ).eval()
    if exact or patched:
        import sinpe.torch as st

        assert st.patch(model, warn=False, max_positions=max(offsets) + K + 1)
    if exact:
        _float64_norms(model)
    ids = torch.tensor(tokens())[None]
    found = {}
    with torch.no_grad(), _float64_softmax() if exact else contextlib.nullcontext():
        for p in offsets:
            positions = torch.arange(p, p + K)[None]
            found[p] = log_softmax(model(ids, position_ids=positions).logits[0].double().numpy())
    return found


def distances(found: dict, reference: dict) -> dict:
    """``{p: the largest |log-probability - the reference's at p|}``."""
    return {p: float(np.abs(found[p] - reference[p]).max()) for p in found}


MODEL = (
    "the shift model (a tiny Llama-3.1): the largest distance of the 64 positions' whole "
    "log-probability distributions"
)


def record(engine: str, version: str, rows: dict, note: str = "", model: str = MODEL) -> None:
    """Write one engine's distances (``{p: error}``) to ``$SINPE_ENGINES_OUT/engine.json``;
    ``model`` names the model and the measure (rows of different ones go in tables apart)."""
    out = os.environ.get("SINPE_ENGINES_OUT")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    data = {"engine": engine, "version": version, "note": note, "k": K, "model": model}
    data["rows"] = [{"offset": int(p), "error": e} for p, e in sorted(rows.items())]
    name = "".join(c if c.isalnum() else "-" for c in engine.lower())
    with open(os.path.join(out, f"{name}.json"), "w") as stream:
        json.dump(data, stream, indent=1)
