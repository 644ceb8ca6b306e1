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
vocabulary splits text, nothing of the RoPE).

``run`` (``sinpe engines --run``) converts the run model the same way and runs the file in
llama-cpp-python's llama.cpp, each batch's positions set to ``p .. p + K - 1``."""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path

from .._check.gguf import check_gguf
from .._check.steps import EngineFailed, step
from .._files import reading, writing
from ._weights import llama_bpe_tokenizer, run_as_main, save_twin, sentencepiece_tokenizer

__all__ = [
    "PRE_TOKENIZER",
    "any_pre_tokenizer",
    "commit_of",
    "convert",
    "converter",
    "read",
    "run",
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


def _converted(model: Path, out: Path, script: Path) -> None:
    """``model`` (a transformers folder with its tokenizer) converted to ``out`` by the
    checkout's converter; a family whose converter takes another tokenizer is given one
    (in ``model``) and converted again."""
    try:
        with step("convert_hf_to_gguf.py"):
            _convert(model, out, script)
    except EngineFailed as exc:  # a family whose converter takes another tokenizer
        if "tokenizer.model" in str(exc):  # sentencepiece's (Phi-3)
            with step("sentencepiece training the twin's tokenizer.model"):
                sentencepiece_tokenizer(model)
        elif "Cannot find Llama BPE tokenizer" in str(exc):  # its conversion (Gemma 4)
            with step("sentencepiece training the twin's tokenizer, converted to tokenizer.json"):
                llama_bpe_tokenizer(model)
        else:
            raise
        with step("convert_hf_to_gguf.py"):
            _convert(model, out, script)


def _script() -> Path:
    script = converter()
    if script is None:
        raise EngineFailed("$LLAMA_CPP_DIR names no checkout with convert_hf_to_gguf.py")
    return script


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: the converted file's verdict against ``original``."""
    folder = Path(folder)
    script = _script()
    work = folder.parent / "llama.cpp"
    with step("transformers saving the twin's weights"):
        save_twin(folder, work / "model")
    _converted(work / "model", work / "model.gguf", script)
    report = check_gguf(work / "model.gguf", original, n_ctx=length)
    return [(f"the GGUF file ({report.arch})", report.judgment)], tuple(report.notes), None


def run(model, original: dict, offsets):
    """llama.cpp's run line: the run model (``_engines/_run.py`` makes it) converted by the
    checkout's converter (F32), loaded by llama-cpp-python's llama.cpp (F32 KV cache, flash
    attention off, a context of ``max(offsets) + K`` tokens, as a user running that far
    would ask); for each ``p`` the ``K`` tokens decoded as one batch at positions ``p .. p +
    K - 1`` into an emptied cache (llama.cpp takes a batch's positions as given), the
    logits of each."""
    from .._check import run as _run

    model = Path(model)
    script = _script()
    # the converter may add tokenizer files to the model it converts: a copy of the run
    # model (which the other engines load) in a scratch folder of this process
    with writing.scratch("sinpe-llama-cpp-run-") as folder:
        work = Path(folder)
        with step("copying the run model"):
            writing.scratch_folder(work / "model")
            for item in sorted(model.iterdir()):
                writing.copy_new(item, work / "model" / item.name)
        _converted(work / "model", work / "model.gguf", script)
        logprobs = _decoded(work / "model.gguf", offsets)
    how = (
        "the run model converted by convert_hf_to_gguf.py (F32), run by llama-cpp-python "
        f"{_llama_cpp_python()} (F32 KV cache, flash attention off): one batch of K tokens at "
        "positions p .. p + K - 1 into an emptied cache"
    )
    return _run.RunResult(logprobs, None, _gelu_note(original), how)


