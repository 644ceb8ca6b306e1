"""The ``sinpe`` command: ``table``, ``rope``, ``check``, ``engines``, ``conformance``, ``plot``,
``bench``, ``info``.

``main`` is the entry point; ``parser.py`` reads the arguments, and each subcommand is the
module of its name. A command given ``--json`` returns its one object, which ``main`` alone
prints: a verdict, or a refusal (``{"verdict": "refused", ...}``) for any error, so that its
stdout is exactly one strict JSON object on every path but Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
import traceback

from .. import _environment
from .._files import writing
from .._verdict.verdict import dumps, refusal
from . import bench, check, conformance, engines, info, plot, rope, table
from .parser import asks_for_json, build_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sinpe`` console script and ``python -m sinpe``."""
    argv = sys.argv[1:] if argv is None else argv
    as_json = asks_for_json(argv)  # what a usage error is said as, before the parser says it
    try:
        wrong = _environment.problems()  # read again: a program may set them after import
        if wrong:
            raise ValueError(wrong[0])
        args = build_parser().parse_args(argv)
        as_json = bool(getattr(args, "json", False))
        handler = {
            "table": table.table_command,
            "rope": rope.rope_command,
            "check": check.check_command,
            "engines": engines.engines_command,
            "conformance": conformance.conformance_command,
            "plot": plot.plot_command,
            "bench": bench.bench_command,
            "info": info.info_command,
        }[args.command]
        if not as_json:
            return handler(args)
        with contextlib.redirect_stdout(sys.stderr):  # a library's print must not reach stdout
            report = handler(args)
        print(dumps(report, indent=2))
        return report["exit_code"]
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT
        print("sinpe: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sinpe table ... | head`: the reader left; end quietly
        writing.silence(sys.stdout.fileno())  # so that the exit's flush does not fail again
        return 0
    except MemoryError as exc:
        return _error(f"out of memory{f' ({exc})' if str(exc) else ''}", as_json)
    except (TypeError, ValueError, OSError) as exc:
        return _error(" ".join(str(exc).split()) or type(exc).__name__, as_json)
    except Exception as exc:
        if not as_json:
            raise  # a bug: its traceback, as Python prints it
        traceback.print_exc()  # a bug: its traceback on stderr, and still one JSON object
        text = " ".join(str(exc).split())
        return _error(f"sinpe failed: {type(exc).__name__}: {text} (a bug: please report it)", True)


def _error(text: str, as_json: bool) -> int:
    """An error as one line on stderr (and, with ``--json``, one refusal on stdout): exit 2."""
    if as_json:
        print(dumps(refusal(text), indent=2))
    print(f"sinpe: error: {text}", file=sys.stderr)
    return 2
