"""The verdict core, part three: a run line. An engine runs the twin of a config (random
weights, its query and key sharpened so that the angles move the logits) on ``K`` tokens at
positions ``p .. p + K - 1`` for a few ``p``; the reference is the same twin in float64 with
sinpe's exact tables. RoPE is relative, so the reference gives the same log-probabilities at
every ``p`` up to float64 noise: an engine's distance from it at ``p`` says how far the engine
runs from the config's model there. The bounds, and why:

- ``noise[p]``: what float32 arithmetic leaves on the twin's log-probabilities with exact
  angles (the reference measures it: the same model in float32 with sinpe's exact tables;
  1e-6 on a tiny Llama, 1e-4 on a Gemma 3, whose embeddings are scaled by the square root of
  the width). A distance within ``max(FLOOR, NOISE_MARGIN * noise[p])`` at every ``p`` is a
  **match**.
- ``drift[p]``: what float32 angles do at ``p``. A float32 ``p * w`` errs by up to
  ``(p + j) w 2**-24`` (the product's rounding and ``w``'s own): the reference measures it by
  running the exact twin again at positions moved by up to ``(p + j) 2**-23`` each (random,
  seed 0; an error proportional to ``w`` in every pair, as float32's is). A distance within
  that plus ``DRIFT_MARGIN * drift[p]`` at every ``p``, above the match's bound somewhere, is
  a **drift**.
- Past that at any ``p``: a **mismatch**, naming the first ``p`` where it breaks (and, where
  the engine lets its hidden states be read, the first layer whose output departs).
- A twin whose logits the angles hardly move (``signal``: the reference at positions
  ``p, p + 2, ...`` against ``p, p + 1, ...`` at p = 0) cannot tell anything: **unchecked**.
"""

from __future__ import annotations

import numpy as np

from .verdict import DRIFT, MATCH, Verdict, finding, mismatch, not_judged

__all__ = [
    "DRIFT_MARGIN",
    "FLOOR",
    "NOISE_MARGIN",
    "SIGNAL",
    "allowances",
    "distances",
    "first_departure",
    "noise_bounds",
    "judge_run",
]

FLOOR = 1e-5  # the least bound of a match: float32 arithmetic on any twin
NOISE_MARGIN = 4.0
DRIFT_MARGIN = 8.0
SIGNAL = 1e-2  # the least effect of a change of positions a judgment rests on
DEPART = 1e-3  # a layer's output departs where its relative distance passes this


def distances(found: dict, reference: dict) -> dict:
    """``{p: the largest |log-probability - the reference's at p|}`` for every ``p`` of the
    reference: a ``p`` the engine did not run is missing from the answer, never guessed."""
    out = {}
    for p, want in reference.items():
        got = found.get(p)
        if got is None:
            continue
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got.shape != want.shape:
            raise ValueError(
                f"the engine's log-probabilities at p = {p:,} have shape {got.shape}, the "
                f"reference's {want.shape}"
            )
        if not np.isfinite(got).all():
            out[p] = float("inf")
            continue
        out[p] = float(np.abs(got - want).max())
    return out


def noise_bounds(noise: dict) -> dict:
    """``{p: the largest distance a match allows at p}``: float32 arithmetic's."""
    return {p: max(FLOOR, NOISE_MARGIN * float(n)) for p, n in noise.items()}


def allowances(drift: dict, noise: dict) -> dict:
    """``{p: the largest distance a drift allows at p}``: a match's bound, and
    ``DRIFT_MARGIN`` times what float32 angles move the reference by there."""
    bounds = noise_bounds(noise)
    return {p: bounds[p] + DRIFT_MARGIN * float(d) for p, d in drift.items()}


def first_departure(hidden: dict | None, reference: dict | None, p: int) -> int | None:
    """The first hidden state (0: the embeddings' output, ``i``: decoder layer ``i``'s, from
    1) at ``p`` that departs from the reference's by more than ``DEPART`` relative, where both
    were read."""
    if not hidden or not reference or p not in hidden or p not in reference:
        return None
    for layer, (got, want) in enumerate(zip(hidden[p], reference[p])):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        scale = max(float(np.abs(want).max()), 1e-30)
        if got.shape != want.shape or not np.isfinite(got).all():
            return layer
        if float(np.abs(got - want).max()) / scale > DEPART:
            return layer
    return None


def judge_run(
    found: dict,
    reference: dict,
    drift: dict,
    noise: dict,
    signal: float,
    hidden=None,
    ref_hidden=None,
):
    """The run line's verdict: ``found`` and ``reference`` ``{p: (K, vocab)
    log-probabilities}``, ``drift`` ``{p: what float32 angles move them by}``, ``noise``
    ``{p: what float32 arithmetic moves them by}``, ``signal`` what
    a change of positions moves them by. ``hidden``/``ref_hidden``: ``{p: [each layer's
    output]}`` where the engine gives them. Every ``p`` the engine ran is judged, and one it
    did not run is named: the line is a mismatch where a ``p`` it ran breaks, else unchecked
    (what did not run cannot be said to match)."""
    if not signal >= SIGNAL:
        return not_judged(finding("run_no_signal", engine=signal, config=SIGNAL))
    missing = [p for p in reference if p not in found]
    if len(missing) == len(reference):
        return not_judged(finding("run_missing", engine=f"{missing[0]:,}"))
    far = distances(found, reference)
    allowed, matched = allowances(drift, noise), noise_bounds(noise)
    largest = max(far.values())
    decades = tuple((p, p, far[p]) for p in sorted(far))
    broken = [p for p in sorted(far) if not far[p] <= allowed[p]]
    if broken:
        p = broken[0]
        layer = first_departure(hidden, ref_hidden, p)
        where = ""
        if layer is not None and layer > 0:
            where = f"; the output of its decoder layer {layer} (from 1) departs first"
        elif layer == 0:
            where = "; the embeddings' output already departs"
        found_ = finding("run_breaks", position=p, engine=far[p], config=allowed[p], detail=where)
        return mismatch(
            [found_],
            kind="logprobs",
            largest=largest,
            decades=decades,
            worst=(p, far[p], allowed[p]),
            bound=allowed[p],
        )
    if missing:  # what ran is within float32; a p not run judges nothing: named
        return not_judged(finding("run_missing", engine=f"{missing[0]:,}"))
    kind = MATCH if all(far[p] <= matched[p] for p in far) else DRIFT
    worst = max(sorted(far), key=lambda p: far[p])
    return Verdict(
        kind,
        (),
        bound=matched[worst] if kind == MATCH else allowed[worst],
        kind="logprobs",
        largest=largest,
        decades=decades,
        worst=(worst, far[worst], allowed[worst]),
        drift="float32" if kind == DRIFT else None,
    )
