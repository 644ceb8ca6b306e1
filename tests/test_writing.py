"""The writing room (``sinpe._files.writing``) alone, and ``sinpe check model.onnx --fix OUT``
through it: a name taken is refused naming it (a file, a FIFO, a folder, a symbolic link,
dangling or not), never replaced or written through; a user's file is copied, never
linked; an error, Ctrl-C or SIGTERM at any step leaves the folder as it was, and the retry
works. The ONNX models are the hand-written ones of tests/test_onnx.py (no onnx needed);
where onnx is installed, both the original and the copy are loaded by it."""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import stat
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from command import run
from onnx_files import graph, node, tensor
from test_onnx import (
    GEMMA,
    LLAMA,
    LONGROPE,
    _builder_model,
    _external,
    _float32_tables,
    _gqa,
    _save,
)

import sinpe.onnx
from sinpe._files import onnx as onnx_file
from sinpe._files import writing


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _listing(folder: Path) -> dict:
    """Every name under ``folder`` (a symbolic link as where it points), with its bytes."""
    found = {}
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(root, name)
            key = str(path.relative_to(folder))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "folder"
            elif stat.S_ISFIFO(path.lstat().st_mode):
                found[key] = "fifo"
            else:
                found[key] = path.read_bytes()
    return found


# --------------------------------------------------------------------------- the writer alone


def test_a_new_file_is_written_whole_with_numpy_saves_mode(tmp_path):
    path = tmp_path / "t.bin"
    writing.write_new(path, lambda stream: stream.write(b"exact"))
    assert path.read_bytes() == b"exact" and os.listdir(tmp_path) == ["t.bin"]
    assert path.stat().st_mode & 0o7777 == 0o666 & ~_umask()


