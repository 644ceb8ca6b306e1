"""OpenVINO IRs: the reader (``sinpe._files.openvino``) refusing hostile files, and
``sinpe check openvino_model.xml`` judging hand-written IRs (tests/openvino_files.py: no
openvino needed), then the IRs optimum-intel exports from tiny random twins (the OpenVINO
leg, .ci/openvino: openvino, openvino-genai and optimum-intel pinned; skipped without them,
a failure there under SINPE_NO_SKIPS=1)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from command import run
from defects import GLOBAL_EVERYWHERE, SWAPPED, TWICE, WHOLE, assert_a_far_run, defective_python
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


def test_the_fuzzers_seeds_are_read_beside_the_fuzzers_bin(tmp_path):
    """tools/fuzz's openvino seeds (tools/fuzz/seeds.py) read as the fuzzer reads them, beside
    its fixed .bin of float32 0, 1, 2, ...: a seed refused would start it from refusals only."""
    from sinpe._check.openvino import find_frequencies

    seeds = sorted((Path(__file__).with_name("data") / "fuzz" / "openvino").iterdir())
    assert [s.name for s in seeds] == ["longrope.openvino", "tables.openvino", "traced.openvino"]
    for seed in seeds:
        path = tmp_path / seed.name
        path.write_bytes(seed.read_bytes())
        path.with_suffix(".bin").write_bytes(np.arange(1024, dtype=np.float32).tobytes())
        ir = ir_file.read(path)
        if seed.name != "tables.openvino":
            assert [len(f.vectors) for f in find_frequencies(ir)] == [
                2 if seed.name == "longrope.openvino" else 1
            ]


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


GEMMA3 = {
    "model_type": "gemma3_text",
    "head_dim": 16,
    "max_position_embeddings": 1024,
    "layer_types": ["sliding_attention", "full_attention"],
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
    },
}


def test_each_layer_types_module_is_judged_against_the_rope_it_matches(tmp_path):
    local, full = _inv_freq(), _inv_freq(1e6) / 8
    report, codes = _verdict(_model(tmp_path, traced(local, more=[(full, None)]), GEMMA3))
    assert report.verdict == "match", codes
    assert sorted(p.layer_type for p in report.parts) == ["full_attention", "sliding_attention"]
    # the global module without its linear x8: neither layer type's RoPE, so not judged, and
    # the full-attention layers' RoPE is then found nowhere
    report, codes = _verdict(_model(tmp_path, traced(local, more=[(_inv_freq(1e6), None)]),
                                    GEMMA3, "unscaled"))  # fmt: skip
    assert report.verdict == "unchecked" and sorted(codes) == ["layer_of", "missing_attribute"]
    assert "the IR has no RoPE for the full_attention layers" in report.parts[-1].judgment.text


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


# --------------------------------------------------------------------------- optimum-intel's IRs
# (the OpenVINO leg: tiny random twins saved by transformers, exported by optimum-intel through
# the very function sinpe engines' OpenVINO line calls, judged, and run in the runtime)

TWINS = {
    "llama": None,
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
}


def _save_llama(folder, rope, sharp: float = 1.0):
    import torch
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rope_scaling=rope, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(sharp)
            layer.self_attn.k_proj.weight.mul_(sharp)
    model.save_pretrained(folder)
    return folder


def _save_phi3(folder):
    import torch
    import transformers

    config = transformers.Phi3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        original_max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_scaling={"rope_type": "longrope", "original_max_position_embeddings": 64,
                      "short_factor": PHI3["rope_scaling"]["short_factor"],
                      "long_factor": PHI3["rope_scaling"]["long_factor"]},
    )  # fmt: skip
    torch.manual_seed(0)
    transformers.Phi3ForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    """name -> (the saved twin's folder, its openvino_model.xml), exported by optimum-intel."""
    pytest.importorskip("openvino")
    pytest.importorskip("optimum.exporters.openvino")
    import shift

    from sinpe._engines.openvino import _export

    root = tmp_path_factory.mktemp("openvino")
    saved = {name: _save_llama(root / name, rope, 4.0) for name, rope in TWINS.items()}
    saved["phi3-longrope"] = _save_phi3(root / "phi3-longrope")
    saved["llama-3.1 (shift)"] = Path(shift.save(root / "shift"))
    found = {}
    for name, folder in saved.items():
        _export(folder, root / f"{name}-ir")
        found[name] = (folder, root / f"{name}-ir" / "openvino_model.xml")
    return found


@pytest.mark.parametrize("name", [*TWINS, "phi3-longrope", "llama-3.1 (shift)"])
def test_an_exported_ir_is_judged_against_its_config(exported, name):
    folder, xml = exported[name]
    report = check_openvino(xml, folder / "config.json")
    found = {p.name.split(" (")[-1]: p.judgment for p in report.parts}
    assert report.notes and report.notes[0].startswith("exported by optimum-intel 2.2.0")
    if name == "dynamic":  # the export traces the unscaled inv_freq: frozen at every length
        assert report.verdict == "mismatch"
        assert found["up to 256)"].verdict == "match"
        assert [f.text for f in found["past 256, at 512)"].findings] == [
            "dynamic NTK scaling not applied"
        ]
    elif name == "phi3-longrope":  # both factor sets in the IR, switched at the original length
        assert report.verdict == "match"
        assert sorted(found) == ["long factors: past 64, at 512)", "short factors: up to 64)"]
    else:
        assert report.verdict == "match" and len(report.parts) == 1
    # and the same IR against another rope type's config is a mismatch, with its reason
    other = dict(LLAMA, rope_scaling={"rope_type": "linear", "factor": 3.0})
    if name != "phi3-longrope":
        assert check_openvino(xml, other).verdict == "mismatch"


def _runtime_logprobs(xml, offsets, vocab: int = 256) -> dict:
    """The IR run by the OpenVINO runtime on the CPU (float32 inference and KV cache), the
    shift test's tokens at positions ``p .. p + K - 1``: ``{p: log-probabilities}``."""
    import openvino
    import shift

    core = openvino.Core()
    compiled = core.compile_model(
        str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
    )
    request = compiled.create_infer_request()
    ids = np.asarray([shift.tokens()], np.int64) % vocab
    found = {}
    for p in offsets:
        request.reset_state()
        inputs = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "position_ids": np.arange(p, p + ids.shape[1], dtype=np.int64)[None],
            "beam_idx": np.zeros(1, np.int32),
        }
        logits = request.infer(inputs)["logits"]
        found[p] = shift.log_softmax(np.asarray(logits)[0])
    return found


