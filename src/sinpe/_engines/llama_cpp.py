"""llama.cpp's reading of a config (``sinpe engines``): its own converter
(``convert_hf_to_gguf.py`` of the checkout ``$LLAMA_CPP_DIR`` names, with that checkout's
gguf-py first on the path, as the converter puts it) on a tiny random model of the twin, run
in this process; the GGUF file it writes judged by ``sinpe check model.gguf`` against the
config given (llama.cpp's runtime reading of the file's keys, transcribed from the sources
at the commit the check names and checked against llama.cpp itself in the engine leg).

Its tokenizer is a byte-level BPE one; a family whose converter asks for sentencepiece's
(Phi-3) gets one of those too, one whose converter asks for a BPE with byte fallback (Gemma
4's ``LlamaHfVocab``) that one converted by transformers, and the converter runs again. One
change to the converter, for the tokenizers trained here: a BPE pre-tokenizer whose hash it
does not know is written as ``"default"`` instead of stopping the conversion (it names how a
vocabulary splits text, nothing of the RoPE)."""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path

from .._check.gguf import check_gguf
from .._check.steps import EngineFailed, step
from .._files import reading
from ._weights import llama_bpe_tokenizer, run_as_main, save_twin, sentencepiece_tokenizer

__all__ = [
    "PRE_TOKENIZER",
    "any_pre_tokenizer",
    "commit_of",
    "convert",
    "converter",
    "read",
    "version",
]

PRE_TOKENIZER = "default"  # llama.cpp's name for a vocabulary's plain pre-tokenizer


def converter() -> Path | None:
    """The checkout's converter, where ``$LLAMA_CPP_DIR`` names a checkout that has one."""
    root = os.environ.get("LLAMA_CPP_DIR")
    script = Path(root, "convert_hf_to_gguf.py") if root else None
    return script if script is not None and script.is_file() else None


def version() -> str | None:
    """The checkout's commit (its git metadata, or a llama-cpp-python sdist's), else
    ``"unknown commit"``; ``None`` where there is no converter."""
    script = converter()
    if script is None:
        return None
    return commit_of(script.parent) or "unknown commit"


def commit_of(root: Path) -> str | None:
    """A llama.cpp checkout's commit (12 digits), where its git metadata or a
    llama-cpp-python sdist's (``vendor/llama.cpp``) says it."""
    for head in (root / ".git/HEAD", root.parent.parent / ".git/modules/vendor/llama.cpp/HEAD"):
        if head.is_file():
            text = reading.read_text(head, what="the checkout's git HEAD").strip()
            if re.fullmatch(r"[0-9a-f]{40}", text):
                return text[:12]
    return None


def any_pre_tokenizer() -> None:
    """Let the converter write ``"default"`` for a BPE pre-tokenizer it does not know."""
    import conversion.base as base

    known = base.TextModel.get_vocab_base_pre

    def pre_tokenizer(self, tokenizer):
        try:
            return known(self, tokenizer)
        except NotImplementedError:
            return PRE_TOKENIZER

    base.TextModel.get_vocab_base_pre = pre_tokenizer


def convert(model: Path, out: Path, script: Path, *options: str) -> None:
    """The converter's command line on ``model`` (with ``options``), run here; its output
    kept for the error it ends on."""
    root = str(script.parent)
    sys.path[:0] = [root, os.path.join(root, "gguf-py")]
    any_pre_tokenizer()
    argv = [str(script), str(model), "--outfile", str(out), "--outtype", "f32", *options]
    run_as_main("its converter", argv, lambda: runpy.run_path(str(script), run_name="__main__"))


def _convert(model: Path, out: Path, script: Path) -> None:
    """``convert``; where it stops, again with ``--no-mtp``: a family with multi-token
    prediction layers (Qwen3-Next) asserts the checkpoint holds them, and transformers saves
    none of them for the twin. The first error stands where the second try fails too."""
    try:
        convert(model, out, script)
    except Exception as first:
        try:
            convert(model, out, script, "--no-mtp")
        except Exception:
            raise first from None


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: the converted file's verdict against ``original``."""
    folder = Path(folder)
    script = converter()
    if script is None:
        raise EngineFailed("$LLAMA_CPP_DIR names no checkout with convert_hf_to_gguf.py")
    work = folder.parent / "llama.cpp"
    with step("transformers saving the twin's weights"):
        save_twin(folder, work / "model")
    try:
        with step("convert_hf_to_gguf.py"):
            _convert(work / "model", work / "model.gguf", script)
    except EngineFailed as exc:  # a family whose converter takes another tokenizer
        if "tokenizer.model" in str(exc):  # sentencepiece's (Phi-3)
            with step("sentencepiece training the twin's tokenizer.model"):
                sentencepiece_tokenizer(work / "model")
        elif "Cannot find Llama BPE tokenizer" in str(exc):  # its conversion (Gemma 4)
            with step("sentencepiece training the twin's tokenizer, converted to tokenizer.json"):
                llama_bpe_tokenizer(work / "model")
        else:
            raise
        with step("convert_hf_to_gguf.py"):
            _convert(work / "model", work / "model.gguf", script)
    report = check_gguf(work / "model.gguf", original, n_ctx=length)
    return [(f"the GGUF file ({report.arch})", report.judgment)], tuple(report.notes), None
