"""``sinpe rope``: RoPE cos/sin tables from a model's config.json, written as ``.npz``, or a
summary of the RoPE printed."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._files.caches import DTYPE_MEMBER
from .._rope.config import rope_config
from .._rope.rope import LAYOUTS
from .._rope.rope_types import ROPE_TYPES
from .arguments import DTYPES, SUFFIX_HELP, AddCommand, config_argument
from .output import BITS_NOTE, announce, output_path, savable, write_atomically


def add_rope_arguments(command: AddCommand) -> None:
    """The ``rope`` subcommand and its arguments."""
    rope = command("rope", "RoPE cos/sin tables from a model's config.json (.npz)")
    rope.add_argument(
        "config",
        nargs="?",
        help="a model's config.json, its folder, or a Hugging Face Hub id (or --config; one of "
        "them is required)",
    )
    rope.add_argument(
        "--config", dest="config_flag", metavar="CONFIG", help="the same (default: the argument)"
    )
    rope.add_argument(
        "--seq-len",
        type=int,
        help="rows (default: the config's max_position_embeddings; a file over 64 MiB is "
        "announced before it is written)",
    )
    rope.add_argument("--offset", type=int, default=0, help="position of the first row")
    rope.add_argument(
        "--grid",
        type=int,
        nargs=2,
        metavar=("H", "W"),
        help="for an axial (vision grid) RoPE: tables at the H x W positions (row, column); "
        "required there, refused elsewhere (default: a run of --seq-len rows)",
    )
    rope.add_argument("--layout", choices=LAYOUTS, default="half", help="the tables' column order")
    rope.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="the tables' dtype (float32 here, as engines store them; the API's is float64)",
    )
    rope.add_argument(
        "-o",
        "--output",
        help="write cos, sin, inv_freq, attention_factor (per layer type: cos_<type>, ...) "
        f"with numpy.savez{SUFFIX_HELP % '.npz'} (default: print a summary)",
    )


def rope_command(args) -> int:
    """``sinpe rope``: the arguments checked (the output's name first), then the tables
    written to ``-o``, or each layer type's RoPE summarized."""
    path = None if args.output is None else output_path(args.output, ".npz")  # said first
    if args.offset < 0:
        raise ValueError(f"--offset must be >= 0, got {args.offset}")
    spec = rope_config(config_argument(args))
    layers = _layers(spec)
    rows = _rows(args, spec, layers)
    frequencies = {name: layer.frequencies(rows.length) for name, layer in layers.items()}
    if path is None:
        for name, layer in layers.items():
            _print_layer(name, layer, *frequencies[name])
        print(f"tables: {rows.where}, layout {args.layout}")
        return 0
    _write_tables(path, args, layers, rows, frequencies)
    return 0


# --------------------------------------------------------------------------- the arguments


class _Rows(NamedTuple):
    """The rows the tables hold."""

    positions: np.ndarray | None  # a grid's (row, column) positions; None for a run of rows
    seq_len: int  # how many rows
    length: int  # the length the frequencies are made for
    where: str  # the rows as the output says them


def _layers(spec) -> dict:
    """The config's RoPE per layer type (one, named ``None``, without layer types)."""
    names = spec.layer_types or (None,)
    layers = {name: (spec if name is None else spec.layer(name)) for name in names}
    return {name: layer for name, layer in layers.items() if layer is not None}


def _rows(args, spec, layers: dict) -> _Rows:
    """The rows ``--grid`` or ``--seq-len`` ask for, refused where they do not fit the RoPE."""
    axial = [ROPE_TYPES[layer.scaling["rope_type"]].axes > 1 for layer in layers.values()]
    if any(axial) and args.grid is None:
        raise ValueError(
            "rope_type 'axial' reads (height, width) positions, not a run of rows: pass "
            "--grid H W (the tables at those H x W positions)"
        )
    if args.grid is not None and not all(axial):
        raise ValueError("--grid is for an axial (vision grid) RoPE; this config's is a run")
    if args.grid is not None:
        return _grid_rows(args)
    return _run_rows(args, spec)


def _grid_rows(args) -> _Rows:
    height, width = args.grid
    if height < 1 or width < 1 or args.seq_len is not None:
        raise ValueError("--grid H W takes two sizes >= 1, and no --seq-len")
    rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    positions = args.offset + np.stack([rows, columns], axis=-1)
    where = f"{height} x {width} grid positions from ({args.offset}, {args.offset})"
    return _Rows(positions, height * width, args.offset + max(height, width), where)


def _run_rows(args, spec) -> _Rows:
    seq_len = args.seq_len if args.seq_len is not None else spec.max_position_embeddings
    if seq_len is None:
        raise ValueError("the config has no max_position_embeddings: pass --seq-len")
    if seq_len < 0:
        raise ValueError(f"--seq-len must be >= 0, got {seq_len}")
    return _Rows(None, seq_len, args.offset + seq_len, f"{seq_len} positions from {args.offset}")


# --------------------------------------------------------------------------- the summary


def _print_layer(name, layer, inv_freq: np.ndarray, attention: float) -> None:
    """One layer type's RoPE: its type, width, base, scaling keys and frequencies."""
    head = f"{name}: " if name else ""
    print(
        f"{head}rope_type {layer.scaling['rope_type']}, rotary dim {layer.head_dim}, "
        f"base {layer.base:g}"
    )
    read = {
        key: value
        for key, value in layer.scaling.items()
        if key not in ("rope_type", "mrope_section", "mrope_interleaved", "mrope_paired")
    }
    if read:
        print("  scaling " + ", ".join(f"{k}={_shown(v)}" for k, v in sorted(read.items())))
    if layer.scaling.get("mrope_section"):
        kind = "interleaved" if layer.scaling.get("mrope_interleaved") else "contiguous"
        kind = "paired" if layer.scaling.get("mrope_paired") else kind
        print(f"  M-RoPE sections {list(layer.scaling['mrope_section'])} ({kind})")
    print(f"  inverse frequencies {inv_freq.min():.6g} .. {inv_freq.max():.6g}")
    print(f"  attention factor {attention:.17g}")


def _shown(value) -> str:
    """A scaling value as the config would write it (a long factor list abbreviated)."""
    if isinstance(value, (tuple, list)):
        items = [_shown(v) for v in value]
        return "[" + ", ".join(items if len(items) <= 6 else [*items[:3], "...", items[-1]]) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- the file


def _write_tables(path: str, args, layers: dict, rows: _Rows, frequencies: dict) -> None:
    """The tables of every layer type made, written to ``path`` as one ``.npz``, and said."""
    default_rows = args.seq_len is None and args.grid is None
    announce(
        path,
        _nbytes(args, layers, rows.seq_len),
        "max_position_embeddings rows: --seq-len N for fewer" if default_rows else rows.where,
    )
    arrays, cos = _tables(args, layers, rows, frequencies)
    if cos.dtype.name == "bfloat16":  # the record sinpe check reads the bit patterns by
        arrays[DTYPE_MEMBER] = np.array("bfloat16")
    write_atomically(path, lambda file: np.savez(file, **arrays))
    note = BITS_NOTE + ", recorded in its 'dtype' member" if cos.dtype.name == "bfloat16" else ""
    print(
        f"wrote {path}: "
        + ", ".join(
            f"cos and sin{f' ({name})' if name else ''} {cos.shape} {cos.dtype}" for name in layers
        )
        + note
    )


def _nbytes(args, layers: dict, seq_len: int) -> int:
    """The size of the tables ``--dtype`` and ``--layout`` make (announced when large)."""
    itemsize = np.dtype(np.float64 if args.dtype == "float64" else np.float32).itemsize
    if args.dtype in ("float16", "bfloat16"):
        itemsize = 2
    nbytes = sum(2 * seq_len * layer.head_dim * itemsize for layer in layers.values())
    if args.layout == "compact":
        nbytes //= 2
    return nbytes


def _tables(args, layers: dict, rows: _Rows, frequencies: dict) -> tuple[dict, np.ndarray]:
    """The ``.npz`` members of every layer type, and the last layer type's cos table."""
    arrays = {}
    for name, layer in layers.items():
        if args.grid is not None:
            cos, sin = layer.rope_at(rows.positions, layout=args.layout, dtype=args.dtype)
        else:
            cos, sin = layer.rope(
                rows.seq_len, offset=args.offset, layout=args.layout, dtype=args.dtype
            )
        suffix = f"_{name}" if name else ""
        inv_freq, attention = frequencies[name]
        arrays.update(
            {
                f"cos{suffix}": savable(cos),
                f"sin{suffix}": savable(sin),
                f"inv_freq{suffix}": inv_freq,
                f"attention_factor{suffix}": attention,
            }
        )
    return arrays, cos
