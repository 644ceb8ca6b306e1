"""The command line, run as users run it: a subprocess, exit codes, files, stderr."""

import os
import signal
import subprocess
import sys
import time

import command
import numpy as np
import pytest
from rope_cases import phi3_longrope

import sinpe


def sinpe_cli(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((64, 16), {}),
        ((10, 7, "--offset", 2**40, "--dtype", "float32"), {"offset": 2**40, "dtype": "float32"}),
        (
            (5, 9, "--convention", "fairseq", "--base", 100),
            {"convention": "fairseq", "base": 100.0},
        ),
    ],
)
def test_table_writes_exactly_the_api_result(tmp_path, args, kwargs):
    path = tmp_path / "pe.npy"
    result = sinpe_cli("table", *args, "-o", path)
    assert result.returncode == 0, result.stderr
    saved = np.load(path)
    expected = sinpe.sinusoidal_positional_encoding(args[0], args[1], **kwargs)
    assert saved.dtype == expected.dtype and np.array_equal(saved, expected)


def test_table_names_the_file_it_wrote(tmp_path):
    """numpy.save appends .npy to a bare name; the message names that file."""
    result = sinpe_cli("table", 4, 8, "-o", "pe2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote pe2.npy: shape (4, 8)")
    assert (tmp_path / "pe2.npy").exists() and not (tmp_path / "pe2").exists()


