"""The ``sinpe`` command: ``table``, ``rope``, ``check``, ``plot``, ``bench``, ``info``."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from . import __version__, conventions
from ._front import backends
from ._front import rope as _rope
from ._front import tables as api
from ._front.check_cache import GROWTH_FACTOR
from ._front.check_cache import LAYOUTS as CHECK_LAYOUTS
from ._front.check_cache import compare as _compare_cache
from ._front.check_cache import load as _load_cache
from ._front.checks import bfloat16
from ._front.config import rope_config
from ._front.threads import RUNTIME as THREAD_RUNTIME
from ._front.threads import thread_limit, usable_cores

_THREAD_VARIABLES = ("SINPE_NUM_THREADS", "OMP_NUM_THREADS")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit 2: never usage noise or a traceback
        self.exit(2, f"sinpe: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sinpe", description="Exact, fast sinusoidal positional encodings.")
    parser.add_argument("--version", action="version", version=f"sinpe {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)

    table = sub.add_parser("table", help="write a table (.npy) or print a preview")
    table.add_argument("seq_len", type=int)
    table.add_argument("d_model", type=int)
    table.add_argument("--offset", type=int, default=0)
    table.add_argument("--base", type=float, default=10000.0)
    table.add_argument(
        "--dtype", choices=["float64", "float32", "float16", "bfloat16"], default="float64"
    )
    table.add_argument(
        "--convention", default="vaswani", help=f"one of: {', '.join(conventions.names())}"
    )
    table.add_argument("-o", "--output", help="write with numpy.save to this .npy file")

    rope = sub.add_parser("rope", help="RoPE cos/sin tables from a model's config.json (.npz)")
    rope.add_argument("config", help="a model's config.json")
    rope.add_argument(
        "--seq-len", type=int, help="rows (default: the config's max_position_embeddings)"
    )
    rope.add_argument("--offset", type=int, default=0)
    rope.add_argument("--layout", choices=_rope.LAYOUTS, default="half")
    rope.add_argument(
        "--dtype", choices=["float64", "float32", "float16", "bfloat16"], default="float32"
    )
    rope.add_argument("-o", "--output", help="write cos, sin, inv_freq, attention_factor (.npz)")

    check_parser = sub.add_parser(
        "check", help="how far another engine's cos/sin cache is from the exact table"
    )
    check_parser.add_argument("cache", help=".npy, .npz (cos/sin or one array), .pt, .safetensors")
    check_parser.add_argument("--config", required=True, help="the model's config.json")
    check_parser.add_argument("--offset", type=int, default=0, help="position of the first row")
    check_parser.add_argument("--layer-type", help="for per-layer configs (Gemma 3/4)")
    check_parser.add_argument("--layout", choices=CHECK_LAYOUTS, help="default: detected")
    check_parser.add_argument("--max-error", type=float, help="exit 1 when the error exceeds it")
    check_parser.add_argument("--plot", help="write error against position (PNG)")

    plot = sub.add_parser("plot", help="heatmap and position-similarity picture (PNG)")
    plot.add_argument("seq_len", type=int, nargs="?", default=128)
    plot.add_argument("d_model", type=int, nargs="?", default=64)
    plot.add_argument("-o", "--output", default="pe.png")

    bench = sub.add_parser("bench", help="side-by-side timings against the write limit")
    bench.add_argument("--quick", action="store_true", help="fewer shapes and rounds")

    sub.add_parser("info", help="version, backend, OpenMP, threads, NumPy")
    return parser


_BITS_NOTE = " (bfloat16 as its bit patterns, uint16: .view(ml_dtypes.bfloat16) after loading)"


def _output_path(output: str, suffix: str) -> str:
    """The file a ``-o`` writes: ``output``, with ``suffix`` added when it has no extension
    of that kind (the name printed is the name written); an empty name is refused."""
    if not output or not os.path.basename(output):
        raise ValueError(f"-o needs a file name, got {output!r}")
    if os.path.isdir(output):
        raise ValueError(f"-o {output!r} is a directory: give a file name")
    return output if output.lower().endswith(suffix) else output + suffix


def _write_atomically(path: str, write) -> None:
    """``write(file)`` into a temporary file beside ``path``, then renamed over it: a failed
    write (a full disk, a size limit) leaves no truncated file and keeps the previous one."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".sinpe-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _savable(array: np.ndarray) -> np.ndarray:
    """.npy/.npz have no bfloat16: such an array is written as its bit patterns (uint16)."""
    return array.view(np.uint16) if array.dtype.name == "bfloat16" else array


