"""sinpe.testing, the RoPE conformance kit (issue 66): the corpus, every candidate kind, the
public defects of ports rebuilt from their fixes' descriptions and caught with their reasons,
a float32 port read as drift, the pytest plugin (opt-in, checked with pytester) and
``sinpe conformance``."""

from __future__ import annotations

import argparse
import copy
import json
import os
import re

import numpy as np
import pytest
from command import run

import sinpe
from sinpe.testing import (
    CorpusConfig,
    InvFreq,
    Rotates,
    assert_rope,
    check_rope,
    configs,
    judged_lengths,
)
from sinpe.testing.corpus import CORPUS

pytest_plugins = ["pytester"]

CORPUS_NAMES = {e.name: e for e in configs()}


def entry(name: str) -> CorpusConfig:
    return CORPUS_NAMES[name]


def spec_of(e: CorpusConfig):
    return sinpe.rope_config(e.config, layer_type=e.layer_type)


def exact_port(spec):
    """The exact RoPE as a callable candidate (float64; M-RoPE: a text run on every axis)."""

    def table(positions, seq_len=None):
        p = np.asarray(positions)
        if spec.n_axes > 1:
            p = np.broadcast_to(p, (spec.n_axes, p.shape[0]))
        return spec.rope_at(p, layout="compact", seq_len=seq_len)

    return table


def float32_port(inv_freq, factor=1.0):
    """A port as ports are written: angles formed in float32 (fl(p fl(w)))."""
    w = np.asarray(inv_freq, np.float32)

    def table(positions):
        angle = np.asarray(positions).astype(np.float32)[:, None] * w[None, :]
        return factor * np.cos(angle), factor * np.sin(angle)

    return table


def with_scaling(e: CorpusConfig, **keys) -> dict:
    config = copy.deepcopy(e.config)
    config["rope_scaling"].update(keys)
    return config


# --------------------------------------------------------------------------- the corpus


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as stream:
        return stream.read()


