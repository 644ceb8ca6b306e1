"""``sinpe plot`` and the command line's pictures: an encoding's, and ``sinpe check
--plot``'s errors (matplotlib is imported here only, and lazily).

A picture is a few thousand pixels wide, so a large table is drawn from evenly sampled rows
(and, in the heatmap, columns): the memory is that of the sample, whatever the table's size,
and the picture says what was sampled.
"""

from __future__ import annotations

import sys

import numpy as np

from .._tables import tables as api
from .arguments import SUFFIX_HELP, AddCommand
from .output import output_path, write_atomically

MAX_ROWS = 1024  # rows drawn: more than either panel has pixels
MAX_COLUMNS = 2048  # heatmap columns drawn
MIN_ROWS = 16  # fewer rows than this would not show the pattern
SAMPLE_BYTES = 64 << 20  # the sampled rows' float64 values, held at once
MAX_D_MODEL = SAMPLE_BYTES // (8 * MIN_ROWS)  # wider tables cannot be drawn in that memory


def _evenly(count: int, most: int) -> np.ndarray:
    """At most ``most`` indices of ``range(count)``, evenly spread, first and last included."""
    if count <= most:
        return np.arange(count, dtype=np.int64)
    return np.unique(np.linspace(0, count - 1, most).round().astype(np.int64))


def sampled_positions(seq_len: int, d_model: int) -> np.ndarray:
    """The positions a picture of a ``seq_len x d_model`` table draws (``ValueError`` for a
    table too wide to draw)."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1 to draw a picture, got {seq_len}")
    if d_model > MAX_D_MODEL:
        raise ValueError(
            f"d_model={d_model:,} is too wide to draw: sinpe plot draws at most "
            f"{MAX_D_MODEL:,} columns (the similarity panel needs whole rows)"
        )
    rows = min(MAX_ROWS, SAMPLE_BYTES // (8 * d_model))
    return _evenly(seq_len, rows)


def save_figure(table: np.ndarray, path, title: str = "", positions=None, seq_len=None) -> None:
    """Two panels: the table as a heatmap, and the position-similarity matrix PE @ PE.T,
    as a PNG (``path``: a file name or a binary file). ``table`` holds the rows at
    ``positions`` (default: every row) of a table of ``seq_len`` rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, d_model = table.shape
    positions = np.arange(rows) if positions is None else np.asarray(positions)
    seq_len = rows if seq_len is None else seq_len
    columns = _evenly(d_model, MAX_COLUMNS)
    first, last = float(positions[0]), float(positions[-1])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    image = left.imshow(
        table[:, columns],
        aspect="auto",
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        interpolation="nearest",
        extent=(-0.5, d_model - 0.5, last + 0.5, first - 0.5),
    )
    shown = "" if columns.size == d_model else f" ({columns.size:,} of {d_model:,} shown)"
    left.set_xlabel(f"dimension{shown}")
    left.set_ylabel("position")
    left.set_title("PE[position, dimension]")
    fig.colorbar(image, ax=left, label="value")
    similarity = table @ table.T
    image = right.imshow(
        similarity,
        cmap="viridis",
        interpolation="nearest",
        extent=(first - 0.5, last + 0.5, last + 0.5, first - 0.5),
    )
    right.set_xlabel("position")
    right.set_ylabel("position")
    right.set_title("PE @ PE.T: similarity depends on the distance")
    fig.colorbar(image, ax=right, label="dot product")
    if rows < seq_len:
        title += f" (rows sampled: {rows:,} of {seq_len:,}, evenly)"
    if title:
        fig.suptitle(title.strip())
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


# --------------------------------------------------------------------------- sinpe plot


def add_plot_arguments(command: AddCommand) -> None:
    """The ``plot`` subcommand and its arguments."""
    plot = command("plot", "heatmap and position-similarity picture of a table (PNG)")
    plot.add_argument("seq_len", type=int, nargs="?", default=128, help="rows")
    plot.add_argument("d_model", type=int, nargs="?", default=64, help="columns")
    plot.add_argument("-o", "--output", default="pe.png", help=f"the picture{SUFFIX_HELP % '.png'}")


def plot_command(args) -> int:
    """``sinpe plot``: the picture of a table (``save_figure``) written to ``-o``."""
    api.sinusoidal_positional_encoding(0, args.d_model)  # checks the arguments, builds nothing
    positions = sampled_positions(args.seq_len, args.d_model)  # a few thousand pixels' worth
    path = output_path(args.output, ".png")  # the arguments first, then the extra
    if without_matplotlib("sinpe plot"):
        return 1
    table = api.encode(positions, args.d_model)
    title = f"sinusoidal positional encoding, {args.seq_len:,} x {args.d_model:,}"
    write_atomically(
        path,
        lambda file: save_figure(table, file, title, positions=positions, seq_len=args.seq_len),
    )
    print(f"wrote {path}")
    return 0


def without_matplotlib(command: str) -> bool:
    """Say how to install matplotlib when it is missing (before any work is done)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"{command} needs matplotlib: pip install 'sinpe[plot]'", file=sys.stderr)
        return True
    return False


# --------------------------------------------------------------------------- sinpe check --plot


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


def save_error_figure(report, offset: int, name: str, output: str) -> str:
    """``error_figure`` written as a PNG to ``-o``-style ``output``; the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = error_figure(report, offset, name)
    path = output_path(output, ".png")
    write_atomically(path, lambda file: figure.savefig(file, dpi=120, format="png"))
    plt.close(figure)
    return path
