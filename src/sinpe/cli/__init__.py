"""The ``sinpe`` command: ``table``, ``rope``, ``check``, ``plot``, ``bench``, ``info``."""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from .. import _environment, conventions
from .._check.compare import LAYOUTS as CHECK_LAYOUTS
from .._check.compare import compare as compare_cache
from .._check.files import DEFAULT_MAX_BYTES, DTYPE_MEMBER
from .._check.files import load as load_cache
from .._rope import rope as _rope
from .._rope.config import rope_config
from .._rope.rope_types import ROPE_TYPES
from .._tables import backends
from .._tables import tables as api
from .._tables.checks import bfloat16
from .._tables.threads import RUNTIME as THREAD_RUNTIME
from .._tables.threads import thread_limit, usable_cores
from .._version import __version__
from .output import output_path, write_atomically

_THREAD_VARIABLES = ("SINPE_NUM_THREADS", "OMP_NUM_THREADS")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit 2: never usage noise or a traceback
        self.exit(2, f"sinpe: error: {message}\n")


class _Help(argparse.HelpFormatter):
    """Each option's default, unless its help says it (``None`` defaults say what happens)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default:" in text or action.default in (None, argparse.SUPPRESS):
            return text
        if action.default is False:
            return text + " (default: off)"
        return text + " (default: %(default)s)"


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sinpe", description="Exact, fast sinusoidal positional encodings.")
    parser.add_argument("--version", action="version", version=f"sinpe {__version__}")
    sub = parser.add_subparsers(
        dest="command", parser_class=_Parser, required=True, metavar="COMMAND"
    )

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=text,
            description=text,
            formatter_class=_Help,
        )

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

    rope = command("rope", "RoPE cos/sin tables from a model's config.json (.npz)")
    rope.add_argument(
        "config", nargs="?", help="a model's config.json (or --config; one of them is required)"
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
    rope.add_argument(
        "--layout", choices=_rope.LAYOUTS, default="half", help="the tables' column order"
    )
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

    check_parser = command(
        "check", "how far another engine's cos/sin cache is from the exact table, and why"
    )
    check_parser.add_argument(
        "cache", help=".npy, .npz (cos and sin, or one array), .pt, .safetensors (required)"
    )
    check_parser.add_argument(
        "config",
        nargs="?",
        help="the model's config.json (or --config; one of them is required)",
        metavar="CONFIG",
    )
    check_parser.add_argument(
        "--config", dest="config_flag", metavar="CONFIG", help="the same (default: the argument)"
    )
    check_parser.add_argument(
        "--sin",
        metavar="FILE",
        help="the sin table, when CACHE holds the cos alone (default: in CACHE)",
    )
    check_parser.add_argument("--offset", type=int, default=0, help="position of the first row")
    check_parser.add_argument(
        "--layer-type",
        help="for per-layer configs (Gemma 3 and 4, OLMo-3): which layer's RoPE (required "
        "there, refused elsewhere; default: none)",
    )
    check_parser.add_argument(
        "--layout",
        choices=CHECK_LAYOUTS,
        help="the cache's layout (default: the one its values and the config explain)",
    )
    check_parser.add_argument(
        "--max-error",
        type=float,
        help="exit 1 when the largest error exceeds it (default: the verdict decides)",
    )
    check_parser.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help="refuse a cache whose values (expanded) are larger, before reading them "
        "(default: 16 GiB)",
    )
    check_parser.add_argument("--json", action="store_true", help="print one JSON object")
    check_parser.add_argument(
        "--plot",
        metavar="FILE",
        help=f"draw the error against the position{SUFFIX_HELP % '.png'} (default: no picture)",
    )

    plot = command("plot", "heatmap and position-similarity picture of a table (PNG)")
    plot.add_argument("seq_len", type=int, nargs="?", default=128, help="rows")
    plot.add_argument("d_model", type=int, nargs="?", default=64, help="columns")
    plot.add_argument("-o", "--output", default="pe.png", help=f"the picture{SUFFIX_HELP % '.png'}")

    bench = command("bench", "side-by-side timings against the write limit")
    bench.add_argument(
        "--quick", action="store_true", help="two shapes and 5 rounds instead of three and 9"
    )

    command("info", "version, backend, threads, instruction set, caches, NumPy")
    return parser


DTYPES = ["float64", "float32", "float16", "bfloat16"]
SUFFIX_HELP = " (%s is appended unless the name ends with it; a device is written as is)"
LARGE_FILE = 64 << 20  # a file larger than this is announced before it is written


_BITS_NOTE = " (bfloat16 as its bit patterns, uint16: .view(ml_dtypes.bfloat16) after loading)"


def _savable(array: np.ndarray) -> np.ndarray:
    """.npy/.npz have no bfloat16: such an array is written as its bit patterns (uint16)."""
    return array.view(np.uint16) if array.dtype.name == "bfloat16" else array


def _announce(path: str, nbytes: int, why: str) -> None:
    if nbytes > LARGE_FILE:
        print(f"writing {path}: {nbytes / 2**20:,.0f} MiB ({why})", file=sys.stderr, flush=True)


def _table(args) -> int:
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
        _announce(path, table.nbytes, f"{args.seq_len} x {args.d_model} {table.dtype}")
        write_atomically(path, lambda file: np.save(file, _savable(table)))
        note = _BITS_NOTE if table.dtype.name == "bfloat16" else ""
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


def _config_argument(args) -> str:
    given = [c for c in (args.config, args.config_flag) if c is not None]
    if len(given) != 1:
        raise ValueError(
            "pass the model's config.json once: as an argument or with --config"
            + ("" if given else " (it is required)")
        )
    return given[0]


def _rope_layers(spec) -> dict:
    names = spec.layer_types or (None,)
    layers = {name: (spec if name is None else spec.layer(name)) for name in names}
    return {name: layer for name, layer in layers.items() if layer is not None}


def _rope_command(args) -> int:
    path = None if args.output is None else output_path(args.output, ".npz")  # said first
    if args.offset < 0:
        raise ValueError(f"--offset must be >= 0, got {args.offset}")
    spec = rope_config(_config_argument(args))
    layers = _rope_layers(spec)
    axial = [ROPE_TYPES[layer.scaling["rope_type"]].axes > 1 for layer in layers.values()]
    if any(axial) and args.grid is None:
        raise ValueError(
            "rope_type 'axial' reads (height, width) positions, not a run of rows: pass "
            "--grid H W (the tables at those H x W positions)"
        )
    if args.grid is not None and not all(axial):
        raise ValueError("--grid is for an axial (vision grid) RoPE; this config's is a run")
    if args.grid is not None:
        height, width = args.grid
        if height < 1 or width < 1 or args.seq_len is not None:
            raise ValueError("--grid H W takes two sizes >= 1, and no --seq-len")
        rows, columns = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
        positions = args.offset + np.stack([rows, columns], axis=-1)
        seq_len, length = height * width, args.offset + max(height, width)
        where = f"{height} x {width} grid positions from ({args.offset}, {args.offset})"
    else:
        seq_len = args.seq_len if args.seq_len is not None else spec.max_position_embeddings
        if seq_len is None:
            raise ValueError("the config has no max_position_embeddings: pass --seq-len")
        if seq_len < 0:
            raise ValueError(f"--seq-len must be >= 0, got {seq_len}")
        length = args.offset + seq_len
        where = f"{seq_len} positions from {args.offset}"
    frequencies = {name: layer.frequencies(length) for name, layer in layers.items()}
    if path is None:
        for name, layer in layers.items():
            inv_freq, attention = frequencies[name]
            head = f"{name}: " if name else ""
            print(
                f"{head}rope_type {layer.scaling['rope_type']}, rotary dim {layer.head_dim}, "
                f"base {layer.base:g}"
            )
            read = {
                key: value
                for key, value in layer.scaling.items()
                if key not in ("rope_type", "mrope_section", "mrope_interleaved")
            }
            if read:
                print("  scaling " + ", ".join(f"{k}={_shown(v)}" for k, v in sorted(read.items())))
            if layer.scaling.get("mrope_section"):
                kind = "interleaved" if layer.scaling.get("mrope_interleaved") else "contiguous"
                print(f"  M-RoPE sections {list(layer.scaling['mrope_section'])} ({kind})")
            print(f"  inverse frequencies {inv_freq.min():.6g} .. {inv_freq.max():.6g}")
            print(f"  attention factor {attention:.17g}")
        print(f"tables: {where}, layout {args.layout}")
        return 0
    itemsize = np.dtype(np.float64 if args.dtype == "float64" else np.float32).itemsize
    if args.dtype in ("float16", "bfloat16"):
        itemsize = 2
    nbytes = sum(2 * seq_len * layer.head_dim * itemsize for layer in layers.values())
    if args.layout == "compact":
        nbytes //= 2
    default_rows = args.seq_len is None and args.grid is None
    _announce(
        path,
        nbytes,
        "max_position_embeddings rows: --seq-len N for fewer" if default_rows else where,
    )
    arrays = {}
    for name, layer in layers.items():
        if args.grid is not None:
            cos, sin = layer.rope_at(positions, layout=args.layout, dtype=args.dtype)
        else:
            cos, sin = layer.rope(seq_len, offset=args.offset, layout=args.layout, dtype=args.dtype)
        suffix = f"_{name}" if name else ""
        inv_freq, attention = frequencies[name]
        arrays.update(
            {
                f"cos{suffix}": _savable(cos),
                f"sin{suffix}": _savable(sin),
                f"inv_freq{suffix}": inv_freq,
                f"attention_factor{suffix}": attention,
            }
        )
    if cos.dtype.name == "bfloat16":  # the record sinpe check reads the bit patterns by
        arrays[DTYPE_MEMBER] = np.array("bfloat16")
    write_atomically(path, lambda file: np.savez(file, **arrays))
    note = _BITS_NOTE + ", recorded in its 'dtype' member" if cos.dtype.name == "bfloat16" else ""
    print(
        f"wrote {path}: "
        + ", ".join(
            f"cos and sin{f' ({name})' if name else ''} {cos.shape} {cos.dtype}" for name in layers
        )
        + note
    )
    return 0


def _shown(value) -> str:
    """A scaling value as the config would write it (a long factor list abbreviated)."""
    if isinstance(value, (tuple, list)):
        items = [_shown(v) for v in value]
        return "[" + ", ".join(items if len(items) <= 6 else [*items[:3], "...", items[-1]]) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _full_width(config, spec) -> int | None:
    """The rotary width without the config's ``partial_rotary_factor`` (an explanation)."""
    from .._rope.config import _load

    try:
        data = _load(config)
    except (TypeError, ValueError):
        return None
    found = [data.get("partial_rotary_factor"), data.get("rotary_pct")]
    for key in ("rope_parameters", "rope_scaling"):
        if isinstance(data.get(key), dict):
            found.append(data[key].get("partial_rotary_factor"))
    for factor in found:
        if isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor < 1:
            width = round(spec.head_dim / factor)
            return width + width % 2
    return None


