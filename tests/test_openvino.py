"""OpenVINO IRs: the reader (``sinpe._files.openvino``) refusing hostile files, and
``sinpe check openvino_model.xml`` judging hand-written IRs (tests/openvino_files.py: no
openvino needed), then the IRs optimum-intel exports from tiny random twins (the OpenVINO
leg, .ci/openvino: openvino, openvino-genai and optimum-intel pinned; skipped without them,
a failure there under SINPE_NO_SKIPS=1)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from command import run
from openvino_files import Net, tables, traced, write

from sinpe._check.openvino import check_openvino
from sinpe._files import openvino as ir_file

HALF = 8  # head_dim 16
LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 256,
    "rope_theta": 10000.0,
}


def _inv_freq(base: float = 10000.0) -> np.ndarray:
    """The plain RoPE's frequencies in float64, written out: base^(-2i/16)."""
    return base ** (-np.arange(0, 2 * HALF, 2, dtype=np.float64) / (2 * HALF))


def _model(tmp_path, xml_data, config=LLAMA, name="m"):
    return write(tmp_path / name, *xml_data, config)


# --------------------------------------------------------------------------- hostile files


def _refused(path, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        ir_file.read(path)


def test_a_doctype_is_refused_before_any_entity_is_expanded(tmp_path):
    xml, data = traced(_inv_freq())
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {c} "&{p};&{p};&{p};&{p};&{p};&{p};&{p};&{p};&{p};&{p};">'
                  for p, c in zip("abcdefgh", "bcdefghi"))
        + "]>\n"
    )  # fmt: skip
    path = _model(tmp_path, (xml.replace('<?xml version="1.0"?>\n', bomb), data))
    _refused(path, "a DOCTYPE (entity declarations are refused, never expanded)")
    external = '<?xml version="1.0"?>\n<!DOCTYPE net SYSTEM "file:///etc/passwd">\n'
    path = _model(tmp_path, (xml.replace('<?xml version="1.0"?>\n', external), data), name="e")
    _refused(path, "a DOCTYPE")


def test_a_truncated_bin_and_an_offset_past_its_end_are_refused(tmp_path):
    xml, data = traced(_inv_freq(), factor=1.5)
    path = _model(tmp_path, (xml, data[:20]))
    _refused(path, "Const 'inv_freq' declares 32 bytes at offset 0; the file has only 20")
    moved = xml.replace('offset="0" size="32"', 'offset="4096" size="32"')
    path = _model(tmp_path, (moved, data), name="past")
    _refused(path, f"declares 32 bytes at offset 4096; the file has only {len(data)}")
    lying = xml.replace(
        'shape="1, 8, 1" offset="0" size="32"', 'shape="1, 8, 1" offset="0" size="8"'
    )
    path = _model(tmp_path, (lying, data), name="lying")
    _refused(path, "Const 'inv_freq' declares 8 bytes for 8 f32 values of shape (1, 8, 1)")
    huge = xml.replace('shape="1, 8, 1"', 'shape="1, 99999999999999, 1"')
    path = _model(tmp_path, (huge, data), name="huge")
    _refused(path, "has the shape '1, 99999999999999, 1': not one sinpe reads")


def test_a_fifo_a_device_and_a_directory_are_refused_at_once(tmp_path):
    xml, data = traced(_inv_freq())
    path = _model(tmp_path, (xml, data))
    (tmp_path / "m" / "openvino_model.bin").unlink()
    os.mkfifo(tmp_path / "m" / "openvino_model.bin")
    _refused(path, "the IR's weights")
    _refused(path, "is a FIFO, not a regular file")
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)
    _refused(fifo, "is a FIFO, not a regular file")
    (tmp_path / "d.xml").mkdir()
    _refused(tmp_path / "d.xml", "is a directory, not a regular file")


def test_a_link_is_followed_to_what_it_names_and_refused_where_that_is_no_file(tmp_path):
    xml, data = traced(_inv_freq())
    path = _model(tmp_path, (xml, data))
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "openvino_model.xml").symlink_to(path)
    (linked / "openvino_model.bin").symlink_to("/dev/zero")
    _refused(linked / "openvino_model.xml", "is a character device, not a regular file")
    (linked / "openvino_model.bin").unlink()
    (linked / "openvino_model.bin").symlink_to(tmp_path / "m" / "openvino_model.bin")
    assert ir_file.read(linked / "openvino_model.xml").bin_size == len(data)


