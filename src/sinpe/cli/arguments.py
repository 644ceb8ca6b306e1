"""What several subcommands' arguments share: the dtype choices, the ``-o`` suffix rule's help,
and the model's config given as an argument or with ``--config``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

# parser.py's maker of a subcommand's parser, from its name and its one-line help
AddCommand = Callable[[str, str], argparse.ArgumentParser]

DTYPES = ["float64", "float32", "float16", "bfloat16"]
SUFFIX_HELP = " (%s is appended unless the name ends with it; a device is written as is)"


class UsageError(ValueError):
    """A wrong use of the command's arguments, argparse's own included: one line on stderr
    and exit 2, as a refused input is (with ``--json``, one refusal object on stdout)."""


def config_argument(args) -> str:
    """The config.json given once: as the ``config`` argument or with ``--config``."""
    given = [c for c in (args.config, args.config_flag) if c is not None]
    if len(given) != 1:
        raise UsageError(
            "pass the model's config.json once: as an argument or with --config"
            + ("" if given else " (it is required)")
        )
    return given[0]
