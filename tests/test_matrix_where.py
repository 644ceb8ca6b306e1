"""Every "Where" of docs/matrix.md (tools/matrix.py's ``WHERE``) names, for each
"`file`, `function`" it gives, a file and a function present in the installed engine's
source, and every other file it names exists there: a footnote blames an engine only with
the line that raises or reads. Each engine's leg runs this file (.ci/vllm, .ci/sglang,
.ci/onnx, .ci/engines, .ci/openvino): the places of the engines installed in that
interpreter are checked, and no other (no test is generated for an engine that is not here,
so a leg that must not skip does not). vLLM's leg checks too that the twin
(sinpe/_engines/_shrink.py) keeps the sizes vLLM's CPU experts take."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import matrix  # noqa: E402
import matrix_runs  # noqa: E402

# "`file`, `function`": the pairs a place names; and every backquoted file
PAIR = re.compile(r"`([\w./-]+\.(?:py|c|cpp|h))`, `([\w.:]+)`")
FILE = re.compile(r"`([\w./-]+\.(?:py|c|cpp|h))`")


def _package(name: str, *below: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)), *below)


def _llama_cpp() -> Path | None:
    root = os.environ.get("LLAMA_CPP_DIR")
    return Path(root) if root and Path(root, "src", "llama-model.cpp").is_file() else None


def _site(name: str) -> Path | None:
    package = _package(name)
    return package.parent if package is not None else None


# engine key -> where its source is, when it is installed here (the root its files are named from)
ENGINE_ROOTS = {
    "vllm": lambda: _package("vllm"),
    "sglang": lambda: _package("sglang"),
    "onnxruntime-genai": lambda: _package("onnxruntime_genai", "models"),
    "llama.cpp": _llama_cpp,
    "mlx-lm": lambda: _site("mlx_lm"),
    "keras-hub": lambda: _site("keras_hub"),
    # optimum-intel's exporter and the transformers it runs: files named from site-packages
    "openvino": lambda: _site("openvino"),
}
SINPE = Path(__file__).resolve().parent.parent / "src"


def _places() -> list:
    """``(engine, root, place, id)`` for each WHERE entry (the table's, and the runtime
    table's ``WHERE_RUN``) whose engine is installed here."""
    found = []
    tables = (("", matrix.WHERE), ("run-", matrix_runs.WHERE_RUN))
    for table, entries in tables:
        for index, (engine, _words, place, *_only) in enumerate(entries):
            root = ENGINE_ROOTS[engine]() if engine in ENGINE_ROOTS else None
            if root is not None:
                found.append(pytest.param(engine, root, place, id=f"{table}{engine}-{index}"))
    return found


def _defines(path: Path, name: str) -> bool:
    """Whether ``path`` defines ``name``: a Python ``def``/``class``/assignment (``A.b``: a
    method ``b`` of class ``A``), or a C/C++ function's definition (``ns::f``), not a
    declaration."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        tree = ast.parse(text)
        owner, _, member = name.rpartition(".")
        for node in ast.walk(tree):
            if owner and isinstance(node, ast.ClassDef) and node.name == owner:
                if any(getattr(n, "name", None) == member for n in node.body):
                    return True
            if not owner:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                    return True
                targets = node.targets if isinstance(node, ast.Assign) else []
                targets += [node.target] if isinstance(node, ast.AnnAssign) else []
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return True
        return False
    # a definition: at a line's start (a call is indented), after its return type's words,
    # and not a declaration (no ';' after the parameters on that line)
    words = r"(?:[\w:<>*&]+[ \t*&]+)*"
    pattern = re.compile(rf"^{words}{re.escape(name)}\s*\((?![^\n]*\)\s*;)", re.M)
    return pattern.search(text) is not None


def _resolve(engine_root: Path, file: str) -> Path:
    """A place's file: sinpe's own (``sinpe/...``), the transformers installed beside the
    engine (``transformers/...``, which an engine's Transformers backend runs), or the
    engine's."""
    if file.startswith("sinpe/"):
        return SINPE / file
    if file.startswith("transformers/") and _site("transformers") is not None:
        return _site("transformers") / file
    return engine_root / file


def test_every_place_names_a_file_and_a_function():
    """Each WHERE entry gives at least one "`file`, `function`" (the line that raises or
    reads), whatever engine is installed."""
    for engine, words, place, *_only in matrix.WHERE:
        assert PAIR.search(place), (engine, words, place)
        assert engine in ENGINE_ROOTS, engine


@pytest.mark.parametrize(("engine", "root", "place"), _places())
def test_the_place_is_in_the_installed_engine_source(engine, root, place):
    for file in FILE.findall(place):
        assert _resolve(root, file).is_file(), f"{engine}: {file} is not in {root}"
    for file, function in PAIR.findall(place):
        assert _defines(_resolve(root, file), function), f"{engine}: {file} has no {function}"


if importlib.util.find_spec("vllm") is not None:  # defined in vLLM's leg only: no skip elsewhere

    def test_the_twin_keeps_the_sizes_vllms_cpu_experts_take():
        """sinpe restates vLLM's rule (_shrink.MOE_ALIGNMENT): every CPU experts class of
        vLLM takes the twin's hidden and intermediate sizes."""
        from sinpe._engines._shrink import MOE_ALIGNMENT

        with warnings.catch_warnings():  # its imports' deprecations (torch.jit) are not ours
            warnings.simplefilter("ignore", DeprecationWarning)
            from vllm.model_executor.layers.fused_moe.experts import cpu_moe

        classes = [cpu_moe.CPUUnquantizedExperts, *cpu_moe.CPUUnquantizedExperts.__subclasses__()]
        assert len(classes) >= 2
        for cls in classes:
            assert MOE_ALIGNMENT % cls.output_alignment == 0, cls
            assert MOE_ALIGNMENT % cls.reduction_alignment == 0, cls
