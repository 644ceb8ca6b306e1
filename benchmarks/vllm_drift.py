"""vLLM's own rotary caches against the exact table, by position decade: the table in
docs/vllm.md. Loads each tiny random model of tests/vllm_models.py in vLLM (in-process, on
the CPU) with sinpe's plugin in audit mode and prints the largest error of a cos/sin entry in
each decade of positions, with the verdict. Needs vLLM (the vllm CI leg's environment):

    VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 python benchmarks/vllm_drift.py
"""

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ["SINPE_VLLM"] = "audit"

import vllm  # noqa: E402
from vllm_models import MODELS, load, save  # noqa: E402

import sinpe.vllm as sv  # noqa: E402

DECADES = [(0, 9), (10, 99), (100, 999), (1000, 9999), (10000, 99999), (100000, 10**9)]


def rows(name, folder):
    llm = load(folder)
    del llm
    for report in sv.reports():
        errors = []
        for first, last in DECADES:
            found = [e for a, b, e in report.decades if a >= first and b <= last]
            errors.append(f"{max(found):.1e}" if found else "")
        where = report.cache.partition("[")[2].rstrip("]")
        yield [name + (f" [{where}]" if where else ""), report.cls, report.verdict] + errors


def main(names=None):
    """The table, for the models ``names`` (default: every one of MODELS)."""
    header = ["model", "vLLM class", "verdict"] + [
        f"{a}-{b}" if b < 10**9 else f"{a}-" for a, b in DECADES
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or MODELS:
            folder = save(name, Path(tmp) / name)
            for row in rows(name, folder):
                print("| " + " | ".join(row) + " |", flush=True)
    sampled = "sampled rows: the first 64, then 64 spread to the end"
    print(f"\nvllm {vllm.__version__}, float32 caches; {sampled}")


if __name__ == "__main__":
    main()
