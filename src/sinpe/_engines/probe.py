"""The reading of one engine, in the engine's own interpreter: ``python -m sinpe._engines.probe
KEY FOLDER LENGTH``, ``FOLDER`` holding ``twin/config.json`` (the twin) and
``original.json`` (the config as given). It prints one line, ``SINPE-ENGINE {json}``:

- ``installed``: whether the engine is there (its version where it is);
- ``layers``: each distinct rotary layer's verdict (the core's JSON, with ``what`` it is);
- ``failed``: the engine's own error on the twin (``EngineFailed``), where it stopped.

With a fourth argument ``run``, the engine runs the run model (``FOLDER/run-model``, made by
``python -m sinpe._engines._run``) instead (its reader's ``run``): ``logprobs`` ``{p: array}``
(``_check.run.encode``), ``hidden`` where the engine gives each layer's output, and ``notes``.

An error in sinpe's own reading is not caught: the parent says the reading stopped, with the
last line of the traceback.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path

from .._check.steps import EngineFailed
from .._files import reading
from .._verdict.verdict import dumps
from .._version import __version__
from ._registry import by_key
from ._side import MARK

__all__ = ["main", "version_of"]


def version_of(distributions) -> str | None:
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def main(argv=None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    key, folder, length = argv[:3]
    mode = argv[3] if len(argv) > 3 else "table"
    engine = by_key(key)
    folder = Path(folder)
    answer: dict = {"engine": key, "sinpe": __version__, "python": sys.executable}
    version = version_of(engine.distributions)
    reader = None
    if version is not None or not engine.distributions:
        try:
            reader = importlib.import_module(engine.reader)
        except ImportError as exc:  # the engine is there, what sinpe reads it with is not
            answer["missing"] = str(exc)
    if reader is not None and not engine.distributions:  # a checkout: its reader says
        version = reader.version()
    answer["installed"] = reader is not None and version is not None
    if reader is not None and version is not None:
        answer["version"] = version
        original = reading.read_json(folder / "original.json", what="the twin's original config")
        if mode == "run":
            answer.update(_run_answer(reader, folder, original))
            print(MARK + dumps(answer), flush=True)
            return 0
        try:
            layers, notes, how = reader.read(folder / "twin", original, int(length))
            answer["layers"] = [{"what": what, **judgment.as_json()} for what, judgment in layers]
            answer["notes"] = list(notes)
            if how:
                answer["how"] = how
        except EngineFailed as exc:
            answer["failed"] = str(exc)
    print(MARK + dumps(answer), flush=True)
    return 0


def _run_answer(reader, folder: Path, original: dict) -> dict:
    """The engine's run of the run model, as the probe's answer says it."""
    from .._check.run import MODEL, encode, offsets
    from .._rope.config import rope_config

    run = getattr(reader, "run", None)
    if run is None:  # an engine that runs no model here says why (RUN_UNAVAILABLE)
        why = getattr(reader, "RUN_UNAVAILABLE", "sinpe has no run line for this engine")
        return {"unchecked": why}
    try:
        result = run(folder / MODEL, original, offsets(rope_config(original)))
    except EngineFailed as exc:
        return {"failed": str(exc)}
    answer = {
        "logprobs": {str(p): encode(a) for p, a in result.logprobs.items()},
        "notes": list(result.notes),
        "how": result.how,
    }
    if result.hidden:
        answer["hidden"] = {str(p): [encode(h) for h in hs] for p, hs in result.hidden.items()}
    return answer


if __name__ == "__main__":
    sys.exit(main())
