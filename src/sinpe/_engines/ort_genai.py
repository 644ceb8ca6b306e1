"""ONNX Runtime GenAI's reading of a config (``sinpe engines``): its model builder (``python
-m onnxruntime_genai.models.builder``, run in this process: fp32 for the CPU) on a tiny random
model of the twin, which transformers builds and saves with a small byte-level BPE tokenizer
made here (the builder loads one; nothing is downloaded). The ONNX file it writes is judged by
``sinpe check model.onnx`` against the config given. Where the builder stops (YaRN without
betas: a division by zero), the line names its error.

Its run line (``run``, ``sinpe engines --run``): the builder's model of the run model run by
onnxruntime on the CPU at positions ``p .. p + K - 1``, given to its GroupQueryAttention
nodes as ``position_ids`` (the CPU build rotates inside them); a ``p`` past the builder's
cos/sin cache (the config's length) is not run, and the line says so."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np

from .._check.onnx import check_onnx
from .._check.steps import EngineFailed, step
from .._files import reading
from .._rope.config import rope_config
from ._weights import run_as_main, save_twin

__all__ = ["read", "run"]


def _build(model: Path, out: Path) -> None:
    """The builder's command line, run here (so that its own code is what runs); its output
    kept for the error it ends on."""
    argv = ["builder", "-i", str(model), "-o", str(out), "-p", "fp32", "-e", "cpu"]
    argv += ["-c", str(out / "cache")]
    builder = "onnxruntime_genai.models.builder"
    run_as_main("its builder", argv, lambda: runpy.run_module(builder, run_name="__main__"))


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each cache of the built model judged against ``original``."""
    folder = Path(folder)
    work = folder.parent / "onnxruntime-genai"
    with step("transformers saving the twin's weights"):
        save_twin(folder, work / "model")
    with step("its model builder"):
        _build(work / "model", work / "out")
    report = check_onnx(work / "out" / "model.onnx", original)
    layers = [
        (part.name + (f" ({part.layer_type})" if part.layer_type else ""), part.judgment)
        for part in report.parts
    ]
    notes = list(report.notes) + [note for part in report.parts for note in part.notes]
    return layers, tuple(dict.fromkeys(notes)), None


def _positions_input(source: Path, target: Path) -> tuple:
    """The built model with its positions given: where its rotary ops already take a
    ``position_ids`` input, as built; else (the CPU build rotates inside GroupQueryAttention,
    which then counts positions from the past it is given) a ``position_ids`` input added and
    fed to each GroupQueryAttention node's ``position_ids`` (its tenth input, which the kernel
    reads as the first position of a prompt). Where the cos/sin caches are chosen at run time
    by the total length (LongRoPE's short and long caches), that length is made an input
    (``_length_input``). Returns how the positions are given, and the rows of its shortest
    cos cache (the positions it can rotate; a chosen one's: the long caches'), where it holds
    one, whether a cache is chosen at run time, and its GroupQueryAttention nodes' largest
    ``local_window_size`` (a sliding window; 0 for none)."""
    import onnx  # type: ignore[import-not-found]

    model = onnx.load(str(source))
    graph = model.graph
    names = [value.name for value in graph.input]
    attention = [n for n in graph.node if n.op_type == "GroupQueryAttention"]
    rotating = [n for n in attention if any(a.name == "do_rotary" and a.i for a in n.attribute)]
    long_rows = _length_input(onnx, graph, rotating)
    switched = long_rows is not None
    rows = min(
        (int(t.dims[0]) for t in graph.initializer if t.name.startswith("cos_cache") and t.dims),
        default=long_rows,
    )
    window = max(  # -1 (the attribute's default) where a layer has no sliding window
        (a.i for n in attention for a in n.attribute if a.name == "local_window_size" and a.i > 0),
        default=0,
    )
    if "position_ids" not in names and not rotating:
        raise EngineFailed(
            "the built graph takes no position_ids and rotates in no GroupQueryAttention: "
            "sinpe cannot set its positions"
        )
    if "position_ids" in names:
        onnx.save(model, str(target), save_as_external_data=True, location=target.name + ".data")
        return "its position_ids input", rows, switched, window
    graph.input.append(
        onnx.helper.make_tensor_value_info(
            "position_ids", onnx.TensorProto.INT64, ["batch_size", "sequence_length"]
        )
    )
    for node in rotating:
        inputs = list(node.input) + [""] * max(0, 10 - len(node.input))
        inputs[9] = "position_ids"
        del node.input[:]
        node.input.extend(inputs)
    onnx.save(model, str(target), save_as_external_data=True, location=target.name + ".data")
    return (
        (
            f"a position_ids input added to its {len(rotating)} GroupQueryAttention nodes (their "
            "tenth input: the builder's CPU graph counts positions from the past it is given)"
        ),
        rows,
        switched,
        window,
    )


