"""``sinpe conformance MODULE:CALLABLE``: a port's RoPE judged on every config of sinpe's
corpus (``sinpe.testing``), for those who do not use pytest. The callable takes a config
dict (and ``layer_type=`` for a config with a RoPE per layer type) and returns a candidate
``sinpe.testing.check_rope`` takes. One line per config; exit 1 on any mismatch."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .arguments import AddCommand, UsageError


def add_conformance_arguments(command: AddCommand) -> None:
    """The ``conformance`` subcommand and its arguments."""
    parser = command(
        "conformance",
        "judge a port's RoPE on every config of sinpe's corpus: MODULE:CALLABLE takes a "
        "config dict and returns a candidate (cos/sin arrays, InvFreq, a callable, Rotates)",
    )
    parser.add_argument(
        "target",
        metavar="MODULE:CALLABLE",
        help="the port's glue: an importable module, or a file's path (glue.py:CALLABLE) "
        "(required)",
    )
    parser.add_argument(
        "--corpus",
        default="all",
        help="all, a rope type (yarn, longrope, llama3, ...), defaults (transformers' default "
        "configs) or a folder of config.json files",
    )
    parser.add_argument(
        "--layout",
        choices=("half", "interleaved"),
        default=None,
        help="where each pair's cos/sin sits in the candidate's tables (default: the "
        "callable's layout attribute, else the glue module's LAYOUT, else half)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _target(text: str):
    module_name, sep, name = text.rpartition(":")
    if not sep or not module_name or not name:
        raise UsageError(f"MODULE:CALLABLE must name a module and a callable, got {text!r}")
    if module_name.endswith(".py"):  # a glue file by its path (a name no import could take)
        module = _from_file(module_name)
    else:
        sys.path.insert(0, os.getcwd())  # as python -m does: the glue may sit beside the caller
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(f"cannot import {module_name!r}: {exc}") from None
        finally:
            sys.path.pop(0)
    found: object = module
    for part in name.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise ValueError(f"{text!r} is not a callable")
    return module, found


def _from_file(path: str):
    """The glue file at ``path`` run as a module of its own (``torchtune.py`` beside the
    port would shadow it as a module name; ``megatron-core.py`` is none). Its folder goes last
    on the path, so that a helper module beside it imports (``_exllamav3``) while an installed
    package of a glue's name still wins over the glue."""
    import importlib.util

    if not os.path.isfile(path):
        raise ValueError(f"glue file {path!r} is not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location("_sinpe_conformance_glue", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {path!r} as a module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from None
    return module


def _one(make, entry, layout) -> dict:
    from ..testing import Rotates, check_rope

    if entry.refused is not None:
        return {"config": entry.name, "verdict": "refused", "explanation": entry.refused}
    try:
        candidate = (
            make(entry.config, layer_type=entry.layer_type)
            if entry.layer_type
            else make(entry.config)
        )
    except Exception as exc:  # the port's own refusal or failure: said, never hidden
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {"config": entry.name, "verdict": "error", "explanation": f"the port raised {text}"}
    try:
        stated = None if isinstance(candidate, Rotates) else layout  # a Rotates states its own
        report = check_rope(candidate, entry, layout=stated)
    except (TypeError, ValueError) as exc:
        return {"config": entry.name, "verdict": "error", "explanation": " ".join(str(exc).split())}
    return report.as_json()


def conformance_command(args: argparse.Namespace):
    """``sinpe conformance``: one line per config, or with ``--json`` the report as one
    object for ``main`` to print; exit 1 on any mismatch or error of the port, else 0."""
    from ..testing.corpus import select_corpus

    module, make = _target(args.target)
    layout = args.layout or getattr(make, "layout", None) or getattr(module, "LAYOUT", None)
    entries = select_corpus(args.corpus)
    rows = [_one(make, entry, layout) for entry in entries]
    counts: dict = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    failed = counts.get("mismatch", 0) + counts.get("error", 0)
    exit_code = 1 if failed else 0
    if args.json:
        return {"target": args.target, "corpus": args.corpus, "counts": counts,
                "configs": rows, "exit_code": exit_code}  # fmt: skip
    width = max((len(r["config"]) for r in rows), default=10)
    for row in rows:
        print(f"{row['config']:<{width}}  {row['verdict']:<8}  {row['explanation']}")
    print(", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())))
    return exit_code
