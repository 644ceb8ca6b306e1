"""docs/matrix.md's runtime table (tools/matrix_runs.py) from a run's JSON: a cell per family
and engine with the run line's verdict and its distance at the farthest p; a footnote where
the line says more, and wherever the run line and the table line disagree."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _module():
    spec = importlib.util.spec_from_file_location("_matrix_runs", TOOLS / "matrix_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(engine, table, run=None, name=None):
    return {
        "engine": engine,
        "name": name or engine,
        "version": "1.0",
        "verdict": table,
        "run": run,
    }


def _run(verdict, distances=(), reasons=(), notes=()):
    rows = [{"p": p, "distance": d, "allowed": 1.0} for p, d in distances]
    return {"verdict": verdict, "distances": rows, "reasons": list(reasons), "notes": list(notes)}


RUN = {
    "engines": ["transformers", "mlx-lm", "sglang", "vllm"],
    "rows": [
        {
            "config": "tests/data/configs/qwen2.json",
            "family": "qwen2",
            "lines": [
                _line("transformers", "drift", _run("drift", [(0, 1e-6), (100_000, 2.5e-3)])),
                _line("mlx-lm", "match", _run("mismatch", [(0, 1.5)], ["at p = 0 it breaks"])),
                _line("sglang", "drift", _run("unchecked", (), ["no model runner here"])),
                _line("vllm", "not installed", _run("not installed")),
            ],
        }
    ],
}


def test_the_runtime_table_gives_each_cell_and_footnotes_each_disagreement():
    lines = _module().section(RUN)
    text = "\n".join(lines)
    assert lines[0] == "## What each engine computes"
    (row,) = [line for line in lines if line.startswith("| qwen2 |")]
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    assert cells[0] == "drift (0.0025 at 100,000)"  # agrees with its table line: no note
    assert cells[1] == "mismatch (1.5 at 0) [r1]"
    assert cells[2] == "unchecked [r2]"
    assert cells[3] == "not installed"
    assert (
        "r1. mlx-lm on `qwen2.json`: mismatch (1.5 at 0): at p = 0 it breaks; the table "
        "line says match." in text
    )
    assert (
        "r2. sglang on `qwen2.json`: unchecked: no model runner here; the table line says "
        "drift." in text
    )


def test_a_run_without_run_lines_has_no_runtime_table():
    plain = {**RUN, "rows": [{**RUN["rows"][0], "lines": [_line("transformers", "drift")]}]}
    assert _module().section(plain) == []