def _taken(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A name ``kind`` holds, and the words its refusal says."""
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"the user's bytes")
    path = tmp_path / "out.bin"
    if kind == "file":
        path.write_bytes(b"another file")
        return path, f"{str(path)!r} exists: sinpe never replaces a file; remove it or give a new"
    if kind == "symlink":
        path.symlink_to(victim)
        return path, f"{str(path)!r} is a symbolic link: sinpe never writes through a link"
    if kind == "dangling":
        path.symlink_to(tmp_path / "nowhere.bin")
        return path, f"{str(path)!r} is a symbolic link (dangling): sinpe never writes through"
    if kind == "fifo":
        os.mkfifo(path)
        return path, f"{str(path)!r} exists (a FIFO): sinpe never replaces a file"
    path.mkdir()
    return path, f"{str(path)!r} exists (a folder): sinpe never replaces a file"


@pytest.mark.parametrize("kind", ["file", "symlink", "dangling", "fifo", "folder"])
def test_a_taken_name_is_refused_naming_it_and_left_as_it_was(tmp_path, kind):
    if kind == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path, words = _taken(tmp_path, kind)
    before = _listing(tmp_path)
    for attempt in (
        lambda: writing.write_new(path, lambda stream: stream.write(b"new")),
        lambda: writing.copy_new(tmp_path / "victim.bin", path),
        lambda: writing.new_folder(path).__enter__(),
    ):
        with pytest.raises(ValueError) as refused:
            attempt()
        assert words in str(refused.value)
        assert _listing(tmp_path) == before  # nothing written, nothing followed
    assert not (tmp_path / "nowhere.bin").exists()


def test_a_missing_or_unwritable_folder_is_refused_naming_it(tmp_path, monkeypatch):
    """check_new (what the command calls before any work) says why; the write itself
    names the file and the system's reason."""
    missing = tmp_path / "missing" / "t.bin"
    with pytest.raises(ValueError, match="the directory '.*missing' does not exist"):
        writing.check_new(missing)
    with pytest.raises(ValueError) as refused:
        writing.write_new(missing, lambda stream: stream.write(b"x"))
    assert str(refused.value) == f"cannot write {str(missing)!r}: No such file or directory"
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if getattr(os, "geteuid", lambda: 0)() != 0:  # root writes anywhere
            with pytest.raises(ValueError) as refused:
                writing.write_new(locked / "t.bin", lambda stream: stream.write(b"x"))
            assert str(refused.value).endswith("t.bin': Permission denied")
        monkeypatch.setattr(writing.os, "access", lambda *a, **k: False)
        with pytest.raises(ValueError) as refused:
            writing.check_new(locked / "t.bin")
        assert f"the directory {str(locked)!r} is not writable" in str(refused.value)
    finally:
        locked.chmod(0o700)
    assert os.listdir(locked) == [] and os.listdir(tmp_path) == ["locked"]


def _found(verdict: str):
    return types.SimpleNamespace(
        verdict=verdict, line=lambda: verdict, as_json=lambda: {"verdict": verdict}
    )


def test_a_plugins_report_replaces_only_its_own_file(tmp_path, monkeypatch, caplog):
    """The engine plugins' JSON report (SINPE_VLLM_REPORT, SINPE_SGLANG_REPORT): a later
    audit's reports replace the file this process wrote there; a file that was there
    before, or was put there since, or a symbolic link, is never written: one warning."""
    from sinpe._check import plugin

    logger = logging.getLogger("sinpe-test")
    path = tmp_path / "report.json"
    monkeypatch.setenv("SINPE_TEST_REPORT", str(path))
    for verdict in ("drift", "match"):
        plugin.publish([_found(verdict)], logger, "SINPE_TEST_REPORT")
        assert json.loads(path.read_text()) == [{"verdict": verdict}]
    path.unlink()
    path.write_text("theirs")  # another program's file since
    victim = tmp_path / "victim.json"
    victim.write_text("the user's")
    (tmp_path / "link.json").symlink_to(victim)
    for name, words in (
        ("report.json", "exists: sinpe never replaces a file"),
        ("link.json", "is a symbolic link: sinpe never writes through a link"),
    ):
        monkeypatch.setenv("SINPE_TEST_REPORT", str(tmp_path / name))
        caplog.clear()
        plugin.publish([_found("mismatch")], logger, "SINPE_TEST_REPORT")
        (warned,) = [r.getMessage() for r in caplog.records if "could not" in r.getMessage()]
        assert "sinpe could not write SINPE_TEST_REPORT=" in warned and words in warned
    assert path.read_text() == "theirs" and victim.read_text() == "the user's"
    assert sorted(os.listdir(tmp_path)) == ["link.json", "report.json", "victim.json"]


def test_a_name_taken_while_writing_is_never_replaced(tmp_path, monkeypatch):
    """Another program takes the name between the check and the move: the move refuses
    (renameat2's no-replace, else a hard link of the temporary file), the other's file
    keeps its bytes, and no temporary file is left; a dangling link taken so too."""
    for fallback in (False, True):
        if fallback:  # where the kernel has no no-replace rename: the link of the temp file
            monkeypatch.setattr(writing, "_rename_noreplace", lambda temp, final: False)
        for kind in ("file", "dangling"):
            path = tmp_path / f"{kind}-{fallback}.bin"

            def other_program(stream, path=path, kind=kind):
                stream.write(b"ours")
                if kind == "file":
                    path.write_bytes(b"theirs")
                else:
                    path.symlink_to(tmp_path / "nowhere")

            with pytest.raises(ValueError, match="sinpe never"):
                writing.write_new(path, other_program)
            assert not [n for n in os.listdir(tmp_path) if n.endswith(".part")]
            if kind == "file":
                assert path.read_bytes() == b"theirs"
            else:
                assert path.is_symlink() and not (tmp_path / "nowhere").exists()


def test_a_folder_taken_while_it_is_made_is_never_replaced(tmp_path, monkeypatch):
    for fallback in (False, True):
        if fallback:
            monkeypatch.setattr(writing, "_rename_noreplace", lambda temp, final: False)
        out = tmp_path / f"out-{fallback}"
        with pytest.raises(ValueError, match=f"{str(out)!r} exists .a folder.: sinpe never"):
            with writing.new_folder(out) as files:
                files.write("a", lambda stream: stream.write(b"ours"))
                out.mkdir()
                (out / "theirs").write_bytes(b"theirs")
        assert _listing(out) == {"theirs": b"theirs"}
    assert sorted(os.listdir(tmp_path)) == ["out-False", "out-True"]


def test_a_copy_is_a_new_file_never_a_link_and_only_of_a_regular_file(tmp_path, monkeypatch):
    source = tmp_path / "weights.bin"
    source.write_bytes(bytes(range(256)) * 1000)
    for reflink in (True, False):  # where a reflink fails, the bytes copied in chunks
        if not reflink:
            monkeypatch.setattr(writing, "_reflink", lambda reader, writer: False)
            monkeypatch.setattr(writing, "_CHUNK", 1000)
        copy = tmp_path / f"copy-{reflink}.bin"
        writing.copy_new(source, copy)
        assert copy.read_bytes() == source.read_bytes()
        assert os.stat(source).st_nlink == 1 and os.stat(copy).st_nlink == 1
        assert not os.path.samefile(source, copy)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")
        with pytest.raises(ValueError, match="cannot copy .*pipe': not a regular file"):
            writing.copy_new(tmp_path / "pipe", tmp_path / "from-pipe.bin")
    assert not (tmp_path / "from-pipe.bin").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_character_device_is_written_as_a_stream():
    writing.write_new("/dev/null", lambda stream: stream.write(b"x" * 100))
    with pytest.raises(ValueError, match="cannot write '/dev/full': No space left on device"):
        writing.write_new("/dev/full", lambda stream: stream.write(b"x" * (1 << 20)))


class _Steps:
    """Counts the writer's steps (a produce's chunk, a copy's chunk, a move) and raises
    ``failure`` at the ``at``-th; ``moved`` once any file reached its name."""

    def __init__(self, monkeypatch, failure, size: int = 7):
        self.failure, self.at, self.count, self.moved = failure, 0, 0, False
        real_move, real_chunk = writing._move, writing._copy_chunk

        def move(temp, final):
            self.step()
            real_move(temp, final)
            self.moved = True

        def chunk(*args):
            self.step()
            return real_chunk(*args)

        monkeypatch.setattr(writing, "_move", move)
        monkeypatch.setattr(writing, "_copy_chunk", chunk)
        monkeypatch.setattr(writing, "_reflink", lambda reader, writer: False)
        monkeypatch.setattr(writing, "_CHUNK", size)  # bytes copied per step

    def start(self, at: int) -> None:
        self.at, self.count, self.moved = at, 0, False

    def step(self) -> None:
        self.count += 1
        if self.count == self.at:
            raise self.failure

    def produce(self, data: bytes):
        def write(stream):
            for start in range(0, len(data), 5):
                self.step()
                stream.write(data[start : start + 5])

        return write


FAILURES = [
    KeyboardInterrupt(),
    SystemExit(143),
    OSError(errno.ENOSPC, "No space left on device"),
]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("room", ["files", "folder"])
def test_a_failure_at_every_step_leaves_the_folder_as_it_was(tmp_path, monkeypatch, failure, room):
    """Two files written and one copied, in an existing folder or a new one: a failure at
    the k-th step, for every k, leaves the listing exactly as before; the first run that
    completes (the retry) writes every file whole."""
    source = tmp_path / "user.bin"
    source.write_bytes(b"the user's weights, 40 bytes of them...")
    work = tmp_path / "work"
    work.mkdir()
    before = _listing(tmp_path)
    steps = _Steps(monkeypatch, failure)
    out = work / "out"
    expected = ValueError if isinstance(failure, OSError) else type(failure)
    for at in range(1, 1000):
        steps.start(at)
        try:
            with writing.new_folder(out) if room == "folder" else writing.new_files(work) as files:
                files.write("a.bin", steps.produce(b"first file's bytes"))
                files.copy(source, "user.bin")
                files.write("b.bin", steps.produce(b"second"))
        except BaseException as exc:
            assert isinstance(exc, expected), exc
            if isinstance(exc, ValueError):
                assert "cannot write" in str(exc) and "No space left on device" in str(exc)
            assert _listing(tmp_path) == before, at
            continue
        break
    assert at > 10 and steps.count < at  # every step was failed once
    written = _listing(out if room == "folder" else work)
    assert written == {
        "a.bin": b"first file's bytes",
        "user.bin": source.read_bytes(),
        "b.bin": b"second",
    }
    assert os.stat(source).st_nlink == 1


def test_an_exception_at_every_line_of_the_writer_leaves_nothing(tmp_path, monkeypatch):
    """A signal handler may raise between any two lines: raise at every line of the writing
    room a folder's making runs, one run each, until a run completes. No run leaves a
    temporary file or folder; one raised before the folder reached its name leaves nothing;
    after, the folder is whole or gone."""
    source = tmp_path / "user.bin"
    source.write_bytes(b"weights")
    here = writing.__file__
    moved = [False]
    real_move = writing._move

    def move(temp, final):
        real_move(temp, final)
        moved[0] = final.endswith("out")

    monkeypatch.setattr(writing, "_move", move)
    for n in range(1, 100_000):
        seen, moved[0] = [0], False

        def tracer(frame, event, arg, n=n, seen=seen):
            if frame.f_code.co_filename != here:
                return None
            if event == "line":
                seen[0] += 1
                if seen[0] == n:
                    raise KeyboardInterrupt
            return tracer

        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        sys.settrace(tracer)
        try:
            with writing.new_folder(tmp_path / "out") as files:
                files.write("a.bin", lambda stream: stream.write(b"a"))
                files.copy(source, "user.bin")
        except KeyboardInterrupt:
            finished = False
        else:
            finished = True
        finally:
            sys.settrace(None)
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        listing = _listing(tmp_path)
        whole = {"user.bin": b"weights", "out": "folder", "out/a.bin": b"a"}
        whole["out/user.bin"] = b"weights"
        assert listing in ({"user.bin": b"weights"}, whole), n
        assert finished or moved[0] or listing == {"user.bin": b"weights"}, n
        if finished and seen[0] < n:
            break
        if "out" in listing:
            for name in ("a.bin", "user.bin"):
                (tmp_path / "out" / name).unlink()
            (tmp_path / "out").rmdir()
    assert n > 50 and _listing(tmp_path / "out") == {"a.bin": b"a", "user.bin": b"weights"}


# --------------------------------------------------------------------------- --fix


def _model(tmp_path: Path) -> Path:
    """A builder-form model (caches in model.onnx.data) with its config and a genai config."""
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path / "m", LLAMA, cos, sin)
    (path.parent / "genai_config.json").write_text('{"model": {"context_length": 64}}')
    return path


