"""Random layouts for the filler: the one generator test_twin.py and test_fill.py share, and
the preset conventions test_fill.py and test_backends.py draw from."""

from __future__ import annotations

import numpy as np

from sinpe._tables import plan

# every distinct preset (fairseq is another name for tensor2tensor)
PRESETS = ["vaswani", "tensor2tensor", "hf-marian", "diffusers"]


def random_layout(rng, h: int, planes: int, axes: int) -> plan.Layout:
    """A layout of random segments over ``h`` frequencies: every placement shape the kernel
    tells apart (contiguous, doubled, cos/sin pairs, any step), unequal counts, ``axes``
    position axes, a zero column or not; ``h = 0``: a lone zero column."""
    n_cuts = min(max(h - 1, 0), int(rng.integers(0, 3)))
    cuts = sorted(rng.choice(np.arange(1, h), size=n_cuts, replace=False)) if n_cuts else []
    bounds = [0, *map(int, cuts), h]
    segments, column = [], 0
    for first, stop in zip(bounds[:-1], bounds[1:]):
        count = stop - first
        if not count:
            continue
        axis = int(rng.integers(0, axes))
        shape = rng.choice(["contig", "dup", "pairs", "generic"])
        n_cos = count - int(rng.integers(0, 2)) if shape == "generic" else count
        if shape == "pairs":
            plane, order = int(rng.integers(0, planes)), int(rng.integers(0, 2))
            cos = plan.Place(plane, column + order, 2, 0, n_cos)
            sin = plan.Place(plane, column + 1 - order, 2, 0, count)
            column += 2 * count
        else:
            step = {"contig": 1, "dup": 2}.get(str(shape), int(rng.integers(1, 4)))
            dup = 1 if shape == "dup" else int(rng.integers(0, 2)) * step * count
            span = step * (count - 1) + dup + 1
            cos = plan.Place(int(rng.integers(0, planes)), column, step, dup, n_cos)
            column += span
            sin = plan.Place(int(rng.integers(0, planes)), column, step, dup, count)
            column += span
        segments.append(plan.Segment(first, count, axis, cos, sin))
    pad = column if (h == 0 or rng.random() < 0.3) else -1
    return plan.Layout(column + (pad >= 0), planes, tuple(segments), pad).check(h)
