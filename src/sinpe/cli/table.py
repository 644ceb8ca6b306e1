"""``sinpe table``: a sinusoidal table written as ``.npy``, or a preview of it printed."""

from __future__ import annotations

import numpy as np

from .. import conventions
from .._tables import tables as api
from .arguments import DTYPES, SUFFIX_HELP, AddCommand
from .output import BITS_NOTE, announce, output_path, savable, write_atomically


def add_table_arguments(command: AddCommand) -> None:
    """The ``table`` subcommand and its arguments."""
    table = command("table", "write a sinusoidal table (.npy) or print a preview")
    table.add_argument(
        "seq_len", type=int, help="rows: positions offset .. offset + seq_len - 1 (required)"
    )
    table.add_argument("d_model", type=int, help="columns (required)")
    table.add_argument("--offset", type=int, default=0, help="position of the first row")
    table.add_argument("--base", type=float, default=10000.0, help="the frequencies' base")
    table.add_argument("--dtype", choices=DTYPES, default="float64", help="the values' dtype")
    table.add_argument(
        "--convention",
        default="vaswani",
        help=f"column order and frequencies: one of {', '.join(conventions.names())}",
    )
    table.add_argument(
        "-o",
        "--output",
        help=f"write it with numpy.save to this file{SUFFIX_HELP % '.npy'} (default: print a "
        "preview)",
    )


def table_command(args) -> int:
    """``sinpe table``: the table written to ``-o``, or its shape and a preview printed."""
    path = None if args.output is None else output_path(args.output, ".npy")  # said first
    table = api.sinusoidal_positional_encoding(
        args.seq_len,
        args.d_model,
        offset=args.offset,
        base=args.base,
        dtype=args.dtype,
        convention=args.convention,
    )
    if path is not None:
        announce(path, table.nbytes, f"{args.seq_len} x {args.d_model} {table.dtype}")
        write_atomically(path, lambda file: np.save(file, savable(table)))
        note = BITS_NOTE if table.dtype.name == "bfloat16" else ""
        print(f"wrote {path}: shape {table.shape}, {table.dtype}{note}")
        return 0
    print(
        f"shape {table.shape}, dtype {table.dtype}, backend {api.BACKEND}, "
        f"convention {args.convention}, offset {args.offset}"
    )
    if table.dtype.name == "bfloat16":  # NumPy prints ml_dtypes' values unaligned, 0 as "0"
        table = table.astype(np.float32)  # exact: every bfloat16 is a float32
    with np.printoptions(precision=6, suppress=True, edgeitems=3, threshold=50, linewidth=100):
        print(table)
    return 0