def _table(args) -> int:
    table = api.sinusoidal_positional_encoding(
        args.seq_len,
        args.d_model,
        offset=args.offset,
        base=args.base,
        dtype=args.dtype,
        convention=args.convention,
    )
    if args.output is not None:
        path = _output_path(args.output, ".npy")
        _write_atomically(path, lambda file: np.save(file, _savable(table)))
        note = _BITS_NOTE if table.dtype.name == "bfloat16" else ""
        print(f"wrote {path}: shape {table.shape}, {table.dtype}{note}")
        return 0
    print(
        f"shape {table.shape}, dtype {table.dtype}, backend {api.BACKEND}, "
        f"convention {args.convention}, offset {args.offset}"
    )
    with np.printoptions(precision=6, suppress=True, edgeitems=3, threshold=50, linewidth=100):
        print(table)
    return 0


def _rope_command(args) -> int:
    path = None if args.output is None else _output_path(args.output, ".npz")  # said first
    spec = rope_config(args.config)
    seq_len = args.seq_len if args.seq_len is not None else spec.max_position_embeddings
    if seq_len is None:
        raise ValueError("the config has no max_position_embeddings: pass --seq-len")
    names = spec.layer_types or (None,)
    layers = {name: (spec if name is None else spec.layer(name)) for name in names}
    layers = {name: layer for name, layer in layers.items() if layer is not None}
    if args.output is not None and any(
        layer.scaling["rope_type"] == "axial" for layer in layers.values()
    ):
        raise ValueError(
            "rope_type 'axial' reads (height, width) positions, not a run of seq_len: "
            "make its tables with sinpe.rope_config(path).rope_at(positions)"
        )
    frequencies = {name: layer.frequencies(args.offset + seq_len) for name, layer in layers.items()}
    if args.output is None:
        for name, layer in layers.items():
            inv_freq, attention = frequencies[name]
            head = f"{name}: " if name else ""
            print(
                f"{head}rope_type {layer.scaling['rope_type']}, rotary dim {layer.head_dim}, "
                f"base {layer.base:g}"
            )
            if layer.scaling.get("mrope_section"):
                kind = "interleaved" if layer.scaling.get("mrope_interleaved") else "contiguous"
                print(f"  M-RoPE sections {list(layer.scaling['mrope_section'])} ({kind})")
            print(f"  inverse frequencies {inv_freq.min():.6g} .. {inv_freq.max():.6g}")
            print(f"  attention factor {attention:.17g}")
        print(f"tables: {seq_len} positions from {args.offset}, layout {args.layout}")
        return 0
    arrays = {}
    for name, layer in layers.items():
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
    _write_atomically(path, lambda file: np.savez(file, **arrays))
    note = _BITS_NOTE if cos.dtype.name == "bfloat16" else ""
    print(
        f"wrote {path}: "
        + ", ".join(
            f"cos and sin{f' ({name})' if name else ''} {cos.shape} {cos.dtype}" for name in layers
        )
        + note
    )
    return 0


