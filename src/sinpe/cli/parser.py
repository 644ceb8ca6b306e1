"""The ``sinpe`` argument parser: usage errors in one line (with ``--json``, one refusal
object too), every option's default in its help."""

from __future__ import annotations

import argparse

from .._version import __version__
from .arguments import UsageError
from .bench import add_bench_arguments
from .check import add_check_arguments
from .conformance import add_conformance_arguments
from .engines import add_engines_arguments
from .info import add_info_arguments
from .plot import add_plot_arguments
from .rope import add_rope_arguments
from .table import add_table_arguments

# each subcommand's module adds its parser and arguments, in the order --help lists them
_SUBCOMMANDS = (
    add_table_arguments,
    add_rope_arguments,
    add_check_arguments,
    add_engines_arguments,
    add_conformance_arguments,
    add_plot_arguments,
    add_bench_arguments,
    add_info_arguments,
)


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are ``UsageError``: ``main`` says them as every
    other error (one line on stderr, exit 2; with ``--json``, one refusal object on stdout)."""

    def error(self, message):  # argparse's documented hook: it must not return
        raise UsageError(message)


def asks_for_json(argv) -> bool:
    """Whether a command line asks for JSON: ``--json`` (or a prefix of it argparse would
    take, ``--js``) before any ``--``; read without the parser, which may refuse the line."""
    for arg in argv:
        if arg == "--":
            return False
        name = str(arg).partition("=")[0]
        if len(name) >= 3 and "--json".startswith(name):
            return True
    return False


class HelpWithDefaults(argparse.HelpFormatter):
    """Each option's default, unless its help says it (``None`` defaults say what happens)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default:" in text or action.default in (None, argparse.SUPPRESS):
            return text
        if action.default is False:
            return text + " (default: off)"
        return text + " (default: %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``sinpe`` and its subcommands; ``args.command`` names the one given."""
    parser = Parser(
        prog="sinpe",
        description="Exact positional tables (sinusoidal and rotary, every Hugging Face rope "
        "type), and whether a cache, a model file or an engine runs a model's RoPE as its "
        "config says.",
    )
    parser.add_argument("--version", action="version", version=f"sinpe {__version__}")
    sub = parser.add_subparsers(
        dest="command", parser_class=Parser, required=True, metavar="COMMAND"
    )

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=text,
            description=text,
            formatter_class=HelpWithDefaults,
        )

    for add_arguments in _SUBCOMMANDS:
        add_arguments(command)
    return parser
