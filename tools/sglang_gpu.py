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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="a model folder or id (default: a tiny twin)")
    parser.add_argument("--exact", action="store_true", help="SINPE_SGLANG=exact")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("sglang_gpu: no CUDA device here; this script needs one (nothing was run)")
        return 77
    import sglang

    with tempfile.TemporaryDirectory(prefix="sinpe-sglang-") as folder:
        model = args.model or str(_twin(Path(folder)))
        report = Path(folder) / "report.json"
        os.environ["SINPE_SGLANG"] = "exact" if args.exact else "audit"
        os.environ["SINPE_SGLANG_REPORT"] = str(report)  # the scheduler inherits both
        print(
            f"sglang {sglang.__version__}, model {model}, SINPE_SGLANG={os.environ['SINPE_SGLANG']}"
        )
        try:
            engine = sglang.Engine(model_path=model, dtype="float16", mem_fraction_static=0.5)
            out = engine.generate("the fox jumps over", {"max_new_tokens": 8, "temperature": 0})
            engine.shutdown()
        except Exception as exc:  # noqa: BLE001 (said, exit 2)
            print(f"sglang_gpu: the engine failed: {type(exc).__name__}: {exc}")
            return 2
        print(f"generated: {out['text']!r}")
        if not report.exists():
            print("sglang_gpu: no report: the plugin did not run in SGLang's process")
            return 2
        layers = json.loads(report.read_text())
    for layer in layers:
        names = layer["names"][0] + (
            f" (+{len(layer['names']) - 1})" if len(layer["names"]) > 1 else ""
        )
        print(f"{names} {layer['cls']} {layer['cache']}: {layer['verdict']} "
              f"(largest error {layer['largest_error']}) {layer['outcome']}")  # fmt: skip
    if not layers:
        print("sglang_gpu: the report is empty: no rotary cache was found")
        return 2
    return 1 if any(layer["verdict"] == "mismatch" for layer in layers) else 0


if __name__ == "__main__":
    sys.exit(main())
