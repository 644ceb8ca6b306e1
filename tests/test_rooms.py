"""The rooms, by rule (issue 64): the verdict core owns coverage, the reading room reads
every file and the writing room writes every file. An AST walk of the package finds any way
around them: a call that reads or writes a file, samples rows, or judges a table by
positions anywhere but in the room whose job it is. Each rule is also tried on a planted
module, so a rule that stopped seeing its call would fail here too."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import sinpe
from sinpe._verdict import judge

SRC = Path(sinpe.__file__).parent
READING = SRC / "_files" / "reading.py"
WRITING = SRC / "_files" / "writing.py"
READERS = {READING, *(SRC / "_files").glob("*.py")} - {WRITING}

# module.function calls that open, map, load or unpack a file: the reading room's
READS = {
    ("io", "open"), ("os", "open"), ("os", "fdopen"), ("np", "load"), ("np", "memmap"),
    ("np", "fromfile"), ("np", "loadtxt"), ("np", "genfromtxt"), ("mmap", "mmap"),
    ("zipfile", "ZipFile"), ("json", "load"), ("torch", "load"), ("pickle", "load"),
    ("safetensors", "safe_open"),
}  # fmt: skip
# ... that create, replace, link, move or remove one: the writing room's
WRITES = {
    ("os", "link"), ("os", "symlink"), ("os", "replace"), ("os", "rename"), ("os", "remove"),
    ("os", "unlink"), ("os", "makedirs"), ("os", "mkdir"), ("os", "rmdir"), ("os", "truncate"),
    ("shutil", "copy"), ("shutil", "copy2"), ("shutil", "copyfile"), ("shutil", "copytree"),
    ("shutil", "move"), ("shutil", "rmtree"), ("torch", "save"), ("json", "dump"),
    ("tempfile", "mkdtemp"), ("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile"),
    ("tempfile", "TemporaryDirectory"),
}  # fmt: skip
STREAM_WRITES = {("np", "save"), ("np", "savez"), ("np", "savez_compressed")}
PATH_READS = {"read_text", "read_bytes"}
# (Path.rename and .replace are not told from str.replace here: os.rename/os.replace are)
PATH_WRITES = {"write_text", "write_bytes", "tofile", "mkdir", "touch", "unlink", "rmdir",
               "symlink_to", "hardlink_to"}  # fmt: skip


def _calls(tree: ast.AST):
    """``(line, what, node)`` of each call of interest in a module."""
    lambdas = {}  # a stream a writer hands to a lambda: np.save(stream, ...) writes to it
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            for inner in ast.walk(node.body):
                lambdas[id(inner)] = {a.arg for a in node.args.args}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("open", "sample"):
            yield node.lineno, func.id, node
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner in ("reading", "writing"):  # the rooms' own functions
                continue
            if (owner, func.attr) in READS:
                yield node.lineno, f"read: {owner}.{func.attr}", node
            elif (owner, func.attr) in WRITES:
                yield node.lineno, f"write: {owner}.{func.attr}", node
            elif (owner, func.attr) in STREAM_WRITES:
                first = node.args[0] if node.args else None
                handed = isinstance(first, ast.Name) and first.id in lambdas.get(id(node), ())
                if not handed:
                    yield node.lineno, f"write: {owner}.{func.attr} to a path", node
            elif func.attr in PATH_READS:
                yield node.lineno, f"read: .{func.attr}()", node
            elif func.attr in PATH_WRITES and owner not in ("str", "self"):
                yield node.lineno, f"write: .{func.attr}()", node


# The one way around a room, each with its reason: (file, what) -> why
ALLOWED = {
    ("_engines/_weights.py", "write: .unlink()"): "the twin's own tokenizer files, written by "
    "transformers' save_pretrained into the twin folder sinpe made, removed in the engine's "
    "interpreter so that sinpe's tokenizer takes their place (missing_ok: never a user's file)",
    ("_engines/_run.py", "write: .unlink()"): "the run model's config.json, written by "
    "transformers' save_pretrained into the run-model folder sinpe made a moment before, "
    "removed so that the twin's config as given takes its place (never a user's file)",
}


def _found(path: Path) -> list:
    """What of ``path`` breaks a room's rule: ``[(line, what)]``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for line, what, _ in _calls(tree):
        if what == "sample":
            found.append((line, "sample(): a subset of rows chosen outside the core"))
        elif what == "open" or what.startswith("read"):
            if path not in READERS and path != WRITING:  # the writer opens what it makes
                found.append((line, what))
        elif what.startswith("write") and path != WRITING:
            found.append((line, what))
    return found


def test_no_file_is_read_or_written_and_no_row_sampled_outside_its_room():
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        for line, what in _found(path)
        if (path.relative_to(SRC).as_posix(), what) not in ALLOWED
    ]
    assert not found, "outside the reading room, the writing room or the core:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source, what",
    [
        ("open(path, 'wb').write(b'')", "open"),
        ("import numpy as np\nnp.save('x.npy', a)", "write: np.save to a path"),
        ("import numpy as np\nnp.load(path)", "read: np.load"),
        ("import zipfile\nzipfile.ZipFile(path)", "read: zipfile.ZipFile"),
        ("import os\nos.replace(a, b)", "write: os.replace"),
        ("from pathlib import Path\nPath(p).write_text('x')", "write: .write_text()"),
        ("rows = sample(4096)", "sample(): a subset of rows chosen outside the core"),
        ("text = head.read_text()", "read: .read_text()"),
    ],
)
def test_each_rule_sees_what_it_forbids(tmp_path, source, what):
    """A planted module with each forbidden call is found (the rule is not blind)."""
    path = tmp_path / "planted.py"
    path.write_text(source + "\n")
    assert [w for _, w in _found(path)] == [what]


def test_every_allowed_way_around_a_room_is_still_used():
    """An exception no longer needed is removed from the list (it would hide a new one)."""
    used = {
        (path.relative_to(SRC).as_posix(), what)
        for path in SRC.rglob("*.py")
        for _, what in _found(path)
    }
    assert set(ALLOWED) <= used, set(ALLOWED) - used


def test_a_stream_the_writer_hands_over_may_be_written():
    tree = ast.parse("import numpy as np\nwrite_new(path, lambda file: np.save(file, a))\n")
    assert [what for _, what, _ in _calls(tree)] == []


def test_the_core_takes_a_row_count_never_positions():
    """judge_table judges every row of what it is given: no argument chooses rows."""
    assert list(inspect.signature(judge.judge_table).parameters) == [
        "rotary", "read", "rows", "pairs", "dtype", "length", "start"
    ]  # fmt: skip
    assert not hasattr(judge, "sample")
