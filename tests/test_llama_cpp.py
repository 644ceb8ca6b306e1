"""``sinpe check model.gguf`` on what llama.cpp's own converter writes, and llama.cpp's distance
from exact (the engine leg, .ci/engines: llama-cpp-python's pinned sdist for its converter and
its build, gguf-py, torch, transformers, sentencepiece; ``$LLAMA_CPP_DIR`` names the sdist's
``vendor/llama.cpp``; skipped where any is absent)."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import math
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
import llama_cpp_nodes  # noqa: E402
import shift  # noqa: E402
from command import run  # noqa: E402
from gguf_files import rewrite  # noqa: E402

import sinpe  # noqa: E402
from sinpe._check import llama_cpp, llama_cpp_types  # noqa: E402
from sinpe._files import gguf as gguf_file  # noqa: E402
from sinpe._verdict.layers import layer_types_of  # noqa: E402

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
    assert tool._commit(ROOT) == llama_cpp_types.LLAMA_CPP  # the sdist's git metadata says it
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


# what llama.cpp knowingly reads otherwise, in a converted file of a family (else: a match)
KNOWN = {"gpt-oss": "YaRN truncate false in the config: llama.cpp always rounds the ramp"}


@pytest.mark.parametrize("name", NAMES)
def test_what_llama_cpp_s_converter_writes_reads_as_the_config(converted, name):
    folder, path = converted[name]
    report = sinpe.check_gguf(path, folder / "config.json")
    result = run("check", path, folder / "config.json")
    if name in KNOWN:
        assert report.reasons == (KNOWN[name],)
        assert result.returncode == 1 and KNOWN[name] in result.stdout
        return
    assert report.verdict == "match", report.reasons
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
    reasons = [r["text"] for r in json.loads(result.stdout)["reasons"]]
    assert result.returncode == 1 and reason in reasons


class LlamaCpp:
    """llama-cpp-python's low-level API: one sequence at explicit positions (a batch whose
    positions start anywhere, into an emptied cache), an F32 KV cache, flash attention off;
    a context of ``n_ctx`` tokens, ``callback`` as ggml's eval callback (``cb_eval``)."""

    def __init__(self, path: Path, n_ctx: int = 256, callback=None):
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
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = n_ctx, 256, 256, 1
        params.n_threads = params.n_threads_batch = 2
        params.type_k = params.type_v = 0  # GGML_TYPE_F32: the default F16 cache rounds
        params.flash_attn_type = 0
        if callback is not None:
            params.cb_eval = callback
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


def test_any_shard_the_converter_splits_reads_as_the_whole(converted, tmp_path):
    """llama.cpp's converter splitting Phi-3 LongRoPE (``--split-max-tensors``, gguf-split's
    naming): each shard reads as the whole file did, and llama.cpp loads the set. (The
    converter writes the factor tensors first; tests/test_gguf.py has them in later shards.)"""
    folder, whole = converted["phi3-longrope"]
    engine_models.convert(LLAMA_CPP_DIR, folder, tmp_path / "phi3.gguf", "--split-max-tensors", "4")
    shards = sorted(tmp_path.glob("phi3-*-of-*.gguf"))
    assert len(shards) > 2, shards
    want = sinpe.check_gguf(whole, folder / "config.json")
    assert want.verdict == "match"
    for shard in shards:
        report = sinpe.check_gguf(shard, folder / "config.json")
        assert report.verdict == "match" and len(report.shards) == len(shards)
        assert [p.reading.factors for p in report.parts] == [p.reading.factors for p in want.parts]
    LlamaCpp(shards[0]).close()  # llama.cpp loads the set from its first shard
    shards[-1].unlink()
    result = run("check", shards[0], folder / "config.json")
    assert result.returncode == 2 and f"{shards[-1]}, is missing" in result.stderr


# --------------------------------------------------------------------------- llama.cpp's runtime

# each family at the context sizes where llama.cpp's reading changes (LongRoPE: its short
# factors up to the original length 4096, its long ones past it)
RUNTIME = [(name, 256) for name in NAMES] + [("phi3-longrope", 8192)]
STARTS = (0, 100_000)


