"""An engine's interpreter with one of the engine's own rules changed, for ``sinpe engines``
(``--python KEY=PATH``): a script that runs ``change`` (Python, in the engine's process,
before sinpe reads the engine) and then sinpe's probe, as ``sinpe engines`` runs it. The
tests that use it show that a line comes from the engine's code: changing the engine changes
its line, and no other."""

from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path


def changed_interpreter(folder: Path, change: str) -> str:
    """The path of an executable taking ``-m sinpe._engines.probe KEY FOLDER LENGTH``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "changed_probe.py"
    program.write_text(
        textwrap.dedent(change)
        + "\nimport sys\nfrom sinpe._engines import probe\nsys.exit(probe.main(sys.argv[1:]))\n"
    )
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nshift 2\nexec "{sys.executable}" "{program}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)
