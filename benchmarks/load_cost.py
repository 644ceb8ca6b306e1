"""What sinpe's engine plugins add to loading a model: a tiny random Llama-3.1 twin
(tests/vllm_models.py's, ``max_position_embeddings`` set to each length asked: the rows of
its rotary cache) loaded with ``SINPE_VLLM`` (or ``SINPE_SGLANG``) ``off``, ``audit`` and
``exact``, in paired rounds (the three modes in turn, their order rotated each round, after
one load that warms the process up), medians over the rounds. Each length runs in a fresh
process of its own.

- vLLM: ``vllm.LLM(...)`` constructed whole (in-process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``;
  ``VLLM_CPU_KVCACHE_SPACE=1``), its own load time (``off``), and ``audit`` and ``exact`` as
  seconds added and as % of it; and the time inside sinpe's hook itself
  (``time.perf_counter`` around the plugin's ``_after_load``: the audit, and in ``exact`` the
  fill too), which load noise cannot hide, with the process's CPU time in it
  (``time.process_time``), which other jobs on the machine cannot inflate. The shares are
  paired: each round's hook against the same round's ``off`` load (wall against wall, CPU
  against CPU), then the median; the machine's load average is read each round.
- SGLang: a whole ``ModelRunner`` needs an accelerator; on the CPU, SGLang's loader builds the
  twin (``_initialize_model``, dummy weights) and grows its caches
  (``reserve_rope_cache_for_long_sequences``, sinpe's BEFORE hook on it), then sinpe's AFTER
  hook runs on a stand-in of the runner, as tests/sglang_plugin.py does: "load" here is that
  build, and the hook's time is measured around ``after_load_model``.

- ``--fix-mib N``: ``sinpe check model.onnx --fix OUT`` (in this process) against ``cp`` of
  the same files (model.onnx, its external data, config.json) into a new folder, and ``cp``
  then ``sync`` of the copies (sinpe's writing room fsyncs each file it makes), on a model of
  N MiB of weights in external data with float32 caches of 131,072 rows at its end (written
  with tests/onnx_files.py: no onnx package needed); paired rounds, medians, the ratio.

Where an engine is not importable in this interpreter, its rows say so and nothing is
measured. The figures in docs/performance.md come from (vLLM's leg, .ci/vllm; SGLang's, with
tests/stubs on PYTHONPATH for its torchvision import):

    VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 \\
        python benchmarks/load_cost.py --engine vllm --positions 32768 131072 1048576 --rounds 5
    PYTHONPATH=tests/stubs python benchmarks/load_cost.py --engine sglang --rounds 5
    python benchmarks/load_cost.py --engine --fix-mib 400 --rounds 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
MODES = ("off", "audit", "exact")
TARGET = 0.02  # of the engine's own load time, at 131,072 positions

_CHILD = r"""
import gc, json, os, sys, time
sys.path.insert(0, sys.argv[1])
engine, folder, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
import logging
logging.disable(logging.WARNING)  # each load's report lines: not measured here
hook = {"seconds": 0.0, "fill": 0.0, "cpu": 0.0}