# the total length the builder's graph chooses its cos/sin caches by, given by sinpe
TOTAL_LENGTH = "sinpe_total_length"


def _length_input(onnx, graph, rotating: list) -> int | None:
    """Where the GroupQueryAttention nodes' cos/sin caches come from an ``If`` (the builder's
    LongRoPE: ``onnxruntime_genai/models/builders/base.py``,
    ``Model.make_rotary_embedding_multi_cache``: ``Greater(the attention mask's width, the
    original length)``, the long caches (the config's length in rows) then, the short ones
    (the original length in rows) else), the ``Greater``'s first input made the graph input
    ``TOTAL_LENGTH``, which ``_feed`` gives as ``p + K``: the total length of a sequence at
    those positions, as GenAI's runtime gives it (its attention mask spans the past), where
    sinpe's empty past would give ``K`` and the short caches, whose rows end at the original
    length (onnxruntime then refuses p = 100,000). Returns the long caches' rows, else None
    (no caches chosen at run time)."""
    producers = {out: node for node in graph.node for out in node.output}
    chosen = {
        producers[n.input[7]].name: producers[n.input[7]]
        for n in rotating
        if len(n.input) > 7 and getattr(producers.get(n.input[7]), "op_type", "") == "If"
    }
    rows = []
    for node in chosen.values():
        greater = producers.get(node.input[0])
        if greater is None or greater.op_type != "Greater":
            raise EngineFailed(
                "its cos/sin caches are chosen in the graph by a condition sinpe does not read"
            )
        greater.input[0] = TOTAL_LENGTH
        long = next(a.g for a in node.attribute if a.name == "then_branch")
        rows += [
            int(a.t.dims[0])
            for n in long.node
            if n.op_type == "Constant" and n.output[0].startswith("cos")
            for a in n.attribute
            if a.name == "value" and a.t.dims
        ]
    if not chosen:
        return None
    graph.input.append(onnx.helper.make_tensor_value_info(TOTAL_LENGTH, onnx.TensorProto.INT64, []))
    if not rows:
        raise EngineFailed("its long cos/sin caches have no rows sinpe can read")
    return min(rows)


def _head_size(out: Path) -> int:
    """The head size the builder wrote in its ``genai_config.json`` (the past's last axis)."""
    config = reading.read_json(out / "genai_config.json", what="the builder's genai_config.json")
    size = config.get("model", {}).get("decoder", {}).get("head_size")
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= 1 << 16:
        raise EngineFailed(f"the builder's genai_config.json gives no head size: {size!r}")
    return size