def test_a_huge_or_crowded_xml_is_refused_by_its_caps(tmp_path, monkeypatch):
    xml, data = traced(_inv_freq())
    path = _model(tmp_path, (xml, data))
    monkeypatch.setattr(ir_file, "MAX_XML_BYTES", len(xml.encode()) - 1)
    _refused(path, f"is larger than {len(xml.encode()) - 1} bytes")
    monkeypatch.undo()
    monkeypatch.setattr(ir_file, "MAX_LAYERS", 5)
    _refused(path, "more than 5 layers")
    monkeypatch.undo()
    monkeypatch.setattr(ir_file, "MAX_ELEMENTS", 20)
    _refused(path, "more than 20 elements")
    monkeypatch.undo()
    monkeypatch.setattr(ir_file, "MAX_EDGES", 2)
    _refused(path, "more than 2 edges")
    deep = xml.replace("<layers>", "<layers>" + "<x>" * 70 + "</x>" * 70)
    _refused(_model(tmp_path, (deep, data), name="deep"), "nested more than 64 deep")


@pytest.mark.parametrize(
    "change, words",
    [
        (("<layers>", "<layers><"), "not well-formed XML"),
        (("<net ", "<nut "), "its root element is <nut>, not <net>"),
        (("</edges>", "</edgs>"), "not well-formed XML"),
        (('<net name="m" version="11">', '<html><net name="m" version="11">'), "root element"),
        (('from-layer="0"', 'from-layer="77"'), "an edge from layer 77"),
        (('to-port="0"', 'to-port="-1"'), "an edge's to-port is '-1', not a number"),
        (('layer id="1"', 'layer id="0"'), "two layers of id 0"),
        (('offset="0" size="32"', 'offset="x" size="32"'), "has the offset 'x': not a number"),
    ],
)
def test_a_malformed_ir_is_refused_with_its_own_reason(tmp_path, change, words):
    xml, data = traced(_inv_freq())
    assert change[0] in xml
    _refused(_model(tmp_path, (xml.replace(*change, 1), data)), words)


def test_const_values_of_each_float_type_are_read_and_others_refused(tmp_path):
    net = Net()
    values = np.float32([1.5, -2.25, 3e-5, 7.0])
    ids = [
        net.const(values),
        net.const(values.astype(np.float16)),
        net.const((values.view(np.uint32) >> 16).astype(np.uint16)),  # bfloat16: truncated
        net.const(np.int64([1, 2])),
    ]
    path = write(tmp_path / "t", net.xml(), bytes(net.data))
    ir = ir_file.read(path)
    got = [ir_file.const_values(ir, ir.layers[i]) for i in ids[:3]]
    assert np.array_equal(got[0], values.astype(np.float64))
    assert np.array_equal(got[1], values.astype(np.float16).astype(np.float64))
    bf16 = (values.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)
    assert np.array_equal(got[2], bf16)
    with pytest.raises(ValueError, match="is not a float Const"):
        ir_file.const_values(ir, ir.layers[ids[3]])
    with pytest.raises(ValueError, match="holds 4 values; at most 3"):
        ir_file.const_values(ir, ir.layers[ids[0]], max_values=3)


# ------------------------------------------------------------------- hand-written IRs judged


def _verdict(path, config=None):
    report = check_openvino(path, config)
    return report, [f.code for p in report.parts for f in p.judgment.findings]


def test_a_traced_inv_freq_is_judged_against_the_config(tmp_path):
    report, codes = _verdict(_model(tmp_path, traced(_inv_freq())))
    assert report.verdict == "match" and codes == []
    assert report.parts[0].name == "inv_freq" and report.notes == (
        "exported by optimum-intel 2.2.0",
    )
    report, codes = _verdict(_model(tmp_path, traced(_inv_freq(5e5)), name="b"))
    assert report.verdict == "mismatch" and codes == ["base"]
    wrong = _inv_freq()
    wrong[5] *= 1.001
    report, codes = _verdict(_model(tmp_path, traced(wrong), name="c"))
    assert report.verdict == "mismatch" and codes == ["frequencies"]
    report, codes = _verdict(_model(tmp_path, traced(_inv_freq(), factor=1.25), name="d"))
    assert report.verdict == "mismatch" and codes == ["attention_factor"]
    report, codes = _verdict(_model(tmp_path, traced(_inv_freq()[:6]), name="e"))
    assert report.verdict == "mismatch" and codes == ["rotary_width"]


def _yarn_inv_freq(factor=4.0, original=64, beta_fast=32, beta_slow=1, base=10000.0):
    """YaRN's frequencies written out (transformers' _compute_yarn_parameters, truncate)."""
    dim = 2 * HALF
    pos = _inv_freq(base)

    def correction(rotations):
        return (dim * np.log(original / (rotations * 2 * np.pi))) / (2 * np.log(base))

    low = max(np.floor(correction(beta_fast)), 0)
    high = min(np.ceil(correction(beta_slow)), dim - 1)
    ramp = np.clip((np.arange(HALF) - low) / max(high - low, 1e-3), 0, 1)
    extrapolation = 1 - ramp
    return pos / factor * (1 - extrapolation) + pos * extrapolation