def timed(function, key):
    def wrapper(*args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            hook[key] += time.perf_counter() - start
            if key == "seconds":  # the process's CPU time: what other jobs' load cannot add to
                hook["cpu"] += time.process_time() - cpu
    return wrapper

from sinpe.vllm import _model
_model.fill_exact = timed(_model.fill_exact, "fill")

if engine == "vllm":
    from sinpe.vllm import _plugin
    import vllm
    from vllm_models import load
    _plugin._after_load = timed(_plugin._after_load, "seconds")
    variable, version = "SINPE_VLLM", vllm.__version__

    from vllm.model_executor.layers import rotary_embedding

    def one_load():
        rotary_embedding._ROPE_DICT.clear()  # each load builds its own cache, as a new process
        llm = load(folder, seed=0)
        del llm
        gc.collect()

    def reports():
        return _plugin.reports()
else:
    import logging as _logging
    from types import SimpleNamespace
    import sglang
    from sglang.srt.plugins import load_plugins
    load_plugins()
    import sglang.srt.model_executor.model_runner as runner
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import _initialize_model
    from sinpe.sglang import _engine, _plugin
    _engine._on_the_cpu()
    _engine._group()
    after = timed(_plugin.after_load_model, "seconds")
    variable, version = "SINPE_SGLANG", sglang.__version__

    from sglang.srt.layers.rotary_embedding import factory

    def one_load():
        factory._ROPE_DICT.clear()  # each load builds its own cache, as a new process
        config = ModelConfig(model_path=folder, dtype="float32", trust_remote_code=False)
        model = _initialize_model(config, LoadConfig(load_format="dummy"))
        runner.reserve_rope_cache_for_long_sequences(model, config, _logging.getLogger("load"))
        after(None, SimpleNamespace(model=model, model_config=config))
        del model
        gc.collect()

    def reports():
        return _plugin.reports()

keys = ("load", "load_cpu", "hook", "hook_cpu", "fill")
found = {mode: {key: [] for key in keys} for mode in ("off", "audit", "exact")}
entries = {}
order = ["off", "audit", "exact"]
loadavg = [os.getloadavg()]
for round_ in range(rounds + 1):  # round 0 warms the process up: not counted
    for mode in order[round_ % 3:] + order[:round_ % 3]:
        os.environ[variable] = mode
        hook.update(seconds=0.0, fill=0.0, cpu=0.0)
        start, cpu = time.perf_counter(), time.process_time()
        one_load()
        took, took_cpu = time.perf_counter() - start, time.process_time() - cpu
        if round_:
            found[mode]["load"].append(took)
            found[mode]["load_cpu"].append(took_cpu)
            found[mode]["hook"].append(hook["seconds"])
            found[mode]["hook_cpu"].append(hook["cpu"])
            found[mode]["fill"].append(hook["fill"])
        if mode != "off":
            said = [r.judgment.as_json().get("entries") or {} for r in reports()]
            entries[mode] = {
                "verdicts": [r.verdict for r in reports()],
                "compared": sum(e.get("compared") or 0 for e in said),
                "held": sum(e.get("held") or 0 for e in said),
                "replaced": [r.replaced for r in reports()],
            }
    loadavg.append(os.getloadavg())
said = {"found": found, "entries": entries, "version": version, "loadavg": loadavg}
print("LOAD-COST " + json.dumps(said))
"""


def available(engine: str) -> bool:
    """Whether ``engine`` (vllm or sglang) can be imported here."""
    module = "vllm" if engine == "vllm" else "sglang.srt.model_loader.loader"
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def save_twin(folder: Path, positions: int) -> str:
    """tests/vllm_models.py's Llama-3.1 twin with ``positions`` rows of rotary cache."""
    sys.path.insert(0, str(TESTS))
    import torch
    import transformers
    from vllm_models import LLAMA3, TEXT

    config = transformers.LlamaConfig(
        **TEXT, max_position_embeddings=positions, rope_parameters=LLAMA3
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    return str(folder)


def measure(engine: str, positions: int, rounds: int) -> dict:
    """One length's rounds, in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_twin(Path(tmp) / "twin", positions)
        result = subprocess.run(
            [sys.executable, "-c", _CHILD, str(TESTS), engine, folder, str(rounds)],
            capture_output=True,
            text=True,
            check=False,
        )
    lines = [x for x in result.stdout.splitlines() if x.startswith("LOAD-COST ")]
    if result.returncode or not lines:
        raise SystemExit(f"the {engine} case at {positions:,} failed:\n{result.stderr[-4000:]}")
    return json.loads(lines[-1].split(" ", 1)[1])


def rows(engine: str, positions: int, found: dict) -> list:
    """The table's rows of one length: off, then audit and exact against it. The shares are
    paired: each round's hook against the same round's ``off`` load, in wall time and in the
    process's CPU time (which other jobs on the machine cannot inflate), then the median."""
    times = found["found"]
    off, off_cpu = times["off"]["load"], times["off"]["load_cpu"]
    busy = found.get("loadavg") or [(0.0, 0.0, 0.0)]
    lines = [
        f"| {engine} | {positions:,} | off | {statistics.median(off):.2f} s "
        f"(CPU {statistics.median(off_cpu):.2f} s) | | | | | load avg "
        f"{min(a[0] for a in busy):.1f}-{max(a[0] for a in busy):.1f} |"
    ]
    for mode in ("audit", "exact"):
        found_ = times[mode]
        added = [a - b for a, b in zip(found_["load"], off)]
        wall = statistics.median([h / b for h, b in zip(found_["hook"], off)])
        cpu = statistics.median([h / b for h, b in zip(found_["hook_cpu"], off_cpu)])
        fill = statistics.median(found_["fill"])
        said = found["entries"].get(mode, {})
        covered = said.get("compared") == said.get("held") and said.get("held")
        verdicts = "/".join(said.get("verdicts", [])) or "no report"
        mark = "ok" if positions != 131072 or max(wall, cpu) <= TARGET else "MISSED"
        fill_text = f" (fill {fill * 1e3:.0f} ms)" if mode == "exact" else ""
        lines.append(
            f"| {engine} | {positions:,} | {mode} | {statistics.median(found_['load']):.2f} s"
            f" | {statistics.median(added):+.2f} s"
            f" | {statistics.median(found_['hook']) * 1e3:.0f} ms{fill_text}"
            f" | {statistics.median(found_['hook_cpu']) * 1e3:.0f} ms"
            f" | **{100 * wall:.2f}%, {100 * cpu:.2f}%** {mark} | {verdicts}, "
            f"{said.get('compared') or 0:,} entries {'all judged' if covered else 'NOT ALL JUDGED'}"
            " |"
        )
    return lines


FIX_ROWS = 131072
FIX_CONFIG = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": FIX_ROWS}
FIX_CONFIG["rope_theta"] = 5e5


def save_onnx(folder: Path, mib: int) -> Path:
    """model.onnx, model.onnx.data (``mib`` MiB of weights, then the float32 caches as
    onnxruntime-genai's builder makes them: float32 angles) and config.json in ``folder``."""
    import numpy as np

    import sinpe

    sys.path.insert(0, str(TESTS))
    from onnx_files import graph, model, node, tensor

    inv_freq, _ = sinpe.rope_config(FIX_CONFIG).frequencies(FIX_ROWS)
    angle = np.arange(FIX_ROWS, dtype=np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    weights = mib << 20
    folder.mkdir(parents=True)
    data = folder / "model.onnx.data"
    with open(data, "wb") as stream:  # real bytes: cp copies a sparse file's holes as holes
        block = np.random.default_rng(0).integers(0, 255, 1 << 20, dtype=np.uint8).tobytes()
        for _ in range(mib):
            stream.write(block)
        stream.write(cos.tobytes() + sin.tobytes())

    def external(name: str, offset: int, length: int, dims) -> bytes:
        place = {"location": data.name, "offset": offset, "length": length}
        return tensor(name, dims=dims, external=place)

    initializers = [
        external("embed", 0, weights, (weights // 4,)),
        external("cos_cache", weights, cos.nbytes, cos.shape),
        external("sin_cache", weights + cos.nbytes, sin.nbytes, sin.shape),
    ]
    inputs = ["q", "k", "v", "past_k", "past_v", "seqlens", "total", "cos_cache", "sin_cache"]
    gqa = node(
        "GroupQueryAttention", inputs, ["o"], domain="com.microsoft", do_rotary=1,
        rotary_interleaved=0, num_heads=2, kv_num_heads=1,
        name="/model/layers.0/attn/GroupQueryAttention",
    )  # fmt: skip
    path = folder / "model.onnx"
    path.write_bytes(model(graph([gqa], initializers, ["input_ids"])))
    (folder / "config.json").write_text(json.dumps(FIX_CONFIG))
    return path


def fix_rows(mib: int, rounds: int) -> list:
    """``--fix`` against ``cp`` (and ``cp`` + ``sync``), paired rounds after one warm-up."""
    import shutil
    import time

    from sinpe import cli

    times: dict = {"fix": [], "check": [], "cp": [], "cp+sync": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = save_onnx(Path(tmp) / "model", mib)
        files = [str(path.parent / name) for name in ("model.onnx", "model.onnx.data")]
        files.append(str(path.parent / "config.json"))
        out = Path(tmp) / "out"

        def fix():
            assert cli.main(["check", str(path), "--fix", str(out)]) == 0

        def check():
            assert cli.main(["check", str(path)]) == 0

        def cp(then_sync: bool):
            out.mkdir()
            subprocess.run(["cp", *files, str(out)], check=True)
            if then_sync:
                subprocess.run(["sync", *(str(out / Path(f).name) for f in files)], check=True)

        cases = {
            "fix": fix,
            "check": check,
            "cp": lambda: cp(False),
            "cp+sync": lambda: cp(True),
        }
        busy = [os.getloadavg()[0]]
        with open(os.devnull, "w") as quiet:
            for round_ in range(rounds + 1):  # round 0 warms the page cache: not counted
                busy.append(os.getloadavg()[0])
                for name, run in cases.items():
                    shutil.rmtree(out, ignore_errors=True)
                    subprocess.run(["sync"], check=True)  # nothing of the last case's left to write
                    stdout, sys.stdout = sys.stdout, quiet
                    try:
                        start = time.perf_counter()
                        run()
                        took = time.perf_counter() - start
                    finally:
                        sys.stdout = stdout
                    if round_:
                        times[name].append(took)
        size = sum(os.path.getsize(f) for f in files) / 2**20
    median = {name: statistics.median(found) for name, found in times.items()}
    ratio = [f / c for f, c in zip(times["fix"], times["cp"])]
    synced = [f / c for f, c in zip(times["fix"], times["cp+sync"])]
    return [
        f"--fix of a {size:,.0f} MiB model (weights in external data, float32 caches of "
        f"{FIX_ROWS:,} rows), {rounds} rounds, load average {min(busy):.1f}-{max(busy):.1f}:",
        "",
        "| what | median time | --fix / it (paired median) |",
        "|---|---|---|",
        f"| sinpe check model.onnx --fix OUT | {median['fix']:.3f} s | |",
        f"| sinpe check model.onnx (the verdict alone) | {median['check']:.3f} s | |",
        f"| cp of the same files | {median['cp']:.3f} s | **{statistics.median(ratio):.2f}x** |",
        f"| cp, then sync of the copies | {median['cp+sync']:.3f} s | "
        f"**{statistics.median(synced):.2f}x** |",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("vllm", "sglang"), nargs="*", default=["vllm"])
    parser.add_argument("--positions", type=int, nargs="+", default=[32768, 131072, 1048576])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fix-mib", type=int, default=0, help="the --fix model's weights")
    args = parser.parse_args(argv)
    if args.fix_mib:
        print("\n".join(fix_rows(args.fix_mib, args.rounds)) + "\n", flush=True)
    if not args.engine:
        return 0
    print(
        "| engine | positions | SINPE mode | load (median) | added to off (paired median) | "
        "in sinpe's hook: wall (median) | hook: CPU (median) | hook / off's load: wall, CPU "
        "(paired medians) | verdicts, coverage |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    missed = False
    for engine in args.engine:
        if not available(engine):
            print(f"| {engine} | | | not importable here: nothing measured | | | | |")
            continue
        version = ""
        for positions in args.positions:
            found = measure(engine, positions, args.rounds)
            version = found["version"]
            table = rows(engine, positions, found)
            missed |= any("MISSED" in line or "NOT ALL" in line for line in table)
            print("\n".join(table), flush=True)
        print(f"\n{engine} {version}; {args.rounds} rounds; {os.cpu_count()} cores")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