def _untouched(path: Path, before: dict) -> None:
    """The source folder's bytes as before, each file with one link."""
    assert _listing(path.parent) == before
    for name in before:
        assert os.stat(path.parent / name).st_nlink == 1, name


def _loads(*paths) -> None:
    """Each model loaded by onnx with its external data, where onnx is installed (it
    refuses a data file with several links: a hard-link attack to it)."""
    try:
        import onnx
    except ImportError:
        return
    for path in paths:
        onnx.load(str(path))


def test_fix_to_a_new_folder_copies_and_never_links(tmp_path):
    path = _model(tmp_path)
    before = _listing(path.parent)
    fixed = Path(sinpe.onnx.fix(path, tmp_path / "out"))
    assert fixed == tmp_path / "out" / "model.onnx"
    assert sorted(os.listdir(tmp_path / "out")) == [
        "config.json",
        "genai_config.json",
        "model.onnx",
        "model.onnx.data",
        "model.sinpe-rope.data",
    ]
    _untouched(path, before)
    for name in os.listdir(tmp_path / "out"):
        assert os.stat(tmp_path / "out" / name).st_nlink == 1, name
    assert (tmp_path / "out" / "model.onnx.data").read_bytes() == before["model.onnx.data"]
    assert sinpe.check_onnx(fixed).verdict == "match"
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~_umask()
    _loads(path, fixed)
    result = run("check", path, "--fix", tmp_path / "out")  # the folder now holds files
    assert result.returncode == 2 and "give a new folder (or an empty one)" in result.stderr


