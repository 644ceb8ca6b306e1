"""sinpe on one CUDA device, in minutes: the checks nothing else here can run (no GPU is on
the machines sinpe is developed and tested on). Made for a GPU lent for a few minutes:

    python tools/gpu_check.py --setup /tmp/gpu --out results.json      # a fresh machine
    python tools/gpu_check.py --out results.json                       # this interpreter
    python tools/gpu_check.py --dry-run --out results.json             # no GPU: the CPU steps

``--setup DIR`` makes two venvs under DIR from the project's own files and pinned packages
(the project's wheel is built once, from this checkout): ``DIR/main`` with ``vllm==0.32.0``
(the CUDA build; it pins torch 2.13.0, as .ci/vllm's CPU build does) and sinpe
``[test,torch,bfloat16]``, and ``DIR/sglang`` with ``sglang==0.5.23`` (it pins torch
2.14.1, so it has a venv of its own) and sinpe. Each step then runs in a process of its own,
in the venv it needs, on ``device`` ("cuda"; "cpu" in a dry run):

  build   the installed sinpe: its backend and the kernel's instruction set (holds: the kernel)
  tables  the kernel's tables against torch's cos/sin of the same angles in float64 on the
          device: the largest error in ulps per dtype, and beyond the reference's own error
  torch   a patched transformers model (sinpe.torch.patch) under torch.compile, and (CUDA)
          compile's mode="reduce-overhead" and a torch.cuda.CUDAGraph replayed at new
          positions: its outputs eager's
  vllm    tools/vllm_gpu.py: SINPE_VLLM=exact on tests/vllm_models.py's tiny random twins: each
          cache filled, judged again after generate (match) and sinpe's table bit for bit;
          a sliding-window Mistral's log-probabilities at positions 1-64 and past 100,000
          against the float64 reference (exact and off)
  sglang  sinpe's plugin inside sglang.Engine (tools/sglang_gpu.py): every cache filled

Writes one JSON file (``--out``): each step's status (held, failed, skipped), figures,
versions, the device's name, the time each took. Exit 0 when every step held on the GPU, 1
when one did not (or the budget ran out), 77 without a GPU (one line says so; the JSON says
why). ``--dry-run`` runs the steps that can run on the CPU with device "cpu" (vLLM and SGLang
where installed, else "skipped: not installed") and exits 77 unless one failed, so the
script's code cannot rot (tests/test_gpu_check.py). ``--budget`` bounds the whole run,
setup included. ``--plant-failure STEP`` makes that step's check see a wrong value (for the
tests: the check must then fail).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("build", "tables", "torch", "vllm", "sglang")  # the cheap first: a budget cut late
MARK = "GPU-CHECK-STEP "
PLANT = "SINPE_GPU_CHECK_PLANT"
NO_GPU = 77
VLLM_PIN, SGLANG_PIN = "vllm==0.32.0", "sglang==0.5.23"
K = 64  # positions p .. p + 63, as the shift test (tests/shift.py)


def _planted(step: str) -> bool:
    return os.environ.get(PLANT) == step


def _result(status: str, summary: str, figures: dict | None = None, **versions) -> dict:
    return {"status": status, "summary": summary, "figures": figures or {}, "versions": versions}


def _held(checks: dict) -> str:
    return "held" if checks and all(checks.values()) else "failed"


def _tests_on_path() -> None:
    for folder in (ROOT / "tests", ROOT / "tools"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


# --------------------------------------------------------------------------- build


def step_build(device: str) -> dict:
    """The installed sinpe: version, backend, the kernel's instruction set; torch and the
    device. Holds when the compiled kernel is what runs (``sinpe.BACKEND == "cython"``)."""
    import sinpe
    from sinpe._tables import backends

    kernel = backends.kernel
    backend = "numpy" if _planted("build") else sinpe.BACKEND
    figures = {"backend": backend, "threads": sinpe.THREAD_RUNTIME, "from": sinpe.__file__}
    if kernel is not None:
        figures.update(isa=kernel.ISA, cpu_isa=kernel.CPU_ISA, isa_reason=kernel.ISA_REASON)
    else:
        figures["kernel_error"] = str(backends.KERNEL_ERROR)
    versions = {"sinpe": sinpe.__version__, "python": sys.version.split()[0]}
    try:
        import torch

        versions.update(torch=torch.__version__, cuda=torch.version.cuda)
        if device == "cuda":
            figures["device"] = torch.cuda.get_device_name(0)
            figures["capability"] = list(torch.cuda.get_device_capability(0))
    except ImportError:
        pass
    isa = figures.get("isa", "none")
    summary = f"sinpe {sinpe.__version__}: backend {backend}, kernel ISA {isa}"
    return _result(_held({"kernel": backend == "cython"}), summary, figures, **versions)


# --------------------------------------------------------------------------- tables

# (mantissa bits with the implicit one, smallest normal exponent) of each dtype
_FORMATS = {"float64": (53, -1022), "float32": (24, -126), "float16": (11, -14)}
_FORMATS["bfloat16"] = (8, -126)
BLOCKS = ((0, 4096), (100_000, K), (1_000_000, K))  # (first position, rows)


def _ulp(values, dtype: str):
    import numpy as np

    bits, emin = _FORMATS[dtype]
    magnitude = np.abs(values)
    exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
    exponent = np.where(magnitude > 0, np.maximum(exponent, emin), emin)
    return np.ldexp(1.0, (exponent - (bits - 1)).astype(int))


def step_tables(device: str) -> dict:
    """sinpe's cos/sin (the kernel; dtype each of float64, float32, float16, bfloat16) of the
    angles ``p * w`` (w: Llama-3.1's float64 frequencies, head_dim 128, given as inv_freq so
    both sides take the same w) against torch's cos and sin of ``fl(p * w)`` in float64 on
    the device. The reference's own error, ``0.5 ulp(angle) + 2 ulp(value)`` in float64
    (the product's rounding and CUDA's 2-ulp cos/sin), is allowed on top of sinpe's bound
    (docs/method.md): half an ulp of a narrow dtype (correctly rounded), 7.7 units of 2^-53
    absolute in float64. Figures: the largest error in ulps of the dtype, and beyond the
    reference's error in the bound's unit (holds: at most 0.5, or 7.7 in float64)."""
    import numpy as np
    import torch

    import sinpe
    from sinpe._tables.checks import bfloat16

    llama3 = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0)
    llama3["original_max_position_embeddings"] = 8192
    w, _ = sinpe.rope_frequencies(128, base=500000.0, scaling=llama3)
    dtypes = [name for name in _FORMATS if name != "bfloat16" or bfloat16() is not None]
    figures: dict = {"blocks": [list(b) for b in BLOCKS], "backend": sinpe.BACKEND}
    checks = {}
    for dtype in dtypes:
        bound, unit = (7.7, "2^-53") if dtype == "float64" else (0.5, f"ulp of {dtype}")
        worst, beyond = 0.0, -np.inf
        for first, rows in BLOCKS:
            positions = torch.arange(first, first + rows, dtype=torch.float64, device=device)
            angle = positions[:, None] * torch.as_tensor(w, device=device)[None]
            reference = [t.cpu().numpy() for t in (torch.cos(angle), torch.sin(angle))]
            angle = angle.cpu().numpy()
            ours = sinpe.rope(rows, 128, offset=first, inv_freq=w, dtype=dtype)
            for table, exact in zip(ours, reference):
                table = table[:, :64].astype(np.float64)
                if _planted("tables") and first == 0:
                    table[5, 3] += 64 * _ulp(table[5, 3], dtype)
                error = np.abs(table - exact)
                own = 0.5 * _ulp(angle, "float64") + 2 * _ulp(exact, "float64")
                scale = 2.0**-53 if dtype == "float64" else _ulp(exact, dtype)
                worst = max(worst, float((error / _ulp(exact, dtype)).max()))
                beyond = max(beyond, float(((error - own) / scale).max()))
        figures[dtype] = {"max_ulps": worst, "beyond_reference": beyond, "bound": bound}
        figures[dtype]["unit"] = unit
        checks[dtype] = beyond <= bound
    if len(dtypes) < len(_FORMATS):
        figures["bfloat16"] = "not compared: ml_dtypes is not installed"
    line = ", ".join(f"{d} {figures[d]['beyond_reference']:.3g}" for d in dtypes)
    summary = f"beyond the float64 reference's own error (holds <= 0.5 ulp; 7.7 2^-53): {line}"
    return _result(_held(checks), summary, figures, torch=torch.__version__)


# --------------------------------------------------------------------------- torch


def _difference(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def _graph_outputs(module, inputs: dict, variants: list, torch) -> list:
    """``module(**inputs)`` captured once in a torch.cuda.CUDAGraph, replayed with each
    variant's tensors copied into the captured inputs first: the outputs of each replay."""
    static = {k: v.clone() for k, v in inputs.items()}
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):  # warm-up off the default stream, as torch's docs do
            module(**static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        out = module(**static)
    found = []
    for variant in variants:
        for k, v in variant.items():
            static[k].copy_(v)
        graph.replay()
        torch.cuda.synchronize()
        found.append([t.clone() for t in (out if isinstance(out, tuple) else (out.logits,))])
    return found


def step_torch(device: str) -> dict:
    """A tiny random Llama-3.1 (tests/shift.py's config), patched by ``sinpe.torch.patch``:
    its rotary module's rows and its logits at positions 0-63 and 100,000-100,063 under
    ``torch.compile(fullgraph=True)`` and (CUDA) ``mode="reduce-overhead"`` and a captured
    ``torch.cuda.CUDAGraph`` replayed at both, against the eager patched model: the rows bit
    for bit, the logits within 1e-5 (compile fuses float32 sums in another order)."""
    import torch
    import transformers

    import sinpe.torch as st

    _tests_on_path()
    import shift

    torch.manual_seed(0)
    config = transformers.LlamaConfig(**shift.CONFIG)
    model = transformers.LlamaForCausalLM(config).eval().to(device)
    report = st.patch(model, warn=False, max_positions=2**17)
    rotary = model.model.rotary_emb
    tokens = torch.tensor(shift.tokens(), device=device)[None]
    x = torch.zeros(1, device=device)
    calls = [dict(input_ids=tokens, position_ids=torch.arange(K, device=device)[None])]
    calls.append(dict(calls[0], position_ids=calls[0]["position_ids"] + 100_000))
    with torch.no_grad():
        eager = [model(**c, use_cache=False).logits for c in calls]
        rows = [rotary(x, c["position_ids"]) for c in calls]
    if _planted("torch"):
        eager[1][0, 7, 11] += 1e-3
    figures: dict = {"patched": list(report), "table_bytes": report.table_bytes}
    checks = {"patched": list(report) == ["model.rotary_emb"]}
    checks.update(_compiled(model, rotary, calls, x, eager, rows, figures, torch))
    if device == "cuda":
        checks.update(_captured(model, rotary, calls, x, eager, rows, figures, torch))
    else:
        figures["cuda_graphs"] = "not run: CUDA graphs need a CUDA device"
    figures["checks"] = checks
    worst = max(v for k, v in figures.items() if k.endswith("_logits"))
    summary = f"{sum(checks.values())}/{len(checks)} checks; logits at most {worst:.2e} from eager"
    return _result(_held(checks), summary, figures, torch=torch.__version__,
                   transformers=transformers.__version__)  # fmt: skip


def _compiled(model, rotary, calls, x, eager, rows, figures, torch) -> dict:
    checks = {}
    # on the CPU (a dry run) Dynamo's graph without Inductor's code generation, which takes
    # minutes there (tests/test_torch.py compiles with Inductor on the CPU)
    backend = figures["compile_backend"] = "inductor" if x.device.type == "cuda" else "aot_eager"
    modes = [("compile", dict(fullgraph=True, backend=backend))]
    if x.device.type == "cuda":  # CUDA graphs through Inductor's cudagraph trees
        modes.append(("reduce_overhead", dict(fullgraph=True, mode="reduce-overhead")))
    for name, options in modes:
        torch._dynamo.reset()
        compiled = torch.compile(model, **options)
        rotary_compiled = torch.compile(rotary, fullgraph=True, backend=backend)
        with torch.no_grad():
            found = [compiled(**c, use_cache=False).logits.clone() for c in calls * 2]
            found_rows = [rotary_compiled(x, c["position_ids"]) for c in calls]
        figures[f"{name}_logits"] = max(_difference(f, e) for f, e in zip(found, eager * 2))
        checks[f"{name}_logits"] = figures[f"{name}_logits"] <= 1e-5
        checks[f"{name}_rows"] = all(
            torch.equal(a, b) for got, want in zip(found_rows, rows) for a, b in zip(got, want)
        )
    torch._dynamo.reset()
    return checks


def _captured(model, rotary, calls, x, eager, rows, figures, torch) -> dict:
    """The rotary module and the whole patched model captured in a CUDA graph at positions
    0-63, replayed at 100,000-100,063 and back: nothing was baked in at capture."""
    checks = {}
    order = [calls[1], calls[0]]
    first = dict(x=x, position_ids=calls[0]["position_ids"])
    variants = [dict(position_ids=c["position_ids"]) for c in order]
    found = _graph_outputs(rotary, first, variants, torch)
    checks["graph_rows"] = all(
        torch.equal(a, b) for got, want in zip(found, rows[::-1]) for a, b in zip(got, want)
    )
    try:
        logits = _graph_outputs(lambda **c: model(**c, use_cache=False), calls[0], order, torch)
    except Exception as exc:  # noqa: BLE001 (said, and whose: the unpatched model is tried)
        figures["graph_model_error"] = f"{type(exc).__name__}: {exc}"[:500]
        checks["graph_logits"] = not _unpatched_captures(model, calls, order, figures, torch)
        return checks
    figures["graph_logits"] = max(_difference(f[0], e) for f, e in zip(logits, eager[::-1]))
    checks["graph_logits"] = figures["graph_logits"] <= 1e-5
    return checks


def _unpatched_captures(model, calls, order, figures, torch) -> bool:
    """Whether the same model unpatched (transformers' own rotary module) is captured: where
    it is not either, the patched model's failure is not sinpe's (said in the figures)."""
    torch.manual_seed(0)
    unpatched = type(model)(model.config).eval().to(calls[0]["input_ids"].device)
    try:
        _graph_outputs(lambda **c: unpatched(**c, use_cache=False), calls[0], order, torch)
    except Exception as exc:  # noqa: BLE001 (transformers' own limit: said)
        figures["graph_unpatched_error"] = f"{type(exc).__name__}: {exc}"[:500]
        return False
    return True


# --------------------------------------------------------------------------- engines


def step_vllm(device: str) -> dict:
    """tools/vllm_gpu.py's check: SINPE_VLLM=exact on vLLM's caches on the device."""
    _tests_on_path()
    import vllm_gpu

    return vllm_gpu.step(device, planted=_planted("vllm"))


def step_sglang(device: str) -> dict:
    """tools/sglang_gpu.py's check: sinpe's plugin inside a whole ``sglang.Engine``."""
    _tests_on_path()
    import sglang_gpu

    return sglang_gpu.step(device, planted=_planted("sglang"))


FUNCTIONS = {"build": step_build, "tables": step_tables, "torch": step_torch}
FUNCTIONS.update(vllm=step_vllm, sglang=step_sglang)


def run_one(name: str, device: str) -> None:
    """``--step NAME``: one step in this process; its result is the last line printed."""
    started = time.monotonic()
    try:
        result = FUNCTIONS[name](device)
    except Exception as exc:  # noqa: BLE001 (a step that raises did not hold: said)
        import traceback

        traceback.print_exc()
        result = _result("failed", f"raised {type(exc).__name__}: {exc}"[:500])
    result.update(device=device, seconds_inside=round(time.monotonic() - started, 2))
    print(MARK + json.dumps(result, default=str), flush=True)


# --------------------------------------------------------------------------- the run


class Budget:
    """The whole run's time: each command gets what is left."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def _run(command: list, budget: Budget, env: dict | None = None) -> tuple:
    """``(exit code or None on the budget's end, output)``; the command's whole process
    group is ended when the budget is (vLLM and SGLang start processes of their own)."""
    if budget.left() <= 0:
        return None, "not started: the budget was spent"
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:  # an interpreter --setup could not make, say
        return 127, f"could not start {command[0]}: {exc}"
    try:
        output, _ = process.communicate(timeout=budget.left())
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output + "\n(ended: the budget was spent)"


def run_step(name: str, python: str, device: str, budget: Budget, plant: str | None) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop(PLANT, None)
    if plant == name:
        env[PLANT] = name
    started = time.monotonic()
    code, output = _run([python, str(Path(__file__)), "--step", name, "--device", device],
                        budget, env)  # fmt: skip
    lines = [line for line in output.splitlines() if line.startswith(MARK)]
    if lines:
        result = json.loads(lines[-1][len(MARK) :])
    elif code is None:
        result = _result("failed", "out of budget: the step was ended")
    else:
        result = _result("failed", f"the step's process exited {code} without a result")
    result.setdefault("device", device)
    result["seconds"] = round(time.monotonic() - started, 2)
    if result["status"] != "held":
        result["output_tail"] = output[-4000:]
    return result


def gpu_name(python: str) -> str | None:
    """The first CUDA device's name (nvidia-smi's, else torch's in ``python``), or None."""
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
        first = done.stdout.strip().splitlines()[:1] if done.returncode == 0 else []
        if first:  # "GPU 0: NAME (UUID: ...)"
            return first[0].split(":", 1)[1].split("(")[0].strip()
    probe = "import torch; print(torch.cuda.is_available() and torch.cuda.get_device_name(0))"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    name = done.stdout.strip() if done.returncode == 0 else ""
    return None if name in ("", "False") else name


# --------------------------------------------------------------------------- setup


def setup(folder: Path, budget: Budget) -> dict:
    """Two venvs under ``folder`` (module docstring), installed side by side: sinpe's wheel
    built once from this checkout, vLLM's venv and SGLang's each with its pin and the wheel.
    Returns ``{"main": python, "sglang": python, "record": {what: (exit code, seconds)}}``."""
    folder.mkdir(parents=True, exist_ok=True)
    pythons = {v: str(folder / v / "bin" / "python") for v in ("main", "sglang")}
    record: dict = {}
    built = threading.Event()

    def do(what: str, command: list) -> bool:
        started = time.monotonic()
        code, output = _run(command, budget)
        (folder / f"setup-{what}.log").write_text(output)
        record[what] = {"exit": code, "seconds": round(time.monotonic() - started, 1)}
        return code == 0

    def wheel() -> str:
        found = sorted((folder / "wheel").glob("sinpe-*.whl"))
        return str(found[-1]) if found else "sinpe-wheel-not-built"

    def main_venv() -> None:
        pip = [pythons["main"], "-m", "pip", "install", "-q"]
        ok = do("main-venv", [sys.executable, "-m", "venv", str(folder / "main")])
        ok = ok and do("wheel", [pythons["main"], "-m", "pip", "wheel", "-q", "--no-deps",
                                 str(ROOT), "-w", str(folder / "wheel")])  # fmt: skip
        built.set()
        ok and do("main-install", pip + [VLLM_PIN, f"{wheel()}[test,torch,bfloat16]"])

    def sglang_venv() -> None:
        pip = [pythons["sglang"], "-m", "pip", "install", "-q"]
        ok = do("sglang-venv", [sys.executable, "-m", "venv", str(folder / "sglang")])
        ok = ok and do("sglang-install", pip + [SGLANG_PIN])
        built.wait(max(budget.left(), 0))
        ok and do("sglang-sinpe", pip + [f"{wheel()}[bfloat16]"])

    threads = [threading.Thread(target=main_venv), threading.Thread(target=sglang_venv)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {**pythons, "record": record}


# --------------------------------------------------------------------------- main


def _strict(value):
    """JSON's own values only: a float that is not finite becomes null."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def write_json(path: Path, data: dict) -> None:
    """The results as strict JSON, written whole (a temporary name beside, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(descriptor, "w") as stream:
        json.dump(_strict(data), stream, indent=1, default=str, allow_nan=False)
        stream.write("\n")
    os.replace(temporary, path)


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def exit_code(steps: dict, dry_run: bool) -> int:
    """1 when a step failed; else 77 for a dry run (no GPU was checked); else 0 only when
    every step held (on the GPU a step skipped, its engine not installed say, did not)."""
    if any(result["status"] == "failed" for result in steps.values()):
        return 1
    if dry_run:
        return NO_GPU
    return 0 if steps and all(r["status"] == "held" for r in steps.values()) else 1


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-check.json"), help="the JSON file")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    parser.add_argument("--dry-run", action="store_true", help="the CPU steps, device 'cpu'")
    parser.add_argument("--setup", type=Path, metavar="DIR", help="make the venvs under DIR")
    parser.add_argument("--python", default=sys.executable, help="the steps' interpreter")
    parser.add_argument("--sglang-python", help="SGLang's interpreter (default --python)")
    parser.add_argument("--steps", default=",".join(STEPS), help="a comma-separated subset")
    parser.add_argument("--plant-failure", metavar="STEP", help="a wrong value in STEP's check")
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.steps = [s for s in args.steps.split(",") if s]
    unknown = sorted(set(args.steps) - set(STEPS))
    if unknown:
        parser.error(f"--steps: {', '.join(unknown)} is not one of {', '.join(STEPS)}")
    if args.plant_failure is not None and args.plant_failure not in STEPS:
        parser.error(f"--plant-failure: {args.plant_failure!r} is not one of {', '.join(STEPS)}")
    return args


def main(argv=None) -> int:
    args = arguments(argv)
    if args.step:
        run_one(args.step, args.device)
        return 0
    budget, started = Budget(args.budget), time.monotonic()
    data: dict = {"tool": "tools/gpu_check.py", "commit": _commit(), "budget_s": args.budget}
    data.update(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), steps={})
    device_name = None if args.dry_run else gpu_name(args.python)
    data.update(mode="dry-run" if args.dry_run else "gpu", device_name=device_name)
    if not args.dry_run and device_name is None:
        reason = "no CUDA device here (torch sees none, and no nvidia-smi lists one)"
        print(f"gpu_check: {reason}: nothing was run (--dry-run runs the CPU steps); exit 77")
        data.update(mode="no-gpu", reason=reason, exit_code=NO_GPU, elapsed_s=0.0)
        write_json(args.out, data)
        return NO_GPU
    pythons = {"main": args.python, "sglang": args.sglang_python or args.python}
    if args.setup is not None:
        made = setup(args.setup, budget)
        pythons = {"main": made["main"], "sglang": made["sglang"]}
        data["setup"] = made["record"]
    device = "cpu" if args.dry_run else "cuda"
    for name in args.steps:
        python = pythons["sglang" if name == "sglang" else "main"]
        result = data["steps"][name] = run_step(name, python, device, budget, args.plant_failure)
        print(f"gpu_check: {name} {result['status']} ({result['seconds']} s, {device}): "
              f"{result['summary']}", flush=True)  # fmt: skip
    failed = [n for n, r in data["steps"].items() if r["status"] == "failed"]
    code = exit_code(data["steps"], args.dry_run)
    data.update(exit_code=code, failed=failed, elapsed_s=round(time.monotonic() - started, 1))
    write_json(args.out, data)
    ran = ", ".join(f"{n} {r['status']}" for n, r in data["steps"].items())
    if args.dry_run:
        print(f"gpu_check: dry run on the CPU, no GPU used ({ran}); no CUDA device checked: "
              f"exit {code}")  # fmt: skip
    else:
        print(f"gpu_check: on {device_name}: {ran}; exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
