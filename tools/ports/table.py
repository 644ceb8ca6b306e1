"""The "ports" table of docs/ports.md from docs/ports/*.json (tools/ports/run.py's output):
one row per corpus family, one column per port, each cell the verdicts of that family's
configs (a count where several agree) or why the port did not judge them.

    python tools/ports/table.py [PORT ...]     (prints Markdown)"""

from __future__ import annotations

import json
import os
import sys

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "ports")
ORDER = [
    "transformer-lens",
    "mlx-vlm",
    "torchtune",
    "lmdeploy",
    "megatron-core",
    "maxtext",
    "exllamav3",
]
SHORT = {
    "match": "match",
    "drift": "drift",
    "mismatch": "**mismatch**",
    "port refused": "refused",
    "failed when judged": "failed",
    "not taken": "",
    "sinpe refuses": "",
}


def cell(rows: list) -> str:
    counts: dict = {}
    for row in rows:
        word = SHORT.get(row["outcome"], row["outcome"])
        if word:
            counts[word] = counts.get(word, 0) + 1
    if not counts:
        return "·"
    return ", ".join(word if n == 1 else f"{word} ×{n}" for word, n in counts.items())


def table(ports: list | None = None) -> list:
    """The ports table's Markdown lines, from the ports' JSON files present."""
    found = {}
    for port in ports or ORDER:
        path = os.path.join(DOCS, f"{port}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                found[port] = json.load(f)
    if not found:
        return []
    families: dict = {}
    for port, data in found.items():
        for row in data["results"]:
            if row["outcome"] != "sinpe refuses":
                families.setdefault(row["family"] or "(none)", {}).setdefault(port, []).append(row)
    names = " | ".join(f"{p} {d['version']}" for p, d in found.items())
    lines = [
        f"| family (configs) | {names} |",
        "|---|" + "---|" * len(found),
    ]
    for family in sorted(families):
        by_port = families[family]
        n = max(len(rows) for rows in by_port.values())
        lines.append(
            f"| {family} ({n}) | " + " | ".join(cell(by_port.get(p, [])) for p in found) + " |"
        )
    return lines


def main(ports: list) -> int:
    print("\n".join(table(ports)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
