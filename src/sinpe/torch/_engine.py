"""transformers' reading of a config (``sinpe engines``): the installed release builds the
twin's model from its config (``AutoConfig``, then the causal LM, else the bare model), and
each rotary module it holds is called on position ids as the model calls it, one sequence of
each length judged (a dynamic or LongRoPE module chooses its values by the sequence's
largest position). Its cos/sin (the attention factor in them) go to the verdict core, pair by
pair in whatever layout the module returns (halves, interleaved, or one column per pair)."""

from __future__ import annotations

import numpy as np
import torch

from .._check.probe import judge_rows
from .._check.steps import EngineFailed, step
from .._rope.config import rope_config
from .._rope.rope_types import frequency_count
from .._verdict.verdict import unchecked
from ._patch import _buffers

__all__ = ["read"]

_BUILDERS = ("AutoModelForCausalLM", "AutoModel")
# _ONE_THREAD: each module is called on one thread. On two threads, a 281-row read of Phi-3.5's
# module on this Xeon (AVX-512, AMX) gave, in about one run in four, entries off by 1.8e-4
# (a row's angles formed by another path where torch split the work), and the verdict
# flipped between drift and mismatch; on one thread, eight runs of eight gave the same bits.
# The verdict is about the reading of the config, not about a thread split.


def _model(transformers, config):
    """The twin's model as transformers builds it: a causal LM, else the bare model (of the
    whole config, then of its text config)."""
    errors = []
    for builder, of in [(b, config) for b in _BUILDERS] + [("AutoModel", "text")]:
        target = config.get_text_config() if of == "text" else config
        try:
            with torch.device("cpu"):
                return getattr(transformers, builder).from_config(target).eval()
        except Exception as exc:  # the next builder may take it
            errors.append(f"{builder}: {type(exc).__name__}: {' '.join(str(exc).split())}")
    raise EngineFailed(("building the model raised " + " | ".join(errors))[:400])


def _rotary_modules(model) -> list:
    """``[(name, module)]``: each distinct module holding an ``inv_freq`` buffer (a vision
    tower's named as such)."""
    found, seen = [], set()
    for name, module in model.named_modules():
        if _buffers(module) and id(module) not in seen:
            seen.add(id(module))
            found.append((name, module))
    return found


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Two copies of one pair's values, as a layout repeats them: equal up to a few float32
    ulps in at least 99% of the entries. Not in all: where torch split a large read between
    threads, a few entries came out by another path and differed by 1e-4 (63 of 17,984 of a
    281-row read; torch's cos itself is accurate on both paths, measured: the difference is
    upstream of it). Reads are single-threaded now (``_ONE_THREAD``); the margin stays for a
    module that threads inside. Copies of different pairs differ far beyond that."""
    close = np.isclose(a, b, rtol=2.0**-20, atol=2.0**-20)
    return bool(close.size) and float(close.mean()) >= 0.99


def _columns(cos: np.ndarray, half: int) -> np.ndarray:
    """Where pair ``j``'s value sits in the module's last axis: halves (``j``, ``half + j``
    the same), interleaved (``2j``, ``2j + 1``) or one column per pair."""
    width = cos.shape[-1]
    if width == half:
        return np.arange(half)
    if width == 2 * half and _same(cos[..., :half], cos[..., half:]):
        return np.arange(half)
    if width == 2 * half and _same(cos[..., 0::2], cos[..., 1::2]):
        return np.arange(0, width, 2)
    raise ValueError(f"a cos of width {width} for {half} pairs, in no layout sinpe knows")


def _reader(module, layer_type, axes: int, half: int):
    """``read_at(length)`` for the core: the module called on ids ending at ``length - 1``
    (the sequence's largest position, which a dynamic or LongRoPE module reads)."""

    def read_at(length: int):
        def read(positions):
            ids = torch.tensor(np.append(positions, length - 1))[None]
            if axes == 3:
                ids = ids[None].expand(3, 1, -1)
            x = torch.zeros(1, 1, ids.shape[-1], 8)
            arguments = (x, ids) if layer_type is None else (x, ids, layer_type)
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # see _ONE_THREAD
            try:
                with step("its rotary module's forward"), torch.no_grad():
                    out = module(*arguments)
            finally:
                torch.set_num_threads(threads)
            if isinstance(out, torch.Tensor) and out.is_complex():  # Llama 4's freqs_cis
                cos, sin = out.real, out.imag
            else:
                cos, sin = out[:2]
            cos, sin = (np.asarray(t.detach().double().numpy()) for t in (cos, sin))
            while cos.ndim > 2:  # (batch, seq, width); M-RoPE's (3, batch, seq, width)
                cos, sin = cos[0], sin[0]
            columns = _columns(cos, half)
            return cos[:-1, columns], sin[:-1, columns]

        return read

    return read_at


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each rotary module's verdict against ``original``."""
    import transformers

    spec = rope_config(original)
    kind = original.get("model_type")
    if original.get("auto_map") and kind not in transformers.CONFIG_MAPPING:
        return [("model", unchecked("remote_code", engine=repr(kind)))], (), None
    with step("AutoConfig.from_pretrained"):
        config = transformers.AutoConfig.from_pretrained(folder)
    model = _model(transformers, config)
    layers = []
    for name, module in _rotary_modules(model):
        if "vision" in name or "visual" in name:
            layers.append((name, unchecked("vision", engine=type(module).__name__)))
            continue
        for layer_type in _buffers(module):
            one = spec if layer_type is None else spec.layer(layer_type)
            what = f"{type(module).__name__}" + (f" ({layer_type})" if layer_type else "")
            if not one.head_dim:
                layers.append(
                    (
                        what,
                        unchecked("missing_attribute", engine="the config", config="rotary width"),
                    )
                )
                continue
            h = frequency_count(one.head_dim)
            read_at = _reader(module, layer_type, one.n_axes, h)
            try:
                judgment = judge_rows(one, read_at, 2 * h, length)
            except ValueError as exc:
                judgment = unchecked("unreadable", engine=what, config=str(exc))
            layers.append((what, judgment))
    return layers, (), None


def run(model, original: dict, offsets):
    """transformers' run line: the run model (``_engines/_run.py`` makes it) loaded by the installed
    release in float32 (eager attention, as it runs on a CPU by default), its causal LM's
    forward on the run's tokens at ``position_ids`` ``p .. p + K - 1`` for each ``p``; the
    hidden states of every layer kept."""
    import transformers

    from .._check import run as _run

    spec = rope_config(original)
    with step("AutoConfig.from_pretrained (the run model)"):
        config = transformers.AutoConfig.from_pretrained(model)
    with step("from_pretrained (the run model, float32)"):
        loaded = _run.load(transformers, model, config, torch.float32, attn_implementation=None)
    ids = _run.tokens(loaded.get_output_embeddings().weight.shape[0])
    logprobs, hidden = {}, {}
    for p in offsets:
        with step(f"its forward at positions {p:,}.."):
            logprobs[p], hidden[p] = _run.forward(
                loaded, ids, np.arange(p, p + _run.K), _run.n_axes(spec)
            )
    how = (
        "the run model loaded by transformers (float32, its default attention), its forward at "
        "position_ids p .. p + K - 1"
    )
    return _run.RunResult(logprobs, hidden, (), how)
