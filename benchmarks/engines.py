"""How far each engine is from exact: the shift test's rows (tests/shift.py), which each CI leg
writes to ``$SINPE_ENGINES_OUT/<engine>.json``, combined into docs/engines.md's table.

    python benchmarks/engines.py DIRECTORY      # prints the Markdown table

A row is an engine; a column, the offset ``p`` of the 64 positions ``p .. p + 63``; a cell, the
largest distance of the engine's log-probabilities from the float64 exact reference there
(which gives the same log-probabilities at every offset: RoPE is relative). Rows of another
model or measure (each record's ``model``) go in a table of their own, never side by side."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(directory) -> list:
    """The engines' records, in a stable order (by name)."""
    found = []
    for path in sorted(Path(directory).glob("*.json")):
        data = json.loads(path.read_text())
        if not {"engine", "version", "rows"} <= set(data):
            raise ValueError(f"{path}: not an engine record (engine, version, rows)")
        found.append(data)
    if not found:
        raise ValueError(f"{directory}: no engine records (*.json)")
    return sorted(found, key=lambda record: record["engine"].lower())


def tables(records: list) -> str:
    """One table per model and measure, each headed by it."""
    groups: dict = {}
    for record in records:
        groups.setdefault(record.get("model", "the shift model"), []).append(record)
    return "\n\n".join(f"{model}:\n\n{table(group)}" for model, group in groups.items())


def table(records: list) -> str:
    """The Markdown table: one row per engine, one column per offset any engine has."""
    offsets = sorted({row["offset"] for record in records for row in record["rows"]})
    head = "| engine | version | " + " | ".join(f"{p:,}" for p in offsets) + " |"
    lines = [head, "|" + " --- |" * (len(offsets) + 2)]
    notes: dict = {}  # a note's words -> its number
    for record in records:
        errors = {row["offset"]: row["error"] for row in record["rows"]}
        cells = [f"{errors[p]:.2g}" if p in errors else "" for p in offsets]
        name = record["engine"]
        if record.get("note"):
            name += f" ({notes.setdefault(record['note'], len(notes) + 1)})"
        lines.append(f"| {name} | {record['version']} | " + " | ".join(cells) + " |")
    lines += [""] * bool(notes) + [f"{number}. {note}" for note, number in notes.items()]
    return "\n".join(lines)


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    print(tables(load(argv[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