def _check(args) -> int:
    if args.offset < 0:
        raise ValueError(f"--offset must be >= 0, got {args.offset}")
    if args.max_error is not None and not args.max_error >= 0:
        raise ValueError(f"--max-error must be a number >= 0, got {args.max_error}")
    spec = rope_config(args.config)
    if spec.layer_types is not None:
        if args.layer_type is None:
            raise ValueError(
                "the config has a RoPE per layer type: pass --layer-type, one of "
                + ", ".join(spec.layer_types)
            )
        spec = spec.layer(args.layer_type)
    elif args.layer_type is not None:
        raise ValueError("--layer-type is for configs with a RoPE per layer type")
    if spec.scaling["rope_type"] == "axial":
        raise ValueError("rope_type 'axial' has no run of positions to check a cache against")
    report = _compare_cache(spec, _load_cache(args.cache), args.offset, args.layout)
    print(
        f"{args.cache}: layout {report.layout}, {report.rows} rows from position {args.offset}, "
        f"rotary dim {spec.head_dim}, rope_type {spec.scaling['rope_type']}"
    )
    print("largest |cache - exact| by position:")
    for first, last, error in report.decades:
        print(f"  {first:>12,} .. {last:<12,} {error:.3g}")
    print(f"largest error {report.largest:.3g}")
    if report.grows:
        print(
            "the error grows with the position (the last decade's is at least "
            f"{GROWTH_FACTOR:g}x the first ones' and above 1e-6): the signature of an angle "
            "p * w formed in float32"
        )
    else:
        print("the error does not grow with the position (no float32-angle signature)")
    if args.plot:
        from .plot import INSTALL_HINT

        _output_path(args.plot, ".png")  # a bad name is said before the plot is drawn
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print(INSTALL_HINT, file=sys.stderr)
            return 1
        figure, axes = plt.subplots(figsize=(7, 4))
        positions = args.offset + np.arange(report.rows)
        axes.plot(positions, np.maximum(report.errors, 1e-18), linewidth=0.6)
        axes.set_xscale("symlog")
        axes.set_yscale("log")
        axes.set_xlabel("position")
        axes.set_ylabel("largest |cache - exact| in the row")
        axes.set_title(f"{os.path.basename(args.cache)}: layout {report.layout}")
        figure.tight_layout()
        path = _output_path(args.plot, ".png")
        _write_atomically(path, lambda file: figure.savefig(file, dpi=120, format="png"))
        plt.close(figure)
        print(f"wrote {path}")
    if args.max_error is not None and report.largest > args.max_error:
        print(f"error {report.largest:.3g} exceeds --max-error {args.max_error:g}")
        return 1
    return 0


def _plot(args) -> int:
    from .plot import INSTALL_HINT, save_figure

    if args.seq_len < 1:
        raise ValueError(f"seq_len must be >= 1 to draw a picture, got {args.seq_len}")
    api.sinusoidal_positional_encoding(0, args.d_model)  # checks the arguments, builds nothing
    try:  # before the table is built: a missing extra is said at once
        import matplotlib  # noqa: F401
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 1
    path = _output_path(args.output, ".png")
    table = api.sinusoidal_positional_encoding(args.seq_len, args.d_model)
    title = f"sinusoidal positional encoding, {args.seq_len} x {args.d_model}"
    _write_atomically(path, lambda file: save_figure(table, file, title=title))
    print(f"wrote {path}")
    return 0


def _bench(args) -> int:
    import statistics

    from ._front.bench import ones, textbook, timed

    shapes = [(128, 64), (2048, 512)] if args.quick else [(128, 64), (2048, 512), (8192, 1024)]
    rounds = 3 if args.quick else 7
    threads = thread_limit().threads
    print(
        f"sinpe {__version__}: backend {api.BACKEND}, {THREAD_RUNTIME}, "
        f"up to {threads} thread(s); float64, median of {rounds} rounds"
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
    print(f"{'table':>12}  {'contender':<24}{'time':>12}  {'/ np.ones':>9}")
    for n, d in shapes:
        times = {
            name: statistics.median(timed(fn, n, d) for _ in range(rounds))
            for name, fn in contenders
        }
        limit = times["np.ones (write limit)"]
        for name, t in times.items():
            print(f"{f'{n}x{d}':>12}  {name:<24}{t * 1e6:>10,.1f}us  {t / limit:>9.2f}")
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
    print(f"instruction set: {kernel.ISA if kernel is not None else 'n/a (NumPy)'}")
    print(f"bfloat16: {'ml_dtypes' if bfloat16() is not None else 'not available'}")
    print(f"numpy: {np.__version__}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sinpe`` console script and ``python -m sinpe``."""
    args = _build_parser().parse_args(argv)
    handler = {
        "table": _table,
        "rope": _rope_command,
        "check": _check,
        "plot": _plot,
        "bench": _bench,
        "info": _info,
    }[args.command]
    try:
        return handler(args)
    except BrokenPipeError:  # `sinpe table ... | head`: the reader left; end quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the exit's flush does not fail again
        return 0
    except (TypeError, ValueError, MemoryError, OSError) as exc:
        print(f"sinpe: error: {exc}", file=sys.stderr)
        return 2
