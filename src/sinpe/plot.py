"""Pictures of an encoding (matplotlib is imported here only, and lazily)."""

from __future__ import annotations

import numpy as np

INSTALL_HINT = "sinpe plot needs matplotlib: pip install 'sinpe[plot]'"


def save_figure(table: np.ndarray, path, title: str = "") -> None:
    """Two panels: the table as a heatmap, and the position-similarity matrix PE @ PE.T,
    as a PNG (``path``: a file name or a binary file)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    image = left.imshow(
        table, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest"
    )
    left.set_xlabel("dimension")
    left.set_ylabel("position")
    left.set_title("PE[position, dimension]")
    fig.colorbar(image, ax=left, label="value")
    similarity = table @ table.T
    image = right.imshow(similarity, cmap="viridis", interpolation="nearest")
    right.set_xlabel("position")
    right.set_ylabel("position")
    right.set_title("PE @ PE.T: similarity depends on the distance")
    fig.colorbar(image, ax=right, label="dot product")
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