def test_fix_never_replaces_another_models_data_in_the_folder_given(tmp_path):
    """--fix other/new.onnx wrote the model's data file as other/model.onnx.data, over
    another model's weights there."""
    path = _model(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.onnx.data").write_bytes(b"another model's weights")
    before, source = _listing(tmp_path / "other"), _listing(path.parent)
    with pytest.raises(ValueError) as refused:
        sinpe.onnx.fix(path, other / "new.onnx")
    assert str(refused.value) == (
        f"{str(other / 'model.onnx.data')!r} exists: sinpe never replaces a file; remove it or "
        "give a new name"
    )
    assert _listing(other) == before
    _untouched(path, source)
    (other / "model.onnx.data").unlink()  # the retry, the name free
    fixed = sinpe.onnx.fix(path, other / "new.onnx")
    assert sorted(os.listdir(other)) == ["model.onnx.data", "new.onnx", "new.sinpe-rope.data"]
    assert sinpe.check_onnx(fixed, path.parent / "config.json").verdict == "match"
    _untouched(path, source)
    _loads(path, fixed)


def test_fix_never_writes_through_a_link_at_its_data_files_name(tmp_path):
    """A symbolic link at OUT.sinpe-rope.data (beside the model, or in another folder): the
    user's file it points to was overwritten with the caches' bytes."""
    path = _model(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"the user's file")
    for out in (path.parent / "exact.onnx", tmp_path / "o" / "exact.onnx"):
        out.parent.mkdir(exist_ok=True)
        link = out.parent / "exact.sinpe-rope.data"
        link.symlink_to(victim)
        before = _listing(out.parent)
        result = run("check", path, "--fix", out)
        assert result.returncode == 2 and result.stdout == ""
        assert f"{str(link)!r} is a symbolic link: sinpe never writes through a link" in (
            result.stderr
        )
        assert victim.read_bytes() == b"the user's file" and _listing(out.parent) == before


@pytest.mark.parametrize("out", ["gone.onnx", "gone"])
def test_fix_never_writes_through_a_dangling_link_given_as_out(tmp_path, out):
    path = _model(tmp_path)
    link = tmp_path / out
    link.symlink_to(tmp_path / "target")
    before = _listing(tmp_path)
    result = run("check", path, "--fix", link)
    assert result.returncode == 2
    assert f"{str(link)!r} is a symbolic link (dangling): sinpe never writes through" in (
        result.stderr
    )
    assert _listing(tmp_path) == before and not (tmp_path / "target").exists()


@pytest.mark.parametrize("failure", FAILURES[:2], ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("where", ["folder", "other.onnx", "empty folder"])
def test_fix_interrupted_at_any_step_leaves_nothing_and_the_retry_works(
    tmp_path, monkeypatch, failure, where
):
    """Ctrl-C (or SIGTERM) while the caches' file, the .onnx or a copy is written, or while
    they are moved to their names: nothing is left, the source is untouched; the retry
    writes the exact copy (this was a partial folder that refused the retry)."""
    path = _model(tmp_path)
    report = sinpe.check_onnx(path)
    out = {"folder": tmp_path / "out", "other.onnx": tmp_path / "o" / "x.onnx"}
    out["empty folder"] = tmp_path / "e"
    (tmp_path / "o").mkdir()
    (tmp_path / "e").mkdir()
    before = _listing(tmp_path)
    steps = _Steps(monkeypatch, failure, size=4096)  # model.onnx.data in 4 chunks
    real_write = writing.NewFiles.write

    def write(files, name, produce):  # each produce's write a step
        def counted(stream):
            real = stream.write
            stream.write = lambda data: (steps.step(), real(data))[1]
            produce(stream)

        return real_write(files, name, counted)

    monkeypatch.setattr(writing.NewFiles, "write", write)
    for at in range(1, 10_000):
        steps.start(at)
        try:
            fixed = sinpe.onnx.fix(path, out[where], report=report)
        except type(failure):
            assert _listing(tmp_path) == before, at
            continue
        break
    assert at > 5 and steps.count < at
    assert sinpe.check_onnx(fixed, path.parent / "config.json").verdict == "match"
    assert os.stat(path).st_nlink == 1 and os.stat(path.parent / "model.onnx.data").st_nlink == 1
    _loads(path, fixed)


def test_fix_leaves_the_original_and_the_copy_loading_in_onnx_and_onnxruntime(tmp_path):
    """A model onnx itself saved (a weight and the caches in model.onnx.data, ONNX Runtime's
    RotaryEmbedding): after --fix, onnx.load takes both (it refused both when the weights
    were hard-linked), and ONNX Runtime runs both."""
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from onnx import TensorProto, helper, numpy_helper

    cos, sin = _float32_tables(LLAMA, 4096)
    bias = np.linspace(-1, 1, 128, dtype=np.float32)[None, None]
    rotary = helper.make_node(
        "RotaryEmbedding", ["x", "position_ids", "cos_cache", "sin_cache"], ["rotated"],
        domain="com.microsoft", name="/model/layers.0/attn/RotaryEmbedding", num_heads=2,
    )  # fmt: skip
    graph = helper.make_graph(
        [rotary, helper.make_node("Add", ["rotated", "bias"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 128]),
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, 8]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 128])],
        [numpy_helper.from_array(a, n) for a, n in ((bias, "bias"), (cos, "cos_cache"))]
        + [numpy_helper.from_array(sin, "sin_cache")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    (tmp_path / "m").mkdir()
    path = tmp_path / "m" / "model.onnx"
    onnx.save_model(
        model, str(path), save_as_external_data=True, location="model.onnx.data",
        size_threshold=0,
    )  # fmt: skip
    (tmp_path / "m" / "config.json").write_text(json.dumps(LLAMA))
    before = _listing(path.parent)
    fixed = sinpe.onnx.fix(path, tmp_path / "out")
    _untouched(path, before)
    x = np.random.default_rng(0).standard_normal((1, 8, 128)).astype(np.float32)
    feed = {"x": x, "position_ids": np.arange(4000, 4008, dtype=np.int64)[None]}
    outputs = []
    for each in (path, fixed):
        onnx.load(str(each))
        session = ort.InferenceSession(str(each), providers=["CPUExecutionProvider"])
        outputs.append(session.run(None, feed)[0])
    assert sinpe.check_onnx(fixed).verdict == "match"
    # the same model, its float32-angle caches replaced by the exact ones: close, not equal
    assert 0 < np.abs(outputs[0] - outputs[1]).max() < 1e-3


# --fix, its copy held (the new folder half made) until a signal comes
_HELD_FIX = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal starts it
import sinpe.cli
from sinpe._files import onnx as onnx_file
from sinpe._files import writing

real = writing._copy_chunk

def held(reader, writer, offset, count):
    done = real(reader, writer, offset, count)
    open(sys.argv[1], "w").close()  # the folder is half made
    while True:
        time.sleep(0.01)  # the signal lands here

writing._reflink = lambda reader, writer: False
writing._copy_chunk = held
sys.exit(sinpe.cli.main(sys.argv[2:]))
"""


class _Refused:  # a report --fix must refuse: the verdict's fields it reads
    def __init__(self, verdict):
        self.verdict, self.reasons = verdict, ["a reason"]


@pytest.mark.parametrize(
    "made, said",
    [
        (_Refused("mismatch"), "not fixed: its RoPE is not the config's \\(a reason\\)"),
        (_Refused("unchecked"), "not fixed: not every cache was judged \\(a reason\\)"),
        (RuntimeError("the verdict failed"), "the verdict failed"),
    ],
    ids=["mismatch", "unchecked", "verdict failed"],
)
def test_fix_copies_the_weights_while_the_verdict_is_made_and_a_refusal_leaves_nothing(
    tmp_path, monkeypatch, made, said
):
    """Without a report, --fix makes the verdict on a thread while the weights are copied
    (the verdict here waits for the first copy to start: made one after the other, this
    would wait out its 30 s guard and fail); a refusal, or a verdict that fails, found
    after the copies, leaves nothing beside OUT and the source as it was."""
    import threading

    from sinpe._check import onnx_fix

    path = _model(tmp_path)
    before = _listing(path.parent)
    started, copied = threading.Event(), []
    copy = writing.NewFiles.copy

    def copy_seen(self, source, name):
        copied.append(name)
        started.set()
        return copy(self, source, name)

    def verdict(path_, config=None):
        assert started.wait(30), "the verdict was made before any copy started"
        if isinstance(made, Exception):
            raise made
        return made

    monkeypatch.setattr(writing.NewFiles, "copy", copy_seen)
    monkeypatch.setattr(onnx_fix, "check_onnx", verdict)
    (tmp_path / "put").mkdir()
    with pytest.raises(type(made) if isinstance(made, Exception) else ValueError, match=said):
        onnx_fix.fix(path, tmp_path / "put" / "out")
    assert "model.onnx.data" in copied and os.listdir(tmp_path / "put") == []
    _untouched(path, before)


def test_fix_given_a_refused_report_starts_nothing_and_a_refusal_outranks_other_errors(
    tmp_path, monkeypatch
):
    """A report given (as ``sinpe.onnx.fix(..., report=)``) that refuses: refused before any
    file is read or copied. Made on the thread, a refusal is what is said even where another
    error came first (OUT a folder that holds files), as when the verdict came first."""
    from sinpe._check import onnx_fix

    path = _model(tmp_path)
    copied = []
    monkeypatch.setattr(writing.NewFiles, "copy", lambda *args: copied.append(args))
    monkeypatch.setattr(onnx_fix.onnx_file, "read", lambda *args: copied.append(args))
    with pytest.raises(ValueError, match="not fixed: its RoPE is not the config's"):
        onnx_fix.fix(path, tmp_path / "out", report=_Refused("mismatch"))
    assert copied == [] and not (tmp_path / "out").exists()
    monkeypatch.undo()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept").write_text("theirs")
    monkeypatch.setattr(onnx_fix, "check_onnx", lambda *args: _Refused("mismatch"))
    with pytest.raises(ValueError, match="not fixed: its RoPE is not the config's"):
        onnx_fix.fix(path, tmp_path / "full")
    assert os.listdir(tmp_path / "full") == ["kept"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_fix_leaves_nothing_and_the_retry_works(tmp_path, signum, code):
    """A real Ctrl-C (or SIGTERM) while --fix copies the weights into its new folder: the
    command ends with the signal's code, nothing is left beside OUT, and the retry works."""
    import subprocess
    import time

    path = _model(tmp_path)
    ready = tmp_path / "ready"
    (tmp_path / "put").mkdir()
    out = tmp_path / "put" / "out"
    script = [sys.executable, "-c", _HELD_FIX, str(ready), "check", str(path), "--fix", str(out)]
    process = subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # a guard against a hang, not a measurement
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), process.communicate(timeout=60)
    assert [n for n in os.listdir(tmp_path / "put") if n.endswith(".part")]  # mid-copy indeed
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == code and "Traceback" not in err, err
    assert os.listdir(tmp_path / "put") == []
    result = run("check", path, "--fix", out)
    assert result.returncode == 0 and f"wrote {out / 'model.onnx'}" in result.stdout
    assert sinpe.check_onnx(out / "model.onnx").verdict == "match"


