"""The scripts run end to end (once, one round), so they cannot rot. Their timings and
exit codes are not judged here: CI machines are noisy; read them on a quiet machine."""

import pytest

import sinpe
from sinpe._tables import backends
from sinpe._tables.threads import usable_cores

THREADED = sinpe.THREAD_RUNTIME != "none"

pytestmark = pytest.mark.skipif("cython" not in backends.BACKENDS, reason="kernel not built")


def test_ratios_prints_every_target(capsys):
    import ratios

    assert ratios.main(["--rounds", "1"]) in (0, 1)
    out = capsys.readouterr().out
    out, isa_part = out.split("Instruction sets, one thread")
    out, check_part = out.split("Correct rounding (fill.h")
    rows = [line for line in out.splitlines() if line.startswith("| ") and " x " in line]
    assert len(rows) == len(ratios.TARGETS) + len(ratios.HALF_TARGETS)
    assert all(("ok" in row) != ("MISSED" in row) for row in rows)
    # the correct-rounding table: every case, a ratio, a verdict (the NumPy rows stated)
    checks = [line for line in check_part.splitlines() if line.startswith("| ") and " x " in line]
    assert len(checks) == len(ratios.check_cases())
    for row, (_, _, _, backend) in zip(checks, ratios.check_cases()):
        assert row.count("**") == 2
        if backend == "cython":
            assert ("ok" in row) != ("MISSED" in row)
        else:
            assert "stated" in row
    # the instruction-set table: every row, a ratio per set, a verdict
    isa_rows = [line for line in isa_part.splitlines() if line.startswith("| ") and " / " in line]
    assert len(isa_rows) == len(ratios._isa_rows())
    assert all(("ok" in row) != ("MISSED" in row) for row in isa_rows)
    assert all(row.count("**") == 2 * (row.count("|") - 3) for row in isa_rows)
    if THREADED:  # every row carries the 2-core scaling measured in its own rounds
        assert "2-core scaling:" in out
        plain = rows[: len(ratios.TARGETS)]
        assert all(row.split("|")[7].strip().replace(".", "").isdigit() for row in plain)


@pytest.mark.skipif(usable_cores() < 2, reason="gil.py needs 2 cores")
def test_gil_script_reports_both_timings(capsys):
    import gil

    assert gil.main(["--rounds", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert "one after the other" in out and "two Python threads" in out


@pytest.mark.skipif(usable_cores() < 2, reason="threads.py needs 2 cores")
def test_threads_script_prints_every_row(capsys):
    import threads

    assert threads.main(["--rounds", "1", "--first-calls", "1", "--signal-runs", "1"]) in (0, 1)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "us |" in line]
    assert len(rows) == len(threads.BUSY_ROWS) + len(threads.QUIET_SIZES)
    assert all(("ok" in row) != ("MISSED" in row) for row in rows)
    for what in ("two Python threads", "first 2048 x 512 call", "Ctrl-C during a long rope_at"):
        assert what in out


def test_first_call_script_prints_every_contender(capsys):
    import first_call

    assert first_call.main(["--runs", "1", "--shapes", "64x32"]) == 0
    out = capsys.readouterr().out
    for name in ("np.ones f64", "sinpe f64", "sinpe f32", "textbook f64"):
        assert f"64x32  {name}" in out


def test_rope_ratios_prints_every_row_and_the_drift(capsys):
    import rope_ratios

    assert rope_ratios.main(["--rounds", "1"]) in (0, 1)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| rope ")]
    assert len(rows) == 4 and all(("ok" in row) != ("MISSED" in row) for row in rows)
    assert (
        sum(
            line.startswith("| fairseq") or line.startswith("| hf-marian")
            for line in out.splitlines()
        )
        == 2
    )
    drift = [
        line
        for line in out.splitlines()
        if line.split("|")[1:2] and line.split("|")[1].strip().isdigit()
    ]
    assert [int(line.split("|")[1]) for line in drift] == rope_ratios.DRIFT_POSITIONS
    for line in drift:  # sinpe's float32 error stays at float32 rounding
        assert float(line.split("|")[3]) <= 6e-8


def torch_script_output(main, argv, capsys) -> str | None:
    """A torch script's output; ``None`` when torch or transformers is missing, after
    checking that the script said so and measured nothing."""
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        assert "nothing measured" in out
        return None
    return out


def test_torch_modules_script_runs(capsys):
    """Without torch and transformers it says so; with them it prints every row."""
    import torch_modules

    out = torch_script_output(torch_modules.main, ["--rounds", "1"], capsys)
    if out is None:
        return
    for what in ("forward (1, 8192)", "131072 x 128 float32 tables", "peak memory", "logit change"):
        assert what in out


def test_torch_compiled_script_runs(capsys):
    """Without torch and transformers it says so; with them it prints every row."""
    import torch_compiled

    out = torch_script_output(torch_compiled.main, ["--rounds", "3"], capsys)
    if out is None:
        return
    rows = [line for line in out.splitlines() if line.startswith("| ") and "us |" in line]
    assert len(rows) == 4, out
    for row in rows:
        assert float(row.split("**")[1]) > 0


def test_engines_combines_the_legs_records(tmp_path, capsys):
    import json

    import engines

    rows = [{"offset": 0, "error": 3.1e-7}, {"offset": 100000, "error": 4.7e-4}]
    record = {"engine": "llama.cpp", "version": "0.3.36", "note": "F32 KV cache", "rows": rows}
    (tmp_path / "llama-cpp.json").write_text(json.dumps(record))
    record = {"engine": "MLX", "version": "0.32.4", "note": "", "rows": rows[1:]}
    (tmp_path / "mlx.json").write_text(json.dumps(record))
    record = {"engine": "vLLM", "version": "0.32.0", "rows": rows, "model": "another model"}
    (tmp_path / "vllm.json").write_text(json.dumps(record))
    assert engines.main([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "the shift model:" and lines[2] == "| engine | version | 0 | 100,000 |"
    assert lines[4] == "| llama.cpp (1) | 0.3.36 | 3.1e-07 | 0.00047 |"
    assert lines[5] == "| MLX | 0.32.4 |  | 0.00047 |"
    assert lines[7] == "1. F32 KV cache"
    assert lines[9] == "another model:"  # another model: a table of its own, never a row here
    assert lines[13] == "| vLLM | 0.32.0 | 3.1e-07 | 0.00047 |"
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not an engine record"):
        engines.main([str(tmp_path)])


def test_fixed_cost_prints_every_row(capsys):
    import fixed_cost

    assert fixed_cost.main(["--rounds", "1"]) in (0, 1)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " x " in line]
    assert len(rows) == 4 * len(fixed_cost.SHAPES)
    assert sum(("ok" in row) != ("MISSED" in row) for row in rows) == 2


def test_load_cost_script_runs(capsys):
    """Without the engines it says so; the --fix rows (a small model) are always there."""
    import load_cost

    assert load_cost.main(["--engine", "vllm", "sglang", "--fix-mib", "1", "--rounds", "1",
                           "--positions", "4096"]) in (0, 1)  # fmt: skip
    out = capsys.readouterr().out
    assert "| sinpe check model.onnx --fix OUT |" in out and "| cp of the same files |" in out
    for engine in ("vllm", "sglang"):
        if not load_cost.available(engine):
            assert f"| {engine} | | | not importable here: nothing measured" in out
            continue
        rows = [line for line in out.splitlines() if line.startswith(f"| {engine} | 4,096 |")]
        assert [row.split("|")[3].strip() for row in rows] == ["off", "audit", "exact"]
        assert all("all judged" in row for row in rows[1:])
