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

import contextlib
import json
import sys
from pathlib import Path

import numpy as np

from .._check.published import on_grid
from .._check.run import MODEL, SHARP, K, encode, forward, load, n_axes, offsets, tokens
from ._shrink import active_layers

__all__ = ["float64_throughout", "main", "reference", "save_run_model", "sharpen"]

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


_OUTPUTS = ("o_proj", "down_proj")  # a decoder layer's two writes to the residual stream


def inert(model, active: int) -> int:
    """Every decoder layer from ``active`` on made the identity: its attention's and its
    MLP's output projections zero, so it adds nothing to the residual stream (a norm after
    them, EXAONE 4's, gives zero for zero). Returns how many layers; ``ValueError`` where a
    layer has neither projection."""
    import torch

    layers = [
        m
        for name, m in model.named_modules()
        if name.endswith("layers") and len(m) and "vision" not in name and "visual" not in name
    ]  # the language model's (a vision tower's are not decoder layers: as sharpen skips them)
    if not layers:
        raise ValueError("no decoder layers found to make inert")
    done = 0
    for layer in list(layers[0])[active:]:
        outputs = [m for name, m in layer.named_modules() if name.rsplit(".", 1)[-1] in _OUTPUTS]
        if len(outputs) < 2:
            raise ValueError(f"{type(layer).__name__}: no output projections to make it inert")
        with torch.no_grad():
            for module in outputs:
                for parameter in module.parameters():
                    parameter.zero_()
        done += 1
    return done


def _float32(config: dict) -> dict:
    """``config`` saying float32 where it names a dtype (its text config's too): the weights
    are float32, and an engine that honours a published ``torch_dtype: bfloat16`` would load
    them rounded (OpenVINO's export, ONNX Runtime GenAI's builder: 0.0097 from the reference
    at every p on Llama 3.1). A dtype says nothing of the rotation."""
    out = dict(config)
    for key in ("torch_dtype", "dtype"):
        if key in out:
            out[key] = "float32"
    for key in ("text_config", "language_config", "llm_config"):
        if isinstance(out.get(key), dict):
            out[key] = _float32(out[key])
    return out


def save_run_model(twin, out) -> Path:
    """The run model: ``_weights.save_twin``'s model, sharpened (``sharpen``), saved in
    ``out`` (float32 safetensors, with its tokenizer), beside the twin's own config.json as
    the config gives it but for its dtype (float32, as the weights: ``_float32``):
    transformers writes its config in its own keys (``rope_parameters``, which an engine's
    older reader may not take), and every engine's run, as its table line, reads the config
    as given."""
    import torch
    import transformers

    from .._files import reading, writing
    from ._weights import save_twin

    save_twin(twin, out)
    config = transformers.AutoConfig.from_pretrained(out)
    model = load(transformers, out, config, torch.float32, attn_implementation=None)
    sharpen(model)
    given = reading.read_json(Path(twin, "config.json"), what="the twin's config")
    active = active_layers(given)
    if active is not None:
        inert(model, active)
    on_grid(model, given)  # gpt-oss's experts: values its published MXFP4 holds
    model.save_pretrained(out)
    _published_names(model, Path(out, "model.safetensors"))
    text = json.dumps(_float32(given), indent=2).encode()
    Path(out, "config.json").unlink()  # transformers' own, just written in our folder
    writing.write_new(Path(out, "config.json"), lambda stream: stream.write(text))
    return Path(out)


def _published_names(model, path: Path) -> None:
    """The run model's tensors named as its published checkpoint names them. transformers
    drops a tower's own prefix on loading (``PrefixChange``: a SigLIP tower's
    ``vision_model.``) and, nested in a vision-language model, does not put it back on
    saving (5.24 writes Gemma 3's ``vision_tower.embeddings.*`` where the checkpoint has
    ``vision_tower.vision_model.embeddings.*``, which keras-hub's Gemma 3 converter reads):
    such names get the prefix back, the file rewritten in place (a run model's, sinpe's own
    scratch). Nothing changes where transformers wrote them as published."""
    try:
        from safetensors.torch import load_file, save
        from transformers.conversion_mapping import PrefixChange, get_checkpoint_conversion_mapping
    except ImportError:  # another transformers: nothing to put back
        return
    from .._files import writing

    if not path.is_file():
        return
    tensors, renamed = load_file(path), {}
    for name, module in model.named_modules():
        changes = get_checkpoint_conversion_mapping(type(module).__name__) or []
        removed = [c.prefix_to_remove for c in changes if isinstance(c, PrefixChange)]
        own = max((n for n, _ in module.named_parameters()), key=len, default=None)
        if not removed or not removed[0] or own is None or not name:
            continue
        saved = [k for k in tensors if k.endswith("." + own)]
        if len(saved) != 1:
            continue
        prefix = saved[0][: -len(own) - 1]
        if prefix.endswith("." + removed[0]):
            continue  # as published
        for key in [k for k in tensors if k.startswith(prefix + ".")]:
            renamed[key] = f"{prefix}.{removed[0]}.{key[len(prefix) + 1 :]}"
    if renamed:
        data = save({renamed.get(k, k): v for k, v in tensors.items()}, {"format": "pt"})
        path.unlink()
        writing.write_new(path, lambda stream: stream.write(data))