# --------------------------------------------------------------------------- sinpe's own


def test_a_scratch_folder_is_private_and_gone_after_and_nothing_else_is_scratch(tmp_path):
    """``scratch``: a new private folder (0700) for sinpe's own working files (an engine's
    twin), removed with what it holds; ``scratch_folder`` makes folders only inside one open
    now, never in a user's folder, never on a taken name."""
    with writing.scratch("sinpe-test-") as folder:
        assert os.stat(folder).st_mode & 0o777 == 0o700
        writing.scratch_folder(os.path.join(folder, "twin"))
        writing.write_new(os.path.join(folder, "twin", "config.json"), lambda s: s.write(b"{}"))
        with pytest.raises(FileExistsError):
            writing.scratch_folder(os.path.join(folder, "twin"))
        with pytest.raises(ValueError, match="is not in a scratch folder of sinpe's own"):
            writing.scratch_folder(tmp_path / "twin")
    assert not os.path.exists(folder)
    with pytest.raises(ValueError, match="is not in a scratch folder of sinpe's own"):
        writing.scratch_folder(os.path.join(folder, "again"))  # closed: no longer scratch
    assert os.listdir(tmp_path) == []


def test_silence_points_a_descriptor_at_the_null_device(tmp_path):
    """A reader that left the pipe: stdout is pointed at the null device, never a file."""
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        writing.silence(fd)
        os.write(fd, b"lost")
        assert os.path.samestat(os.fstat(fd), os.stat(os.devnull))
    finally:
        os.close(fd)
    assert path.read_bytes() == b""


