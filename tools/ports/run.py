"""Run the RoPE conformance kit (sinpe.testing) over the corpus for one port.

    /work/ports/NAME/venv/bin/python tools/ports/run.py NAME [--only SUBSTRING] [--out FILE]

Runs in the port's own venv (tools/ports/setup.sh NAME), where sinpe is installed from this
checkout. The glue, tools/ports/NAME.py, gives ``candidate(config) -> candidate`` (a
``(cos, sin)`` pair, a callable ``positions -> (cos, sin)``, ``sinpe.testing.Rotates`` or
``InvFreq``), and says which configs the port takes: ``takes(config) -> None or why not``, or
``FAMILIES`` (model types), else every config. A table's layout is the candidate's
``layout`` attribute or the glue's ``LAYOUT``. What is not the use of the kit (CPU stubs, import
shims, the port's argument mapping) sits in the port's helper, tools/ports/_NAME.py (hyphens as
underscores), loaded with the shared _runs.py before the glue. Every corpus config is listed in
docs/ports/NAME.json: its verdict and explanation, why the port refused it, or that the port
does not take its family."""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import inspect
import json
import os
import platform
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# the glue files are named after their ports (torchtune.py, lmdeploy.py): never import from here
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != HERE]

# the port's own package, for the version recorded beside its verdicts
DISTRIBUTIONS = {
    "transformer-lens": "transformer-lens",
    "mlx-vlm": "mlx-vlm",
    "torchtune": "torchtune",
    "lmdeploy": "lmdeploy",
    "megatron-core": "megatron-core",
    "maxtext": "maxtext",
    "exllamav3": "exllamav3",
}


def load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def taken(glue, entry) -> str | None:
    """None where the port takes this config, else why not."""
    if hasattr(glue, "takes"):
        return glue.takes(entry.config)
    families = getattr(glue, "FAMILIES", None)
    if families is not None and entry.family not in families:
        return f"{entry.family} is not a family this port builds"
    return None


def one(glue, entry, check_rope) -> dict:
    row = {
        "config": entry.name,
        "family": entry.family,
        "rope_type": entry.rope_type,
        "form": entry.form,
    }
    if entry.refused is not None:
        return {**row, "outcome": "sinpe refuses", "reason": entry.refused}
    why = taken(glue, entry)
    if why is not None:
        return {**row, "outcome": "not taken", "reason": why}
    started = time.perf_counter()
    try:
        if (
            entry.layer_type is not None
            and "layer_type" in inspect.signature(glue.candidate).parameters
        ):
            candidate = glue.candidate(entry.config, layer_type=entry.layer_type)
        else:  # a port with one RoPE for every layer: that one, judged for each layer type
            candidate = glue.candidate(entry.config)
    except (
        Exception
    ) as exc:  # the port's own refusal (or its builder failing): recorded, not raised
        return {
            **row,
            "outcome": "port refused",
            "reason": f"{type(exc).__name__}: {exc}",
            "where": _where(exc),
        }
    layout = getattr(candidate, "layout", None) or getattr(glue, "LAYOUT", None)
    try:
        report = check_rope(candidate, entry, layout=None if hasattr(candidate, "fn") else layout)
    except Exception as exc:
        return {
            **row,
            "outcome": "failed when judged",
            "reason": f"{type(exc).__name__}: {exc}",
            "where": _where(exc),
        }
    row = {
        **row,
        "outcome": report.verdict,
        "explanation": report.explanation,
        "layout": layout,
        "lengths": list(report.lengths),
        "notes": list(report.notes),
    }
    pairing = [f for f in report.judgment.findings if f.code == "rotation"]
    if pairing:
        # a port that rotates other pairs than the config's module (torchtune, MaxText: their
        # checkpoint converters permute q and k to match): its values judged apart from the pairing
        values = check_rope(rotation_table(candidate, entry), entry)
        row.update(
            outcome=values.verdict,
            explanation=values.explanation,
            pairing=pairing[0].text,
            with_pairing={"verdict": report.verdict, "explanation": report.explanation},
        )
    return {**row, "seconds": round(time.perf_counter() - started, 2)}


def rotation_table(candidate, entry):
    """``positions -> (cos, sin)`` read from a ``Rotates`` in its own stated layout."""
    import numpy as np

    import sinpe

    width = sinpe.rope_config(entry.config, layer_type=entry.layer_type).head_dim
    h = width // 2

    def table(positions):
        q = np.zeros((len(positions), width), np.float32)
        columns = (
            (slice(0, h), slice(h, width))
            if candidate.layout == "half"
            else (slice(0, None, 2), slice(1, None, 2))
        )
        q[:, columns[0]] = 1.0
        out = candidate.fn(q, np.asarray(positions, np.int64))
        out = np.asarray(out.detach().cpu() if hasattr(out, "detach") else out, dtype=np.float32)
        return out[:, columns[0]], out[:, columns[1]]

    return table


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno} ({frames[-1].name})" if frames else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--only", help="only configs whose name contains this")
    parser.add_argument("--out", help="default docs/ports/NAME.json")
    args = parser.parse_args(argv)
    load("_runs", os.path.join(HERE, "_runs.py"))
    helper = "_" + args.name.replace("-", "_")  # the port's own helper: CPU stubs, its arguments
    if os.path.exists(os.path.join(HERE, f"{helper}.py")):
        load(helper, os.path.join(HERE, f"{helper}.py"))
    glue = load("sinpe_port_" + args.name.replace("-", "_"), os.path.join(HERE, f"{args.name}.py"))
    import sinpe
    from sinpe.testing import check_rope, configs

    rows = []
    for entry in configs():
        if args.only and args.only not in entry.name:
            continue
        row = one(glue, entry, check_rope)
        rows.append(row)
        said = row.get("explanation") or row.get("reason", "")
        print(f"{row['config']:<55} {row['outcome']:<18} {said}"[:240], flush=True)
    dist = DISTRIBUTIONS.get(args.name, args.name)
    result = {
        "port": args.name,
        "version": importlib.metadata.version(dist),
        "sinpe": sinpe.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "glue": f"tools/ports/{args.name}.py",
        "results": rows,
    }
    out = args.out or os.path.join(HERE, "..", "..", "docs", "ports", f"{args.name}.json")
    if not args.only or args.out:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    counts: dict = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
