"""ONNX Runtime GenAI's reading of a config (``sinpe engines``): its model builder (``python
-m onnxruntime_genai.models.builder``, run in this process: fp32 for the CPU) on a tiny random
model of the twin, which transformers builds and saves with a small byte-level BPE tokenizer
made here (the builder loads one; nothing is downloaded). The ONNX file it writes is judged by
``sinpe check model.onnx`` against the config given. Where the builder stops (YaRN without
betas: a division by zero), the line names its error."""

from __future__ import annotations

import runpy
from pathlib import Path

from .._check.onnx import check_onnx
from .._check.steps import step
from ._weights import run_as_main, save_twin

__all__ = ["read"]


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