def _session(onnxruntime, path: Path):
    """onnxruntime's CPU session of the built model (two threads)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    with step("onnxruntime loading the built model (CPU)"):
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# the most slots of masked past a sliding window may ask (each a kv head's row per layer)
MASKED_PAST = 1 << 16


# a linear-attention layer's states (Qwen3.5's, Qwen3-Next's GatedDeltaNet; LFM2's short
# convolutions): the builder's names (onnxruntime_genai/models/builders/base.py,
# Model.__init__, "past.conv" and "past.recurrent")
_STATE = re.compile(r"past\.\d+\.(conv|recurrent)")
_DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16}


def _zero_state(name: str, port) -> np.ndarray:
    """A linear-attention layer's state at the start of a sequence: zeros, as GenAI's runtime
    gives a new sequence's (its ``RecurrentState``, which zeroes the ``past_conv_names`` and
    ``past_recurrent_names`` buffers, ``RecurrentState::ZeroStates``), of the port's shape
    with a batch of 1: ``(batch, conv channels, kernel - 1)`` for the convolution's last
    inputs, ``(batch, value heads, key head dim, value head dim)`` for the recurrent state.
    ``EngineFailed`` where another axis is not fixed (a state window, ``--extra_options
    state_window``, which sinpe's build does not ask for) or the dtype is not a float."""
    dims = list(port.shape)
    if not dims or any(not isinstance(d, int) for d in dims[1:]) or port.type not in _DTYPES:
        raise EngineFailed(
            f"the built model's {name} is {port.type} {dims}: not a state sinpe gives"
        )
    return np.zeros([1] + dims[1:], _DTYPES[port.type])


def _feed(inputs: dict, ids: np.ndarray, p: int, axes: int, head_size: int, window: int) -> dict:
    """The graph's inputs for the run's tokens at positions ``p .. p + K - 1`` on an empty
    past, or (a sliding window of ``window`` positions: onnxruntime's GroupQueryAttention
    wants a KV cache of at least that capacity, as GenAI's preallocated one has) on
    ``window`` slots of past that the attention mask leaves out; ``EngineFailed`` where it
    takes an input sinpe does not give. A linear-attention layer's convolution and recurrent
    states are zeros (``_zero_state``: a new sequence's, as GenAI starts one)."""
    k = ids.shape[1]
    if window > MASKED_PAST:
        raise EngineFailed(
            f"its sliding window of {window:,} positions would need a past of that many slots "
            f"(sinpe gives at most {MASKED_PAST:,})"
        )
    positions = np.arange(p, p + k, dtype=np.int64)[None]
    feed = {
        "input_ids": ids,
        "attention_mask": np.concatenate([np.zeros((1, window), ids.dtype), np.ones_like(ids)], 1),
        "position_ids": np.broadcast_to(positions, (3, 1, k)) if axes == 3 else positions,
    }
    for name, port in inputs.items():
        if name.startswith("past_key_values"):
            # (batch, kv heads, past length, head size): empty, or masked slots
            feed[name] = np.zeros([1, port.shape[1], window, head_size], np.float32)
        elif name == TOTAL_LENGTH:  # the cos/sin caches of a sequence p + K tokens long
            feed[name] = np.asarray(p + k, np.int64)
        elif _STATE.fullmatch(name):
            feed[name] = _zero_state(name, port)
    missing = set(inputs) - set(feed)
    if missing:
        raise EngineFailed(f"the built model takes inputs sinpe does not give: {sorted(missing)}")
    return {name: value for name, value in feed.items() if name in inputs}


def run(model, original: dict, offsets):
    """ONNX Runtime GenAI's run line: its builder (fp32, CPU) on the run model
    (``_engines/_run.py``), the ONNX model it writes run by onnxruntime on the CPU on the run's
    tokens at positions ``p .. p + K - 1`` for each ``p`` (an empty past, or masked slots for
    a sliding window; the positions as ``_positions_input`` gives them). The graph gives no
    hidden states."""
    import onnxruntime  # type: ignore[import-not-found]

    from .._check import run as _run

    model = Path(model)
    out = model.parent / "onnxruntime-genai-run"
    with step("its model builder (the run model)"):
        _build(model, out)
    with step("the built graph's positions"):
        given, rows, switched, window = _positions_input(out / "model.onnx", out / "run.onnx")
    session = _session(onnxruntime, out / "run.onnx")
    inputs = {port.name: port for port in session.get_inputs()}
    vocab = session.get_outputs()[0].shape[-1]
    if not isinstance(vocab, int) or not 0 < vocab < 1 << 24:
        raise EngineFailed(f"the built model's logits have no vocabulary size: {vocab!r}")
    ids = np.asarray([_run.tokens(vocab)], np.int64)
    head_size = _head_size(out)
    axes = _run.n_axes(rope_config(original))
    logprobs, notes = {}, []
    if switched:
        notes.append(
            "its cos/sin caches are chosen in the graph by the total length (the attention "
            "mask's width in GenAI's runtime), given as p + K, a sequence's up to those "
            "positions: the short caches at p = 0, the long ones past the original length"
        )
    for p in offsets:
        if rows is not None and p + _run.K > rows:
            notes.append(
                f"p = {p:,} not run: the builder's cos/sin cache has {rows:,} rows (the config's "
                "length), and onnxruntime refuses positions past it"
            )
            continue
        feed = _feed(inputs, ids, p, axes, head_size, window)
        with step(f"onnxruntime at positions {p:,}.."):
            logits = session.run(["logits"], feed)[0]
        logprobs[p] = _run.log_softmax(np.asarray(logits)[0])
    past = (
        f"a past of {window:,} slots the attention mask leaves out (its sliding window's "
        "GroupQueryAttention wants a KV cache at least that large, as GenAI preallocates one)"
        if window
        else "an empty past"
    )
    how = (
        "its builder's model of the run model (fp32, CPU; its config saying float32, as its "
        "weights are) run by onnxruntime "
        f"{onnxruntime.__version__} (CPU) on {past} at positions p .. p + K - 1, given "
        f"by {given}"
    )
    return _run.RunResult(logprobs, None, tuple(notes), how)