# --------------------------------------------------------------------------- from mutation testing


def test_remove_own_leaves_what_is_gone_or_not_its_own(tmp_path):
    """``remove_own``: a file already removed is no error; a file put there since stays."""
    path = tmp_path / "report.json"
    stamp = writing.write_new(path, lambda s: s.write(b"[]"))
    path.unlink()
    writing.remove_own(path, stamp)  # gone already: nothing to do, nothing raised
    path.write_text("theirs")
    writing.remove_own(path, stamp)
    assert path.read_text() == "theirs"


def test_a_scratch_folders_own_folders_are_private(tmp_path):
    with writing.scratch("sinpe-test-") as folder:
        writing.scratch_folder(os.path.join(folder, "twin"))
        assert os.stat(os.path.join(folder, "twin")).st_mode & 0o777 == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, None), (signal.SIGTERM, 143)])
def test_a_signal_while_a_file_is_written_stops_it_at_once_and_leaves_nothing(
    tmp_path, signum, code
):
    """In this process: SIGINT is a KeyboardInterrupt, SIGTERM a SystemExit(143), raised
    where the write is (not after it), and nothing is left in the folder."""
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    given = {signum: signal.signal(signum, handler) for signum, handler in defaults.items()}
    try:
        _signal_mid_write(tmp_path, signum, code)
    finally:
        for each, handler in given.items():
            signal.signal(each, handler)