def _bytes(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def test_the_corpus_holds_at_least_60_published_configs_each_with_its_source():
    files = sorted(f for f in os.listdir(CORPUS) if f.endswith(".json") and f != "index.json")
    assert len(files) >= 60
    index = json.loads(_text(os.path.join(CORPUS, "index.json")))
    assert sorted(row["file"] for row in index["files"]) == files
    readme = _text(os.path.join(CORPUS, "README.md"))
    for row in index["files"]:
        assert row["source"] and f"| `{row['file']}` |" in readme
        assert row["source"] in readme


def test_the_corpus_copies_tests_configs_byte_for_byte():
    here = os.path.join(os.path.dirname(__file__), "data", "configs")
    for name in os.listdir(here):
        if name.endswith(".json"):
            assert _bytes(os.path.join(here, name)) == _bytes(os.path.join(CORPUS, name)), name


def test_the_corpus_covers_every_rope_type_form_and_feature():
    entries = configs()
    kinds = {e.rope_type for e in entries}
    assert {"default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional"} <= kinds
    assert "ntk_alpha" in kinds
    assert {e.form for e in entries} == {"rope_scaling", "rope_parameters", "per_layer", "plain"}
    features = {f for e in entries for f in e.features}
    assert {"partial", "multi_axis", "nested", "moe", "multimodal", "layer_types"} <= features
    assert any(e.layer_type == "sliding_attention" for e in entries)


def test_configs_selects_by_rope_type_family_and_form():
    llama3 = configs(rope_type="llama3", family="llama")
    assert llama3 and all(e.rope_type == "llama3" and e.family == "llama" for e in llama3)
    assert "llama-3.2-1b-instruct" in [e.name for e in llama3]
    partial = configs(form="partial")
    assert "phi-2" in [e.name for e in partial] and all("partial" in e.features for e in partial)
    assert all(e.form == "per_layer" for e in configs(form="per_layer"))
    refused = configs(rope_type="refused")
    assert refused and all(e.refused for e in refused)
    with pytest.raises(TypeError, match="rope_type"):
        configs(rope_type=3)


@pytest.mark.parametrize("name", sorted(CORPUS_NAMES))
def test_every_corpus_config_is_judged_a_match_by_the_exact_reference_or_refused(name):
    e = entry(name)
    if e.refused is not None:
        assert len(e.refused) > 20
        with pytest.raises(ValueError, match=re.escape(e.refused[:40])):
            check_rope(lambda p: (p, p), e)
        return
    report = check_rope(exact_port(spec_of(e)), e)
    assert report.verdict == "match", report.explanation
    assert report.ok and report.judgment.compared > 0


def test_a_config_transformers_builds_no_rotary_module_for_is_refused():
    nemotron_h = [e for e in configs() if e.name.startswith(("nemotron-h", "nvidia-nemotron-3"))]
    assert len(nemotron_h) == 3 and all(e.refused for e in nemotron_h)
    read_by_sinpe = [e for e in nemotron_h if "builds no rotary module" in e.refused]
    assert len(read_by_sinpe) == 2  # the third, sinpe refuses itself (attention_head_dim)
    for e in read_by_sinpe:
        sinpe.rope_config(e.config)  # sinpe's common rules read a RoPE the model lacks
        with pytest.raises(ValueError, match="is not judged: transformers 5.24.0 builds no"):
            check_rope(lambda p: (p, p), e)


def test_a_vision_grid_is_refused_by_the_kit_with_its_reason():
    e = entry("pixtral-12b.vision_config")
    assert e.refused is not None and "vision grid" in e.refused
    with pytest.raises(ValueError, match="vision grid"):
        check_rope(lambda p: (p, p), e.config)


# --------------------------------------------------------------------------- candidates


LLAMA32 = "llama-3.2-1b-instruct"


def test_arrays_of_one_or_two_copies_per_pair_every_entry_judged():
    e = entry(LLAMA32)
    spec = spec_of(e)
    cos, sin = spec.rope(3000, layout="compact", dtype=np.float32)
    report = check_rope((cos, sin), e)
    assert report.verdict == "match"
    assert report.judgment.compared == report.judgment.held == 2 * cos.size
    half = spec.rope(3000, dtype=np.float32)
    assert check_rope(half, e).judgment.compared == 2 * half[0].size
    inter = spec.rope(3000, layout="interleaved", dtype=np.float32)
    assert check_rope(inter, e, layout="interleaved").verdict == "match"
    assert check_rope(inter, e, layout="half").verdict == "mismatch"
    # rows standing for positions 500 on: given by positions
    tail = spec.rope(100, offset=500, layout="compact")
    assert check_rope(tail, e, positions=500).verdict == "match"
    assert check_rope(tail, e, positions=range(500, 600)).verdict == "match"
    assert check_rope(tail, e).verdict == "mismatch"


def test_one_wrong_entry_anywhere_in_a_table_is_a_mismatch():
    e = entry(LLAMA32)
    cos, sin = spec_of(e).rope(5000, layout="compact")
    cos = cos.copy()
    cos[4321, 7] += 1e-3
    report = check_rope((cos, sin), e)
    assert report.verdict == "mismatch"
    cos[4321, 7] = np.nan
    assert "not a value a RoPE can use" in check_rope((cos, sin), e).explanation


def test_a_complex_freqs_cis_table_is_read_as_cos_and_sin():
    e = entry("llama-4-scout-17b-16e-instruct")
    cos, sin = spec_of(e).rope(4096, layout="compact")
    freqs_cis = (cos + 1j * sin).astype(np.complex64)
    report = check_rope(freqs_cis, e)
    assert report.verdict == "match" and report.judgment.dtype == "float32"
    assert check_rope(np.conj(freqs_cis), e).verdict == "mismatch"


def test_torch_tensors_and_bfloat16_are_read_without_importing_torch_in_the_kit():
    torch = pytest.importorskip("torch")
    e = entry(LLAMA32)
    cos, sin = spec_of(e).rope(2048, dtype=np.float32)
    tensors = (torch.from_numpy(cos)[None, None], torch.from_numpy(sin)[None, None])
    assert check_rope(tensors, e).verdict == "match"
    narrow = check_rope(tuple(t.to(torch.bfloat16) for t in tensors), e)
    assert narrow.verdict == "match" and narrow.judgment.dtype == "bfloat16"


def test_an_inv_freq_is_judged_at_every_length_and_a_callable_at_the_core_positions():
    e = entry(LLAMA32)
    spec = spec_of(e)
    inv_freq, factor = spec.frequencies()
    assert check_rope(InvFreq(inv_freq, factor), e).verdict == "match"
    report = check_rope(exact_port(spec), e)
    assert report.verdict == "match"
    assert report.lengths == (131072, 262144)  # the trained length and past it
    assert judged_lengths(spec) == [131072, 262144]
    held = check_rope(exact_port(spec), e, positions=range(0, 4096))
    assert held.verdict == "match" and held.judgment.compared == 2 * 4096 * 32


def test_a_cache_of_the_trained_length_is_judged_up_to_it_and_says_so():
    e = entry(LLAMA32)
    cos, sin = spec_of(e).rope(131072, layout="compact", dtype=np.float32)
    report = check_rope(lambda p: (cos[p], sin[p]), e)  # IndexError past the cache
    assert report.verdict == "match" and report.lengths == (131072,)
    (note,) = report.notes
    assert note.startswith("not judged at length 262,144 (past the trained 131,072): IndexError")
    assert report.explanation.endswith(note)
    short = cos[:1000], sin[:1000]
    with pytest.raises(IndexError):  # within the trained length, a failure is the port's
        check_rope(lambda p: (short[0][p], short[1][p]), e)


def test_a_length_switch_is_judged_on_both_sides():
    phi = spec_of(entry("phi-3.5-vision-instruct"))
    assert judged_lengths(phi) == [4096, 4097, 131072, 262144]


def test_rotates_derives_cos_and_sin_from_unit_queries_in_either_layout():
    for name, layout in ((LLAMA32, "half"), ("deepseek-v3", "interleaved")):
        e = entry(name)
        inv_freq, factor = spec_of(e).frequencies()

        def rotate(q, positions, layout=layout, inv_freq=inv_freq, factor=factor):
            angle = positions.astype(np.float64)[:, None] * inv_freq[None, :]
            c, s = factor * np.cos(angle), factor * np.sin(angle)
            h = q.shape[1] // 2
            if layout == "half":
                x1, x2 = q[:, :h], q[:, h:]
                return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)
            x1, x2 = q[:, 0::2], q[:, 1::2]
            out = np.empty_like(q, dtype=np.float64)
            out[:, 0::2], out[:, 1::2] = x1 * c - x2 * s, x2 * c + x1 * s
            return out

        report = check_rope(Rotates(rotate, layout), e)
        assert report.ok and report.notes == (), report.explanation
        wrong = "interleaved" if layout == "half" else "half"
        assert not check_rope(Rotates(rotate, wrong), e).ok


