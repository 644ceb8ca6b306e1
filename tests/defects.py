"""An engine with one defect injected into its own code, in its own interpreter: a wrapper of
an interpreter whose ``sitecustomize`` changes one function of one of the engine's modules
right after the module is first imported (``defective_python``). Only the processes run by
that wrapper see the defect: ``sinpe engines --python KEY=WRAPPER`` runs the engine's probe
there, while the run line's reference runs in the test's own interpreter.

Each engine's leg names its defects as ``(module, patch source)`` pairs; the patch source is
the body of ``def patch(module):``, run once on the freshly imported module."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

SITE = """
import importlib.util
import sys

TARGET = {target!r}


def patch(module):
{body}


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)  # the module's own spec, found as without us
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)
            print("sinpe-test: defect injected into " + name, file=sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
"""


# The application defects of issue 65 as patches of transformers' modeling code (any family's
# module: ``rotate_half`` and ``apply_rotary_pos_emb`` are per family; ``WHOLE`` patches Phi's
# attention, ``GLOBAL_EVERYWHERE`` Gemma 3's text model). transformers' own run line takes
# them, and so does OpenVINO's, whose export traces that code.
SWAPPED = """
import torch

def rotate_half(x):  # the pairs' rotation where the model rotates halves
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)

module.rotate_half = rotate_half
"""

TWICE = """
apply = module.apply_rotary_pos_emb

def twice(q, k, cos, sin, *args, **kwargs):  # cos and sin carry the factor: once more
    factor = (cos * cos + sin * sin).sqrt()
    return apply(q, k, cos * factor, sin * factor, *args, **kwargs)

module.apply_rotary_pos_emb = twice
"""

WHOLE = """
apply = module.apply_rotary_pos_emb
init = module.PhiAttention.__init__

def whole_head(self, *args, **kwargs):  # the partial rotary factor ignored
    init(self, *args, **kwargs)
    self.rotary_ndims = self.head_dim

def tiled(q, k, cos, sin, *args, **kwargs):  # the partial width's angles, over the head
    reps = -(-q.shape[-1] // cos.shape[-1])
    cos = cos.repeat(*([1] * (cos.dim() - 1)), reps)[..., : q.shape[-1]]
    sin = sin.repeat(*([1] * (sin.dim() - 1)), reps)[..., : q.shape[-1]]
    return apply(q, k, cos, sin, *args, **kwargs)

module.PhiAttention.__init__ = whole_head
module.apply_rotary_pos_emb = tiled
"""

GLOBAL_EVERYWHERE = """
forward = module.Gemma3TextModel.forward

def full_everywhere(self, *args, **kwargs):  # sliding layers given the full layers' RoPE
    rotary = self.rotary_emb
    own = type(rotary).forward
    rotary.forward = lambda x, ids, layer_type=None: own(rotary, x, ids, "full_attention")
    try:
        return forward(self, *args, **kwargs)
    finally:
        del rotary.forward

module.Gemma3TextModel.forward = full_everywhere
"""


def defective_python(folder, target: str, body: str, python: str = sys.executable) -> str:
    """A wrapper of ``python`` (an executable file in ``folder``) in which ``target`` (a module
    name) is patched by ``body`` (the body of ``patch(module)``) when first imported."""
    folder = Path(folder)
    site = folder / "site"
    site.mkdir(parents=True)
    code = SITE.format(target=target, body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    (site / "sitecustomize.py").write_text(code)
    wrapper = folder / "python"
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{path}" exec "{python}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def side_folder(folder, data: dict):
    """``(folder, length, reference)``: the folder and reference ``sinpe.engines(...,
    run=True)`` makes for the config ``data``, kept for several engine interpreters (the
    reference, in this interpreter, made once)."""
    import sinpe
    from sinpe._engines import _side
    from sinpe._engines._shrink import shrink

    folder = Path(folder)
    data, _ = _side._aliased(data)
    length = _side._length(None, sinpe.rope_config(data))
    (folder / "twin").mkdir()
    (folder / "twin" / "config.json").write_text(json.dumps(shrink(data), indent=2))
    (folder / "original.json").write_text(json.dumps(data))
    reference = _side._reference(sys.executable, folder)
    assert not isinstance(reference, str), reference
    return folder, length, reference


def run_lines(key: str, name: str, twin, python: str | None = None, table: bool = True):
    """The engine ``key``'s table line (or ``None``: its probe not run) and run line on
    ``twin`` (``side_folder``'s), its probe in ``python`` (this interpreter by default)."""
    from sinpe._engines import _side

    folder, length, reference = twin
    python = python or sys.executable
    if table:
        line = _side._line(key, python, folder, length)
        assert line.verdict != "failed", line.text
    else:  # what the run line reads of a table line: its engine and interpreter
        line = _side.EngineLine(key, name, None, "", "unread", python=python)
    return (line if table else None), _side._run_line(line, folder, length, reference)


def assert_a_far_run(line, trained: int) -> None:
    """An engine's clean run line: its table line and its run a match or a drift, run at
    p = 0, 100,000 and the trained length - K, within what float32 angles allow at each, p = 0
    within float32 arithmetic, and the far positions run as far positions (float32 angles
    move them: an engine that counted them from 0 would match everywhere)."""
    from sinpe._check import run as _run

    assert line.verdict in ("match", "drift"), line.text
    run = line.run
    assert run is not None and run.verdict in ("match", "drift"), run
    assert [p for p, _, _ in run.distances] == sorted({0, _run.FAR, trained - _run.K})
    assert all(distance <= allowed for _, distance, allowed in run.distances), run.distances
    assert run.distances[0][1] < 1e-4  # p = 0: float32 arithmetic only
    assert run.distances[-1][1] > 10 * run.distances[0][1], run.distances
