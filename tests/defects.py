"""An engine with one defect injected into its own code, in its own interpreter: a wrapper of
an interpreter whose ``sitecustomize`` changes one function of one of the engine's modules
right after the module is first imported (``defective_python``). Only the processes run by
that wrapper see the defect: ``sinpe engines --python KEY=WRAPPER`` runs the engine's probe
there, while the run line's reference runs in the test's own interpreter.

Each engine's leg names its defects as ``(module, patch source)`` pairs; the patch source is
the body of ``def patch(module):``, run once on the freshly imported module."""

from __future__ import annotations

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