def test_a_rotation_of_the_wrong_elements_is_named():
    e = entry("deepseek-v3")  # its attention rotates pairs (rope_interleave)
    inv_freq, factor = spec_of(e).frequencies()

    def rotate_half(q, positions):
        angle = positions.astype(np.float64)[:, None] * inv_freq[None, :]
        c, s = factor * np.cos(angle), factor * np.sin(angle)
        h = q.shape[1] // 2
        x1, x2 = q[:, :h], q[:, h:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)

    report = check_rope(Rotates(rotate_half, "half"), e)
    assert report.verdict == "mismatch"
    assert "rotates halves where the model's attention rotates pairs" in report.explanation


@pytest.mark.parametrize(
    "candidate, config, what",
    [
        ("not a table", LLAMA32, "candidate must be"),
        (InvFreq(np.ones(32), "1.0"), LLAMA32, "attention_factor must be a number"),
        ((np.ones((4, 32)), np.ones((5, 32))), LLAMA32, "differ in shape"),
        (lambda p: 1.0, LLAMA32, "must return \\(cos, sin\\)"),
        (Rotates(lambda q, p: q, "pairs"), LLAMA32, "Rotates.layout"),
        (Rotates("f"), LLAMA32, "Rotates.fn must be callable"),
    ],
)
def test_bad_candidates_are_refused_naming_the_argument(candidate, config, what):
    with pytest.raises((TypeError, ValueError), match=what):
        check_rope(candidate, entry(config))


