"""``sinpe._engines(config)``: one line per engine for one model's config. The twin of the
config (``_shrink.py``) is handed to each engine's own loading path, in the engine's own
interpreter (``python -m sinpe._engines.probe``: the interpreter given for it, else this one),
and what the engine makes of it is judged there by the verdict core. Here the lines are put
together: an engine that is absent is a line saying how to install it; one that fails on the
twin is a line naming its error (a finding too); one whose interpreter holds another sinpe, or
whose reading does not finish, a line saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from .._files import writing
from .._rope.config import load_config, rope_config
from .._rope.families import ALIASES
from .._verdict.verdict import DRIFT, MATCH, MISMATCH, UNCHECKED, strict
from .._version import __version__
from ._registry import ENGINES, by_key
from ._shrink import shrink

__all__ = ["ABSENT", "FAILED", "EngineLine", "EnginesReport", "RunLine", "engines"]

ABSENT, FAILED = "not installed", "failed"
MARK = "SINPE-ENGINE "  # the probe's one line of output, among the engine's own logs
TIMEOUT = 1800  # seconds an engine may take on the twin
_ORDER = {MISMATCH: 0, FAILED: 1, UNCHECKED: 2, DRIFT: 3, MATCH: 4}


class RunLine(NamedTuple):
    """What one engine computes on the run model (``--run``): ``verdict`` is the core's
    (``_verdict/run.py``), or ``failed``/``not installed`` as for a table line;
    ``distances`` ``((p, distance, allowed), ...)`` for each ``p`` run."""

    verdict: str
    reasons: tuple = ()
    distances: tuple = ()
    notes: tuple = ()
    how: str = ""

    @property
    def text(self) -> str:
        shown = ", ".join(f"p={p:,} {d:.2g}" for p, d, _ in self.distances)
        shown = f" ({shown})" if shown else ""
        reasons = f": {'; '.join(self.reasons)}" if self.reasons else ""
        notes = f" ({'; '.join(self.notes)})" if self.notes else ""
        return f"run: {self.verdict}{shown}{reasons}{notes}"

    def as_dict(self) -> dict:
        data = self._asdict()
        data["distances"] = [dict(zip(("p", "distance", "allowed"), row)) for row in self.distances]
        return strict(data)


class EngineLine(NamedTuple):
    """What one engine makes of the config: ``verdict`` is the core's (``match``,
    ``drift``, ``mismatch``, ``unchecked``), or ``failed`` (the engine stopped on the twin:
    ``reasons`` names its error) or ``not installed`` (``reasons``: how to install it);
    ``largest`` the largest error of its table up to the length judged."""

    engine: str
    name: str
    version: str | None
    how: str
    verdict: str
    reasons: tuple = ()
    largest: float | None = None
    python: str = ""
    notes: tuple = ()
    run: RunLine | None = None

    @property
    def text(self) -> str:
        """The line as ``sinpe engines`` prints it."""
        version = f" {self.version}" if self.version else ""
        reasons = f": {'; '.join(self.reasons)}" if self.reasons else ""
        largest = f" (largest error {self.largest:.3g})" if self.largest is not None else ""
        notes = f" ({'; '.join(self.notes)})" if self.notes else ""
        return f"{self.name}{version}: {self.verdict}{largest}{reasons}{notes}"

    def as_dict(self) -> dict:
        data = self._asdict()
        data["run"] = None if self.run is None else self.run.as_dict()
        return strict(data)


class EnginesReport(NamedTuple):
    """Every engine's line for one config, judged up to ``length``."""

    config: str
    length: int
    lines: tuple
    notes: tuple = ()

    @property
    def exit_code(self) -> int:
        """1 where an installed engine does not run the config's RoPE (a mismatch, or a
        failure on the twin), else 0."""
        bad = (MISMATCH, FAILED)
        return int(
            any(
                line.verdict in bad or (line.run is not None and line.run.verdict in bad)
                for line in self.lines
            )
        )

    def as_dict(self) -> dict:
        return strict(
            {
                "config": self.config,
                "length": self.length,
                "engines": [line.as_dict() for line in self.lines],
                "notes": list(self.notes),
                "exit_code": self.exit_code,
            }
        )


