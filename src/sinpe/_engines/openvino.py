"""OpenVINO's reading of a config (``sinpe engines``): optimum-intel's export (its
``main_export``, run in this process, as ``optimum-cli export openvino`` runs it) on a tiny
random model of the twin, which transformers builds and saves with a small byte-level BPE
tokenizer made here (nothing is downloaded). The IR it writes (``openvino_model.xml`` and
``.bin``) is judged by ``sinpe check openvino_model.xml`` against the config given: the
traced ``inv_freq`` (its scaling applied at export, or both of LongRoPE's factor sets and
their switch), the attention factor, any table folded into a constant. What the exported IR
holds is what the OpenVINO runtime computes from: it forms the angles at run time (the CPU
plugin fuses them into a ``RoPE`` node when it compiles), so a scaling the export froze
(dynamic NTK) stays frozen at every length.

Its run line (``run``, ``sinpe engines --run``): the run model exported the same way and run
by the OpenVINO runtime at ``position_ids`` ``p .. p + K - 1``. The export traces
transformers' modeling code, so what the IR computes is that code's application of the
tables as traced (a defect there is a defect of the IR, which only the run line sees)."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np

from .._check.openvino import check_openvino
from .._check.steps import EngineFailed, step
from .._files import reading
from .._rope.config import rope_config
from ._weights import save_twin

__all__ = ["read", "run"]


def _task(model: Path) -> str:
    """The export's task: a vision-language class (``...ForConditionalGeneration``, as
    save_twin saves one) is exported as one, its language model apart."""
    config = reading.read_json(model / "config.json", what="the twin's saved config")
    names = config.get("architectures") or [""]
    vision = str(names[0]).endswith("ForConditionalGeneration")
    return "image-text-to-text" if vision else "text-generation-with-past"


def _export(model: Path, out: Path) -> Path:
    """optimum-intel's export of a causal language model with its KV cache (fp32: a twin is
    far below the size at which it compresses weights), its output and warnings kept quiet
    (its tracer warns, and torch deprecates ``torch.jit.trace``, which it calls)."""
    from optimum.exporters.openvino import main_export  # type: ignore[import-not-found]

    said = io.StringIO()
    with (
        contextlib.redirect_stdout(said),
        contextlib.redirect_stderr(said),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        main_export(
            str(model),
            str(out),
            task=_task(Path(model)),
            library_name="transformers",
            convert_tokenizer=False,
        )
    for name in ("openvino_model.xml", "openvino_language_model.xml"):
        if (Path(out) / name).is_file():
            return Path(out) / name
    raise ValueError(f"{out}: the export wrote no openvino_model.xml")


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each RoPE constant of the exported IR judged against
    ``original``."""
    folder = Path(folder)
    work = folder.parent / "openvino"
    with step("transformers saving the twin's weights"):
        save_twin(folder, work / "model")
    with step("optimum-intel's export"):
        xml = _export(work / "model", work / "out")
    report = check_openvino(xml, original)
    layers = [
        (part.name + (f" ({part.layer_type})" if part.layer_type else ""), part.judgment)
        for part in report.parts
    ]
    notes = list(report.notes) + [note for part in report.parts for note in part.notes]
    return layers, tuple(dict.fromkeys(notes)), None


def _language_model(out: Path, xml: Path):
    """``(the language model's IR, the text embeddings' IR or None)``: a vision-language
    export takes ``inputs_embeds``, which its ``openvino_text_embeddings_model.xml`` makes
    from the token ids."""
    embeddings = out / "openvino_text_embeddings_model.xml"
    return xml, (embeddings if xml.name == "openvino_language_model.xml" else None)


# a language model's input made from the token ids by another IR of the export, as
# optimum-intel's own pipeline makes it (modeling_visual_language.py, Gemma 4's
# _OVGemma4ForCausalLM.get_multimodal_embeddings: per_layer_inputs from
# text_embeddings_per_layer, the per-layer embeddings of Gemma 3n and Gemma 4)
_FROM_IDS = {"per_layer_inputs": "openvino_text_embeddings_per_layer_model.xml"}


def _from_ids(core, out: Path, names: set, ids: np.ndarray, hints: dict) -> dict:
    """The inputs in ``_FROM_IDS`` the language model takes, each made by its IR from
    ``ids``; an IR the export did not write is said."""
    made = {}
    for name, file in _FROM_IDS.items():
        if name not in names:
            continue
        if not (out / file).is_file():
            raise EngineFailed(f"the language model takes {name}, and the export wrote no {file}")
        with step(f"the OpenVINO runtime making {name} ({file})"):
            made[name] = np.asarray(core.compile_model(str(out / file), "CPU", hints)([ids])[0])
    return made


def run(model, original: dict, offsets):
    """OpenVINO's run line: optimum-intel's export (fp32) of the run model
    (``_engines/_run.py``), the IR compiled by the OpenVINO runtime for the CPU (float32
    inference and KV cache) and run on the run's tokens at ``position_ids`` ``p .. p + K -
    1`` for each ``p``, its state reset before each; a vision-language export's tokens
    embedded by its own text embeddings IR (and Gemma 4's per-layer inputs by its per-layer
    embeddings IR, as optimum-intel's pipeline makes them). The IR gives no hidden states."""
    import openvino  # type: ignore[import-not-found]

    from .._check import run as _run

    model = Path(model)
    out = model.parent / "openvino-run"
    with step("optimum-intel's export (the run model)"):
        xml, embeddings = _language_model(out, _export(model, out))
    core = openvino.Core()
    hints = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
    with step("the OpenVINO runtime compiling the IR (CPU, f32)"):
        compiled = core.compile_model(str(xml), "CPU", hints)
        embed = None if embeddings is None else core.compile_model(str(embeddings), "CPU", hints)
    names = {name for port in compiled.inputs for name in port.get_names()}
    if "position_ids" not in names:
        raise EngineFailed(f"{xml.name}: its inputs {sorted(names)} take no position_ids")
    vocab = compiled.output("logits").get_partial_shape()[-1]
    if not vocab.is_static:
        raise EngineFailed(f"{xml.name}: its logits have no static vocabulary size")
    ids = np.asarray([_run.tokens(vocab.get_length())], np.int64)
    tokens = {"input_ids": ids} if embed is None else {"inputs_embeds": embed([ids])[0]}
    tokens.update(_from_ids(core, out, names, ids, hints))
    request = compiled.create_infer_request()
    axes = _run.n_axes(rope_config(original))
    logprobs = {}
    for p in offsets:
        positions = np.arange(p, p + _run.K, dtype=np.int64)[None]
        given = {
            **tokens,
            "attention_mask": np.ones_like(ids),
            "position_ids": np.broadcast_to(positions, (3, 1, _run.K)) if axes == 3 else positions,
            "beam_idx": np.zeros(1, np.int32),
            "token_type_ids": np.zeros_like(ids),  # a vision-language model's: text only
        }
        missing = names - set(given)
        if missing:
            raise EngineFailed(f"{xml.name} takes inputs sinpe does not give: {sorted(missing)}")
        request.reset_state()
        with step(f"its inference at positions {p:,}.."):
            logits = request.infer({k: v for k, v in given.items() if k in names})["logits"]
        logprobs[p] = _run.log_softmax(np.asarray(logits)[0])
    how = (
        "optimum-intel's export of the run model (fp32; its config saying float32, as its weights "
        "are), the IR in the OpenVINO runtime (CPU, "
        "f32 inference and KV cache) at position_ids p .. p + K - 1, its state reset each time"
    )
    return _run.RunResult(logprobs, None, (), how)
