"""A run line's engine side (``sinpe engines --run``): what every engine's reader shares to
run the run model (made by ``sinpe._engines._run``): the ``K`` tokens, the positions ``p``,
what a run gives (``RunResult``), the arrays' strict JSON form, and transformers' loading and
forward (its run, the reference's, and the engines that load the model through it)."""

from __future__ import annotations

import base64
from typing import NamedTuple

import numpy as np

__all__ = [
    "FAR",
    "K",
    "MODEL",
    "SHARP",
    "RunResult",
    "decode",
    "encode",
    "forward",
    "load",
    "log_softmax",
    "n_axes",
    "offsets",
    "position_ids",
    "tokens",
]

K = 32  # tokens per run
FAR = 100_000  # the far position every engine that lets positions be set runs
SHARP = 4.0  # q and k each: their dot products grow 16-fold
MODEL = "run-model"


class RunResult(NamedTuple):
    """What an engine's run gives: ``{p: (K, vocab) log-probabilities}`` for each ``p`` it
    ran, ``{p: [each layer's output]}`` where it lets them be read, notes (the farthest ``p``
    reached where the engine cannot set positions, and its cost), and how it ran."""

    logprobs: dict
    hidden: dict | None = None
    notes: tuple = ()
    how: str = ""


def offsets(spec) -> tuple:
    """The ``p`` a run line runs: 0, ``FAR`` and the config's trained length (its last ``K``
    positions), each once, in order."""
    found = {0, FAR}
    trained = getattr(spec, "max_position_embeddings", None)
    if isinstance(trained, int) and trained > K:
        found.add(trained - K)
    return tuple(sorted(found))


def tokens(vocab: int) -> list:
    """The ``K`` token ids every engine runs (seed 0), past the special ids 0-2."""
    return np.random.default_rng(0).integers(3, vocab, K).tolist()


def log_softmax(logits) -> np.ndarray:
    logits = np.asarray(logits, np.float64)
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def encode(array) -> dict:
    """An array as strict JSON: its shape and its float64 bytes (NaN and infinities kept)."""
    array = np.ascontiguousarray(array, dtype="<f8")
    return {"shape": list(array.shape), "base64": base64.b64encode(array.tobytes()).decode()}


def decode(data) -> np.ndarray:
    """``encode``'s array back; ``ValueError`` where the bytes do not fill the shape."""
    if not isinstance(data, dict) or not isinstance(data.get("base64"), str):
        raise ValueError("an array must be given as {shape, base64}")
    shape = data.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and 0 <= n < 1 << 24 for n in shape
    ):
        raise ValueError(f"an array's shape must be a list of sizes, got {shape!r}")
    raw = base64.b64decode(data["base64"], validate=True)
    if len(raw) != 8 * int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"{len(raw)} bytes do not hold a float64 array of shape {shape}")
    return np.frombuffer(raw, "<f8").reshape(shape).copy()


def load(transformers, folder, config, dtype, attn_implementation="eager", experts=None):
    """The model in ``folder`` by transformers' auto classes (a causal LM, else image-text);
    ``experts``: its experts' implementation where given (the float64 reference's "eager":
    the default grouped matmul takes no float64)."""
    extra = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    if experts is not None:
        extra["experts_implementation"] = experts
    classes = [transformers.AutoModelForCausalLM, transformers.AutoModelForImageTextToText]
    errors = []
    for cls in classes:
        try:
            return cls.from_pretrained(folder, dtype=dtype, **extra).eval()
        except (ValueError, KeyError) as exc:  # the next class may take it
            errors.append(f"{cls.__name__}: {exc}")
    raise ValueError("; ".join(errors))


def n_axes(spec) -> int:
    """3 for M-RoPE (position ids per axis), else 1; a per-layer spec's first layer says."""
    one = spec if spec.scaling is not None else spec.layer(spec.layer_types[0])
    return 3 if getattr(one, "n_axes", 1) == 3 else 1


def position_ids(positions, n_axes: int):
    """Position ids as transformers' models take them: ``(1, K)``, M-RoPE's ``(3, 1, K)``."""
    import torch

    ids = torch.as_tensor(positions)[None]
    return ids[None].expand(3, 1, -1) if n_axes == 3 else ids


def forward(model, ids, positions, n_axes: int):
    """``(log-probabilities (K, vocab), [each layer's output (K, hidden)])`` of one run. The
    attention mask is given: without one, transformers reads position ids that do not step by
    1 as packed sequences (``find_packed_sequence_indices``) and masks across them."""
    import torch

    with torch.no_grad():
        out = model(
            input_ids=torch.as_tensor(ids)[None],
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            position_ids=position_ids(positions, n_axes),
            output_hidden_states=True,
            use_cache=False,
        )
    hidden = [h[0].double().numpy() for h in (out.hidden_states or ())]
    return log_softmax(out.logits[0].double().numpy()), hidden
