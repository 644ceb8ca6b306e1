"""The ``sinpe`` command: ``table``, ``rope``, ``check``, ``engines``, ``plot``, ``bench``,
``info``.

``main`` is the entry point; ``parser.py`` reads the arguments, and each subcommand is the
module of its name.
"""

from __future__ import annotations

import os
import sys

from .. import _environment
from . import bench, check, engines, info, plot, rope, table
from .parser import build_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sinpe`` console script and ``python -m sinpe``."""
    try:
        wrong = _environment.problems()  # read again: a program may set them after import
        if wrong:
            raise ValueError(wrong[0])
        args = build_parser().parse_args(argv)
        handler = {
            "table": table.table_command,
            "rope": rope.rope_command,
            "check": check.check_command,
            "engines": engines.engines_command,
            "plot": plot.plot_command,
            "bench": bench.bench_command,
            "info": info.info_command,
        }[args.command]
        return handler(args)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT
        print("sinpe: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sinpe table ... | head`: the reader left; end quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the exit's flush does not fail again
        return 0
    except MemoryError as exc:
        print(f"sinpe: error: out of memory{f' ({exc})' if str(exc) else ''}", file=sys.stderr)
        return 2
    except (TypeError, ValueError, OSError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"sinpe: error: {text}", file=sys.stderr)
        return 2