def _check_spec(args):
    config = _config_argument(args)
    spec = rope_config(config)
    if spec.layer_types is not None:
        if args.layer_type is None:
            raise ValueError(
                "the config has a RoPE per layer type: pass --layer-type, one of "
                + ", ".join(spec.layer_types)
            )
        spec = spec.layer(args.layer_type)
    elif args.layer_type is not None:
        raise ValueError("--layer-type is for configs with a RoPE per layer type")
    if ROPE_TYPES[spec.scaling["rope_type"]].axes > 1:
        raise ValueError("rope_type 'axial' has no run of positions to check a cache against")
    return spec, _full_width(config, spec)


_VERDICTS = {
    "match": "matches the exact table at {dtype} rounding",
    "drift": "drifts with the position: {drift} angles (an angle p * w formed in {drift} "
    "errs in proportion to the position; the exact table's error stays at the dtype's rounding)",
    "mismatch": "does not match this config",
}


def _explanation_text(report, spec, offset: int) -> str:
    found = report.explanation
    if found is None:
        return "no explanation tried reads this cache"
    if found.scaling.startswith("rounded to"):
        return (
            f"best explanation: the values are {found.scaling} (stored as {report.dtype}), "
            "at this config and layout"
        )
    changes = []
    if found.layout != report.layout:
        changes.append(f"layout {found.layout}")
    if found.offset != offset:
        changes.append(f"offset {found.offset} (given {offset})")
    if found.base != spec.base:
        changes.append(f"base {found.base:g} (the config's is {spec.base:g})")
    if found.width != spec.head_dim:
        changes.append(f"rotary width {found.width} (the config's is {spec.head_dim})")
    if found.scaling == "none":
        changes.append(f"no scaling (the config's is {spec.scaling['rope_type']})")
    if not changes:
        return (
            "no explanation tried fits better (layouts, offsets 0 and 1, bases 1e4, 5e5, 1e6, "
            "the width without partial_rotary_factor, no scaling): the error stays "
            f"{found.error:.3g}"
        )
    return f"best explanation: {', '.join(changes)}: leaves an error of {found.error:.3g}"