def _gelu_note(original: dict) -> tuple:
    """A GELU model's run in llama.cpp rounds the activation's input to float16: ggml's CPU
    GELU reads a float16 table (``ggml/src/ggml-cpu/vec.h``, ``ggml_vec_gelu_f32`` under
    ``GGML_GELU_FP16``), which the float32 bounds do not allow for; said in the line."""
    text = original.get("text_config") if isinstance(original.get("text_config"), dict) else None
    config = text or original
    act = config.get("hidden_act") or config.get("hidden_activation")
    if not (isinstance(act, str) and act.startswith("gelu") and act != "gelu_quick"):
        return ()
    return (
        f"{act}: llama.cpp's CPU GELU rounds its input to float16 and reads a float16 table "
        "(ggml-cpu/vec.h, ggml_vec_gelu_f32 under GGML_GELU_FP16), an error beyond float32's "
        "at every p, the rotation's or not",
    )


def _decoded(gguf: Path, offsets) -> dict:
    """``{p: log-probabilities}`` of the run's tokens decoded at ``p .. p + K - 1``."""
    from .._check import run as _run

    with step("llama-cpp-python loading the GGUF file"):
        engine = _Context(gguf, n_ctx=max(offsets) + _run.K)
    try:
        ids = _run.tokens(engine.vocab)
        logprobs = {}
        for p in offsets:
            with step(f"llama_decode at positions {p:,}.."):
                logprobs[p] = _run.log_softmax(engine.logits(ids, p))
    finally:
        engine.close()
    return logprobs


def _llama_cpp_python() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("llama-cpp-python")
    except PackageNotFoundError:
        return "(version unknown)"


class _Context:
    """llama-cpp-python's low-level API: one sequence, positions given per token, an F32 KV
    cache, flash attention off, llama.cpp's log kept to its errors."""

    def __init__(self, path: Path, n_ctx: int):
        import ctypes

        try:
            import llama_cpp as llama  # type: ignore[import-not-found]
        except ImportError as exc:
            raise EngineFailed(f"llama-cpp-python is not installed here ({exc})") from None

        errors: list = []

        @llama.llama_log_callback
        def quiet(level, text, user_data):  # llama.cpp logs to stderr: its errors only
            if level >= 4:
                errors.append(text.decode(errors="replace").strip())
                sys.stderr.write(text.decode(errors="replace"))

        self.llama, self._log = llama, quiet
        llama.llama_log_set(quiet, ctypes.c_void_p())
        llama.llama_backend_init()
        params = llama.llama_model_default_params()
        self.model = llama.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:  # its first error says why (a tensor's shape, a key missing)
            why = next((e for e in errors if e), "no error logged")
            raise EngineFailed(f"llama.cpp did not load {path.name}: {why}")
        context = llama.llama_context_default_params()
        context.n_ctx, context.n_batch, context.n_ubatch, context.n_seq_max = n_ctx, 256, 256, 1
        context.n_threads = context.n_threads_batch = min(2, os.cpu_count() or 1)
        context.type_k = context.type_v = 0  # GGML_TYPE_F32: the default F16 cache rounds
        context.flash_attn_type = 0
        self.context = llama.llama_init_from_model(self.model, context)
        if not self.context:
            llama.llama_model_free(self.model)
            raise EngineFailed(f"llama.cpp made no context of {n_ctx:,} tokens")
        self.vocab = llama.llama_vocab_n_tokens(llama.llama_model_get_vocab(self.model))

    def logits(self, tokens: list, start: int):
        """``(len(tokens), vocab)`` float32 logits of ``tokens`` at ``start ..``."""
        import numpy as np

        llama = self.llama
        llama.llama_memory_clear(llama.llama_get_memory(self.context), True)
        batch = llama.llama_batch_init(len(tokens), 0, 1)
        try:
            for i, token in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
                batch.seq_id[i][0], batch.logits[i] = 0, True
            batch.n_tokens = len(tokens)
            if llama.llama_decode(self.context, batch) != 0:
                raise EngineFailed(f"llama_decode failed at positions {start:,}..")
            return np.array(
                [
                    np.ctypeslib.as_array(
                        llama.llama_get_logits_ith(self.context, i), (self.vocab,)
                    )
                    for i in range(len(tokens))
                ]
            )
        finally:
            llama.llama_batch_free(batch)

    def close(self) -> None:
        self.llama.llama_free(self.context)
        self.llama.llama_model_free(self.model)
