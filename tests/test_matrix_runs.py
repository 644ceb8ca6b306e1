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


def test_a_run_footnote_takes_the_tables_place_where_none_of_its_own_fits():
    """A run line that failed as a table line did (the same builder or converter refusal)
    gets that table entry's place; a run entry of its own comes first; an engine or a family
    the table entry does not name gets none."""
    failed = _run("failed", (), ["its builder raised NotImplementedError: not supported"])
    run = {
        "engines": ["onnxruntime-genai", "vllm"],
        "rows": [
            {
                "config": "tests/data/configs/qwen2.json",
                "family": "qwen2",
                "lines": [
                    _line("onnxruntime-genai", "failed", failed),
                    _line("vllm", "failed", failed),
                ],
            }
        ],
    }
    table = [
        ("onnxruntime-genai", "not supported", "`builder.py`, `create_model`: other", "llama"),
        ("onnxruntime-genai", "not supported", "`builder.py`, `create_model`: its dispatch"),
    ]
    text = "\n".join(_module().section(run, table))
    assert "r1. onnxruntime-genai on `qwen2.json`: failed: its builder raised " in text
    assert "Where: `builder.py`, `create_model`: its dispatch." in text
    assert text.count("Where:") == 1  # vLLM's line: no place of its own, none of the table's
    assert "Where:" not in "\n".join(_module().section(run))
    # a run entry of its own (WHERE_RUN) comes before the table's
    routed = _run("failed", (), ["raised AssertionError at fused_moe/router/cpu_router.py"])
    run["engines"], run["rows"][0]["lines"] = ["vllm"], [_line("vllm", "drift", routed)]
    text = "\n".join(_module().section(run, [("vllm", "cpu_router.py", "`x.py`, `f`: table")]))
    assert "Where: `model_executor/layers/fused_moe/router/cpu_router.py`" in text


def test_the_runtime_table_says_how_long_its_runs_took():
    text = "\n".join(_module().section({**RUN, "run_seconds": 6375.0}))
    assert "Run for all 1 families in 6375 s." in text
    partial = {**RUN, "rows": [*RUN["rows"], {**RUN["rows"][0], "lines": []}]}
    text = "\n".join(_module().section({**partial, "run_seconds": 10.0}))
    assert "Run so far for 1 of the 2 families, in 10 s" in text


def test_a_run_without_run_lines_has_no_runtime_table():
    plain = {**RUN, "rows": [{**RUN["rows"][0], "lines": [_line("transformers", "drift")]}]}
    assert _module().section(plain) == []


def test_tools_matrix_renders_the_runtime_table_after_the_engines(tmp_path):
    """A run with run lines (``tools/matrix.py --run``), rendered from its JSON (``--merge``):
    the engines' table, then the runtime table; a part without run lines has none."""
    import json
    import subprocess
    import sys

    import sinpe

    tool = TOOLS / "matrix.py"
    lines = []
    for engine, table, run in [
        ("transformers", "drift", _run("drift", [(0, 1e-6), (100_000, 2.5e-3)])),
        ("vllm", "drift", _run("mismatch", [(0, 1.1)], ["at p = 0 it breaks"])),
    ]:
        line = _line(engine, table, run)
        line.update(largest=0.009, reasons=[], notes=[], how="", python="", verdict=table)
        lines.append(line)
    part = {
        "sinpe": sinpe.__version__,
        "engines": ["transformers", "vllm"],
        "configs": ["tests/data/configs/llama-3.1-8b.json"],
        "pythons": [],
        "run": True,
        "shard": [1, 1],
        "rows": [
            {
                "config": "tests/data/configs/llama-3.1-8b.json",
                "family": "llama-3.1-8b",
                "length": 131072,
                "lines": lines,
                "notes": [],
                "seconds": 1.0,
            }
        ],
        "seconds": 1.0,
    }
    (tmp_path / "part.json").write_text(json.dumps(part))
    out = tmp_path / "page.md"
    done = subprocess.run(
        [sys.executable, str(tool), "--merge", str(tmp_path / "part.json"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.index("| llama-3.1-8b | 131,072 | drift (0.009) |") < page.index(
        "## What each engine computes"
    )
    assert "| llama-3.1-8b | drift (0.0025 at 100,000) | mismatch (1.1 at 0) [r1] |" in page
    assert "the table line says drift" in page