def _check(args) -> int:
    if args.offset < 0:
        raise ValueError(f"--offset must be >= 0, got {args.offset}")
    if args.max_error is not None and not args.max_error >= 0:
        raise ValueError(f"--max-error must be a number >= 0, got {args.max_error}")
    if args.max_bytes < 0:
        raise ValueError(f"--max-bytes must be >= 0, got {args.max_bytes}")
    if args.plot:
        output_path(args.plot, ".png")  # a bad name is said before any work
        if _without_matplotlib("sinpe check --plot"):
            return 1
    spec, full_width = _check_spec(args)
    arrays = load_cache(args.cache, layer_type=args.layer_type, max_bytes=args.max_bytes)
    if args.sin is not None:
        if len(arrays) != 1:
            raise ValueError(f"--sin is for a CACHE holding the cos alone; {args.cache} has both")
        (sin,) = load_cache(args.sin, layer_type=args.layer_type, max_bytes=args.max_bytes)
        arrays = [arrays[0]._replace(name="cos"), sin._replace(name="sin")]
    report = compare_cache(spec, arrays, args.offset, args.layout, full_width)
    over = args.max_error is not None and report.largest > args.max_error
    code = 1 if report.verdict == "mismatch" or over else 0
    verdict = _VERDICTS[report.verdict].format(dtype=report.dtype, drift=report.drift)
    if args.json:
        print(json.dumps(_as_json(args, spec, report, verdict, code), indent=2))
    else:
        _print_report(args, spec, report, verdict, over)
    if args.plot:
        _plot_errors(args, report)
    return code