def _nodes(path, n_ctx: int) -> list:
    """Every ROPE node llama.cpp runs for 64 tokens at positions 0-63, then 100,000-100,063."""
    nodes = llama_cpp_nodes.RopeNodes(llama, llama_cpp_nodes.rope_op(LLAMA_CPP_DIR))
    engine = LlamaCpp(path, n_ctx=n_ctx, callback=nodes.callback)
    try:
        for start in STARTS:
            engine.logprobs([t % engine.vocab for t in shift.tokens()], start)
    finally:
        engine.close()
    return nodes.found


def _readings(path, folder, n_ctx: int):
    """sinpe's reading of the file for each node's layer (sliding or full, by the config)."""
    gguf = gguf_file.read(path, tensors=llama_cpp.FACTOR_TENSORS)
    types = layer_types_of(json.loads((Path(folder) / "config.json").read_text()))

    def reading(node):
        layer = int(node["name"].rsplit("-", 1)[1])
        swa = types is not None and types[layer] == "sliding_attention"
        return llama_cpp.read_rope(gguf, context=n_ctx, swa=swa)

    return reading


def _distances(converted, name: str, n_ctx: int) -> list:
    """``(node, distance / float32 noise)`` of each node from sinpe's reading."""
    folder, path = converted[name]
    reading = _readings(path, folder, n_ctx)
    found = []
    for node in _nodes(path, n_ctx):
        one = reading(node)
        error = float(np.abs(node["y"] - llama_cpp_nodes.reference(node, one)).max())
        found.append((node, error / llama_cpp_nodes.noise(node, one)))
    return found


@pytest.mark.parametrize("name, n_ctx", RUNTIME)
def test_llama_cpp_runs_each_family_as_sinpe_reads_its_file(converted, name, n_ctx):
    """Each rope node llama.cpp runs (every layer, query and key, positions 0-63 and past
    100,000) is sinpe's reading of the file, rotated in float64, within float32's noise:
    the frequencies, the magnitude (YaRN's, DeepSeek's mscale), the width, the rotation and
    the sliding layers' base are llama.cpp's own at run time, not a transcription's."""
    found = _distances(converted, name, n_ctx)
    assert {int(n["positions"][0]) for n, _ in found} == set(STARTS)
    worst = max(found, key=lambda item: item[1])
    assert worst[1] <= 1.0, (worst[0]["name"], worst[0]["positions"][0], worst[1])
    print(f"{name} n_ctx {n_ctx}: {len(found)} rope nodes, worst {worst[1]:.3f} of the noise")