def _transformers_logprobs(folder, offsets) -> dict:
    import shift
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = torch.tensor([shift.tokens()]) % 256
    found = {}
    with torch.no_grad():
        for p in offsets:
            positions = torch.arange(p, p + ids.shape[1])[None]
            logits = model(ids, position_ids=positions).logits[0].double().numpy()
            found[p] = shift.log_softmax(logits)
    return found


def test_the_shift_model_runs_in_the_runtime_as_exact_at_far_positions(exported):
    """The shift test's tiny Llama-3.1 in the OpenVINO runtime at positions up to 100,000,
    against the float64 reference with sinpe's exact table (tests/shift.py)."""
    import openvino
    import shift

    folder, xml = exported["llama-3.1 (shift)"]
    reference = shift.transformers_logprobs(folder, exact=True)
    ours = _runtime_logprobs(xml, shift.OFFSETS, shift.VOCAB)
    found = shift.distances(ours, reference)
    mine = shift.distances(shift.transformers_logprobs(folder), reference)
    version = f"OpenVINO {openvino.__version__.split('-')[0]} (optimum-intel 2.2.0 export)"
    shift.record("openvino", version, found)
    # float32 angles: the distance grows with p, as transformers' own float32 run does
    assert found[0] < 1e-3, found
    assert all(found[p] < 20 * mine[p] + 1e-3 for p in shift.OFFSETS), (found, mine)


def test_dynamic_ntk_frozen_at_export_is_what_the_runtime_computes(exported):
    """What the verdict says, run: up to the original length (256) the IR's logits are
    transformers'; past it transformers' dynamic base grows and the IR's does not."""
    folder, xml = exported["dynamic"]
    offsets = (0, 100_000)
    got = _runtime_logprobs(xml, offsets)
    want = _transformers_logprobs(folder, offsets)
    near, far = (float(np.abs(got[p] - want[p]).max()) for p in offsets)
    assert near < 1e-3 and far > 100 * near, (near, far)
    plain = _runtime_logprobs(exported["llama"][1], offsets)  # the unscaled twin, same weights
    assert float(np.abs(got[100_000] - plain[100_000]).max()) < 1e-3