def _as_json(args, spec, report, verdict: str, code: int) -> dict:
    found = report.explanation
    return {
        "cache": args.cache,
        "dtype": report.dtype,
        "rounding_bound": report.rounding,
        "layout": report.layout,
        "rows": report.rows,
        "offset": args.offset,
        "rotary_dim": spec.head_dim,
        "rope_type": spec.scaling["rope_type"],
        "base": spec.base,
        "decades": [{"first": a, "last": b, "error": e} for a, b, e in report.decades],
        "largest_error": report.largest,
        "verdict": report.verdict,
        "verdict_text": verdict,
        "drift": report.drift,
        "worst": dict(zip(("position", "error", "allowed"), report.worst)),
        "explanation": None if found is None else found._asdict(),
        "max_error": args.max_error,
        "exit_code": code,
    }


def _print_report(args, spec, report, verdict: str, over: bool) -> None:
    equally = f" ({report.note})" if report.note else ""
    print(
        f"{args.cache}: {report.dtype} (rounding bound {report.rounding:.3g}), layout "
        f"{report.layout}{equally}, {report.rows} rows from position {args.offset}"
    )
    print(
        f"config: rotary dim {spec.head_dim}, rope_type {spec.scaling['rope_type']}, "
        f"base {spec.base:g}"
    )
    if report.decades:
        print("largest |cache - exact| by position:")
    for first, last, error in report.decades:
        print(f"  {first:>12,} .. {last:<12,} {error:.3g}")
    if report.decades:
        print(f"largest error {report.largest:.3g}")
    print(f"verdict: {verdict}")
    if report.verdict == "mismatch" and not report.decades:
        print(f"  the cache's width does not fit the config's rotary dim {spec.head_dim}")
        print(f"  {_explanation_text(report, spec, args.offset)}")
    elif report.verdict == "mismatch":
        position, error, allowed = report.worst
        print(
            f"  at position {position:,} the error is {error:.3g}, where {allowed:.3g} is allowed"
        )
        print(f"  {_explanation_text(report, spec, args.offset)}")
    if over:
        print(f"error {report.largest:.3g} exceeds --max-error {args.max_error:g}")