# ------------------------------------------------------------------ running it


@contextlib.contextmanager
def float64_throughout():
    """The reference's model computes in float64 where its code asks for float32: eager
    attention's softmax (``dtype=torch.float32``) and the norms' upcasts (``x.float()``,
    ``x.to(torch.float32)``) of a float64 tensor keep it float64. Only in the reference's
    own process, only while it runs."""
    import torch

    softmax, to, single = torch.nn.functional.softmax, torch.Tensor.to, torch.Tensor.float

    def float64_softmax(input, dim=None, _stacklevel=3, dtype=None):
        if dtype == torch.float32 and input.dtype == torch.float64:
            dtype = torch.float64
        return softmax(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

    def kept_to(self, *args, **kwargs):
        wanted = kwargs.get("dtype", args[0] if args else None)
        if self.dtype == torch.float64 and wanted == torch.float32 and len(args) <= 1:
            return self if "device" not in kwargs else to(self, device=kwargs["device"])
        return to(self, *args, **kwargs)

    def kept_float(self, *args, **kwargs):
        return self if self.dtype == torch.float64 else single(self, *args, **kwargs)

    torch.nn.functional.softmax, torch.Tensor.to, torch.Tensor.float = (
        float64_softmax,
        kept_to,
        kept_float,
    )
    try:
        yield
    finally:
        torch.nn.functional.softmax, torch.Tensor.to, torch.Tensor.float = softmax, to, single


def _exact_model(transformers, folder, config, dtype):
    """The run model in ``dtype`` with sinpe's exact tables in place of its rotary modules."""
    import sinpe.torch as st

    # experts looped in eager code: transformers' grouped matmul takes no float64 (gpt-oss's,
    # DeepSeek-V3's "Expected mat_a to be Float32, BFloat16 or Float16")
    model = load(transformers, folder, config, dtype, experts="eager")
    report = st.patch(model, warn=False, max_positions=K + 1)
    if not report:
        raise ValueError(f"sinpe.torch.patch replaced none of the model's rotary modules: {report}")
    return model


def reference(folder, spec) -> dict:
    """The reference of the run model in ``folder``: ``{"logprobs": {p: array}, "hidden":
    {p: [arrays]}, "drift": {p: float}, "noise": {p: float}, "signal": float}``: the float64
    run with exact tables; what float32 angles move it by (``drift``); what float32
    arithmetic with exact angles moves it by (``noise``: the same model in float32 with
    sinpe's exact tables); what a change of positions moves it by (``signal``)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    model = _exact_model(transformers, folder, config, torch.float64)
    vocab = model.get_output_embeddings().weight.shape[0]
    ids, axes = tokens(vocab), n_axes(spec)
    rng = np.random.default_rng(0)
    found: dict = {"logprobs": {}, "hidden": {}, "drift": {}, "noise": {}}
    with float64_throughout():
        for p in offsets(spec):
            positions = np.arange(p, p + K)
            found["logprobs"][p], found["hidden"][p] = forward(model, ids, positions, axes)
            moved = positions + rng.uniform(-1, 1, K) * positions * 2.0**-23
            shaken, _ = forward(model, ids, torch.tensor(moved, dtype=torch.float64), axes)
            found["drift"][p] = float(np.abs(shaken - found["logprobs"][p]).max())
        strided, _ = forward(model, ids, np.arange(0, 2 * K, 2), axes)
    found["signal"] = float(np.abs(strided - found["logprobs"][0]).max())
    del model
    single = _exact_model(transformers, folder, config, torch.float32)
    for p in offsets(spec):
        got, _ = forward(single, ids, np.arange(p, p + K), axes)
        found["noise"][p] = float(np.abs(got - found["logprobs"][p]).max())
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
        answer["noise"] = {str(p): d for p, d in found["noise"].items()}
        answer["signal"] = found["signal"]
    print(MARK + dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