def test_a_transcription_that_differs_from_llama_cpp_fails(converted, monkeypatch):
    """The same check with sinpe's YaRN ramp left unrounded (ONNX Runtime GenAI's mistake):
    llama.cpp's runtime parts from it far past float32's noise."""

    def unrounded(n_rot, base, original, betas):
        def corr_dim(rotations):
            return n_rot * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = max(0.0, corr_dim(betas[0])), min(n_rot - 1.0, corr_dim(betas[1]))
        i = np.arange(n_rot // 2, dtype=np.float64)
        return 1 - np.clip((i - low) / max(0.001, high - low), 0, 1)

    monkeypatch.setattr(llama_cpp, "_ramp", unrounded)
    found = _distances(converted, "qwen3-yarn", 256)
    worst = max(distance for _, distance in found)
    assert worst > 100, [d for _, d in found]
    print(f"qwen3-yarn, the ramp unrounded: {worst:.3g} times the noise")


# --------------------------------------------------------------------------- sinpe engines

CONFIGS = Path(__file__).with_name("data") / "configs"


def _engine_line(name: str, **options):
    report = sinpe.engines(CONFIGS / f"{name}.json", only=["llama.cpp"], **options)
    (line,) = report.lines
    assert line.version == llama_cpp_types.LLAMA_CPP, line.text  # the sdist's commit
    return report, line


@pytest.mark.parametrize(
    "name, verdict, said",
    [
        ("llama-3.1-8b", "match", "the converter permutes the Q/K weights"),
        ("qwen3-8b.yarn-4x", "match", "as the config's attention does"),
        ("phi-3.5-mini-instruct.autoconfig-dump", "match", "as the config's attention does"),
        ("gpt-oss-20b", "mismatch", "YaRN truncate false in the config"),
        ("qwen3-next-80b-a3b-thinking", "match", "as the config's attention does"),
    ],
)
def test_engines_read_llama_cpp_by_its_own_converter(name, verdict, said):
    """llama.cpp's column: its converter on a tiny random model of each config's twin (Phi-3
    with a sentencepiece tokenizer, which its converter asks for), the file judged by the
    GGUF check: Llama-3.1, Qwen3's YaRN x4, Phi-3.5's LongRoPE and Qwen3-Next (converted
    with --no-mtp: the twin has no multi-token-prediction weights) read as their configs;
    gpt-oss's untruncated YaRN ramp is rounded by llama.cpp, a mismatch. Llama 3.1's run
    line too."""
    report, line = _engine_line(name, run=name == "llama-3.1-8b")
    assert line.verdict == verdict and report.exit_code == (verdict == "mismatch"), line.text
    assert any(said in words for words in line.reasons + line.notes), line.text
    if line.run is not None:
        _assert_runs_as_its_config(line.run)


def _assert_runs_as_its_config(run):
    """llama.cpp's run line (``sinpe engines --run``) on Llama 3.1: the run model converted
    by its converter, run by llama-cpp-python with the K tokens' positions set in the batch
    at p = 0, 100,000 and 131,040, against the float64 reference with sinpe's exact tables:
    float32 noise at p = 0, a float32 drift past it."""
    assert run.verdict == "drift", run
    rows = {p: distance for p, distance, _ in run.distances}
    assert list(rows) == [0, 100_000, 131_040], rows
    assert rows[0] < 1e-5 and rows[100_000] > 10 * rows[0], rows


def test_a_rule_changed_in_the_converter_changes_its_line(tmp_path):
    """The line is the converter's own: its Llama-3 factors tensor (rope_freqs) left out (in
    its interpreter) turns Llama-3.1's line to a mismatch saying the scaling is missing."""
    from engine_rules import changed_interpreter

    changed = changed_interpreter(
        tmp_path,
        f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "gguf-py")!r}]
        from conversion import llama
        llama.LlamaModel.generate_extra_tensors = lambda self: iter(())  # no rope_freqs
        """,
    )
    report, line = _engine_line("llama-3.1-8b", pythons={"llama.cpp": changed})
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text
    assert any("rope_freqs" in reason for reason in line.reasons), line.reasons


# defects injected into llama.cpp's converter (tests/defects.py), in the probe's interpreter:
# the module patched when first imported, the body of patch(module)
DEFECTS = {
    "the Q/K permutation removed": ("conversion.llama", "module.LlamaModel.undo_permute = False"),
    "the key permuted with the query's head count": (
        "conversion.llama",
        """
        permute = module.LlamaModel.permute
        def as_queries(weights, n_head, n_head_kv):
            return permute(weights, n_head, None)
        module.LlamaModel.permute = staticmethod(as_queries)
        """,
    ),
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_a_defect_in_the_converter_turns_the_run_line_to_mismatch(defect, tmp_path):
    """A defect in how the converter lays out the rotated weights for llama.cpp's pairwise
    rotation, injected into its module in the probe's interpreter: the table line (the
    file's RoPE keys) stays a match, the run line turns to a mismatch."""
    from defects import defective_python

    target, body = DEFECTS[defect]
    python = defective_python(tmp_path, target, body)
    report, line = _engine_line("llama-3.1-8b", pythons={"llama.cpp": python}, run=True)
    assert line.verdict == "match", line.text  # the file's keys are unchanged
    assert line.run is not None and line.run.verdict == "mismatch", line.run
    assert report.exit_code == 1
    print(defect, "|", line.text, "|", line.run.text)


def test_docs_matrix_holds_for_llama_cpps_column():
    """docs/matrix.md's llama.cpp column for three families is what llama.cpp does now (its
    version in the header too): a cell that no longer holds fails this leg (regenerate the
    page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements("llama.cpp", ["gpt-oss-20b", "llama-3.1-8b", "phi-2"])