def error_figure(report, offset: int, name: str):
    """The error against the position on log axes: positions from 1 (row 0 and exact zeros
    have no place on a log axis), the y axis from where errors exist, the dtype's rounding
    bound as a dashed line."""
    import matplotlib.pyplot as plt

    positions = offset + np.arange(report.rows)
    shown = (positions >= 1) & (report.errors > 0)
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot(positions[shown], report.errors[shown], linewidth=0.6, label="cache")
    axes.axhline(report.rounding, color="gray", linestyle="--", label=f"{report.dtype} rounding")
    axes.set_xscale("log")
    axes.set_yscale("log")
    low = report.errors[shown].min() if shown.any() else report.rounding
    axes.set_ylim(bottom=min(low, report.rounding) / 2)
    axes.set_xlim(left=1, right=max(2, int(positions[-1])))
    axes.set_xlabel("position")
    axes.set_ylabel("largest |cache - exact| in the row")
    axes.set_title(f"{name}: layout {report.layout}, {report.verdict}")
    axes.legend()
    figure.tight_layout()
    return figure


def _plot_errors(args, report) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = error_figure(report, args.offset, os.path.basename(args.cache))
    path = output_path(args.plot, ".png")
    write_atomically(path, lambda file: figure.savefig(file, dpi=120, format="png"))
    plt.close(figure)
    print(f"wrote {path}")


