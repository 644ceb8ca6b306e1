"""What judging every entry costs: vLLM's audit of one rotary cache (``sinpe.vllm.audit_layer``
on a float32 ``[cos | sin]`` cache, on the CPU) and ``sinpe check`` of a cache file (a
float32 ``.npy``, memory-mapped), at each length asked. Each case runs in a fresh process of
its own, so its peak memory (``VmHWM``, grown past what the process held before the
first judgment: the cache itself is not counted) is its own; the limit beside it is sinpe
making the same exact table (``rope_cache``, float32) in that process, after the judgments.
Needs torch for the audit rows. The figures in docs/performance.md come from:

    python benchmarks/verdict_cost.py --rows 131072 10000000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONFIG = {"model_type": "llama", "head_dim": 64, "rope_theta": 10000.0}
_PEAK = """
def peak():  # this process's own (ru_maxrss would carry the parent's across exec)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
"""

_AUDIT = r"""
import json, sys, time
import numpy as np, torch
import sinpe
from sinpe.vllm import audit_layer

rows, rounds = int(sys.argv[1]), int(sys.argv[2])
config = {**json.loads(sys.argv[3]), "max_position_embeddings": rows}
spec = sinpe.rope_config(config)
cache = torch.from_numpy(spec.rope_cache(rows, dtype=np.float32))

class RotaryEmbedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cos_sin_cache", cache, persistent=False)
        self.rotary_dim, self.head_size, self.is_neox_style = 64, 64, True

layer = RotaryEmbedding()
{peak}
before = peak()
audits, makes = [], []
for _ in range(rounds):
    start = time.perf_counter()
    (report,) = audit_layer(layer, spec, ["l"])
    audits.append(time.perf_counter() - start)
grown = peak() - before  # before the limit's own tables
for _ in range(rounds):
    start = time.perf_counter()
    made = spec.rope_cache(rows, dtype=np.float32)
    makes.append(time.perf_counter() - start)
    del made
entries = report.judgment.as_json().get("entries") or {}
print(json.dumps({"audit": audits, "make": makes, "grown_kib": grown,
                  "verdict": report.verdict, "compared": entries.get("compared"),
                  "cache_mib": cache.numel() * 4 / 2**20}))
"""

_FILE = r"""
import json, sys, time
import numpy as np
import sinpe
from sinpe import cli

path, config, rounds, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spec = sinpe.rope_config(json.load(open(config)))
checks, makes = [], []

{peak}
before = peak()
for _ in range(rounds):
    start = time.perf_counter()
    code = cli.main(["check", path, config, "--json"])
    checks.append(time.perf_counter() - start)
grown = peak() - before  # before the limit's own tables
for _ in range(rounds):
    start = time.perf_counter()
    made = spec.rope_cache(rows, dtype=np.float32)
    makes.append(time.perf_counter() - start)
    del made
print(json.dumps({"check": checks, "make": makes, "grown_kib": grown, "code": code}),
      file=sys.stderr)
"""


def _run(code: str, *args) -> dict:
    code = code.replace("{peak}", _PEAK)
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 1):
        raise SystemExit(f"the case failed:\n{result.stderr}")
    lines = (result.stdout + "\n" + result.stderr).strip().splitlines()
    return json.loads(next(line for line in reversed(lines) if line.startswith("{")))


def _row(name: str, rows: int, times: list, makes: list, grown_kib: int, extra: str) -> str:
    ratios = [t / m for t, m in zip(times, makes)]
    return (
        f"| {name} | {rows:,} | {statistics.median(times):.3g} s | "
        f"{statistics.median(ratios):.1f}x | {grown_kib / 1024:,.0f} MiB | {extra} |"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[131072])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-audit", action="store_true", help="skip the vLLM audit rows")
    args = parser.parse_args(argv)
    print("| what | rows | median time | x making the exact table | memory grown | note |")
    print("|---|---|---|---|---|---|")
    for rows in args.rows:
        if not args.no_audit:
            found = _run(_AUDIT, rows, args.rounds, json.dumps(CONFIG))
            counted = found["compared"]
            note = f"{found['verdict']}, " + (
                f"{counted:,} entries compared" if counted else "entries compared not said"
            )
            note += f"; the cache {found['cache_mib']:,.0f} MiB"
            print(_row("vLLM audit", rows, found["audit"], found["make"], found["grown_kib"], note))
        with tempfile.TemporaryDirectory() as folder:
            import numpy as np

            import sinpe

            spec = sinpe.rope_config({**CONFIG, "max_position_embeddings": rows})
            path = os.path.join(folder, "cache.npy")
            np.save(path, spec.rope_cache(rows, dtype=np.float32))
            config = os.path.join(folder, "config.json")
            with open(config, "w", encoding="utf-8") as stream:
                json.dump({**CONFIG, "max_position_embeddings": rows}, stream)
            size = os.path.getsize(path) / 2**20
            found = _run(_FILE, path, config, args.rounds, rows)
            note = f"exit {found['code']}; the file {size:,.0f} MiB, memory-mapped"
            print(
                _row("sinpe check", rows, found["check"], found["make"], found["grown_kib"], note)
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
