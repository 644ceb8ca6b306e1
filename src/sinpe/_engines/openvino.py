"""OpenVINO's reading of a config (``sinpe engines``): optimum-intel's export (its
``main_export``, run in this process, as ``optimum-cli export openvino`` runs it) on a tiny
random model of the twin, which transformers builds and saves with a small byte-level BPE
tokenizer made here (nothing is downloaded). The IR it writes (``openvino_model.xml`` and
``.bin``) is judged by ``sinpe check openvino_model.xml`` against the config given: the
traced ``inv_freq`` (its scaling applied at export, or both of LongRoPE's factor sets and
their switch), the attention factor, any table folded into a constant. What the exported IR
holds is what the OpenVINO runtime computes from: it forms the angles at run time (the CPU
plugin fuses them into a ``RoPE`` node when it compiles), so a scaling the export froze
(dynamic NTK) stays frozen at every length."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

from .._check.openvino import check_openvino
from .._check.steps import step
from .._files import reading
from ._weights import save_twin

__all__ = ["read"]


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
