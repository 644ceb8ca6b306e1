"""What a user types for a model (``sinpe rope``, ``check``, ``engines`` and the API): its
config.json, its folder, or a Hugging Face Hub id, read from a local cache laid out as the
Hub writes it (huggingface_hub installed: the torch leg runs this file with SINPE_NO_SKIPS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from command import run

import sinpe
from sinpe._files.sources import config_file

LLAMA = Path(__file__).with_name("data") / "configs" / "llama-3.1-8b.json"


def _folder(tmp_path) -> Path:
    folder = tmp_path / "Meta-Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_bytes(LLAMA.read_bytes())
    return folder


def test_a_model_folder_is_read_through_its_config_json(tmp_path):
    folder = _folder(tmp_path)
    assert config_file(str(folder)) == str(folder / "config.json")
    assert sinpe.rope_config(folder) == sinpe.rope_config(LLAMA)
    done = run("engines", folder, "--only", "keras-hub", "--json")
    assert json.loads(done.stdout)["length"] == 131072, done.stderr


def test_a_folder_without_config_json_is_refused_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"folder '.*empty' holds no config.json"):
        sinpe.rope_config(tmp_path / "empty")
    done = run("engines", tmp_path / "empty")
    assert done.returncode == 2 and "holds no config.json" in done.stderr


def test_a_name_that_is_a_file_here_is_never_a_hub_id(tmp_path, monkeypatch):
    (tmp_path / "meta-llama").mkdir()
    (tmp_path / "meta-llama" / "Llama-3.1-8B").write_bytes(LLAMA.read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # never asked
    assert config_file("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"
    assert sinpe.rope_config("meta-llama/Llama-3.1-8B") == sinpe.rope_config(LLAMA)
    # a path that is not a Hub id's shape is the reader's to refuse, as before
    with pytest.raises(ValueError, match="no-such.json"):
        sinpe.rope_config("no/such/no-such.json")


def test_a_hub_id_without_huggingface_hub_says_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(
        ValueError, match=r"'org/model': no such file or folder; .* needs huggingface_hub"
    ):
        sinpe.rope_config("org/model")


def _hub_cache(root: Path, repo: str, data: bytes, commit: str = "a" * 40) -> None:
    """A cache as huggingface_hub writes it: blobs, a snapshot of links to them, refs/main."""
    base = root / f"models--{repo.replace('/', '--')}"
    (base / "blobs").mkdir(parents=True)
    (base / "blobs" / "0123abcd").write_bytes(data)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(commit)
    snapshot = base / "snapshots" / commit
    snapshot.mkdir(parents=True)
    os.symlink("../../blobs/0123abcd", snapshot / "config.json")


def _sinpe(tmp_path, *args, offline=True):
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HOME": str(tmp_path / "home")}
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "sinpe", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )


def test_a_hub_id_is_read_from_the_local_cache_offline(tmp_path):
    pytest.importorskip("huggingface_hub")
    _hub_cache(tmp_path / "hub", "meta-llama/Llama-3.1-8B", LLAMA.read_bytes())
    done = _sinpe(tmp_path, "engines", "meta-llama/Llama-3.1-8B", "--only", "keras-hub", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["length"] == 131072 and report["config"] == "meta-llama/Llama-3.1-8B"
    done = _sinpe(tmp_path, "rope", "meta-llama/Llama-3.1-8B@" + "a" * 40, "--seq-len", "4")
    assert done.returncode == 0, done.stderr  # a revision, pinned
    assert "rope_type llama3, rotary dim 128, base 500000" in done.stdout
    # not in the cache, offline: one line naming the id and the Hub's reason, exit 2
    done = _sinpe(tmp_path, "engines", "meta-llama/Llama-3.2-1B")
    assert done.returncode == 2 and done.stdout == ""
    assert "'meta-llama/Llama-3.2-1B': no such file or folder, and not found as a Hugging Face" in (
        done.stderr
    )
    assert len(done.stderr.splitlines()) == 1