def test_yarn_frequencies_and_attention_factor_match(tmp_path):
    config = {**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 64}}  # fmt: skip
    mscale = 0.1 * np.log(4.0) + 1.0
    path = _model(tmp_path, traced(_yarn_inv_freq(), factor=mscale), config)
    report, codes = _verdict(path)
    assert report.verdict == "match", codes
    report, codes = _verdict(_model(tmp_path, traced(_yarn_inv_freq()), config, "n"))
    assert report.verdict == "mismatch" and codes == ["attention_factor"]
    report, codes = _verdict(_model(tmp_path, traced(_inv_freq(), factor=mscale), config, "u"))
    assert report.verdict == "mismatch" and codes == ["scaling_not_applied"]


def test_dynamic_ntk_frozen_at_export_is_a_mismatch_past_the_original_length(tmp_path):
    config = {**LLAMA, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    report, _ = _verdict(_model(tmp_path, traced(_inv_freq()), config))
    assert report.verdict == "mismatch"
    (short, long) = report.parts
    assert short.name == "inv_freq (up to 256)" and short.judgment.verdict == "match"
    assert long.name == "inv_freq (past 256, at 512)" and long.judgment.verdict == "mismatch"
    assert [f.text for f in long.judgment.findings] == ["dynamic NTK scaling not applied"]


PHI3 = {
    "model_type": "phi3",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 512,
    "original_max_position_embeddings": 64,
    "rope_theta": 10000.0,
    "rope_scaling": {
        "type": "longrope",
        "short_factor": [1.0 + 0.1 * i for i in range(HALF)],
        "long_factor": [2.0 + 0.5 * i for i in range(HALF)],
    },
}


def _longrope(which: str) -> np.ndarray:
    return _inv_freq() / np.asarray(PHI3["rope_scaling"][f"{which}_factor"])


def test_longrope_frozen_to_one_set_of_factors_is_said_so(tmp_path):
    mscale = np.sqrt(1 + np.log(512 / 64) / np.log(64))
    for regime in ("short", "long"):
        path = _model(tmp_path, traced(_longrope(regime), factor=mscale), PHI3, regime)
        report, codes = _verdict(path)
        assert report.verdict == "mismatch" and codes == ["frozen"], codes
        assert f"frozen to its {regime} factors" in report.parts[0].judgment.findings[0].text


def test_longrope_switched_by_a_select_is_judged_in_each_regime(tmp_path):
    mscale = np.sqrt(1 + np.log(512 / 64) / np.log(64))
    xml_data = traced(_longrope("short"), mscale, second=_longrope("long"), switch=64)
    report, codes = _verdict(_model(tmp_path, xml_data, PHI3))
    assert report.verdict == "match", codes
    names = sorted(p.name for p in report.parts)
    assert names == [
        "inv_freq (short factors: up to 64)",
        "inv_freq_long (long factors: past 64, at 512)",
    ]
    xml_data = traced(_longrope("short"), mscale, second=_longrope("long"), switch=4096)
    report, codes = _verdict(_model(tmp_path, xml_data, PHI3, "late"))
    assert report.verdict == "mismatch" and codes == ["original_length"] * 2


def test_tables_folded_into_consts_are_judged_row_by_row(tmp_path):
    import sinpe

    cos, sin = sinpe.rope_config(LLAMA).rope(256, layout="compact", dtype="float32")
    report, codes = _verdict(_model(tmp_path, tables(cos, sin)))
    assert report.verdict in ("match", "drift") and codes == []
    assert report.parts[0].rows == 256
    sin = sin.copy()
    sin[200, 3] += 1e-3
    report, codes = _verdict(_model(tmp_path, tables(cos, sin), name="off"))
    assert report.verdict == "mismatch" and codes == ["table"]


def test_the_command_line_reads_an_ir(tmp_path):
    path = _model(tmp_path, traced(_inv_freq(5e5)))
    done = run("check", str(path), "--json")
    found = json.loads(done.stdout)
    assert done.returncode == 1 and found["verdict"] == "mismatch"
    assert found["parts"][0]["name"] == "inv_freq"
    done = run("check", str(_model(tmp_path, traced(_inv_freq()), name="ok")))
    assert done.returncode == 0 and "verdict: reads as the config" in done.stdout
