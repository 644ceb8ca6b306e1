"""Pictures of an encoding (matplotlib is imported here only, and lazily).

A picture is a few thousand pixels wide, so a large table is drawn from evenly sampled rows
(and, in the heatmap, columns): the memory is that of the sample, whatever the table's size,
and the picture says what was sampled.
"""

from __future__ import annotations

import numpy as np

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