def _signal_mid_write(tmp_path, signum, code):
    after = []

    def produce(stream):
        stream.write(b"half")
        os.kill(os.getpid(), signum)
        after.append("written on")  # never reached: the signal raised above
        stream.write(b"rest")

    expected = KeyboardInterrupt if signum == signal.SIGINT else SystemExit
    with pytest.raises(expected) as caught:
        writing.write_new(tmp_path / "table.npy", produce)
    assert after == [] and os.listdir(tmp_path) == []
    if code is not None:
        assert caught.value.code == code
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handlers given back
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_short_write_on_a_full_disk_says_no_space_left(tmp_path, monkeypatch):
    """NumPy's short write names no cause (its OSError has no errno): under 1 MiB free in
    the folder it reads "No space left on device"; otherwise its own words; a folder whose
    space cannot be asked keeps them too."""
    path = tmp_path / "table.npy"
    short = OSError("8 requested and 0 written")

    def produce(stream):
        raise short

    for blocks, reason in (
        (255, "No space left on device (8 requested and 0 written)"),  # 1 MiB less 4 KiB
        (256, "8 requested and 0 written"),  # 1 MiB exactly
    ):

        def statvfs(folder, blocks=blocks):
            if folder != str(tmp_path):
                raise FileNotFoundError(errno.ENOENT, "asked of another folder", folder)
            return types.SimpleNamespace(f_bavail=blocks, f_frsize=4096)

        monkeypatch.setattr(os, "statvfs", statvfs)
        with pytest.raises(ValueError) as caught:
            writing.write_new(path, produce)
        assert str(caught.value) == f"cannot write {str(path)!r}: {reason}"
        assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    missing = str(tmp_path / "gone" / "table.npy")
    assert str(writing._failure(missing, short)) == (
        f"cannot write {missing!r}: 8 requested and 0 written"
    )


def test_fix_makes_each_part_of_a_concatenated_longrope_cache_exact(tmp_path):
    """DML's one LongRoPE cache, the original length's rows then the trained length's:
    --fix writes each part at its own length (short factors, then long), so the copy
    matches where the original drifts."""
    small, large = _float32_tables(LONGROPE, 1024), _float32_tables(LONGROPE, 8192)
    cos, sin = (np.concatenate([small[k], large[k]]) for k in (0, 1))
    path = _builder_model(tmp_path / "m", LONGROPE, cos, sin)
    assert sinpe.check_onnx(path).verdict == "drift"
    out = sinpe.onnx.fix(path, tmp_path / "o")
    report = sinpe.check_onnx(out, tmp_path / "m" / "config.json")
    assert report.verdict == "match", report.reasons
    assert [p.name for p in report.parts] == ["cos_cache[0:1024]", "cos_cache[1024:9216]"]


def test_fix_to_another_folder_brings_the_data_a_subgraph_names(tmp_path):
    """A tensor held in an If's branch names its own external data file: a copy made in
    another folder brings that file too, or it would not load."""
    cos, sin = _float32_tables(LLAMA, 64)
    folder = tmp_path / "m"
    path = _builder_model(folder, LLAMA, cos, sin)
    weights = {"location": "branch.data", "offset": 0, "length": 16}
    branch = graph(
        [node("Constant", [], ["w"], value=("tensor", tensor("", dims=(4,), external=weights)))]
    )
    extra = node(
        "If", ["flag"], ["w"], then_branch=("graph", branch), else_branch=("graph", branch)
    )
    caches = [_external("cos_cache", cos, 0), _external("sin_cache", sin, cos.nbytes)]
    _save(
        folder,
        graph([_gqa(layer=0), extra], caches, ["input_ids"]),
        LLAMA,
        {"cos": cos, "sin": sin},
    )
    (folder / "branch.data").write_bytes(bytes(16))
    (tmp_path / "o").mkdir()
    out = sinpe.onnx.fix(path, tmp_path / "o" / "exact.onnx")
    assert sorted(os.listdir(tmp_path / "o")) == [
        "branch.data",
        "exact.onnx",
        "exact.sinpe-rope.data",
        "model.onnx.data",
    ]
    assert (tmp_path / "o" / "branch.data").read_bytes() == bytes(16)
    assert sinpe.check_onnx(out, folder / "config.json").verdict == "match"