def test_bad_configs_and_arguments_are_refused_naming_them():
    e = entry(LLAMA32)
    table = spec_of(e).rope(8, layout="compact")
    with pytest.raises(TypeError, match="config must be"):
        check_rope(table, 3.5)
    with pytest.raises(ValueError, match="layer_type="):
        check_rope(table, entry("gemma-3-4b-it:sliding_attention").config)
    with pytest.raises(ValueError, match="one RoPE for every layer"):
        check_rope(table, e, layer_type="full_attention")
    with pytest.raises(ValueError, match="consecutive"):
        check_rope(table, e, positions=[0, 2, 3, 4, 5, 6, 7, 8])
    with pytest.raises(ValueError, match="layout must be"):
        check_rope(table, e, layout="pairs")
    path = os.path.join(CORPUS, "llama-3.2-1b-instruct.json")
    assert check_rope(table, path).config == "llama-3.2-1b-instruct.json"


# --------------------------------------------------------------------------- public defects


def test_scaling_ignored_is_caught():  # mlx-vlm PR #1710, TensorRT-Model-Connect PR #655
    e = entry(LLAMA32)
    plain = 500000.0 ** (-np.arange(0, 64, 2) / 64)
    for candidate in (InvFreq(plain), float32_port(plain)):
        with pytest.raises(AssertionError, match="Llama-3 scaling not applied"):
            assert_rope(candidate, e)


def test_a_hard_coded_factor_8_for_a_llama_3_2_config_with_32_is_caught():  # tt-metal #15737
    e = entry(LLAMA32)
    eight, _ = sinpe.rope_config(with_scaling(e, factor=8.0)).frequencies()
    for candidate in (InvFreq(eight), float32_port(eight)):
        report = check_rope(candidate, e)
        assert report.verdict == "mismatch"
        assert report.explanation == "Llama-3 factor 8.0 where the config gives 32.0"


def test_a_wrong_original_length_is_caught():  # TransformerLens PR #910
    e = entry(LLAMA32)
    wrong, _ = sinpe.rope_config(
        with_scaling(e, original_max_position_embeddings=4096)
    ).frequencies()
    for candidate in (InvFreq(wrong), float32_port(wrong)):
        assert check_rope(candidate, e).explanation == (
            "Llama-3 original context 4096 where the config gives 8192"
        )


def test_a_frozen_longrope_short_factors_only_is_caught():  # optimum-intel #1504, #1744
    e = entry("phi-3.5-vision-instruct")
    short, factor = spec_of(e).frequencies(4096)
    words = (
        "LongRoPE short factors at every length (transformers: long factors while the "
        "sequence is > 4096)"
    )
    for candidate in (InvFreq(short, factor), float32_port(short, factor)):
        report = check_rope(candidate, e)
        assert report.verdict == "mismatch" and report.explanation == words


def test_a_dropped_yarn_attention_factor_is_caught():
    e = entry("qwen3-8b.yarn-4x")
    inv_freq, factor = spec_of(e).frequencies()
    assert factor == pytest.approx(0.1 * np.log(4.0) + 1.0)
    for candidate in (InvFreq(inv_freq, 1.0), float32_port(inv_freq)):
        with pytest.raises(AssertionError) as caught:
            assert_rope(candidate, e)
        assert str(caught.value) == (
            "qwen3-8b.yarn-4x: YaRN attention factor 1.0 where the config gives 1.13863"
        )


def test_a_dynamic_scaling_ignored_is_caught_past_the_trained_length():
    e = entry("internvl3-1b-pretrained.llm-config.printed")
    spec = spec_of(e)
    assert e.rope_type == "dynamic" and judged_lengths(spec) == [32768, 32769, 65536]
    inv_freq, factor = spec.frequencies()  # within the trained length: the config's base
    for candidate in (InvFreq(inv_freq, factor), float32_port(inv_freq, factor)):
        assert check_rope(candidate, e).explanation == "dynamic NTK scaling not applied"

    def dynamic_port(positions):  # the current length read off the positions asked for
        grown, _ = spec.frequencies(int(np.max(positions)) + 1)
        return float32_port(grown)(positions)

    assert check_rope(dynamic_port, e).verdict == "drift"


def test_a_float32_port_drifts_and_is_not_a_mismatch():
    e = entry(LLAMA32)
    inv_freq, factor = spec_of(e).frequencies()
    port = float32_port(inv_freq, factor)
    report = check_rope(port, e)
    assert report.verdict == "drift" and report.judgment.drift == "float32" and report.ok
    cos, sin = port(np.arange(100_000, 100_008))
    want = spec_of(e).rope(8, offset=100_000, layout="compact")
    error = max(np.abs(cos - want[0]).max(), np.abs(sin - want[1]).max())
    assert 1e-3 < error < 2e-2  # about 7e-3 at 1e5: far past 8 ulps, within float32 angles
    assert_rope(port, e)  # a drift passes
    with pytest.raises(AssertionError, match="drifts with the position"):
        assert_rope(port, e, allow_drift=False)


