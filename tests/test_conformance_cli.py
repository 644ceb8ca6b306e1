"""``sinpe conformance`` as users run it: registered in the command, its exit codes, its one
strict JSON object (the kit's own tests, test_testing_kit.py, judge the verdicts)."""

from __future__ import annotations

import json

from command import run

GLUE = """
import numpy as np
import sinpe

def exact(config, layer_type=None):
    spec = sinpe.rope_config(config, layer_type=layer_type)
    return sinpe.testing.InvFreq(*spec.frequencies())

def unscaled(config, layer_type=None):
    spec = sinpe.rope_config(config, layer_type=layer_type)
    d = spec.head_dim
    return sinpe.testing.InvFreq(spec.base ** (-np.arange(0, d, 2) / d))
"""


def test_the_command_runs_a_port_on_the_corpus(tmp_path, monkeypatch):
    (tmp_path / "port_glue.py").write_text(GLUE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    done = run("conformance", "port_glue:exact", "--corpus", "llama3")
    assert done.returncode == 0, done.stderr
    assert " match " in done.stdout
    done = run("conformance", "port_glue:unscaled", "--corpus", "llama3", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["exit_code"] == 1 and report["counts"]["mismatch"] >= 1
    done = run("conformance", "port_glue", "--json")  # a usage error: still one JSON object
    assert done.returncode == 2 and json.loads(done.stdout)["verdict"] == "refused"
    assert "MODULE:CALLABLE" in done.stdout


def test_a_glue_file_is_named_by_its_path(tmp_path):
    """A glue file whose name no import could take (a hyphen) or that would shadow the port's
    own package is given by its path."""
    glue = tmp_path / "megatron-core.py"
    glue.write_text(GLUE)
    done = run("conformance", f"{glue}:exact", "--corpus", "llama3")
    assert done.returncode == 0, done.stderr
    done = run("conformance", f"{tmp_path / 'absent.py'}:exact")
    assert done.returncode == 2 and "is not a file" in done.stderr