def test_table_preview():
    result = sinpe_cli("table", 3, 4)
    assert result.returncode == 0
    assert "shape (3, 4)" in result.stdout and "float64" in result.stdout
    assert "backend" in result.stdout and "0.841471" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("table", -1, 4),
        ("table", 4, 0),
        ("table", "x", 4),
        ("table", 4, 4, "--dtype", "int8"),
        ("table", 4, 4, "--convention", "bert"),
        ("table", 4, 4, "--base", "-1"),
        ("table", 4, 4, "--offset", 2**60),
        ("plot", 0, 4),
        ("plot", -3, 4),
        ("plot", 4, 0),
        ("frobnicate",),
        (),
    ],
)
def test_bad_arguments_give_one_line_and_nonzero_exit(args):
    result = sinpe_cli(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sinpe: error:"), result.stderr


def test_plot_writes_a_real_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "pe.png"
    result = sinpe_cli("plot", 64, 32, "-o", path)
    assert result.returncode == 0, result.stderr
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 800 <= width <= 2000 and 300 <= height <= 1200
    assert len(data) > 20_000  # two filled panels, not a blank canvas


def test_plot_without_matplotlib_says_how_to_install(tmp_path):
    blocker = tmp_path / "matplotlib"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('blocked for this test')\n")
    result = sinpe_cli("plot", env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == "sinpe plot needs matplotlib: pip install 'sinpe[plot]'"
    assert not (tmp_path / "pe.png").exists()
    # Said before any table is built: an 80 GB table would fail otherwise, not hint.
    result = sinpe_cli("plot", 100_000, 100_000, env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 1 and "pip install 'sinpe[plot]'" in result.stderr


def test_info():
    result = sinpe_cli("info")
    assert result.returncode == 0
    assert f"sinpe {sinpe.__version__}" in result.stdout
    assert f"backend: {sinpe.BACKEND}" in result.stdout
    assert f"numpy: {np.__version__}" in result.stdout
    limit = sinpe.thread_limit()
    expected = f"threads: {sinpe.THREAD_RUNTIME}, up to {limit.threads} (set by {limit.source})"
    assert expected in result.stdout


@pytest.mark.skipif(sinpe.THREAD_RUNTIME == "none", reason="no thread runtime in this build")
def test_info_says_where_the_thread_count_comes_from():
    result = sinpe_cli("info", env={"SINPE_NUM_THREADS": "1"})
    assert "up to 1 (set by SINPE_NUM_THREADS)" in result.stdout
    result = sinpe_cli("info", env={"SINPE_NUM_THREADS": "", "OMP_NUM_THREADS": "1"})
    assert "up to 1 (set by OMP_NUM_THREADS)" in result.stdout


def test_bench_quick_prints_every_contender():
    result = sinpe_cli("bench", "--quick")
    assert result.returncode == 0, result.stderr
    for name in ("np.ones (write limit)", "textbook NumPy", "sinpe numpy path", "2048x512"):
        assert name in result.stdout
    assert "threads" in result.stdout.splitlines()[0] or "thread(s)" in result.stdout


def test_one_version_everywhere():
    """Written once (sinpe/_version.py); the package, its metadata and the command agree."""
    from importlib.metadata import version

    result = sinpe_cli("--version")
    assert result.stdout.strip() == f"sinpe {sinpe.__version__}"
    assert version("sinpe") == sinpe.__version__


LLAMA_CONFIG = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
}
# longrope, partial rotary, original length outside the scaling mapping
PHI3_CONFIG = phi3_longrope(3072, 32, 131072, 4096, partial_rotary_factor=0.5)
V5_CONFIG = {  # transformers 5: rope_parameters holds rope_theta
    "head_dim": 64,
    "max_position_embeddings": 2048,
    "rope_parameters": {
        "rope_type": "yarn",
        "factor": 4.0,
        "rope_theta": 1e6,
        "original_max_position_embeddings": 512,
    },
}


@pytest.mark.parametrize(
    "config, args, expected",
    [
        (
            LLAMA_CONFIG,
            ("--seq-len", 300, "--offset", 9000),
            dict(head_dim=128, base=500000.0, scaling=LLAMA_CONFIG["rope_scaling"], offset=9000),
        ),
        (
            PHI3_CONFIG,
            ("--seq-len", 10, "--offset", 5000, "--layout", "compact"),
            dict(
                head_dim=48,
                base=10000.0,
                layout="compact",
                offset=5000,
                scaling={
                    **PHI3_CONFIG["rope_scaling"],
                    "original_max_position_embeddings": 4096,
                    "max_position_embeddings": 131072,
                },
            ),
        ),
        (
            V5_CONFIG,
            (
                "--dtype",
                "float64",
            ),
            dict(
                head_dim=64,
                base=1e6,
                dtype="float64",
                scaling={
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 512,
                },
            ),
        ),
    ],
)
def test_rope_writes_exactly_the_api_result(tmp_path, config, args, expected):
    import json

    (tmp_path / "config.json").write_text(json.dumps(config))
    result = sinpe_cli("rope", tmp_path / "config.json", *args, "-o", tmp_path / "rope")
    assert result.returncode == 0, result.stderr
    saved = np.load(tmp_path / "rope.npz")
    seq_len = dict(zip(args[::2], args[1::2])).get("--seq-len", config["max_position_embeddings"])
    kwargs = {"dtype": "float32", **expected}
    cos, sin = sinpe.rope(seq_len, **kwargs)
    assert saved["cos"].dtype == cos.dtype and np.array_equal(saved["cos"], cos)
    assert np.array_equal(saved["sin"], sin)
    inv_freq, factor = sinpe.rope_frequencies(
        kwargs["head_dim"],
        base=kwargs["base"],
        scaling=kwargs["scaling"],
        seq_len=kwargs.get("offset", 0) + seq_len,
    )
    assert np.array_equal(saved["inv_freq"], inv_freq) and saved["attention_factor"] == factor


def test_rope_summary(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    result = sinpe_cli("rope", tmp_path / "config.json")
    assert result.returncode == 0, result.stderr
    assert "rope_type llama3, rotary dim 128, base 500000" in result.stdout
    assert "attention factor 1" in result.stdout and "131072 positions" in result.stdout


@pytest.mark.parametrize(
    "text, message",
    [
        (None, "No such file"),
        ("{", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"rope_theta": 10000.0, "max_position_embeddings": 8}', "no hidden_size"),
        ('{"head_dim": 64, "max_position_embeddings": 8}', "no rope_theta"),
        ('{"head_dim": 64, "rope_theta": 1e4}', "--seq-len"),
        (
            '{"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8, '
            '"rope_scaling": {"rope_type": "x"}}',
            "unknown rope_type",
        ),
    ],
)
def test_rope_bad_config_is_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "config.json"
    if text is not None:
        path.write_text(text)
    result = sinpe_cli("rope", path)
    assert result.returncode == 2
    assert message in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_tables_from_the_command_line(tmp_path, dtype):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    result = sinpe_cli("table", 7, 10, "--dtype", dtype, "-o", tmp_path / "pe.npy")
    assert result.returncode == 0, result.stderr
    saved = np.load(tmp_path / "pe.npy")
    expected = sinpe.sinusoidal_positional_encoding(7, 10, dtype=dtype)
    if dtype == "bfloat16":  # .npy has no bfloat16: its bit patterns, as uint16
        assert saved.dtype == np.uint16 and "bit patterns" in result.stdout
    assert np.array_equal(saved.view(np.uint16), expected.view(np.uint16))


# --------------------------------------------------------------------------- -o files


def _umask_run(mask: int, *args):
    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        umask=mask,
    )


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_mode_numpy_save_gives(tmp_path, mask):
    result = _umask_run(mask, "table", 4, 4, "-o", tmp_path / "t.npy")
    assert result.returncode == 0, result.stderr
    script = f"import numpy as np; np.save({str(tmp_path / 'n.npy')!r}, np.ones(2))"
    subprocess.run([sys.executable, "-c", script], check=True, umask=mask)
    assert (tmp_path / "t.npy").stat().st_mode & 0o7777 == 0o666 & ~mask
    assert (tmp_path / "t.npy").stat().st_mode == (tmp_path / "n.npy").stat().st_mode


def test_an_existing_file_is_refused_before_any_work(tmp_path):
    """sinpe never replaces a file: a name taken is said at once (a table of 2**40 rows is
    not even begun), and the file keeps its bytes and its mode."""
    path = tmp_path / "pe.npy"
    np.save(path, np.ones(3))
    path.chmod(0o640)
    before = path.read_bytes()
    for rows in (4, 2**20):
        result = sinpe_cli("table", rows, 2**20 if rows > 4 else 4, "-o", "pe", cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == (
            "sinpe: error: 'pe.npy' exists: sinpe never replaces a file; remove it or give a "
            "new name\n"
        )
    assert path.read_bytes() == before and path.stat().st_mode & 0o7777 == 0o640
    assert os.listdir(tmp_path) == ["pe.npy"]


def test_a_symlink_is_never_written_through_and_a_hard_link_never_broken(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.npy"
    np.save(target, np.ones(3))
    before = target.read_bytes()
    link = tmp_path / "link.npy"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.npy"
    dangling.symlink_to(tmp_path / "data" / "nowhere.npy")
    for name, where in ((link, ""), (dangling, " (dangling)")):
        result = sinpe_cli("table", 4, 4, "-o", name)
        assert result.returncode == 2, result.stdout
        assert (
            f"{str(name)!r} is a symbolic link{where}: sinpe never writes through a link"
            in result.stderr
        )
    assert target.read_bytes() == before and os.listdir(tmp_path / "data") == ["real.npy"]
    other = tmp_path / "other.npy"
    os.link(target, other)
    result = sinpe_cli("table", 5, 5, "-o", other)
    assert result.returncode == 2 and f"{str(other)!r} exists: sinpe never replaces" in (
        result.stderr
    )
    assert target.read_bytes() == before and target.stat().st_nlink == 2
    assert sorted(os.listdir(tmp_path)) == ["dangling.npy", "data", "link.npy", "other.npy"]


def test_a_directory_that_cannot_take_the_rename_is_named(tmp_path, monkeypatch, capsys):
    from sinpe import cli
    from sinpe.cli import output

    path = tmp_path / "t.npy"
    np.save(path, np.ones(3))
    monkeypatch.setattr(output.os, "access", lambda *a, **k: False)  # root may write anywhere
    assert cli.main(["table", "4", "4", "-o", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"the directory {str(tmp_path)!r} is not writable" in err and str(path) in err
    assert np.load(path).shape == (3,)


def test_write_errors_name_the_users_path(tmp_path):
    path = tmp_path / "missing" / "t.npy"
    result = sinpe_cli("table", 4, 4, "-o", path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"cannot write {str(path)!r}" in result.stderr and ".part" not in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_says_so():
    result = sinpe_cli("table", 1000, 512, "-o", "/dev/full")
    assert result.returncode == 2, result.stdout
    assert "cannot write '/dev/full': No space left on device" in result.stderr


def test_character_devices_are_written_directly():
    result = sinpe_cli("table", 10, 8, "-o", "/dev/null")
    assert result.returncode == 0 and "wrote /dev/null:" in result.stdout, result.stderr
    assert not os.path.exists("/dev/null.npy")


def test_the_extension_rule_is_numpy_saves(tmp_path):
    result = sinpe_cli("table", 4, 4, "-o", tmp_path / "pe.txt")
    assert result.returncode == 0 and f"wrote {tmp_path / 'pe.txt.npy'}" in result.stdout
    assert np.load(tmp_path / "pe.txt.npy").shape == (4, 4)


# the command, its write held (the temporary file open, half written) until a signal comes
_HELD_WRITE = """
import os, signal, sys, time
# as a terminal starts it: a run started in the background (nohup ... &) inherits SIGINT
# ignored, and Python then installs no handler of its own
signal.signal(signal.SIGINT, signal.default_int_handler)
import sinpe.cli
from sinpe.cli import table

real = table.write_atomically

def held(path, write):
    def write_then_wait(file):
        file.write(b"half a table")
        file.flush()
        open(sys.argv[1], "w").close()  # the temporary file exists, the write has begun
        while True:
            time.sleep(0.01)  # the signal lands here, mid-write

    return real(path, write_then_wait)

table.write_atomically = held
sys.exit(sinpe.cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_write_leaves_no_temporary_file(tmp_path, signum, code):
    """The write waits for the signal (it is held half written once its temporary file
    exists), so the signal always lands mid-write, however fast or busy the machine: no
    file and no temporary file is left, and the retry writes the file."""
    out = tmp_path / "out"
    out.mkdir()
    path = out / "big.npy"
    ready = tmp_path / "ready"
    command = [sys.executable, "-c", _HELD_WRITE, str(ready), "table", "16", "8", "-o", str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), process.communicate(timeout=60)
    assert [name for name in os.listdir(out) if name.endswith(".part")]  # mid-write indeed
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == code, err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    assert os.listdir(out) == []
    assert sinpe_cli("table", 16, 8, "-o", path).returncode == 0
    assert os.listdir(out) == ["big.npy"] and np.load(path).shape == (16, 8)


def test_an_exception_at_any_line_of_the_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A signal handler may raise between any two bytecodes of the main thread (whichever
    thread the signal reached: holding it back in one thread is not enough). Raise at every
    line the write runs, one run each, until a run completes: no run leaves a .part file;
    one raised before the file was moved to its name leaves nothing (the next run writes
    it), one raised after leaves the file whole, or nothing."""
    from sinpe._files import writing
    from sinpe.cli.output import write_atomically

    path = tmp_path / "t.npy"
    moved = [False]
    real_move = writing._move

    def move(temp, final):
        real_move(temp, final)
        moved[0] = True

    monkeypatch.setattr(writing, "_move", move)
    for n in range(1, 10_000):
        seen = [0]
        moved[0] = False

        def tracer(frame, event, arg, n=n, seen=seen):
            if event == "line":
                seen[0] += 1
                if seen[0] == n:
                    raise KeyboardInterrupt
            return tracer

        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        sys.settrace(tracer)
        try:
            write_atomically(str(path), lambda file: file.write(b"new"))
        except KeyboardInterrupt:
            finished = False
        else:
            finished = True
        finally:
            sys.settrace(None)
            for signum, handler in handlers.items():  # raised inside their restoring too
                signal.signal(signum, handler)
        listing = os.listdir(tmp_path)
        assert listing == (["t.npy"] if finished else listing if moved[0] else []), n
        assert listing in ([], ["t.npy"]) and (not listing or path.read_bytes() == b"new"), n
        if finished and seen[0] < n:
            break  # no line left to raise at
        if listing:
            path.unlink()
    else:
        pytest.fail("the write never finished")
    assert path.read_bytes() == b"new" and n > 20


# --------------------------------------------------------------------------- help, arguments


def test_every_argument_has_help_and_says_its_default():
    from sinpe.cli import parser as cli_parser

    parser = cli_parser.build_parser()
    (subcommands,) = [a for a in parser._actions if a.dest == "command"]
    for name, sub in subcommands.choices.items():
        formatter = cli_parser.HelpWithDefaults(name)
        for action in sub._actions:
            if action.dest == "help":
                continue
            text = formatter._get_help_string(action)
            assert action.help, (name, action.dest)
            assert "default" in text or "required" in text, (name, action.dest, text)
    assert "OpenMP" not in sinpe_cli("--help").stdout


def test_the_config_is_an_argument_or_a_flag_in_both_commands(tmp_path):
    config = os.path.join(os.path.dirname(__file__), "data", "configs", "llama-3.1-8b.json")
    for args in (("rope", config), ("rope", "--config", config)):
        result = command.run(*args)
        assert result.returncode == 0 and "rope_type llama3" in result.stdout, result.stderr
    cos, sin = sinpe.rope_config(config).rope(8, dtype="float32")
    np.savez(tmp_path / "c.npz", cos=cos, sin=sin)
    for args in ((config,), ("--config", config)):
        result = command.run("check", tmp_path / "c.npz", *args)
        assert result.returncode == 0 and "matches" in result.stdout, result.stderr
    result = command.run("rope", config, "--config", config)
    assert result.returncode == 2 and "once" in result.stderr
    result = command.run("rope")
    assert result.returncode == 2 and "required" in result.stderr


def test_an_axial_config_takes_a_grid_or_is_refused_at_once(tmp_path):
    config = os.path.join(
        os.path.dirname(__file__), "data", "configs", "pixtral-12b.vision_config.json"
    )
    for extra in ((), ("-o", tmp_path / "p"), ("--seq-len", 16)):
        result = command.run("rope", config, *extra)
        assert result.returncode == 2 and "pass --grid H W" in result.stderr, result.stdout
    result = command.run("rope", config, "--grid", 4, 5)
    assert result.returncode == 0 and "4 x 5 grid positions" in result.stdout
    assert command.run("rope", config, "--grid", 4, 5, "-o", tmp_path / "p").returncode == 0
    saved = np.load(tmp_path / "p.npz")
    rows, columns = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    cos, sin = sinpe.rope_config(config).rope_at(np.stack([rows, columns], -1), dtype="float32")
    assert np.array_equal(saved["cos"], cos) and np.array_equal(saved["sin"], sin)
    llama = os.path.join(os.path.dirname(__file__), "data", "configs", "llama-3.1-8b.json")
    result = command.run("rope", llama, "--grid", 2, 2)
    assert result.returncode == 2 and "--grid is for an axial" in result.stderr


def test_a_negative_offset_is_one_rule_with_or_without_a_file(tmp_path):
    config = os.path.join(os.path.dirname(__file__), "data", "configs", "llama-3.1-8b.json")
    for extra in ((), ("-o", tmp_path / "r")):
        result = command.run("rope", config, "--seq-len", 4, "--offset", -1, *extra)
        assert result.returncode == 2 and "--offset must be >= 0" in result.stderr
    assert not os.listdir(tmp_path)


def test_a_large_file_is_announced_before_it_is_written():
    config = os.path.join(os.path.dirname(__file__), "data", "configs", "llama-3.1-8b.json")
    result = command.run("rope", config, "-o", "/dev/null")
    assert result.returncode == 0, result.stderr
    assert "writing /dev/null: 128 MiB (max_position_embeddings rows: --seq-len N" in result.stderr
    assert command.run("rope", config, "--seq-len", 10, "-o", "/dev/null").stderr == ""


def test_bench_prints_quartiles_and_warns_of_a_spread(monkeypatch, capsys):
    from sinpe import cli
    from sinpe.cli import bench

    times = iter(np.random.default_rng(0).uniform(1e-4, 3e-4, 10_000))
    monkeypatch.setattr(bench, "timed", lambda *a, **k: next(times))
    assert cli.main(["bench", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "5 paired rounds: median [quartiles]" in out and "[" in out.splitlines()[2]
    assert "warning: the interquartile range exceeds 20% of the median" in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_a_library_turns_into_another_error_still_ends_the_write(tmp_path, signum):
    """NumPy's tofile, interrupted inside its own isinstance check, raises a TypeError in the
    signal's place: the write still ends as the signal asks, with no temporary file left."""
    from sinpe.cli import output

    path = tmp_path / "t.npy"

    def write(file):
        file.write(b"partial")
        try:
            signal.raise_signal(signum)
        except BaseException:
            raise TypeError(
                "expected str, bytes or os.PathLike object, not BufferedWriter"
            ) from None

    expected = KeyboardInterrupt if signum == signal.SIGINT else SystemExit
    # as a terminal starts Python (a background run inherits SIGINT ignored, and a process
    # that ignores it is rightly not interrupted); restored after
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(expected):
            output.write_atomically(str(path), write)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, before)
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- a newcomer's hour


def _peak_rss(*argv) -> tuple[subprocess.CompletedProcess, int]:
    """``sinpe ARGV`` in a process of its own, and that process's peak resident memory
    (VmHWM: ru_maxrss would carry over the larger peak of the process that started it)."""
    code = (
        "import sys\n"
        "from sinpe.cli import main\n"
        f"status = main({[str(a) for a in argv]!r})\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "print(peak.split()[1], file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    *lines, peak = result.stderr.strip().splitlines()
    return result, int(peak) * 1024  # kB


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status: Linux")
@pytest.mark.parametrize("seq_len, d_model", [(100_000, 4096), (1_000_000, 64), (20_000, 512)])
def test_plot_of_any_size_draws_sampled_rows_in_bounded_memory(tmp_path, seq_len, d_model):
    """A picture has a few thousand pixels: the rows are sampled (and the picture says so),
    so memory stays small whatever the table's size (these were an OOM kill, a segfault in
    BLAS for a 20000 x 20000 product, and a 74.5 GiB request)."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "big.png"
    result, peak = _peak_rss("plot", seq_len, d_model, "-o", path)
    assert result.returncode == 0, result.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert peak < 1 << 30, f"peak resident memory {peak / 2**20:.0f} MiB"


def test_plot_samples_rows_evenly_and_refuses_only_what_cannot_be_drawn():
    from sinpe.cli.plot import MAX_D_MODEL, MAX_ROWS, sampled_positions

    assert sampled_positions(10, 8).tolist() == list(range(10))
    rows = sampled_positions(100_000, 4096)
    assert rows[0] == 0 and rows[-1] == 99_999 and len(rows) == MAX_ROWS
    assert np.all(np.diff(rows) > 0) and np.ptp(np.diff(rows)) <= 1
    assert len(sampled_positions(10**6, MAX_D_MODEL)) >= 16  # the widest drawn: 16 rows
    result = command.run("plot", 100, MAX_D_MODEL + 1)
    assert result.returncode == 2 and "too wide to draw" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "argv, suffix",
    [
        (("table", 10, 8), ".npy"),
        (("rope", "CONFIG", "--seq-len", 4), ".npz"),
        (("plot", 16, 8), ".png"),
    ],
)
def test_o_into_a_missing_directory_is_said_before_any_work(tmp_path, argv, suffix):
    """The directory is checked before the table is made: a table too large for the
    address space would fail first otherwise (the work is never started)."""
    config = tmp_path / "config.json"
    config.write_text('{"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8}')
    argv = [str(config) if a == "CONFIG" else a for a in argv]
    target = tmp_path / "out" / f"pe{suffix}"
    result = sinpe_cli(*argv, "-o", target)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"sinpe: error: cannot write {str(target)!r}: the directory "
        f"{str(target.parent)!r} does not exist"
    )
    # a table of 2**40 rows could not even be allocated: refused for the directory first
    big = command.run("table", 2**20, 2**20, "-o", target)
    assert big.returncode == 2 and "does not exist" in big.stderr


def test_check_plot_destination_and_matplotlib_are_checked_before_the_report(tmp_path):
    cos, sin = sinpe.rope(8, 64)
    np.savez(tmp_path / "cache.npz", cos=cos, sin=sin)
    config = tmp_path / "config.json"
    config.write_text('{"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 8}')
    cache = tmp_path / "cache.npz"
    result = sinpe_cli("check", cache, config, "--plot", tmp_path / "nodir" / "x.png")
    assert result.returncode == 2 and result.stdout == ""
    assert "does not exist" in result.stderr and result.stderr.count("\n") == 1
    blocker = tmp_path / "blocked" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('blocked for this test')\n")
    result = sinpe_cli(
        "check", cache, config, "--plot", tmp_path / "x.png",
        env={"PYTHONPATH": str(blocker.parent)},
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "sinpe check --plot needs matplotlib: pip install 'sinpe[plot]'\n"


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("SINPE_BACKEND", "foo", "is not one of auto, cython, numpy"),
        ("SINPE_ISA", "neon", "is not one of auto, avx512bf16, avx512, avx2, sse2, c"),
        ("SINPE_NUM_THREADS", "abc", "is not an integer >= 1"),
        ("SINPE_NUM_THREADS", "0", "is not an integer >= 1"),
    ],
)
def test_a_wrong_environment_variable_is_one_line_and_exit_2(name, value, allowed):
    """One rule for sinpe's variables: a value none of the allowed ones is one line naming
    them, and exit 2, for `python -m sinpe` and for the console script alike."""
    commands = [[sys.executable, "-m", "sinpe"]]
    script = os.path.join(os.path.dirname(sys.executable), "sinpe")
    if os.path.exists(script):  # the console script pip made beside this interpreter
        commands.append([script])
    for start in commands:
        result = subprocess.run(
            [*start, "info"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, name: value},
        )
        assert result.returncode == 2 and result.stdout == "", start
        assert result.stderr == f"sinpe: error: {name}={value!r} {allowed}\n", start
    # in-process, main() reads them again (a program may set them after import)
    os.environ[name], before = value, os.environ.get(name)
    try:
        result = command.run("info")
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before
    assert result.returncode == 2 and f"{name}={value!r} {allowed}" in result.stderr


def test_the_environment_rule_knows_the_kernels_instruction_sets():
    from sinpe import _environment
    from sinpe._tables import backends

    if backends.kernel is None:
        pytest.skip("no compiled kernel")
    assert _environment.ISA_NAMES == backends.kernel.ISA_NAMES


@pytest.mark.skipif(sinpe.THREAD_RUNTIME == "none", reason="no thread runtime in this build")
def test_command_warnings_are_one_line_without_source():
    """A warning the command gives (here: another library's variable, OMP_NUM_THREADS, which
    sinpe reads but does not own) is one line: no Python source line, no file name."""
    result = sinpe_cli("info", env={"OMP_NUM_THREADS": "abc", "SINPE_NUM_THREADS": ""})
    assert result.returncode == 0
    assert (
        result.stderr == "sinpe: warning: OMP_NUM_THREADS='abc' is not an integer >= 1; ignored\n"
    )


def test_info_says_no_instruction_set_on_the_numpy_path():
    result = sinpe_cli("info", env={"SINPE_BACKEND": "numpy"})
    assert result.returncode == 0
    assert "instruction set: n/a (backend numpy: NumPy's own loops)" in result.stdout
    if sinpe.BACKEND == "cython":
        line = sinpe_cli("info").stdout.split("instruction set: ")[1].splitlines()[0]
        assert line.count("this CPU and build run") <= 1, line


def test_bfloat16_preview_prints_aligned_numbers():
    pytest.importorskip("ml_dtypes")
    result = command.run("table", 2, 4, "--dtype", "bfloat16")
    assert result.returncode == 0
    rows = result.stdout.splitlines()[1:]
    assert rows == [
        "[[0.       1.       0.       1.      ]",
        " [0.839844 0.539062 0.01001  1.      ]]",
    ]


def test_rope_summary_shows_the_scaling_it_read(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(
        '{"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, '
        '"max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": '
        '{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, '
        '"high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}'
    )
    result = command.run("rope", config)
    assert result.returncode == 0
    assert (
        "  scaling factor=32, high_freq_factor=4, low_freq_factor=1, "
        "original_max_position_embeddings=8192"
    ) in result.stdout.splitlines()


def test_an_empty_config_is_said_to_be_empty(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("\n")
    result = command.run("rope", path)
    assert result.returncode == 2
    assert (
        result.stderr
        == f"sinpe: error: config {str(path)!r} is empty: a config.json holds a JSON object\n"
    )


def test_a_missing_file_is_a_file_not_found_error_and_a_value_error(tmp_path):
    """`except FileNotFoundError` catches it, and so does the old `except ValueError`."""
    from sinpe._files.caches import load

    for call in (lambda p: sinpe.rope_config(p), lambda p: load(p)):
        path = str(tmp_path / "nosuch.json")
        with pytest.raises(FileNotFoundError) as found:
            call(path)
        assert isinstance(found.value, ValueError) and found.value.filename == path
        assert str(found.value).endswith(f"{path!r}: No such file or directory")
    result = command.run("rope", tmp_path / "nosuch.json")
    assert result.returncode == 2 and "No such file or directory" in result.stderr


FUZZ_TOKENS = [
    "0", "1", "3", "8", "-1", "2", "64", str(2**40), "1e30", "nan", "abc", "", "-",
    "--offset", "--dtype", "float16", "bfloat16", "--base", "--convention", "fairseq",
    "--seq-len", "--layout", "interleaved", "--grid", "--json", "--max-error", "--max-bytes",
    "--layer-type", "--sin", "--plot", "-o", "--help", "--version", "CONFIG", "CACHE", "OUT",
    "NODIR",
]  # fmt: skip


def test_a_seeded_fuzz_of_main_never_crashes(tmp_path):
    """Random command lines built from the CLI's own words: every one ends in 0, 1 or 2,
    never a traceback (an exception out of main fails the test)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    config = tmp_path / "config.json"
    config.write_text('{"head_dim": 16, "rope_theta": 1e4, "max_position_embeddings": 8}')
    cos, sin = sinpe.rope(8, 16)
    np.savez(tmp_path / "cache.npz", cos=cos, sin=sin)
    paths = {
        "CONFIG": str(config),
        "CACHE": str(tmp_path / "cache.npz"),
        "OUT": str(tmp_path / "out"),
        "NODIR": str(tmp_path / "nodir" / "x"),
    }
    verbs = st.sampled_from(["table", "rope", "check", "plot", "info", "nosuch"])

    @settings(max_examples=300, derandomize=True, deadline=None, database=None)
    @given(verbs, st.lists(st.sampled_from(FUZZ_TOKENS), max_size=7))
    def run(verb, tokens):
        if verb == "plot" and "-o" not in tokens:
            tokens = [*tokens, "-o", "OUT"]  # never the current directory
        result = command.run(verb, *(paths.get(t, t) for t in tokens))
        assert result.returncode in (0, 1, 2), (verb, tokens, result)
        assert "Traceback" not in result.stderr, (verb, tokens, result.stderr)

    run()


@pytest.mark.parametrize("argv", [("plot", 18000, 64), ("table", 10, 8, "-o", "out/pe.npy")])
def test_the_crashers_end_with_a_code_of_the_command(tmp_path, argv):
    """The command lines that were an OOM kill or a message after the work: 0, 1 or 2,
    never a signal, never a traceback."""
    pytest.importorskip("matplotlib")
    result = sinpe_cli(*argv, cwd=tmp_path)
    assert result.returncode in (0, 1, 2) and "Traceback" not in result.stderr