def test_a_report_is_strict_json():
    report = check_rope(InvFreq(np.ones(32)), entry(LLAMA32))
    data = json.loads(json.dumps(report.as_json(), allow_nan=False))
    assert data["verdict"] == "mismatch" and data["config"] == LLAMA32
    assert data["explanation"] == report.explanation


# --------------------------------------------------------------------------- the plugin

UNRELATED = """
def test_plain():
    assert 1 + 1 == 2
"""

CONFORMANCE = """
import sinpe
from sinpe.testing import assert_rope

def test_port(rope_config):
    spec = sinpe.rope_config(rope_config.config, layer_type=rope_config.layer_type)
    inv_freq, factor = spec.frequencies()
    {body}
"""


def test_the_plugin_leaves_other_tests_alone(pytester):
    pytester.makepyfile(test_unrelated=UNRELATED)
    for args in ((), ("--sinpe-corpus=yarn",)):
        result = pytester.runpytest_inprocess(*args)
        result.assert_outcomes(passed=1)


def test_the_installed_plugin_imports_nothing_of_sinpe_in_another_suite(pytester):
    """pytest loads the entry point in every run of every project where sinpe is installed:
    a suite that does not ask for the corpus runs without sinpe imported."""
    pytester.makepyfile(
        test_alone="""
import sys

def test_sinpe_not_imported(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("sinpe")  # the entry point was loaded
    assert "sinpe" not in sys.modules
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_test_taking_rope_config_runs_once_per_corpus_config(pytester):
    pytester.makepyfile(test_port=CONFORMANCE.format(body="assert rope_config.rope_type"))
    result = pytester.runpytest_inprocess("-q")
    judged = [e for e in configs() if e.refused is None]
    result.assert_outcomes(passed=len(judged), skipped=len(configs()) - len(judged))
    result = pytester.runpytest_inprocess("--sinpe-corpus=longrope", "-v")
    result.assert_outcomes(passed=len(configs(rope_type="longrope")))
    result.stdout.fnmatch_lines(["*test_port[[]phi-3.5-vision-instruct[]] PASSED*"])


def test_a_failing_port_names_the_config_and_the_reason(pytester):
    body = "from sinpe.testing import InvFreq\n    assert_rope(InvFreq(inv_freq, 1.0), rope_config)"
    pytester.makepyfile(test_port=CONFORMANCE.format(body=body))
    result = pytester.runpytest_inprocess("--sinpe-corpus=yarn")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 5
    result.stdout.fnmatch_lines(
        ["*AssertionError: qwen3-8b.yarn-4x: YaRN attention factor 1.0 where the config*"]
    )


def test_the_marker_selects_and_a_folder_is_a_corpus(pytester, tmp_path):
    pytester.makepyfile(
        test_marked="""
import pytest

@pytest.mark.sinpe_corpus(family="phi3")
def test_port(rope_config):
    assert rope_config.family == "phi3"
"""
    )
    result = pytester.runpytest_inprocess("-q")
    result.assert_outcomes(passed=len(configs(family="phi3")))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my-llama.json").write_bytes(_bytes(os.path.join(CORPUS, "llama-3.1-8b.json")))
    pytester.makepyfile(test_marked="def test_port(rope_config):\n    assert rope_config.path\n")
    result = pytester.runpytest_inprocess("-v", f"--sinpe-corpus={folder}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_port[[]my-llama[]] PASSED*"])
    result = pytester.runpytest_inprocess("--sinpe-corpus=no-such-thing")
    assert result.ret != 0


# --------------------------------------------------------------------------- the command


def _conformance(args: list) -> argparse.Namespace:
    from sinpe.cli.conformance import add_conformance_arguments

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    add_conformance_arguments(lambda name, text: sub.add_parser(name, help=text))
    return parser.parse_args(["conformance", *args])


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


def test_sinpe_conformance_prints_a_table_and_exits_1_on_a_mismatch(tmp_path, monkeypatch, capsys):
    from sinpe.cli.conformance import conformance_command

    (tmp_path / "my_glue.py").write_text(GLUE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert conformance_command(_conformance(["my_glue:exact", "--corpus", "llama3"])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(configs(rope_type="llama3")) + 1
    assert all(" match " in line for line in lines[:-1])
    assert conformance_command(_conformance(["my_glue:unscaled", "--corpus", "llama3"])) == 1
    out = capsys.readouterr().out
    assert "Llama-3 scaling not applied" in out
    report = conformance_command(_conformance(["my_glue:unscaled", "--corpus=yarn", "--json"]))
    text = json.dumps(report, allow_nan=False)
    assert json.loads(text)["exit_code"] == 1
    assert report["counts"]["mismatch"] == len(configs(rope_type="yarn"))
    with pytest.raises(ValueError, match="cannot import"):
        conformance_command(_conformance(["no_such_module_here:f"]))
    with pytest.raises(ValueError, match="MODULE:CALLABLE"):
        conformance_command(_conformance(["my_glue"]))


INTERLEAVED_GLUE = """
import numpy as np
import sinpe
from _glue_helper import exact_inv_freq

LAYOUT = "interleaved"

def tables(config, layer_type=None):
    spec = sinpe.rope_config(config, layer_type=layer_type)
    inv, factor = exact_inv_freq(spec)
    angles = np.arange(9000.0)[:, None] * inv
    return (np.repeat(np.cos(angles), 2, axis=1) * factor,
            np.repeat(np.sin(angles), 2, axis=1) * factor)
"""


def test_sinpe_conformance_takes_the_glues_layout_and_its_helper_module(tmp_path, capsys):
    """A glue file (by path) whose tables are interleaved says so by its module's ``LAYOUT``
    (or ``--layout``), and imports a helper module beside it (its folder goes last on the
    path): judged a match, where read as halves it is a mismatch."""
    from sinpe.cli.conformance import conformance_command

    (tmp_path / "glue.py").write_text(INTERLEAVED_GLUE)
    (tmp_path / "_glue_helper.py").write_text(
        "def exact_inv_freq(spec):\n    return spec.frequencies()\n"
    )
    target = f"{tmp_path / 'glue.py'}:tables"
    assert conformance_command(_conformance([target, "--corpus", "llama3"])) == 0
    assert "mismatch" not in capsys.readouterr().out
    assert (
        conformance_command(_conformance([target, "--corpus", "llama3", "--layout", "half"])) == 1
    )


def test_transformers_default_configs_are_judged_a_match_or_refused():
    pytest.importorskip("transformers")
    entries = configs(form="defaults")
    assert len(entries) >= 100
    refused = [e for e in entries if e.refused is not None]
    assert refused and all(len(e.refused) > 20 for e in refused)
    odd = 0
    for e in entries:
        if e.refused is None:
            spec = spec_of(e)
            odd += spec.head_dim % 2
            report = check_rope(exact_port(spec), e)
            assert report.verdict == "match", (e.name, report.explanation)
    assert odd  # an odd rotary width among them: one column per frequency


def test_a_port_rotating_another_width_is_a_mismatch_naming_both():
    """A port that ignores ``partial_rotary_factor`` (Phi-2: 32 of 80) rotates the whole
    head: its table has 40 columns where the config's width takes 16 or 32. That is the
    finding (a mismatch naming both widths), from arrays and from a callable alike, never an
    error the port's test cannot tell from a broken test."""
    (phi2,) = [c for c in configs() if c.name == "phi-2"]
    inv = 10000.0 ** (-np.arange(0, 80, 2) / 80)

    def full_head(positions):
        angles = np.asarray(positions, dtype=np.float64)[:, None] * inv
        return np.cos(angles), np.sin(angles)

    three = check_rope((np.ones((4, 3)), np.ones((4, 3))), entry(LLAMA32))
    assert three.explanation == "the cache's width 3 does not fit the config's rotary dim 64"
    for candidate in (full_head(np.arange(2048)), full_head):
        report = check_rope(candidate, phi2)
        assert report.verdict == "mismatch" and not report.ok
        assert report.explanation == "the cache's width 40 does not fit the config's rotary dim 32"
        with pytest.raises(AssertionError, match="phi-2: the cache's width 40"):
            assert_rope(candidate, phi2)


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
