"""``sinpe check model.gguf`` on what llama.cpp's own converter writes, and llama.cpp's distance
from exact (the engine leg, .ci/engines: llama-cpp-python's pinned sdist for its converter and
its build, gguf-py, torch, transformers, sentencepiece; ``$LLAMA_CPP_DIR`` names the sdist's
``vendor/llama.cpp``; skipped where any is absent)."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

LLAMA_CPP_DIR = os.environ.get("LLAMA_CPP_DIR")
if not LLAMA_CPP_DIR:
    pytest.skip(
        "LLAMA_CPP_DIR (llama.cpp's source, for its converter) is not set", allow_module_level=True
    )
pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
llama = pytest.importorskip("llama_cpp")

import engine_models  # noqa: E402
import shift  # noqa: E402
from command import run  # noqa: E402
from gguf_files import rewrite  # noqa: E402

import sinpe  # noqa: E402
from sinpe._check import gguf_file, llama_cpp_types  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ROOT = Path(LLAMA_CPP_DIR)
NAMES = ["llama-3.1", *engine_models.MODELS]


def _tool():
    path = Path(__file__).parents[1] / "tools" / "llama_cpp_rope.py"
    spec = importlib.util.spec_from_file_location("llama_cpp_rope", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tables_are_those_of_the_pinned_llama_cpp():
    """The rotation type of each architecture, each architecture's loader rules and the
    scaling type names, extracted again from the source the leg installs."""
    tool = _tool()
    assert tool.extract(ROOT) == llama_cpp_types.ROPE_TYPES
    assert tool.arch_rules(ROOT) == llama_cpp_types.ARCH_RULES
    assert tool.scaling_types(ROOT) == llama_cpp_types.SCALING_TYPES
    assert tool._commit(ROOT) in ("unknown", llama_cpp_types.LLAMA_CPP)
    assert len(llama_cpp_types.ROPE_TYPES) == 153


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict:
    """Each model saved with a tokenizer and converted by llama.cpp's converter."""
    root = tmp_path_factory.mktemp("gguf")
    found = {}
    for name in NAMES:
        folder = engine_models.save(name, root / name, tokenizer=True)
        found[name] = (folder, engine_models.convert(LLAMA_CPP_DIR, folder, root / f"{name}.gguf"))
    return found


@pytest.mark.parametrize("name", NAMES)
def test_what_llama_cpp_s_converter_writes_reads_as_the_config(converted, name):
    folder, path = converted[name]
    report = sinpe.check_gguf(path, folder / "config.json")
    assert report.verdict == "match", report.reasons
    result = run("check", path, folder / "config.json")
    assert result.returncode == 0 and "verdict: reads as the config" in result.stdout


def _swapped(path) -> dict:
    found = gguf_file.read(path, tensors=("rope_factors_long.weight", "rope_factors_short.weight"))
    long, short = found.data["rope_factors_long.weight"], found.data["rope_factors_short.weight"]
    return {"rope_factors_long.weight": short, "rope_factors_short.weight": long}


# the published failures, edited into converted files: the model, the edit, the reason said
EDITS = json.loads((Path(__file__).with_name("data") / "gguf_edits.json").read_text())["edits"]


@pytest.mark.parametrize("case", sorted(EDITS))
def test_each_published_failure_edited_into_a_converted_file_is_called_wrong(
    converted, tmp_path, case
):
    edit = EDITS[case]
    folder, path = converted[edit["model"]]
    tensors = _swapped(path) if edit.get("swap_factors") else None
    edited = rewrite(
        path,
        tmp_path / "edited.gguf",
        kv=edit.get("kv"),
        drop=edit.get("drop", ()),
        tensors=tensors,
    )
    reason = edit["reason"]
    report = sinpe.check_gguf(edited, folder / "config.json")
    assert report.verdict == "mismatch" and reason in report.reasons, report.reasons
    result = run("check", edited, folder / "config.json", "--json")
    assert result.returncode == 1 and reason in json.loads(result.stdout)["reasons"]


class LlamaCpp:
    """llama-cpp-python's low-level API: one sequence at explicit positions (a batch whose
    positions start anywhere, into an emptied cache), an F32 KV cache, flash attention off."""

    def __init__(self, path: Path):
        @llama.llama_log_callback
        def quiet(level, text, user_data):  # llama.cpp logs to stderr: keep errors only
            if level >= 4:
                print(text.decode(errors="replace"), end="")

        self._log = quiet
        llama.llama_log_set(quiet, ctypes.c_void_p())
        llama.llama_backend_init()
        self.model = llama.llama_model_load_from_file(
            str(path).encode(), llama.llama_model_default_params()
        )
        assert self.model, path
        params = llama.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = 256, 256, 256, 1
        params.n_threads = params.n_threads_batch = 2
        params.type_k = params.type_v = 0  # GGML_TYPE_F32: the default F16 cache rounds
        params.flash_attn_type = 0
        self.context = llama.llama_init_from_model(self.model, params)
        assert self.context
        self.vocab = llama.llama_vocab_n_tokens(llama.llama_model_get_vocab(self.model))

    def logprobs(self, tokens: list, start: int) -> np.ndarray:
        llama.llama_memory_clear(llama.llama_get_memory(self.context), True)
        batch = llama.llama_batch_init(len(tokens), 0, 1)
        try:
            for i, token in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
                batch.seq_id[i][0], batch.logits[i] = 0, True
            batch.n_tokens = len(tokens)
            assert llama.llama_decode(self.context, batch) == 0
            rows = [
                np.ctypeslib.as_array(llama.llama_get_logits_ith(self.context, i), (self.vocab,))
                for i in range(len(tokens))
            ]
        finally:
            llama.llama_batch_free(batch)
        return shift.log_softmax(np.array(rows))

    def close(self) -> None:
        llama.llama_free(self.context)
        llama.llama_model_free(self.model)


def test_llama_cpp_and_transformers_against_the_exact_reference(converted):
    """The shift test (tests/shift.py) on the converted Llama-3.1: the float64 exact reference
    gives the same log-probabilities at every offset; llama.cpp (F32 KV cache) and
    transformers (float32) are near it at 0 and drift from it with the position."""
    folder, path = converted["llama-3.1"]
    reference = shift.transformers_logprobs(folder, exact=True)
    for p in shift.OFFSETS[1:]:
        assert np.abs(reference[p] - reference[0]).max() < 1e-12
    engine = LlamaCpp(path)
    try:
        found = {p: engine.logprobs(shift.tokens(), p) for p in shift.OFFSETS}
    finally:
        engine.close()
    cpp = shift.distances(found, reference)
    hf = shift.distances(shift.transformers_logprobs(folder), reference)
    assert cpp[0] < 1e-5 and hf[0] < 1e-5, (cpp, hf)
    assert cpp[100_000] > 10 * cpp[0] and hf[100_000] > 10 * hf[0], (cpp, hf)
    version = llama.__version__
    shift.record(
        "llama.cpp",
        f"llama-cpp-python {version} (llama.cpp {llama_cpp_types.LLAMA_CPP})",
        cpp,
        "GGUF F32 from its own converter, F32 KV cache",
    )
    shift.record("transformers float32", f"transformers {transformers.__version__}", hf)
    patched = shift.distances(shift.transformers_logprobs(folder, patched=True), reference)
    assert max(patched.values()) < 1e-5, patched
    shift.record(
        "transformers float32, sinpe.torch.patch",
        f"transformers {transformers.__version__}",
        patched,
    )
