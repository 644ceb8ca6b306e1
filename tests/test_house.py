"""The house rules, read from the source (ast, never grep: a renamed variable cannot dodge
them). See CONTRIBUTING.md, "The house".

- a rope type's name or alias appears as a literal only in its records (``_rope/rope_types.py``)
  and in the model-family records that name one, as a config does (``_rope/families.py``'s
  ``RULES`` and the generated ``family_defaults.py``): everything else asks the record;
- imports follow the layer order, so no package imports one above it and none imports a
  sibling: no cycle;
- the public call path ``rope_config(path).rope(n)`` runs code in the files it needs and no
  others (11 since the tables moved beside their ``Rotary``; it was 12 before the house);
- no function is over 60 lines of code (its docstring aside) or 20 branch nodes.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import sinpe
from sinpe._rope import rope_types

SRC = Path(sinpe.__file__).parent
FILES = sorted(p for p in SRC.rglob("*.py"))

# The layer order: a module imports only from layers below its own, or from its own package.
LAYERS = [
    {"sinpe._environment", "sinpe._version", "sinpe.conventions"},
    {"sinpe._exactmath"},
    {"sinpe._c", "sinpe._twin"},  # the two backends
    {"sinpe._tables"},  # validate -> plan -> the one filler
    {"sinpe._files"},  # the reading room and the writing room: every file read or written
    {"sinpe._rope"},  # model knowledge
    {"sinpe._verdict"},  # the verdict core: coverage, bounds, reasons, JSON
    {"sinpe._check"},  # the file adapters (caches, GGUF, ONNX) and the module probe
    # faces and adapters (rope_scaling: re-exports of the records)
    {"sinpe.torch", "sinpe.compat", "sinpe.rope_scaling", "sinpe.testing"},
    {"sinpe.vllm", "sinpe.mlx", "sinpe.onnx"},  # the engines: each reads the checker
    {"sinpe.sglang"},  # SGLang's rotary classes are vLLM's: read by vLLM's adapter
    {"sinpe._engines"},  # every engine side by side (its readers run in the engines' interpreters)
    {"sinpe.cli"},  # the command: it reaches every face, an MLX model folder's check too
    {"sinpe"},  # the public package
]


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    """The house package a module belongs to (its entry in LAYERS)."""
    for layer in LAYERS:
        for package in sorted(layer, key=len, reverse=True):
            if package != "sinpe" and (module == package or module.startswith(package + ".")):
                return package
    return "sinpe"


def _layer(module: str) -> int:
    package = _package(module)
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def _imports(path: Path):
    """``(line, imported module)`` for every sinpe import in the file, at any depth."""
    module = _module(path)
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sinpe":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "sinpe":
                continue
            for alias in node.names:  # a submodule named in the import is what it imports
                full = f"{target}.{alias.name}"
                submodule = (SRC.parent / Path(*full.split("."))).with_suffix(".py").exists() or (
                    SRC.parent / Path(*full.split(".")) / "__init__.py"
                ).exists()
                yield node.lineno, full if submodule else target


def test_imports_follow_the_layer_order():
    wrong = []
    for path in FILES:
        module = _module(path)
        for line, target in _imports(path):
            if _package(target) == _package(module):
                continue
            if _layer(target) >= _layer(module):
                wrong.append(f"{path.relative_to(SRC)}:{line} imports {target}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


# The files whose functions rope_config(path).rope(n) calls, for a Llama-3.1 config (its
# scaling's check is exact arithmetic, so the double-double helpers are on the path), the
# backend aside (the kernel's C is not traced; the NumPy twin, its stand-in, is not counted).
CALL_PATH = {
    "_exactmath/dd.py",
    "_files/reading.py",  # config.json, read through the reading room
    "_files/sources.py",  # which config.json a path names (a file, a folder, a Hub id)
    "_rope/config.py",
    "_rope/rope_types.py",
    "_rope/rotary.py",
    "_rope/spec.py",
    "_tables/backends.py",
    "_tables/cache.py",
    "_tables/checks.py",
    "_tables/frequencies.py",
    "_tables/plan.py",
    "_tables/threads.py",
}


def test_the_public_call_path_crosses_few_files(tmp_path):
    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_attention_heads": 4,
        "max_position_embeddings": 4096,
        "rope_parameters": {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 1024,
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    files = set()

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(str(SRC)) and "_twin" not in name:
            files.add(Path(name).relative_to(SRC).as_posix())

    sinpe.clear_cache()
    sys.setprofile(profile)
    try:
        sinpe.rope_config(path).rope(128)
    finally:
        sys.setprofile(None)
    assert files == CALL_PATH


def test_every_package_is_installed():
    """pyproject.toml lists the packages a wheel holds: every folder of src/sinpe with an
    __init__.py is among them (a new one left out installs from a checkout's editable
    install and goes missing from a wheel)."""
    import re

    root = Path(__file__).parent.parent  # the checkout (the suite may run on a wheel)
    text = (root / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(sinpe[\w.]*)"', re.search(r"^packages = \[(.*)\]$", text, re.M)[1]))
    src = root / "src"
    found = {".".join(p.parent.relative_to(src).parts) for p in src.rglob("sinpe/**/__init__.py")}
    assert found == listed, (sorted(found - listed), sorted(listed - found))


def test_every_module_has_a_layer():
    unplaced = sorted({_module(p) for p in FILES if _package(_module(p)) == "sinpe"})
    assert unplaced == ["sinpe", "sinpe.__main__"] or unplaced == ["sinpe"], unplaced


NAMES = set(rope_types.ROPE_TYPES) | set(rope_types.ALIASES) | set(rope_types.REFUSED)
# the records, and the generated record of llama.cpp's vocabulary (its rope.scaling.type names)
RECORDS = {
    SRC / "_rope" / "rope_types.py",
    SRC / "_rope" / "family_defaults.py",
    SRC / "_check" / "llama_cpp_types.py",
}
FAMILY_TABLES = {
    "RULES",
    "_HUNYUAN",
    "_PHI",
}  # families.py: per-family data naming a type, as a config


# module-level names whose value is a word that is also a rope type's name, meaning another
# thing (llama.cpp's name for a vocabulary's plain pre-tokenizer)
NOT_ROPE = {"PRE_TOKENIZER"}


def _rope_type_literals(path: Path):
    tree = ast.parse(path.read_text())
    allowed: set[int] = set()
    for node in tree.body:
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        names = {getattr(t, "id", None) for t in targets}
        if (path.name == "families.py" and names & set(FAMILY_TABLES)) or names & NOT_ROPE:
            allowed |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in NAMES and id(node) not in allowed:
            yield node.lineno, node.value


def test_rope_type_names_live_in_their_records():
    found = [
        f"{path.relative_to(SRC)}:{line}: {name!r}"
        for path in FILES
        if path not in RECORDS
        for line, name in _rope_type_literals(path)
    ]
    assert not found, "rope-type names outside their records:\n" + "\n".join(found)


def test_the_rope_type_check_sees_a_renamed_variable(tmp_path):
    """The check reads literals wherever they are: a comparison through any variable name,
    a membership test, a default argument."""
    source = (
        "def f(kind, x='yarn'):\n"
        "    renamed = kind\n"
        "    return renamed == 'dynamic' or renamed in ('longrope', 'su')\n"
    )
    path = tmp_path / "sample.py"
    path.write_text(source)
    assert sorted(name for _, name in _rope_type_literals(path)) == [
        "dynamic",
        "longrope",
        "su",
        "yarn",
    ]


MAX_LINES = 60
MAX_BRANCHES = 20


def _branches(function: ast.AST) -> int:
    count = 0
    for node in ast.walk(function):
        if isinstance(node, (ast.If, ast.For, ast.While, ast.IfExp, ast.ExceptHandler)):
            count += 1
        elif isinstance(node, ast.match_case):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def _code_lines(function) -> int:
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(body) > 1:
        first = body[1]  # the docstring is documentation, not the function's length
    return function.end_lineno - first.lineno + 1


def _functions():
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield str(path.relative_to(SRC)), node


def test_no_function_is_too_long_or_too_branchy():
    large = [
        f"{where}:{node.lineno} {node.name}: {_code_lines(node)} lines, {_branches(node)} branches"
        for where, node in _functions()
        if _code_lines(node) > MAX_LINES or _branches(node) > MAX_BRANCHES
    ]
    assert not large, "split these by job:\n" + "\n".join(large)


def test_the_readme_is_for_users_and_short():
    """The README is for users (install, quick start, which function, families, PyTorch and
    the engines in a few lines each, links): at most 15 KiB; what CI does and how the legs
    install their engines is CONTRIBUTING's."""
    readme = Path(__file__).resolve().parent.parent / "README.md"
    assert len(readme.read_bytes()) <= 15 * 1024, len(readme.read_bytes())
    assert "tests/test_torch.py" not in readme.read_text()  # the legs' detail is CONTRIBUTING's