def _without_matplotlib(command: str) -> bool:
    """Say how to install matplotlib when it is missing (before any work is done)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"{command} needs matplotlib: pip install 'sinpe[plot]'", file=sys.stderr)
        return True
    return False


def _plot(args) -> int:
    from .plot import sampled_positions, save_figure

    api.sinusoidal_positional_encoding(0, args.d_model)  # checks the arguments, builds nothing
    positions = sampled_positions(args.seq_len, args.d_model)  # a few thousand pixels' worth
    path = output_path(args.output, ".png")  # the arguments first, then the extra
    if _without_matplotlib("sinpe plot"):
        return 1
    table = api.encode(positions, args.d_model)
    title = f"sinusoidal positional encoding, {args.seq_len:,} x {args.d_model:,}"
    write_atomically(
        path,
        lambda file: save_figure(table, file, title, positions=positions, seq_len=args.seq_len),
    )
    print(f"wrote {path}")
    return 0


SPREAD_WARNING = 0.20  # an interquartile range above this fraction of the median is warned of


def _bench(args) -> int:
    import statistics

    from .bench import ones, textbook, timed

    shapes = [(128, 64), (2048, 512)] if args.quick else [(128, 64), (2048, 512), (8192, 1024)]
    rounds = 5 if args.quick else 9
    threads = thread_limit().threads
    print(
        f"sinpe {__version__}: backend {api.BACKEND}, {THREAD_RUNTIME}, "
        f"up to {threads} thread(s); float64, {rounds} paired rounds: median [quartiles]"
    )
    contenders = [
        ("np.ones (write limit)", ones),
        ("textbook NumPy", textbook),
        (
            "sinpe numpy path",
            lambda n, d: api.sinusoidal_positional_encoding(n, d, backend="numpy"),
        ),
    ]
    if "cython" in backends.BACKENDS:
        contenders.insert(
            1,
            (
                "sinpe cython",
                lambda n, d: api.sinusoidal_positional_encoding(n, d, backend="cython"),
            ),
        )
    print(f"{'table':>12}  {'contender':<24}{'time':>12}  {'/ np.ones':>9}  {'quartiles':>13}")
    spread = []
    for n, d in shapes:
        times: dict = {name: [] for name, _ in contenders}
        for _ in range(rounds):  # paired: every contender once per round
            for name, fn in contenders:
                times[name].append(timed(fn, n, d))
        limits = times["np.ones (write limit)"]
        for name, samples in times.items():
            ratios = [t / limit for t, limit in zip(samples, limits)]
            q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
            t = statistics.median(samples)
            print(
                f"{f'{n}x{d}':>12}  {name:<24}{t * 1e6:>10,.1f}us  {median:>9.2f}  "
                f"[{q1:.2f}, {q3:.2f}]"
            )
            if name != "np.ones (write limit)" and q3 - q1 > SPREAD_WARNING * median:
                spread.append(f"{n}x{d} {name}")
    if spread:
        print(
            f"warning: the interquartile range exceeds {SPREAD_WARNING:.0%} of the median for "
            f"{', '.join(spread)}: the machine is busy; measure again (or without --quick)"
        )
    return 0


def _info(args) -> int:
    kernel = backends.kernel
    print(f"sinpe {__version__}")
    print(
        f"backend: {api.BACKEND} (compiled kernel: "
        f"{'yes' if kernel is not None else 'no - ' + backends.KERNEL_ERROR})"
    )
    limit = thread_limit()
    print(f"threads: {THREAD_RUNTIME}, up to {limit.threads} (set by {limit.source})")
    print(
        f"  usable cores {usable_cores()}, "
        + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in _THREAD_VARIABLES)
    )
    cache = api.cache_info()
    print(f"cache: {cache.nbytes / 2**20:.1f} of {cache.limit / 2**20:.0f} MiB kept")
    if kernel is None or api.BACKEND == "numpy":
        print(f"instruction set: n/a (backend {api.BACKEND}: NumPy's own loops)")
    else:
        reason = kernel.ISA_REASON
        if not reason.startswith("the best"):  # forced: say what the best would be
            reason += f"; this CPU and build run up to {kernel.CPU_ISA}"
        if kernel.EMULATED and "emulated" not in reason:
            reason += ", emulated"
        print(f"instruction set: {kernel.ISA} ({reason})")
    print(f"bfloat16: {'ml_dtypes' if bfloat16() is not None else 'not available'}")
    print(f"numpy: {np.__version__}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sinpe`` console script and ``python -m sinpe``."""
    try:
        wrong = _environment.problems()  # read again: a program may set them after import
        if wrong:
            raise ValueError(wrong[0])
        args = _build_parser().parse_args(argv)
        handler = {
            "table": _table,
            "rope": _rope_command,
            "check": _check,
            "plot": _plot,
            "bench": _bench,
            "info": _info,
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
