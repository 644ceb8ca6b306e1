"""sinpe's SGLang plugin in a whole ``sglang.Engine``, on a machine with a CUDA GPU. None is
on the machine sinpe is developed on: this script is kept ready to run as is where one is,
and says so (exit 77) where there is none; it is never run with a faked device.

    pip install "sglang==0.5.23" sinpe          # SGLang's CUDA build, on the GPU machine
    python tools/sglang_gpu.py [MODEL] [--exact]

MODEL: a model folder or Hugging Face id. Without one, a tiny random twin of Llama-3.1-8B's
published config (tests/data/configs/llama-3.1-8b.json, shrunk as `sinpe engines` shrinks
it, random weights saved by transformers, a tokenizer trained here) is made in a temporary
folder, so nothing is downloaded. SGLang loads it with ``SINPE_SGLANG=audit`` (``exact``
with --exact) and ``SINPE_SGLANG_REPORT``; sinpe's entry point is loaded by SGLang's
``load_plugins`` in the scheduler process, its hooks run inside ``ModelRunner.load_model``
(after SGLang grows its rotary caches, before it captures CUDA graphs), and the engine then
generates a few tokens (with --exact: from the filled caches). What it checks: that the
report was written by the plugin in SGLang's own process, one entry per distinct rotary
cache (the rows SGLang appended judged apart), and each verdict, printed. Exit 0 when every
cache matches or drifts, 1 when one mismatches, 2 when the engine or the report failed.
tools/gpu_check.py runs ``step`` (with --exact) as one of its steps.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _twin(folder: Path) -> Path:
    from sinpe._engines._shrink import shrink
    from sinpe._engines._weights import save_twin

    config = json.loads((ROOT / "tests/data/configs/llama-3.1-8b.json").read_text())
    twin = folder / "twin"
    twin.mkdir()
    (twin / "config.json").write_text(json.dumps(shrink(config)))
    return save_twin(twin, folder / "model")


def run_engine(model: str, folder: Path, exact: bool) -> tuple:
    """``(generated text, the plugin's report)``: ``model`` in a whole ``sglang.Engine`` with
    ``SINPE_SGLANG`` audit or exact and ``SINPE_SGLANG_REPORT`` in ``folder`` (the scheduler
    inherits both); the report is None where the plugin wrote none."""
    import sglang

    report = folder / "report.json"
    os.environ["SINPE_SGLANG"] = "exact" if exact else "audit"
    os.environ["SINPE_SGLANG_REPORT"] = str(report)
    print(f"sglang {sglang.__version__}, model {model}, SINPE_SGLANG={os.environ['SINPE_SGLANG']}")
    engine = sglang.Engine(model_path=model, dtype="float16", mem_fraction_static=0.5)
    try:
        out = engine.generate("the fox jumps over", {"max_new_tokens": 8, "temperature": 0})
    finally:
        engine.shutdown()
    return out["text"], json.loads(report.read_text()) if report.exists() else None


def _line(layer: dict) -> str:
    more = len(layer["names"]) - 1
    names = layer["names"][0] + (f" (+{more})" if more else "")
    return (f"{names} {layer['cls']} {layer['cache']}: {layer['verdict']} "
            f"(largest error {layer['largest_error']}) {layer['outcome']}")  # fmt: skip


def step(device: str, planted: bool = False) -> dict:
    """tools/gpu_check.py's SGLang step: the twin in a whole ``sglang.Engine`` on ``device``
    with ``SINPE_SGLANG=exact``. Holds when the plugin wrote its report from SGLang's own
    process, one entry at least, every cache matching or drifting and replaced, and the
    engine generated text. On the CPU (a dry run) the twin is made and the engine skipped:
    a whole engine needs an accelerator (tests/test_sglang.py runs the plugin on the CPU)."""
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        return _step_result("skipped", "skipped: not installed (sglang)")
    import sglang

    with tempfile.TemporaryDirectory(prefix="sinpe-sglang-") as folder:
        model = str(_twin(Path(folder)))
        if device != "cuda":
            why = "skipped: sglang.Engine needs a CUDA device (the twin was made)"
            return _step_result("skipped", why, sglang=sglang.__version__)
        text, layers = run_engine(model, Path(folder), exact=True)
    figures = {"generated": text, "layers": [_line(layer) for layer in layers or []]}
    if planted and layers:
        layers[0]["verdict"] = "mismatch"
    checks = {"report": bool(layers), "generated": bool(text)}
    checks["replaced"] = bool(layers) and all(
        layer["verdict"] in ("match", "drift") and layer["replaced"] for layer in layers or []
    )
    figures["checks"] = checks
    status = "held" if all(checks.values()) else "failed"
    summary = f"{len(layers or [])} caches: " + "; ".join(figures["layers"])[:300]
    return _step_result(status, summary, figures, sglang=sglang.__version__)


def _step_result(status: str, summary: str, figures: dict | None = None, **versions) -> dict:
    return {"status": status, "summary": summary, "figures": figures or {}, "versions": versions}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="a model folder or id (default: a tiny twin)")
    parser.add_argument("--exact", action="store_true", help="SINPE_SGLANG=exact")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("sglang_gpu: no CUDA device here; this script needs one (nothing was run)")
        return 77
    with tempfile.TemporaryDirectory(prefix="sinpe-sglang-") as folder:
        model = args.model or str(_twin(Path(folder)))
        try:
            text, layers = run_engine(model, Path(folder), args.exact)
        except Exception as exc:  # noqa: BLE001 (said, exit 2)
            print(f"sglang_gpu: the engine failed: {type(exc).__name__}: {exc}")
            return 2
    print(f"generated: {text!r}")
    if layers is None:
        print("sglang_gpu: no report: the plugin did not run in SGLang's process")
        return 2
    for layer in layers:
        print(_line(layer))
    if not layers:
        print("sglang_gpu: the report is empty: no rotary cache was found")
        return 2
    return 1 if any(layer["verdict"] == "mismatch" for layer in layers) else 0


if __name__ == "__main__":
    sys.exit(main())