def engines(
    config, *, length: int | None = None, pythons: dict | None = None, only=None, run=False
) -> EnginesReport:
    """Each engine's reading of ``config`` (a config.json path or mapping), side by side.

    Parameters
    ----------
    config : str, path or mapping
        The model's ``config.json``.
    length : int, optional
        The deployment length the tables are judged up to (default: the config's trained
        length, ``max_position_embeddings``).
    pythons : dict, optional
        ``{engine key: interpreter}`` for engines installed in environments of their own
        (keys: ``transformers``, ``vllm``, ``sglang``, ``onnxruntime-genai``, ``llama.cpp``,
        ``mlx-lm``, ``keras-hub``);
        the others run in this interpreter. Each needs this sinpe version installed beside
        the engine.
    only : iterable of str, optional
        The engine keys to run (default: all).
    run : bool, optional
        Also each engine's run line (``EngineLine.run``): the twin with random weights run by
        the engine at positions ``p .. p + K - 1`` for p = 0, 100,000 and the trained length,
        judged against the twin in float64 with sinpe's exact tables (made in the
        transformers interpreter, which needs torch and transformers).

    Returns
    -------
    EnginesReport
        One ``EngineLine`` per engine, in a fixed order; ``exit_code`` 1 where an installed
        engine mismatches or fails on the twin.
    """
    data = load_config(config)
    spec = rope_config(data)  # refused here, before any engine runs, if sinpe refuses it
    length = _length(length, spec)
    data, notes = _aliased(data)
    pythons = _pythons(pythons)
    keys = [e.key for e in ENGINES] if only is None else [by_key(k).key for k in only]
    with writing.scratch("sinpe-engines-") as folder:
        twin = Path(folder, "twin")
        writing.scratch_folder(twin)
        twin_text = json.dumps(shrink(data), indent=2).encode()
        writing.write_new(twin / "config.json", lambda stream: stream.write(twin_text))
        original = json.dumps(data).encode()
        writing.write_new(Path(folder, "original.json"), lambda stream: stream.write(original))
        lines = tuple(
            _line(key, pythons.get(key, sys.executable), Path(folder), length) for key in keys
        )
        if run:
            ref = _reference(_reference_python(pythons), Path(folder))
            lines = tuple(
                line._replace(run=_run_line(line, Path(folder), length, ref)) for line in lines
            )
    name = os.fspath(config) if isinstance(config, (str, os.PathLike)) else "<mapping>"
    return EnginesReport(name, length, lines, notes)


def _aliased(data: dict) -> tuple[dict, tuple]:
    """A config whose ``model_type`` is the model's own code (``auto_map``) of a family
    transformers has (``ALIASES``: Kimi-K2's ``configuration_deepseek.py`` is DeepSeek-V3's)
    goes to the engines as that family's, as its own code would load it (a config alone
    does not carry the code, and without it no engine loads the model)."""
    kind = data.get("model_type")
    if kind not in ALIASES or not data.get("auto_map"):
        return data, ()
    twin = {k: v for k, v in data.items() if k != "auto_map"}
    twin["model_type"] = ALIASES[kind]
    note = (
        f"model_type {kind!r} is the model's own code (auto_map), {ALIASES[kind]}'s "
        f"configuration: the engines are given the config with model_type {ALIASES[kind]!r}"
    )
    return twin, (note,)


def _length(length, spec) -> int:
    if length is None:
        length = spec.max_position_embeddings or 4096
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= 1 << 40:
        raise ValueError(f"length must be an integer from 1 to 2**40, got {length!r}")
    return length


def _pythons(pythons) -> dict:
    pythons = dict(pythons or {})
    for key, path in pythons.items():
        by_key(key)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise ValueError(f"the interpreter for {key} ({path!r}) is not an executable file")
    return pythons


