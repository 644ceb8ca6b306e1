"""A run line's model and its reference (``sinpe engines --run``).

The run model is the twin of the config (``_shrink.py``) with random weights (seed 0, float32,
saved by transformers with a small tokenizer: ``_weights.save_twin``), its query and key
sharpened by ``SHARP`` each so that the angles move the logits (with the default init, std
0.02, moving the positions moves the logits by about 2e-6 only). Every engine loads that one
folder. The reference (``reference``, in an interpreter with torch and transformers) is the
same model in float64 with sinpe's exact tables in place of its rotary modules
(``sinpe.torch.patch``), run on ``K`` tokens at positions ``p .. p + K - 1`` for each ``p`` of
``offsets(spec)``; beside it, what float32 angles move its log-probabilities by at each ``p``
and what a change of positions moves them by (``_verdict/run.py`` says how each is used).

``python -m sinpe._engines._run FOLDER`` makes ``FOLDER/run-model`` from ``FOLDER/twin`` and
prints the reference as one ``SINPE-ENGINE`` line (arrays as base64 float64)."""

from __future__ import annotations

import base64
import contextlib
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "FAR",
    "K",
    "SHARP",
    "RunResult",
    "decode",
    "encode",
    "log_softmax",
    "offsets",
    "reference",
    "save_run_model",
    "sharpen",
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


# ------------------------------------------------------------------ the model


def _gain(norm, x) -> float:
    import torch

    with torch.no_grad():
        out = norm(x)
    return float(out.norm() / max(float(x.norm()), 1e-30))


def _sharpen_norm(norm, factor: float) -> None:
    """A q/k norm's output times ``factor``, whichever way its weight enters (``w x`` or
    Gemma's ``(1 + w) x``): found by calling it."""
    import torch

    width = norm.weight.shape[-1]
    x = torch.randn(3, width, dtype=norm.weight.dtype, generator=torch.Generator().manual_seed(1))
    before = _gain(norm, x)
    with torch.no_grad():
        saved = norm.weight.clone()
        norm.weight.mul_(factor)
        if abs(_gain(norm, x) / before - factor) < 1e-3 * factor:
            return
        norm.weight.copy_((1 + saved) * factor - 1)
        if abs(_gain(norm, x) / before - factor) < 1e-3 * factor:
            return
        norm.weight.copy_(saved)
    raise ValueError(f"{type(norm).__name__}: no way found to scale its output")


_NORMS = ("q_norm", "k_norm", "q_layernorm", "k_layernorm", "query_layernorm", "key_layernorm")
_PROJECTIONS: tuple[str, ...] = ("q_proj", "k_proj", "qkv_proj", "query_key_value", "Wqkv")
_PROJECTIONS += ("c_attn", "q_b_proj", "kv_a_proj_with_mqa", "wq", "wk", "qkv")


def sharpen(model, factor: float = SHARP) -> int:
    """Every attention's query and key times ``factor``: through its q/k norms where it has
    them (a projection before a norm would be undone by it), else its q/k projections (a
    fused qkv one whole: the values scaled too change nothing a run line compares). Returns
    how many attentions were sharpened; ``ValueError`` where none was."""
    import torch

    done = 0
    for name, module in model.named_modules():
        children = dict(module.named_children())
        norms = [children[n] for n in _NORMS if n in children and hasattr(children[n], "weight")]
        projections = [children[n] for n in _PROJECTIONS if n in children]
        if "vision" in name or "visual" in name or not (norms or projections):
            continue
        if norms and projections:
            for norm in norms:
                _sharpen_norm(norm, factor)
        elif projections and not norms:
            with torch.no_grad():
                for projection in projections:
                    for parameter in projection.parameters(recurse=False):
                        parameter.mul_(factor)
        else:
            continue
        done += 1
    if not done:
        raise ValueError("no attention's query and key found to sharpen")
    return done


def save_run_model(twin, out) -> Path:
    """The run model: ``_weights.save_twin``'s model, sharpened (``sharpen``), saved in
    ``out`` (float32 safetensors, with its tokenizer)."""
    import torch
    import transformers

    from ._weights import save_twin

    save_twin(twin, out)
    config = transformers.AutoConfig.from_pretrained(out)
    model = _load(transformers, out, config, torch.float32, attn_implementation=None)
    sharpen(model)
    model.save_pretrained(out)
    return Path(out)


def _load(transformers, folder, config, dtype, attn_implementation="eager"):
    extra = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    classes = [transformers.AutoModelForCausalLM, transformers.AutoModelForImageTextToText]
    errors = []
    for cls in classes:
        try:
            return cls.from_pretrained(folder, dtype=dtype, **extra).eval()
        except (ValueError, KeyError) as exc:  # the next class may take it
            errors.append(f"{cls.__name__}: {exc}")
    raise ValueError("; ".join(errors))


# ------------------------------------------------------------------ running it


@contextlib.contextmanager
def float64_softmax():
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


def reference(folder, spec) -> dict:
    """The reference of the run model in ``folder``: ``{"logprobs": {p: array}, "hidden":
    {p: [arrays]}, "drift": {p: float}, "signal": float}``."""
    import torch
    import transformers

    import sinpe.torch as st

    config = transformers.AutoConfig.from_pretrained(folder)
    model = _load(transformers, folder, config, torch.float64)
    report = st.patch(model, warn=False, max_positions=K + 1)
    if not report:
        raise ValueError(f"sinpe.torch.patch replaced none of the model's rotary modules: {report}")
    vocab = model.get_output_embeddings().weight.shape[0]
    ids, axes = tokens(vocab), n_axes(spec)
    rng = np.random.default_rng(0)
    found: dict = {"logprobs": {}, "hidden": {}, "drift": {}}
    with float64_softmax():
        for p in offsets(spec):
            positions = np.arange(p, p + K)
            found["logprobs"][p], found["hidden"][p] = forward(model, ids, positions, axes)
            moved = positions + rng.uniform(-1, 1, K) * positions * 2.0**-23
            shaken, _ = forward(model, ids, torch.tensor(moved, dtype=torch.float64), axes)
            found["drift"][p] = float(np.abs(shaken - found["logprobs"][p]).max())
        strided, _ = forward(model, ids, np.arange(0, 2 * K, 2), axes)
    found["signal"] = float(np.abs(strided - found["logprobs"][0]).max())
    return found


def main(argv=None) -> int:
    from .._files import reading
    from .._rope.config import rope_config
    from .._verdict.verdict import dumps
    from .._version import __version__
    from ._side import MARK

    (folder,) = argv if argv is not None else sys.argv[1:]
    folder = Path(folder)
    original = reading.read_json(folder / "original.json", what="the twin's original config")
    spec = rope_config(original)
    answer: dict = {"sinpe": __version__}
    try:
        save_run_model(folder / "twin", folder / MODEL)
        found = reference(folder / MODEL, spec)
    except Exception as exc:  # the reference cannot be made: every run line says why
        answer["failed"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]
    else:
        answer["logprobs"] = {str(p): encode(a) for p, a in found["logprobs"].items()}
        answer["hidden"] = {str(p): [encode(h) for h in hs] for p, hs in found["hidden"].items()}
        answer["drift"] = {str(p): d for p, d in found["drift"].items()}
        answer["signal"] = found["signal"]
    print(MARK + dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