def test_fix_makes_each_layer_types_cache_exact_by_the_layers_using_it(tmp_path):
    """Gemma 3's two caches (sliding layers: base 10,000; full layers: 1,000,000), each with
    float32 angles: --fix writes each from the RoPE of the layers that use it."""
    spec = sinpe.rope_config(GEMMA)
    tables = {}
    for kind in ("sliding_attention", "full_attention"):
        inv_freq, factor = spec.layer(kind).frequencies(64)
        angle = np.arange(64, dtype=np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
        tables[kind] = [
            (f(angle) * np.float32(factor)).astype(np.float32) for f in (np.cos, np.sin)
        ]
    arrays = dict(
        zip(["lc", "ls", "gc", "gs"], [*tables["sliding_attention"], *tables["full_attention"]])
    )
    offsets = np.cumsum([0] + [a.nbytes for a in arrays.values()])
    caches = [_external(name, a, int(at)) for (name, a), at in zip(arrays.items(), offsets)]
    nodes = [_gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
    path = _save(tmp_path / "m", graph(nodes, caches, ["input_ids"]), GEMMA, arrays)
    assert sinpe.check_onnx(path).verdict == "drift"
    out = sinpe.onnx.fix(path, tmp_path / "o")
    report = sinpe.check_onnx(out, tmp_path / "m" / "config.json")
    assert [(p.name, p.layer_type, p.judgment.verdict) for p in report.parts] == [
        ("lc", "sliding_attention", "match"),
        ("gc", "full_attention", "match"),
    ]


def test_fix_reads_the_config_it_is_given_and_refuses_a_misreading_in_words(tmp_path):
    """--fix with the config given (none beside the model: ONNX Runtime GenAI's output)
    writes the copy from it; a model whose caches are another config's, or not all judged,
    is refused, saying which and why, and nothing is written."""
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path / "m", LLAMA, cos, sin)
    (tmp_path / "c").mkdir()
    config = (tmp_path / "m" / "config.json").rename(tmp_path / "c" / "config.json")
    out = sinpe.onnx.fix(path, tmp_path / "o", config)
    assert sinpe.check_onnx(out, config).verdict == "match"
    other = _float32_tables({**LLAMA, "rope_theta": 1e4}, 64)
    path = _builder_model(tmp_path / "w", LLAMA, *other)
    reasons = "; ".join(sinpe.check_onnx(path).reasons)
    with pytest.raises(ValueError) as caught:
        sinpe.onnx.fix(path, tmp_path / "o2")
    assert str(caught.value) == (
        f"{path}: not fixed: its RoPE is not the config's ({reasons}); --fix replaces a table "
        "that reads as the config, never a misreading"
    )
    spec = sinpe.rope_config(GEMMA)
    local = spec.layer("sliding_attention").rope(64, layout="compact", dtype="float32")
    full = spec.layer("full_attention").rope(64, layout="compact", dtype="float32")
    arrays = dict(zip(["lc", "ls", "gc", "gs"], [*local, *full]))
    offsets = np.cumsum([0] + [a.nbytes for a in arrays.values()])
    caches = [_external(name, a, int(at)) for (name, a), at in zip(arrays.items(), offsets)]
    nodes = [_gqa("lc", "ls", layer="x"), _gqa("lc", "ls", layer=0), _gqa("gc", "gs", layer=1)]
    path = _save(tmp_path / "g", graph(nodes, caches, ["input_ids"]), GEMMA, arrays)
    reasons = "; ".join(sinpe.check_onnx(path).reasons)
    with pytest.raises(ValueError) as caught:
        sinpe.onnx.fix(path, tmp_path / "o3")
    assert str(caught.value) == (
        f"{path}: not fixed: not every cache was judged ({reasons}); --fix replaces only "
        "tables that read as the config"
    )
    assert sorted(os.listdir(tmp_path)) == ["c", "g", "m", "o", "w"]


def test_fix_of_caches_held_in_the_model_writes_them_in_the_copy(tmp_path):
    """Caches stored in the model file itself (no external data): the copy holds the exact
    tables in its own file and no data file is made; external caches go to the copy's data
    file, never inline."""
    cos, sin = _float32_tables(LLAMA, 64)
    caches = [tensor("cos_cache", cos), tensor("sin_cache", sin)]
    path = _save(tmp_path / "m", graph([_gqa(layer=0)], caches, ["input_ids"]), LLAMA)
    assert sinpe.check_onnx(path).verdict == "drift"
    out = sinpe.onnx.fix(path, tmp_path / "o")
    assert sorted(os.listdir(tmp_path / "o")) == ["config.json", "model.onnx"]
    exact = sinpe.rope_config(LLAMA).rope(64, layout="compact", dtype="float32")
    read = onnx_file.read(out)
    for name, table in zip(("cos_cache", "sin_cache"), exact):
        held = read.graph.initializers[name]
        assert held.where[0] != "external"
        assert np.array_equal(onnx_file.tensor_values(read, held, 1 << 20), table)
    path = _builder_model(tmp_path / "e", LLAMA, cos, sin)
    out = sinpe.onnx.fix(path, tmp_path / "x")
    read = onnx_file.read(out)
    held = read.graph.initializers["cos_cache"]
    assert held.where[0] == "external"
    assert os.path.basename(held.where[1]) == "model.sinpe-rope.data"
    data = (tmp_path / "x" / "model.sinpe-rope.data").read_bytes()
    assert data == exact[0].tobytes() + exact[1].tobytes()


def test_fix_to_an_onnx_path_beside_the_model_adds_only_the_copy(tmp_path):
    """--fix model.onnx --fix exact.onnx in the model's own folder: its data is there
    already, so only the copy and its caches' data are added."""
    cos, sin = _float32_tables(LLAMA, 64)
    path = _builder_model(tmp_path, LLAMA, cos, sin)
    before = sorted(os.listdir(tmp_path))
    out = sinpe.onnx.fix(path, tmp_path / "exact.onnx")
    assert sorted(os.listdir(tmp_path)) == sorted([*before, "exact.onnx", "exact.sinpe-rope.data"])
    assert sinpe.check_onnx(out).verdict == "match"


def test_a_copy_of_one_byte_is_made_and_a_source_that_shrinks_is_refused(tmp_path, monkeypatch):
    source = tmp_path / "one"
    source.write_bytes(b"x")
    monkeypatch.setattr(writing, "_reflink", lambda reader, writer: False)  # bytes copied
    writing.copy_new(source, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b"x"
    monkeypatch.setattr(writing, "_copy_chunk", lambda *args: 0)  # the source ends early
    with pytest.raises(ValueError, match="it shrank while it was copied"):
        writing.copy_new(source, tmp_path / "again")
    assert sorted(os.listdir(tmp_path)) == ["copy", "one"]
