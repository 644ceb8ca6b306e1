"""tools/gpu_check.py, the script a lent GPU runs, kept from rotting where there is none: its
dry run (the steps that run on the CPU, device "cpu"; vLLM's where vLLM is installed, as in
the vLLM leg) in a subprocess, its exit codes (77 without a GPU, 1 when a step fails: a
wrong value planted in a step's check, a budget spent), and its JSON. Needs torch and
transformers (the torch leg; the vLLM leg)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import sinpe  # noqa: E402

TOOL = Path(__file__).resolve().parent.parent / "tools" / "gpu_check.py"
HAS_VLLM = importlib.util.find_spec("vllm") is not None
HAS_SGLANG = importlib.util.find_spec("sglang") is not None
KERNEL = sinpe.BACKEND == "cython"


def _run(folder: Path, *args: str) -> tuple:
    out = folder / "results.json"
    done = subprocess.run(
        [sys.executable, str(TOOL), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    return done, json.loads(out.read_text(), parse_constant=_not_json)


def _not_json(name: str):
    raise AssertionError(f"{name} in the results: the JSON must be strict")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("dry"), "--dry-run", "--budget", "2400")


def test_the_dry_run_exits_77_and_says_no_gpu_was_used(dry_run):
    done, data = dry_run
    assert done.returncode == (77 if KERNEL else 1), done.stdout + done.stderr
    assert data["mode"] == "dry-run" and data["exit_code"] == done.returncode
    assert list(data["steps"]) == ["build", "tables", "torch", "vllm", "sglang"]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("gpu_check: dry run on the CPU, no GPU used (build "), last
    assert last.endswith(f"exit {done.returncode}")
    assert all(step["device"] == "cpu" for step in data["steps"].values())
    assert all(step["seconds"] > 0 for step in data["steps"].values())


def test_the_cpu_steps_ran_and_held(dry_run):
    _, data = dry_run
    steps = data["steps"]
    build = steps["build"]
    assert build["status"] == ("held" if KERNEL else "failed"), build
    assert build["versions"]["sinpe"] == sinpe.__version__
    assert build["figures"]["backend"] == sinpe.BACKEND
    if KERNEL:
        assert build["figures"]["isa"] in sinpe._tables.backends.kernel.ISA_NAMES
    tables = steps["tables"]
    assert tables["status"] == "held", tables
    for dtype in ("float64", "float32", "float16"):
        figures = tables["figures"][dtype]
        assert figures["beyond_reference"] <= figures["bound"], (dtype, figures)
        assert figures["max_ulps"] > 0  # the comparison read values, not an empty table
    step = steps["torch"]
    assert step["status"] == "held", step
    checks = step["figures"]["checks"]
    assert checks == {"patched": True, "compile_logits": True, "compile_rows": True}
    assert step["figures"]["compile_logits"] <= 1e-5
    assert "need a CUDA device" in step["figures"]["cuda_graphs"]


def test_the_engine_steps_run_where_their_engine_is_installed(dry_run):
    _, data = dry_run
    vllm_step, sglang_step = data["steps"]["vllm"], data["steps"]["sglang"]
    if HAS_VLLM:  # the vLLM leg: its step runs on the CPU
        assert vllm_step["status"] == "held", vllm_step
        errors = vllm_step["figures"]["logprobs"]
        assert errors["exact"]["100000"] < errors["off"]["100000"]
    else:
        assert vllm_step["status"] == "skipped", vllm_step
        assert vllm_step["summary"] == "skipped: not installed (vllm)"
    assert sglang_step["status"] == "skipped", sglang_step
    if HAS_SGLANG:
        assert "sglang.Engine needs a CUDA device" in sglang_step["summary"]
    else:
        assert sglang_step["summary"] == "skipped: not installed (sglang)"


def test_a_wrong_value_planted_in_a_check_fails_the_run(tmp_path):
    """--plant-failure tables: one entry of sinpe's table moved by 64 ulps before the
    comparison; the step fails, the run exits 1 (not 77), the other step still holds."""
    done, data = _run(tmp_path, "--dry-run", "--steps", "build,tables", "--plant-failure", "tables")
    assert done.returncode == 1, done.stdout + done.stderr
    # the build step holds only where the kernel is the backend (not under SINPE_BACKEND=numpy)
    assert data["exit_code"] == 1
    assert data["failed"] == (["tables"] if KERNEL else ["build", "tables"])
    tables = data["steps"]["tables"]
    assert tables["status"] == "failed"
    for dtype in ("float64", "float32", "float16"):
        figures = tables["figures"][dtype]
        assert figures["beyond_reference"] > figures["bound"], (dtype, figures)
    assert data["steps"]["build"]["status"] == ("held" if KERNEL else "failed")
    assert "gpu_check: tables failed" in done.stdout


def test_a_spent_budget_fails_every_step_not_started(tmp_path):
    done, data = _run(tmp_path, "--dry-run", "--steps", "build,tables", "--budget", "0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert data["failed"] == ["build", "tables"]
    for step in data["steps"].values():
        assert step["summary"] == "out of budget: the step was ended"
        assert "not started: the budget was spent" in step["output_tail"]


def test_a_step_whose_interpreter_cannot_start_fails_and_says_why(tmp_path):
    missing = str(tmp_path / "no-venv" / "bin" / "python")
    done, data = _run(tmp_path, "--dry-run", "--steps", "build", "--python", missing)
    assert done.returncode == 1 and data["failed"] == ["build"], done.stdout + done.stderr
    build = data["steps"]["build"]
    assert build["summary"] == "the step's process exited 127 without a result"
    assert build["output_tail"].startswith(f"could not start {missing}")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")
def test_without_a_gpu_it_says_so_in_one_line_and_exits_77(tmp_path):
    done, data = _run(tmp_path, "--steps", "build")
    assert done.returncode == 77, done.stdout + done.stderr
    (line,) = done.stdout.strip().splitlines()
    assert line.startswith("gpu_check: no CUDA device here") and line.endswith("exit 77")
    assert data["mode"] == "no-gpu" and data["exit_code"] == 77
    assert data["reason"].startswith("no CUDA device here") and data["steps"] == {}


def test_bad_arguments_name_themselves(tmp_path):
    for args, words in (
        (["--steps", "build,nope"], "--steps: nope is not one of"),
        (["--plant-failure", "nope"], "--plant-failure: 'nope' is not one of"),
    ):
        done = subprocess.run(
            [sys.executable, str(TOOL), "--out", str(tmp_path / "x.json"), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert not (tmp_path / "x.json").exists()


def _tool():
    sys.path.insert(0, str(TOOL.parent))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(TOOL.parent))
    return gpu_check


def test_exit_codes():
    """0 only when every step held on the GPU; 1 when one failed, or on the GPU when one was
    skipped; 77 for a dry run in which nothing failed."""
    exit_code = _tool().exit_code
    held, skipped, failed = ({"status": s} for s in ("held", "skipped", "failed"))
    assert exit_code({"a": held, "b": held}, dry_run=False) == 0
    assert exit_code({"a": held, "b": skipped}, dry_run=False) == 1
    assert exit_code({"a": held, "b": failed}, dry_run=False) == 1
    assert exit_code({}, dry_run=False) == 1
    assert exit_code({"a": held, "b": skipped}, dry_run=True) == 77
    assert exit_code({"a": failed, "b": skipped}, dry_run=True) == 1


def test_ulps_are_numpys_spacing():
    """The tables step's unit: the distance to the next float of the dtype, normal and
    subnormal, against NumPy's spacing (float16, float32, float64)."""
    ulp = _tool()._ulp
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64):
        tiny = float(np.finfo(dtype).smallest_subnormal)
        values = np.concatenate([rng.uniform(-1, 1, 200), [1.0, 0.5, -0.25, tiny * 3, 0.0]])
        values = values.astype(dtype)
        want = np.spacing(np.abs(values)).astype(np.float64)
        assert np.array_equal(ulp(values.astype(np.float64), np.dtype(dtype).name), want)