# --------------------------------------------------------------------------- the run line
# (issue 65: what the IR computes in the OpenVINO runtime at p = 0, 100,000 and the trained
# length, against the twin in float64 with sinpe's exact tables; the export traces
# transformers' modeling code, so a defect patched into that code in the export's interpreter,
# tests/defects.py, is a defect of what the IR computes)

CONFIGS = Path(__file__).parent / "data" / "configs"
# not Gemma 4 (its per_layer_inputs: the refusal test at the end of this file, and the
# runtime table): its float64 reference made in this leg's transformers 5.5.4 is 7e-4 from
# the IR at p = 0, 9e-5 when made in transformers 5.24's (the runtime table's)
RUN_FAMILIES = {"llama-3.1": "llama-3.1-8b.json", "qwen3-yarn": "qwen3-8b.yarn-4x.json"}
QWEN3 = "transformers.models.qwen3.modeling_qwen3"
DEFECTS = {  # transformers' modeling code, which the export traces (tests/defects.py)
    "rotation style swapped": ("qwen3-8b.yarn-4x.json", QWEN3, SWAPPED),
    "attention factor applied twice": ("qwen3-8b.yarn-4x.json", QWEN3, TWICE),
    "partial width ignored": ("phi-2.json", "transformers.models.phi.modeling_phi", WHOLE),
    "a sliding layer given the full RoPE": (
        "gemma-3-4b-it.transformers-5.json",
        "transformers.models.gemma3.modeling_gemma3",
        GLOBAL_EVERYWHERE,
    ),
}


def _openvino_line(config, python=None):
    """OpenVINO's line with its run line, its probe in ``python`` (default: this one)."""
    import sys

    from sinpe._engines import engines

    python = python or sys.executable
    report = engines(config, only=["openvino"], pythons={"openvino": python}, run=True)
    (line,) = report.lines
    print(line.text, line.run.text if line.run else "", sep="\n")  # pytest -rP shows it
    return line


@pytest.mark.parametrize("name", RUN_FAMILIES)
def test_the_run_line_is_the_configs_model_at_every_p(name):
    """The IR in the runtime at p = 0, 100,000 and the trained length - K: within what
    float32 angles allow at every p (a match at p = 0), as transformers' own run is."""
    pytest.importorskip("openvino")
    pytest.importorskip("optimum.exporters.openvino")
    config = json.loads((CONFIGS / RUN_FAMILIES[name]).read_text())
    line = _openvino_line(config)
    assert_a_far_run(line, config["max_position_embeddings"])  # as transformers' own run
    assert "position_ids p .. p + K - 1" in line.run.how


@pytest.mark.parametrize("defect", DEFECTS)
def test_a_defect_in_the_traced_code_turns_the_run_line_only(tmp_path, defect):
    """One application defect in transformers' modeling code of the export's interpreter:
    the IR still holds the config's frequencies (the table line a match or a drift), but
    what it computes is not the config's model (the run line a mismatch)."""
    pytest.importorskip("openvino")
    pytest.importorskip("optimum.exporters.openvino")

    config, target, body = DEFECTS[defect]
    python = defective_python(tmp_path / "python", target, body)
    line = _openvino_line(CONFIGS / config, python)
    assert line.verdict in ("match", "drift"), line.text
    assert line.run is not None and line.run.verdict == "mismatch", line.run
    assert line.run.reasons, line.run


def test_an_input_the_export_made_no_ir_for_is_said():
    """Gemma 4's language model takes ``per_layer_inputs``, which optimum-intel's pipeline
    makes with the export's per-layer embeddings IR: where the export wrote none, the run
    says which input and which file, and asks nothing of the runtime."""
    import numpy as np

    from sinpe._check.steps import EngineFailed
    from sinpe._engines.openvino import _from_ids

    ids = np.zeros((1, 4), np.int64)
    assert _from_ids(None, Path("."), {"input_ids", "position_ids"}, ids, {}) == {}
    with pytest.raises(EngineFailed, match="takes per_layer_inputs, and the export wrote no "
                       "openvino_text_embeddings_per_layer_model.xml"):  # fmt: skip
        _from_ids(None, Path("/nowhere"), {"per_layer_inputs"}, ids, {})
