"""``sinpe check``: how far another engine's cos/sin cache is from the exact table, and why."""

from __future__ import annotations

import os

from .._check.compare import LAYOUTS as CHECK_LAYOUTS
from .._check.compare import compare as compare_cache
from .._check.gguf import check_gguf
from .._check.llama_cpp_types import SCALING_TYPES
from .._check.onnx import check_onnx
from .._check.openvino import check_openvino
from .._files import reading
from .._files.caches import DEFAULT_MAX_BYTES
from .._files.caches import load as load_cache
from .._files.gguf import MAGIC as GGUF_MAGIC
from .._rope.config import load_config, rope_config
from .._rope.rope_types import ROPE_TYPES
from .._verdict.judge import frequencies_text
from .._verdict.verdict import MISMATCH, UNCHECKED, number, worst_text
from .arguments import SUFFIX_HELP, AddCommand, UsageError, config_argument
from .output import output_path
from .plot import save_error_figure, without_matplotlib


def add_check_arguments(command: AddCommand) -> None:
    """The ``check`` subcommand and its arguments."""
    what = "another engine's cos/sin cache (a GGUF file's, an ONNX model's, an MLX model's RoPE)"
    check_parser = command("check", f"how far {what} is from the exact table, and why")
    check_parser.add_argument(
        "cache",
        help=".npy, .npz (cos and sin, or one array), .pt, .safetensors; a .gguf model "
        "(its RoPE keys and tensors as llama.cpp reads them); a .onnx model (its cos/sin "
        "caches); an OpenVINO IR's openvino_model.xml (its traced inv_freq, any folded tables); "
        "or an MLX model folder (its RoPE modules as mlx_lm loads them) (required)",
    )
    check_parser.add_argument(
        "config",
        nargs="?",
        help="the model's config.json, its folder, or a Hugging Face Hub id (or --config; "
        "one of them is required)",
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
    _add_model_arguments(check_parser)
    check_parser.add_argument("--json", action="store_true", help="print one JSON object")
    check_parser.add_argument(
        "--plot",
        metavar="FILE",
        help=f"draw the error against the position{SUFFIX_HELP % '.png'} (default: no picture)",
    )


def _add_model_arguments(check_parser) -> None:
    """The options of a model file: a GGUF's context size, an ONNX model's exact copy."""
    check_parser.add_argument(
        "--n-ctx",
        type=int,
        help="for a .gguf: the context size llama.cpp is run with (default: the file's "
        "trained length, llama.cpp's default, and the original length where the config's "
        "values change with the length)",
    )
    check_parser.add_argument(
        "--fix",
        metavar="OUT",
        help="for a .onnx: write a copy whose RoPE caches are sinpe's exact tables (OUT: a "
        "new folder, or a .onnx path); refused where the model does not read its config "
        "(default: check only)",
    )


def check_command(args):
    """``sinpe check``: the cache, GGUF file, ONNX model or MLX model folder judged against
    the config, the report printed, or with ``--json`` returned as one object for ``main``
    to print; exit 0 for a match or a drift, 1 for a mismatch, a verdict ``unchecked`` (not
    every part judged) or an error over ``--max-error``. A refused input (not a table, a
    hostile or truncated file, a missing shard) or a wrong argument raises: ``main`` says it
    in one line, exit 2 (with ``--json``, one object ``{"verdict": "refused", ...}``)."""
    if args.fix is not None and not args.cache.lower().endswith(".onnx"):
        raise UsageError("--fix is for a .onnx model")
    if args.cache.lower().endswith(".onnx"):
        return _onnx_command(args, check_onnx)
    if args.cache.lower().endswith(".xml"):
        return _onnx_command(args, check_openvino)
    if _is_gguf(args.cache):
        return _gguf_command(args)
    if os.path.isdir(args.cache):
        return _mlx_command(args)
    return _cache_command(args)


def _exit_code(*verdicts: str) -> int:
    """1 where a part mismatches or was not judged (a report never passes what it skipped)."""
    return int(any(verdict in (MISMATCH, UNCHECKED) for verdict in verdicts))


def _cache_command(args):
    if args.n_ctx is not None:
        raise UsageError("--n-ctx is for a .gguf model file")
    if args.offset < 0:
        raise UsageError(f"--offset must be >= 0, got {args.offset}")
    if args.max_error is not None and not args.max_error >= 0:
        raise UsageError(f"--max-error must be a number >= 0, got {args.max_error}")
    if args.max_bytes < 0:
        raise UsageError(f"--max-bytes must be >= 0, got {args.max_bytes}")
    if args.plot:
        output_path(args.plot, ".png")  # a bad name is said before any work
        if args.json:
            _needs_matplotlib()
        elif without_matplotlib("sinpe check --plot"):
            return 1
    spec, full_width = _check_spec(args)
    arrays = load_cache(args.cache, layer_type=args.layer_type, max_bytes=args.max_bytes)
    if args.sin is not None:
        if len(arrays) != 1:
            raise UsageError(f"--sin is for a CACHE holding the cos alone; {args.cache} has both")
        (sin,) = load_cache(args.sin, layer_type=args.layer_type, max_bytes=args.max_bytes)
        arrays = [arrays[0]._replace(name="cos"), sin._replace(name="sin")]
    report = compare_cache(spec, arrays, args.offset, args.layout, full_width)
    largest = report.largest
    over = args.max_error is not None and not (largest is not None and largest <= args.max_error)
    code = max(_exit_code(report.verdict), int(over))
    if not args.json:
        _print_report(args, spec, report, over)
    path = None
    if args.plot:
        path = save_error_figure(report, args.offset, os.path.basename(args.cache), args.plot)
        if not args.json:
            print(f"wrote {path}")
    return _as_json(args, spec, report, code, path) if args.json else code


def _needs_matplotlib() -> None:
    """With ``--json``, ``--plot`` without matplotlib is a refusal (exit 2: not a verdict's 1)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("sinpe check --plot needs matplotlib: pip install 'sinpe[plot]'") from None


# --------------------------------------------------------------------------- a GGUF file


def _is_gguf(path: str) -> bool:
    """A ``.gguf`` name, or a file that starts as one."""
    if path.lower().endswith(".gguf"):
        return True
    try:
        with reading.opened(path) as stream:  # a regular file only: a FIFO's open() blocks
            return stream.read(4) == GGUF_MAGIC
    except (OSError, ValueError):
        return False  # the cache reader says what is wrong with the path


_NOT_FOR_GGUF = {  # option: its value when not given (none of them is for a model file)
    "sin": None,
    "offset": 0,
    "layer_type": None,
    "layout": None,
    "max_error": None,
    "plot": None,
    "max_bytes": DEFAULT_MAX_BYTES,
}


def _gguf_command(args):
    """``sinpe check model.gguf config.json``: the verdict and its reasons; exit 1 where
    llama.cpp does not read the file as the config."""
    given = [name for name, unset in _NOT_FOR_GGUF.items() if getattr(args, name) != unset]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{flags}: for a cos/sin cache, not a .gguf model file")
    report = check_gguf(args.cache, config_argument(args), n_ctx=args.n_ctx)
    code = _exit_code(report.verdict)
    if args.json:
        return {**report.as_dict(), "exit_code": code}
    shards = f" (split: {len(report.shards)} shards)" if report.shards else ""
    print(
        f"{args.cache}{shards}: architecture {report.arch!r}, as llama.cpp {report.llama_cpp} "
        "reads it"
    )
    for part in report.parts:
        print("  " + _gguf_part_text(part))
    print(f"verdict: {report.judgment.text}")
    for reason in report.reasons:
        print(f"  {reason}")
    for note in report.notes:
        print(f"note: {note}")
    return code


def _gguf_part_text(part) -> str:
    """One part of a GGUF report as a line: what llama.cpp uses, and how far it is."""
    reading = part.reading
    layers = f"{part.layer_type} layers" if part.layer_type else "layers"
    if reading.factors:
        scaling = f"factors {reading.factors}"
    elif reading.freq_scale == 1 and reading.scaling != SCALING_TYPES["YARN"]:
        scaling = "none"  # llama.cpp's default type, linear, with no factor
    else:
        scaling = f"{reading.scaling} x{number(reading.factor)}"
    return (
        f"{layers} at context {part.context:,}: {reading.rope_type}, rotary dim {reading.n_rot}, "
        f"base {number(reading.base)}, scaling {scaling}, attention factor "
        f"{number(reading.attention_factor)}; frequencies {frequencies_text(part.largest)}"
    )


# --------------------------------------------------------------------------- an ONNX model


def _onnx_command(args, check):
    """``sinpe check model.onnx [config.json] [--fix OUT]`` (``check``: check_onnx; an
    OpenVINO IR's openvino_model.xml with check_openvino, no --fix): the verdict, each
    part's line, and (``--fix``) the exact copy written; exit 1 where the model's RoPE is
    not its config's."""
    given = [name for name, unset in _NOT_FOR_GGUF.items() if getattr(args, name) != unset]
    if given or args.n_ctx is not None:
        names = given + ["n_ctx"] * (args.n_ctx is not None)
        flags = ", ".join("--" + name.replace("_", "-") for name in names)
        raise UsageError(f"{flags}: not for a .onnx model")
    given_config = [c for c in (args.config, args.config_flag) if c is not None]
    config = config_argument(args) if given_config else None
    fixed = None
    if args.fix is not None:  # the verdict made while the weights are copied
        from .._check.onnx_fix import check_and_fix

        report, fixed = check_and_fix(args.cache, args.fix, config)
    else:
        report = check(args.cache, config)
    code = _exit_code(report.verdict)
    if args.json:
        return {**report.as_dict(), "fixed": fixed, "exit_code": code}
    length = f", context length {report.context_length:,}" if report.context_length else ""
    print(f"{args.cache}: {len(report.parts)} RoPE table{'s' * (len(report.parts) != 1)}{length}")
    for part in report.parts:
        layer = f" ({part.layer_type})" if part.layer_type else ""
        rows = f"{part.rows} rows, " if part.rows else ""
        print(f"  {part.name}{layer} ({rows}{part.dtype}): {part.judgment.text}")
        for found in part.judgment.findings:
            print(f"    {found.text}")
        for note in part.notes:
            print(f"    note: {note}")
    print(f"verdict: {report.judgment.text}")
    if fixed:
        print(f"wrote {fixed}: its RoPE caches are sinpe's exact tables")
    return code


# --------------------------------------------------------------------------- an MLX model


def _mlx_command(args):
    """``sinpe check MODEL_FOLDER [config.json]``: the folder loaded by mlx_lm (lazily: no
    weight is read), each RoPE module judged against the config (the folder's config.json by
    default); exit 1 for a mismatch."""
    given = [name for name, unset in _NOT_FOR_GGUF.items() if getattr(args, name) != unset]
    if given or args.n_ctx is not None:
        flags = ", ".join(
            "--" + name.replace("_", "-") for name in given + ["n_ctx"] * (args.n_ctx is not None)
        )
        raise UsageError(f"{flags}: not for an MLX model folder")
    folder = args.cache
    given_config = [c for c in (args.config, args.config_flag) if c is not None]
    config = config_argument(args) if given_config else os.path.join(folder, "config.json")
    try:
        from .. import mlx as sinpe_mlx

        reports = sinpe_mlx.check_folder(folder, config)
    except ImportError as exc:  # mlx, or mlx-lm, is not installed
        raise ValueError(f"checking the MLX model folder {folder} needs {exc}") from None
    code = _exit_code(*(r.verdict for r in reports))
    if args.json:
        return {"folder": folder, "layers": [r.as_json() for r in reports], "exit_code": code}
    print(f"{folder}: {len(reports)} distinct RoPE module{'s' * (len(reports) != 1)} (mlx_lm)")
    for report in reports:
        print(f"  {report.line()}")
        for first, last, error in report.judgment.decades:
            print(f"    {first:>12,} .. {last:<12,} {error:.3g}")
    return code


# --------------------------------------------------------------------------- the config


def _check_spec(args):
    """The RoPE the cache is checked against (``--layer-type``'s, for per-layer configs), and
    its width without ``partial_rotary_factor``."""
    config = config_argument(args)
    spec = rope_config(config)
    if spec.layer_types is not None:
        if args.layer_type is None:
            raise UsageError(
                "the config has a RoPE per layer type: pass --layer-type, one of "
                + ", ".join(spec.layer_types)
            )
        spec = spec.layer(args.layer_type)
    elif args.layer_type is not None:
        raise UsageError("--layer-type is for configs with a RoPE per layer type")
    if ROPE_TYPES[spec.scaling["rope_type"]].axes > 1:
        raise ValueError("rope_type 'axial' has no run of positions to check a cache against")
    return spec, _full_width(config, spec)


def _full_width(config, spec) -> int | None:
    """The rotary width without the config's ``partial_rotary_factor`` (an explanation)."""
    try:
        data = load_config(config)
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


# --------------------------------------------------------------------------- the report


def _as_json(args, spec, report, code: int, plot: str | None) -> dict:
    return {
        "cache": args.cache,
        "rounding_bound": report.rounding,
        "layout": report.layout,
        "rows": report.rows,
        "offset": args.offset,
        "rotary_dim": spec.head_dim,
        "rope_type": spec.scaling["rope_type"],
        "base": spec.base,
        **report.judgment.as_json(),
        "note": report.note,
        "max_error": args.max_error,
        "plot": plot,
        "exit_code": code,
    }


def _print_report(args, spec, report, over: bool) -> None:
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
    if report.decades and report.largest is not None:
        print(f"largest error {report.largest:.3g}")
    print(f"verdict: {report.judgment.text}")
    if report.verdict == MISMATCH and report.judgment.findings[0].code != "table":
        where = worst_text(report.judgment)
        print(f"  {where}" if where else "", end="\n" if where else "")
    for found in report.judgment.findings:
        print(f"  {found.text}")
    if over:
        largest = "not a number" if report.largest is None else f"{report.largest:.3g}"
        print(f"error {largest} exceeds --max-error {args.max_error:g}")