def _answer(command: list, folder: Path, python: str) -> dict | str:
    """The probe's one line of JSON, else why there is none (words)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=env,
            cwd=folder,
            stdin=subprocess.DEVNULL,  # an engine's prompt (remote code?) gets no answer
        )
    except subprocess.TimeoutExpired:
        return f"sinpe's reading did not finish in {TIMEOUT} s"
    # the mark may follow an engine's own unfinished line (a prompt): the last one counts
    found = [line.rpartition(MARK)[2] for line in done.stdout.splitlines() if MARK in line]
    if not found:
        return _no_answer(done, python)
    return json.loads(found[-1], parse_constant=_no_constant)


def _no_constant(name: str):
    raise ValueError(f"the probe's answer holds {name}: not strict JSON")


def _line(key: str, python: str, folder: Path, length: int) -> EngineLine:
    engine = by_key(key)
    base = EngineLine(key, engine.name, None, engine.how, FAILED, python=python)
    command = [python, "-m", "sinpe._engines.probe", key, str(folder), str(length)]
    answer = _answer(command, folder, python)
    if isinstance(answer, str):
        return base._replace(reasons=(answer,))
    return _from_probe(base, answer, engine)


def _reference_python(pythons: dict) -> str:
    """Where the reference runs: this interpreter where it has torch and transformers (so
    that an engine's interpreter, transformers' included, is never its own judge), else the
    transformers interpreter given."""
    import importlib.util

    if all(importlib.util.find_spec(name) for name in ("torch", "transformers")):
        return sys.executable
    return pythons.get("transformers", sys.executable)


def _reference(python: str, folder: Path) -> dict | str:
    """The run model's reference (``_run.main`` in ``python``), arrays decoded; words where it
    could not be made."""
    from .._check.run import decode

    answer = _answer([python, "-m", "sinpe._engines._run", str(folder)], folder, python)
    if isinstance(answer, str):
        return answer
    if answer.get("sinpe") != __version__:
        return f"sinpe {answer.get('sinpe')} in {python}, {__version__} here"
    if answer.get("failed"):
        return answer["failed"]
    return {
        "logprobs": {int(p): decode(a) for p, a in answer["logprobs"].items()},
        "hidden": {int(p): [decode(h) for h in hs] for p, hs in answer["hidden"].items()},
        "drift": {int(p): float(d) for p, d in answer["drift"].items()},
        "noise": {int(p): float(d) for p, d in answer["noise"].items()},
        "signal": float(answer["signal"]),
    }


def _run_line(line: EngineLine, folder: Path, length: int, ref) -> RunLine:
    """One engine's run line: not installed or failed as its table line is; else its run
    (the probe's ``run`` mode) judged by the core against ``ref``."""
    from .._check.run import decode
    from .._verdict.run import allowances, distances, judge_run

    if line.verdict == ABSENT:
        return RunLine(ABSENT)
    if isinstance(ref, str):
        return RunLine(UNCHECKED, (f"no reference: the twin in float64 could not be run ({ref})",))
    command = [line.python, "-m", "sinpe._engines.probe", line.engine, str(folder), str(length)]
    answer = _answer(command + ["run"], folder, line.python)
    if isinstance(answer, str):
        return RunLine(FAILED, (answer,))
    if answer.get("failed"):
        return RunLine(FAILED, (answer["failed"],), notes=tuple(answer.get("notes", ())))
    if answer.get("unchecked"):
        return RunLine(UNCHECKED, (answer["unchecked"],))
    found = {int(p): decode(a) for p, a in answer.get("logprobs", {}).items()}
    hidden = {int(p): [decode(h) for h in hs] for p, hs in (answer.get("hidden") or {}).items()}
    try:
        verdict = judge_run(
            found, ref["logprobs"], ref["drift"], ref["noise"], ref["signal"], hidden, ref["hidden"]
        )
    except ValueError as exc:
        return RunLine(FAILED, (str(exc),))
    allowed = allowances(ref["drift"], ref["noise"])
    rows = tuple((p, d, allowed[p]) for p, d in sorted(distances(found, ref["logprobs"]).items()))
    return RunLine(
        verdict.verdict,
        verdict.reasons,
        rows,
        tuple(answer.get("notes", ())),
        answer.get("how", ""),
    )


def _no_answer(done, python: str) -> str:
    """Why the probe printed no line: a killed process (memory), another sinpe, or a bug."""
    if done.returncode in (-9, 137):
        return "killed (out of memory, most likely): the twin keeps the config's lengths"
    tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:]
    if tail and "No module named sinpe" in tail[0]:
        return f"sinpe is not installed in {python}: pip install sinpe=={__version__} there"
    return f"sinpe's reading stopped (exit {done.returncode}): {tail[0] if tail else ''}"[:300]


def _from_probe(base: EngineLine, answer: dict, engine) -> EngineLine:
    if answer.get("sinpe") != __version__:
        return base._replace(
            reasons=(
                f"sinpe {answer.get('sinpe')} in {base.python}, {__version__} here: install "
                "the same in both",
            )
        )
    if not answer.get("installed"):
        missing = answer.get("missing")
        return base._replace(
            verdict=ABSENT, reasons=(engine.install,) + ((f"({missing})",) if missing else ())
        )
    base = base._replace(version=answer.get("version"), how=answer.get("how") or base.how)
    if answer.get("failed"):
        return base._replace(reasons=(answer["failed"],), notes=tuple(answer.get("notes", ())))
    layers = answer.get("layers") or []
    if not layers:
        return base._replace(reasons=("no rotary module found in what the engine built",))
    odd = [layer.get("verdict") for layer in layers if layer.get("verdict") not in _ORDER]
    if odd:  # a probe that says what no verdict is: not read as any verdict
        return base._replace(reasons=(f"the probe answered a verdict sinpe has not: {odd[0]!r}",))
    judged = [layer for layer in layers if layer["verdict"] != UNCHECKED] or layers
    worst = min(_ORDER[layer["verdict"]] for layer in judged)
    verdict = next(v for v, rank in _ORDER.items() if rank == worst)
    reasons, notes = [], list(answer.get("notes", ()))
    for layer in layers:
        said = "; ".join(r["text"] for r in layer.get("reasons", ()))
        what = layer.get("what")
        said = f"{what}: {said}" if said and what and len(layers) > 1 else said
        if layer in judged and _ORDER[layer["verdict"]] == worst and said:
            reasons.append(said)
        elif layer not in judged and said:
            notes.append(said)  # a module not judged beside one that is: said, not the verdict
    largest = [layer["largest_error"] for layer in layers if layer.get("largest_error") is not None]
    return base._replace(
        verdict=verdict,
        reasons=tuple(dict.fromkeys(reasons)),
        largest=max(largest) if largest else None,
        notes=tuple(dict.fromkeys(notes)),
    )
