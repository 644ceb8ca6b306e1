"""The verdict core (``sinpe._verdict.verdict``, ``judge``, ``layers``): one judge under every
engine adapter. Its words and bounds live there alone (an AST rule); one defect reads the
same from every engine's stand-in; "drift" is a claim about float32 angles, judged per
column; a value that is not a number is never a match; every bound has a test that fails
when it is loosened fourfold (docs/engines.md's mutation run)."""

from __future__ import annotations

import ast
import inspect
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from command import run
from gguf_files import CONFIGS, CONFIGS_DIR, converted, write

import sinpe
from sinpe._check.compare import compare
from sinpe._check.probe import judge_module
from sinpe._files.caches import Stored
from sinpe._verdict import judge as core

SRC = Path(sinpe.__file__).parent
CORE = {SRC / "_verdict" / name for name in ("verdict.py", "words.py", "judge.py", "layers.py")}
ADAPTERS = [
    SRC / "_check" / "compare.py",
    SRC / "_check" / "gguf.py",
    SRC / "_check" / "llama_cpp.py",
    SRC / "_check" / "onnx.py",
    SRC / "_check" / "probe.py",
    SRC / "vllm" / "_audit.py",
    SRC / "vllm" / "_model.py",
    SRC / "sglang" / "_plugin.py",
    SRC / "mlx" / "_check.py",
]
PLAIN = {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 1e4}


# --------------------------------------------------------------------------- one dialect

_LOGGING = {"warning", "info", "debug", "error", "log", "warn", "exception"}
_REFUSING = {"bounded"}  # its first argument names what a refusal is about
_TOLERANCE_CALLS = {"isclose", "allclose", "assert_allclose"}
_TOLERANCE_WORDS = {"rtol", "atol", "rel_tol", "abs_tol"}


def _allowed_nodes(tree) -> set:
    """The nodes whose strings are not reasons: docstrings, what a ``raise`` says (a
    refusal), log messages, the names ``bounded`` refuses by."""
    allowed: set = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant):
                allowed.add(id(body[0].value))
        if isinstance(node, ast.Raise):
            allowed |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in _LOGGING or name in _REFUSING:
                allowed |= {id(n) for n in ast.walk(node)}
    return allowed


def _prose(text: str) -> bool:
    """Words, not glue: two or more words of letters (``", "`` and ``"dtype "`` are not)."""
    return sum(bool(re.search("[A-Za-z]{2}", token)) for token in text.split()) >= 2


def _words(path: Path):
    """``(line, text)`` of every string of prose that is not allowed above."""
    tree = ast.parse(path.read_text())
    allowed = _allowed_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            if _prose("".join(str(p) for p in parts)):
                yield node.lineno, "".join(str(p) for p in parts)
                allowed |= {id(n) for n in ast.walk(node)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _prose(node.value):
            yield node.lineno, node.value


def _tolerances(path: Path):
    """``(line, what)`` of every tolerance an adapter would set or use on its own."""
    tree = ast.parse(path.read_text())
    core_names = {"PARAMETER_TOLERANCE", "FIT_TOLERANCE", "MATCH_ULPS", "FACTOR_TOLERANCE"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in _TOLERANCE_CALLS:
                yield node.lineno, name
            if name == "Verdict":  # its bound and its kind are the core's to set
                yield node.lineno, "a Verdict built outside the core"
            for keyword in node.keywords:
                if keyword.arg in _TOLERANCE_WORDS:
                    yield node.lineno, keyword.arg
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = getattr(target, "id", "")
                if any(word in name for word in ("TOLERANCE", "ULPS", "RATE", "BOUND")):
                    yield node.lineno, name
        if isinstance(node, ast.Compare):  # relative(...) against anything but the core's
            sides = [node.left, *node.comparators]
            if any(getattr(getattr(s, "func", None), "id", "") == "relative" for s in sides):
                others = [s for s in sides if not isinstance(s, ast.Call)]
                if not all(getattr(o, "id", "") in core_names for o in others):
                    yield node.lineno, "relative(...) against a bound of its own"


def test_no_reason_text_or_tolerance_outside_the_core():
    found = [
        f"{path.relative_to(SRC)}:{line}: {what!r}"
        for path in ADAPTERS
        for line, what in [*_words(path), *_tolerances(path)]
    ]
    assert not found, "reason words or tolerances outside the verdict core:\n" + "\n".join(found)


def test_the_rule_sees_words_and_tolerances_however_they_are_written(tmp_path):
    source = (
        "import math\n"
        "def f(a, b):\n"
        '    """A docstring is fine."""\n'
        "    if math.isclose(a, b, rel_tol=1e-3):\n"
        '        raise ValueError("a refusal is fine")\n'
        "    LOOSE_TOLERANCE = 0.1\n"
        '    return f"base {a} where the config gives {b}", relative(a, b) > 0.5\n'
        'MATCHED = Verdict("match", (), 2.0**-19, kind="parameters")\n'
    )
    path = tmp_path / "adapter.py"
    path.write_text(source)
    assert [t for _, t in _words(path)] == ["base  where the config gives "]
    assert sorted(t for _, t in _tolerances(path)) == [
        "LOOSE_TOLERANCE",
        "a Verdict built outside the core",
        "isclose",
        "rel_tol",
        "relative(...) against a bound of its own",
    ]


# --------------------------------------------------------------------------- stand-ins


def _angles(n_or_positions, base=1e4, width=64, factor=1.0):
    """float32 angles, as transformers and vLLM form them: compact (cos, sin) float64."""
    positions = (
        np.arange(n_or_positions) if np.isscalar(n_or_positions) else np.asarray(n_or_positions)
    )
    inv_freq = 1.0 / np.float32(base) ** (np.arange(0, width, 2, dtype=np.float32) / width)
    angle = positions.astype(np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
    return (np.cos(angle) * np.float32(factor)).astype(np.float64), (
        np.sin(angle) * np.float32(factor)
    ).astype(np.float64)


def _module(base=1e4, width=64, factor=1.0):
    """An MLX-like module as the probe adapter calls it: halves, float32 angles."""

    def call(x, offset):
        n = x.shape[2]
        cos, sin = _angles(np.arange(offset, offset + n), base, width, factor)
        half = width // 2
        y = x.astype(np.float64).copy()
        x1, x2 = x[..., :half], x[..., half:width]
        y[..., :half] = x1 * cos - x2 * sin
        y[..., half:width] = x1 * sin + x2 * cos
        return y

    return call


def _vllm(base=1e4, width=64, factor=1.0, n=4096):
    torch = pytest.importorskip("torch")

    class RotaryEmbedding:
        pass

    layer = RotaryEmbedding()
    cos, sin = _angles(n, base, width, factor)
    layer.cos_sin_cache = torch.from_numpy(np.concatenate([cos, sin], 1).astype(np.float32))
    layer.rotary_dim, layer.head_size, layer.is_neox_style = width, width, True
    return layer


def _gguf(tmp_path, base=1e4, width=64, factor=1.0):
    kv = {
        "general.architecture": "llama",
        "llama.context_length": 4096,
        "llama.embedding_length": 256,
        "llama.attention.head_count": 4,
        "llama.rope.dimension_count": width,
        "llama.rope.freq_base": float(base),
    }
    if factor != 1.0:
        kv["llama.rope.scaling.attn_factor"] = float(factor)
    return write(tmp_path / "m.gguf", kv)


def _cache_file(base=1e4, width=64, factor=1.0):
    cos, sin = _angles(4096, base, width, factor)
    return [Stored(np.concatenate([cos, sin], 1).astype(np.float32), "float32", "cache")]


def _findings(tmp_path, engine: str, **defect) -> list:
    """The findings each engine's adapter gives for one defect: ``[(code, words, engine
    value, config value)]``."""
    spec = sinpe.rope_config(PLAIN)
    if engine == "gguf":
        report = sinpe.check_gguf(_gguf(tmp_path, **defect), PLAIN)
        found = report.judgment.findings
    elif engine == "vllm":
        from sinpe.vllm import audit_layer

        (report,) = audit_layer(_vllm(**defect), spec, ["model.layers.0.self_attn.rotary_emb"])
        found = report.judgment.findings
    elif engine == "mlx":
        found = judge_module(spec, _module(**defect), defect.get("width", 64))[0].findings
    else:
        found = compare(spec, _cache_file(**defect)).judgment.findings
    return [(f.code, f.words, f.engine, f.config) for f in found]


DEFECTS = {
    "rotary width": (
        dict(width=32),
        [("rotary_width", "rotary width 32 where the config gives 64", 32, 64)],
        ("gguf", "vllm", "mlx"),  # a cache file of another width is no layout: refused
    ),
    "attention factor": (
        dict(factor=1.2),
        [
            (
                "attention_factor",
                "attention factor 1.2 where the config gives 1.0",
                "1.2",
                "1.0",
            )
        ],
        ("gguf", "vllm", "mlx", "cache"),
    ),
    "base": (
        dict(base=5e5),
        [("base", "base 500000.0 where the config gives 10000.0", "500000.0", "10000.0")],
        ("gguf", "vllm", "mlx", "cache"),
    ),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_one_defect_reads_the_same_from_every_engine(tmp_path, defect):
    edit, want, engines = DEFECTS[defect]
    for engine in engines:
        assert _findings(tmp_path, engine, **edit) == want, engine


def test_a_defect_s_json_field_is_its_code_everywhere(tmp_path):
    spec = sinpe.rope_config(PLAIN)
    gguf = sinpe.check_gguf(_gguf(tmp_path, factor=1.2), PLAIN).as_dict()
    cache = compare(spec, _cache_file(factor=1.2)).judgment.as_json()
    module = judge_module(spec, _module(factor=1.2), 64)[0].as_json()
    for data in (gguf, cache, module):
        assert data["verdict"] == "mismatch"
        assert [r["code"] for r in data["reasons"]] == ["attention_factor"]
        json.dumps(data, allow_nan=False)
    assert gguf["reasons"][0]["evidence"] == "rope.scaling.attn_factor 1.2"
    assert gguf["reasons"][0]["text"] == (
        "attention factor 1.2 where the config gives 1.0 (rope.scaling.attn_factor 1.2)"
    )


# --------------------------------------------------------------------------- drift


def _judge(read, n, config=PLAIN, dtype="float32"):
    spec = sinpe.rope_config({**config, "max_position_embeddings": n})
    h = spec.head_dim // 2
    return core.judge_computed(spec._one(), read, np.arange(h), dtype, n).verdict


def _exact(positions, config=PLAIN, n=None):
    spec = sinpe.rope_config({**config, "max_position_embeddings": n or int(positions[-1]) + 1})
    return spec.rope_at(positions, layout="compact", seq_len=n)


@pytest.mark.parametrize("base", [1e4, 1e6])
def test_float32_angles_drift_up_to_ten_million_positions(base):
    verdict = _judge(lambda p: _angles(p, base), 10_000_000, {**PLAIN, "rope_theta": base})
    assert verdict.verdict == "drift" and verdict.drift == "float32", verdict
    errors = [error for _, _, error in verdict.decades]  # each decade's own largest error
    assert errors == sorted(errors) and errors[-1] > 1e4 * errors[0], verdict.decades


@pytest.mark.parametrize("radius", [1.0, 1.07])
def test_float32_rows_read_in_place_judge_as_their_float64_copies(radius):
    """A reader may hand the core the float32 halves of one ``[cos | sin]`` block (vLLM's
    does): they are read in place (no copy) and judged exactly as the same values widened to
    float64 (every field of the verdict, every row's error), a drift and a radius off too;
    a float16 block is widened to float64 first."""
    n, h = 40_000, 32
    spec = sinpe.rope_config({**PLAIN, "max_position_embeddings": n})
    cos, sin = _angles(n)
    block = np.concatenate([cos, sin], axis=1).astype(np.float32) * np.float32(radius)

    def halves(positions):
        rows = block[positions[0] : positions[-1] + 1]
        return rows[:, :h], rows[:, h:]

    def wide(positions):
        return tuple(np.array(half, np.float64) for half in halves(positions))

    read = core._read_block(halves, np.arange(5, 9), h)
    assert all(r.dtype == np.float32 and np.shares_memory(r, block) for r in read)
    narrow = core._read_block(
        lambda p: tuple(r.astype(np.float16) for r in halves(p)), np.arange(5, 9), h
    )
    assert all(r.dtype == np.float64 for r in narrow)
    # float32 cos beside float64 sin: neither is rounded to the other's type
    mixed = core._read_block(lambda p: (halves(p)[0], wide(p)[1] + 1e-12), np.arange(5, 9), h)
    assert all(r.dtype == np.float64 for r in mixed)
    assert (mixed[1] == wide(np.arange(5, 9))[1] + 1e-12).all()
    tables = [
        core.judge_table(spec._one(), r, n, np.arange(h), "float32", n) for r in (halves, wide)
    ]
    assert tables[0].verdict == tables[1].verdict, tables
    assert tables[0].errors.tobytes() == tables[1].errors.tobytes()
    assert tables[0].verdict.verdict == ("drift" if radius == 1.0 else "mismatch")


def test_a_block_s_exact_rows_made_into_an_earlier_block_s_planes_are_its_own():
    """The core refills one pair of planes block after block (``table_block``'s ``out``):
    the same bits as planes of the block's own, a shorter last block in their first rows;
    planes of another width or dtype are not used."""
    from sinpe._rope.rotary import table_block

    one = sinpe.rope_config({**PLAIN, "max_position_embeddings": 10_000})._one()
    f64 = np.dtype(np.float64)
    out = table_block(one, 10_000, 0, 512, "compact", f64)
    for start, n in ((512, 512), (9_000, 300)):
        made = table_block(one, 10_000, start, n, "compact", f64, out)
        own = table_block(one, 10_000, start, n, "compact", f64)
        assert all(np.shares_memory(m, o) for m, o in zip(made, out))
        assert all(m.tobytes() == w.tobytes() for m, w in zip(made, own))
    narrow = tuple(plane.astype(np.float32) for plane in out)
    made = table_block(one, 10_000, 0, 512, "compact", f64, narrow)
    assert not any(np.shares_memory(m, o) for m, o in zip(made, narrow))


def test_a_flat_error_from_row_0_is_not_drift():
    """An error that does not grow with the position: off from position 0, where float32
    angles are exact. The old envelope (the largest frequency for every column) called it
    drift from position 100 on."""

    def read(positions):
        cos, sin = _exact(positions)
        return cos + 1e-6, sin

    verdict = _judge(read, 4096)
    assert verdict.verdict == "mismatch" and verdict.worst[0] == 0, verdict


def test_garbage_rows_far_out_are_not_drift():
    """A 10M-position model whose rows from 5M on are garbage: the low frequencies, which
    float32 angles still hold to 1e-3 there, show it."""
    rng = np.random.default_rng(0)

    def read(positions):
        cos, sin = _angles(positions)
        far = positions >= 5_000_000
        cos[far], sin[far] = rng.uniform(-1, 1, (2, far.sum(), cos.shape[1]))
        return cos, sin

    verdict = _judge(read, 10_000_000)
    assert verdict.verdict == "mismatch" and verdict.worst[0] >= 5_000_000, verdict


def test_a_low_frequency_wrong_where_the_highest_hides_it_is_not_drift():
    """Pair 31's angle off by 1e-3 at position 1000: far past what float32 makes of that
    frequency (1e-4 of a radian there), though within what it makes of pair 0."""

    def read(positions):
        cos, sin = _exact(positions)
        sin[:, 31] += 1e-6 * positions
        return cos, sin

    assert _judge(read, 4096).verdict == "mismatch"


def _documented_envelope(n: int = 4096) -> np.ndarray:
    """docs/engines.md's per-pair float32 drift rate, written out here with its own numbers
    (not read from the core, so that a loosened constant there cannot loosen the test):
    ``A w_i 2^-24 (16 + 2 ln(w_max / w_i))`` per position."""
    inv_freq, factor = sinpe.rope_config({**PLAIN, "max_position_embeddings": n}).frequencies()
    return factor * inv_freq * 2.0**-24 * (16 + 2 * np.log(inv_freq.max() / inv_freq))


@pytest.mark.parametrize("scale, verdict", [(0.5, "drift"), (1.5, "mismatch")])
def test_the_drift_envelope_is_the_bound_and_not_four_times_it(scale, verdict):
    """Angle errors of ``scale`` times the per-column float32 envelope (an angle's error
    moves cos and sin along the circle, as float32 angles do): within it a drift, past it a
    mismatch."""
    rates = _documented_envelope()

    def read(positions):
        return _turned(positions, scale * positions[:, None] * rates[None, :])

    assert _judge(read, 4096).verdict == verdict


@pytest.mark.parametrize("scale, verdict", [(0.5, "drift"), (1.5, "mismatch")])
@pytest.mark.parametrize("pair", [0, 31], ids=["fastest pair: the 16 ulps", "slowest: 2 ln"])
def test_each_term_of_the_envelope_is_the_bound_and_not_four_times_it(pair, scale, verdict):
    """The error in one pair only: the fastest, whose envelope is its 16 ulps alone, and the
    slowest, where ``2 ln(w_max / w_i)`` (18.4) outweighs them: fourfold either term (64
    ulps, or 8 ln) would pass 1.5 times the bound as drift."""
    rates = _documented_envelope()

    def read(positions):
        turn = np.zeros((positions.shape[0], 32))
        turn[:, pair] = scale * positions * rates[pair]
        return _turned(positions, turn)

    assert _judge(read, 4096).verdict == verdict


def _turned(positions, error):
    """The exact table at 4096 with each entry's angle moved so that the larger of its cos
    and sin errors is ``error`` (rows, pairs): ``error / max(|cos|, |sin|)``, to first order."""
    spec = sinpe.rope_config({**PLAIN, "max_position_embeddings": 4096})
    inv_freq, _ = spec.frequencies(4096)
    angle = positions[:, None] * inv_freq[None, :]
    turn = error / np.maximum(np.abs(np.cos(angle)), np.abs(np.sin(angle)))
    return np.cos(angle + turn), np.sin(angle + turn)


@pytest.mark.parametrize("ulps, verdict", [(6, "match"), (12, "mismatch")])
def test_the_match_bound_is_8_ulps_and_not_32(ulps, verdict):
    """Row 0 off by ``ulps`` float32 ulps (of 1, the attention factor): within 8 a match;
    past it at position 0, where every angle is exact, a mismatch."""

    def read(positions):
        cos, sin = _exact(positions, n=4096)
        return cos + ulps * 2.0**-24, sin

    assert _judge(read, 4096).verdict == verdict


def test_float64_angles_are_a_float64_drift():
    def read(positions):
        spec = sinpe.rope_config(PLAIN)
        inv_freq, _ = spec.frequencies()
        angle = positions.astype(np.float64)[:, None] * inv_freq[None, :]
        return np.cos(angle), np.sin(angle)

    verdict = _judge(read, 1 << 30, dtype="float64")
    assert verdict.verdict == "drift" and verdict.drift == "float64", verdict


def test_exact_mode_does_not_overwrite_what_only_looks_like_drift():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer
    from sinpe.vllm._audit import fill_exact

    spec = sinpe.rope_config(PLAIN)
    layer = _vllm()
    layer.cos_sin_cache += 1e-6  # a flat error from row 0
    before = layer.cos_sin_cache.clone()
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "mismatch"
    assert not fill_exact(layer, spec, report).replaced and layer.cos_sin_cache.equal(before)
    assert isinstance(before, torch.Tensor)


# --------------------------------------------------------------------------- explanations


def test_a_base_a_fifth_of_a_permille_off_is_named_from_the_angles():
    """The fitted frequencies name a base of 10002 (2e-4 from the config's, relative): within
    the fit's 1e-4 it would be silent, fourfold loosened it is."""
    found = judge_module(sinpe.rope_config(PLAIN), _module(base=10002.0), 64)[0]
    assert found.verdict == "mismatch"
    assert [f.words for f in found.findings] == ["base 10002.0 where the config gives 10000.0"]


def test_a_row_0_whose_pairs_disagree_names_no_attention_factor():
    """Row 0's cos gives the attention factor only where every pair agrees: 2% apart, they
    do not (the agreement bound is 2**-7; fourfold loosened, 3% would pass)."""

    def read(positions):
        cos, sin = _exact(positions, n=4096)
        cos[positions == 0, ::2] *= 1.02
        return cos, sin

    held = core.fit(read, 4096)
    assert held is not None and held.attention_factor is None
    uniform = core.fit(lambda p: tuple(1.02 * v for v in _exact(p, n=4096)), 4096)
    assert uniform.attention_factor == pytest.approx(1.02)


# --------------------------------------------------------------------------- numbers


def _gguf_file(tmp_path, name, edit):
    kv, tensors = converted(name)
    edit(kv, tensors)
    path = write(tmp_path / f"{name}.gguf", kv, tensors)
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(CONFIGS[name]))
    return path, config


def _key(key, value, kind="FLOAT32"):
    def edit(kv, tensors):
        kv[key] = (kind, value)

    return edit


def _tensor(name, index, value):
    def edit(kv, tensors):
        tensors[name] = tensors[name].copy()
        tensors[name][index] = value

    return edit


NOT_NUMBERS = {
    "base nan": ("llama31", _key("llama.rope.freq_base", math.nan), "the base is nan"),
    "base negative": ("llama31", _key("llama.rope.freq_base", -5e5), "the base is -500000.0"),
    "base zero": ("llama31", _key("llama.rope.freq_base", 0.0), "the base is 0.0"),
    "base inf": ("llama31", _key("llama.rope.freq_base", math.inf), "the base is inf"),
    "attention factor nan": (
        "phi3",
        _key("phi3.rope.scaling.attn_factor", math.nan),
        "the attention factor is nan",
    ),
    "YaRN factor nan": ("qwen3", _key("qwen3.rope.scaling.factor", math.nan), "YaRN factor is nan"),
    "YaRN factor negative": (
        "qwen3",
        _key("qwen3.rope.scaling.factor", -4.0),
        "YaRN factor is -4.0",
    ),
    "YaRN factor inf": ("qwen3", _key("qwen3.rope.scaling.factor", math.inf), "YaRN factor is inf"),
    "rope_freqs zero": (
        "llama31",
        _tensor("rope_freqs.weight", 5, 0.0),
        "rope_freqs.weight is 0.0",
    ),
    "rope_freqs nan": (
        "llama31",
        _tensor("rope_freqs.weight", 0, math.nan),
        "rope_freqs.weight is nan",
    ),
    "long factors negative": (
        "phi3",
        _tensor("rope_factors_long.weight", 3, -1.0),
        "rope_factors_long.weight is -1.0",
    ),
    "log multiplier nan": (
        "deepseek3",
        _key("deepseek2.rope.scaling.yarn_log_multiplier", math.nan),
        "is nan: not a value a RoPE can use",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_NUMBERS))
def test_a_value_that_is_not_a_number_is_a_mismatch_never_a_match(tmp_path, case):
    name, edit, said = NOT_NUMBERS[case]
    path, config = _gguf_file(tmp_path, name, edit)
    report = sinpe.check_gguf(path, config)  # pytest turns any RuntimeWarning into an error
    assert report.verdict == "mismatch", report.reasons
    assert any(said in reason for reason in report.reasons), report.reasons
    result = run("check", path, config, "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    data = json.loads(result.stdout)
    assert data["verdict"] == "mismatch" and any(said in r["text"] for r in data["reasons"])
    text = run("check", path, config)
    assert text.returncode == 1 and "verdict: does not read as the config" in text.stdout


@pytest.mark.parametrize("ulps, verdict", [(8, "match"), (48, "mismatch")])
def test_the_parameter_bound_is_16_float32_ulps_and_not_64(tmp_path, ulps, verdict):
    """Llama-3's rope_freqs each off by ``ulps`` float32 ulps: within 16 read as the config,
    past them not (the converter's own files are within 2)."""

    def edit(kv, tensors):
        bits = tensors["rope_freqs.weight"].view(np.uint32)
        tensors["rope_freqs.weight"] = (bits + np.uint32(ulps)).view(np.float32)

    report = sinpe.check_gguf(*_gguf_file(tmp_path, "llama31", edit))
    assert report.verdict == verdict, report.reasons


@pytest.mark.parametrize("ulps, verdict", [(8, "match"), (48, "mismatch")])
def test_the_attention_factor_bound_is_16_float32_ulps(tmp_path, ulps, verdict):
    def edit(kv, tensors):
        factor = np.float32(kv["phi3.rope.scaling.attn_factor"])
        kv["phi3.rope.scaling.attn_factor"] = float(
            (factor.view(np.uint32) + np.uint32(ulps)).view(np.float32)
        )

    report = sinpe.check_gguf(*_gguf_file(tmp_path, "phi3", edit))
    assert report.verdict == verdict, report.reasons


def test_zero_frequencies_drift_as_the_others():
    """Gemma 4's proportional RoPE has pairs of frequency 0 (angle 0 at every position, exact
    in any precision): float32 angles on the others are still a drift, not a mismatch."""
    spec = sinpe.rope_config(CONFIGS_DIR / "gemma-4-e2b-it.json").layer("full_attention")
    inv_freq, factor = spec.frequencies()
    assert (inv_freq == 0).any()

    def read(positions):
        angle = positions.astype(np.float32)[:, None] * inv_freq.astype(np.float32)[None, :]
        return np.cos(angle).astype(np.float64) * factor, np.sin(angle).astype(np.float64) * factor

    n = 131072
    table = core.judge_computed(spec._one(), read, np.arange(spec.head_dim // 2), "float32", n)
    assert table.verdict.verdict == "drift", table.verdict


def test_a_float64_vllm_cache_is_read_in_float64():
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = sinpe.rope_config(PLAIN)
    layer = _vllm()
    layer.cos_sin_cache = torch.from_numpy(spec.rope_cache(4096, dtype="float64"))
    (report,) = audit_layer(layer, spec, ["l"])
    assert report.verdict == "match" and report.largest < 1e-15, report.line()


def test_a_gemma_3_config_without_its_pattern_has_the_class_default():
    """Gemma 3's published config gives no ``sliding_window_pattern`` (nor ``layer_types``):
    transformers' Gemma3TextConfig sets 6 (every sixth layer full), and so does the core, so
    every engine's layer is judged by its type's RoPE (it was "the config says no layer type")."""
    from sinpe._verdict.layers import LayerUnknown, layer_spec

    data = json.loads((CONFIGS_DIR / "gemma-3-4b-it.json").read_text())
    assert "sliding_window_pattern" not in json.dumps(data)
    spec = sinpe.rope_config(data)
    kinds = [layer_spec(spec, data, i) for i in range(12)]
    full, sliding = spec.layer("full_attention"), spec.layer("sliding_attention")
    assert kinds == [sliding] * 5 + [full] + [sliding] * 5 + [full]
    with pytest.raises(LayerUnknown):  # a family without a default still says it does not know
        other = {
            **data,
            "model_type": "x",
            "text_config": {**data["text_config"], "model_type": "x"},
        }
        layer_spec(spec, other, 0)


# --------------------------------------------------------------------------- explanations


def _explained(config: dict, **held):
    spec = sinpe.rope_config(config)
    found, largest = core.judge_parameters(spec, core.Held(**held), None)
    return [(f.code, f.text) for f in found], largest, spec


PLAIN = {"head_dim": 64, "rope_theta": 10000.0, "max_position_embeddings": 4096}
LLAMA3 = dict(
    PLAIN,
    rope_theta=500000.0,
    max_position_embeddings=131072,
    rope_scaling={
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
)


def test_frequencies_each_divided_alike_are_said_as_one_factor():
    """Every frequency divided by 2 (an engine's stray linear factor): one reason naming
    the factor, not a pair, and no other."""
    inv_freq = sinpe.rope_config(PLAIN).frequencies(None)[0]
    found, largest, _ = _explained(PLAIN, inv_freq=inv_freq / 2, base=10000.0)
    assert found == [("uniform_factor", "every frequency divided by 2.0")]
    assert largest == pytest.approx(0.5)


def test_a_base_read_from_the_frequencies_is_said_with_its_value():
    """No base held: it is read from pairs 0 and 1 (the frequencies of base 20000) and said,
    and nothing else is (every frequency is that base's)."""
    spec = sinpe.rope_config(PLAIN)
    other = 20000.0 ** (-np.arange(0, 64, 2) / 64)
    found, _, _ = _explained(PLAIN, inv_freq=other)
    assert [code for code, _ in found] == ["base"], found
    assert "20000" in found[0][1] and "10000" in found[0][1]
    assert spec.base == 10000.0


def test_scaling_not_applied_is_said_when_the_plain_frequencies_are_held():
    """Llama-3.1's config, an engine holding base 500000's plain frequencies: the scaling
    not applied, by name, and nothing else."""
    plain = 500000.0 ** (-np.arange(0, 64, 2) / 64)
    found, _, _ = _explained(LLAMA3, inv_freq=plain, base=500000.0)
    assert found == [("scaling_not_applied", "Llama-3 scaling not applied")]


def test_other_frequencies_are_said_with_the_worst_pair():
    """One pair 1% low (no base, no factor explains it): the largest relative difference
    and the pair it is at."""
    inv_freq = sinpe.rope_config(PLAIN).frequencies(None)[0].copy()
    inv_freq[5] *= 0.99
    found, largest, _ = _explained(PLAIN, inv_freq=inv_freq, base=10000.0)
    assert found == [
        ("frequencies", "frequencies differ from the config's by up to 0.01 (relative, pair 5)")
    ]
    assert largest == pytest.approx(0.01)


def test_a_verdict_s_json_holds_its_bound_and_worst_entry_by_name():
    """The JSON of a verdict: its bound with what it bounds, its worst entry by name, a
    number that does not exist as null (docs/rope.md lists these fields)."""
    from sinpe._verdict.verdict import DRIFT, Verdict

    judged = Verdict(DRIFT, (), 2.0**-21, kind="table", largest=float("nan"), worst=(7, 1e-6, 2e-6))
    data = judged.as_json()
    assert data["bound"] == {"value": 2.0**-21, "of": "table"}
    assert data["worst"] == {"position": 7, "error": 1e-6, "allowed": 2e-6}
    assert data["largest_error"] is None and data["verdict"] == "drift"
    none = Verdict(DRIFT).as_json()
    assert none["bound"] is None and none["worst"] is None
    json.dumps(data, allow_nan=False)


def test_an_engine_layer_s_log_line_says_its_layers_verdict_reasons_and_notes():
    """The log line of a layer's report, as the vLLM plugin and SGLang's line print it: the
    first layer and how many more, what was compared, the verdict's words and reason, the
    notes, and what exact mode did; an unchecked layer says "unchecked" and why."""
    from sinpe._verdict.verdict import finding, layer_line, mismatch, unchecked

    wrong = mismatch([finding("base", engine=10000.0, config=500000.0)])
    line = layer_line(["a.0", "a.1", "a.2"], ("Cls", "", "cache"), wrong, ("n1", "", "n2"), "left")
    assert line == (f"a.0 (+2 more) Cls cache: {wrong.text}: {wrong.reason} (n1; n2) [exact: left]")
    assert layer_line(["b"], "X", wrong) == f"b X: {wrong.text}: {wrong.reason}"
    odd = unchecked("unknown_class", engine="Odd")
    assert layer_line(["c"], "Odd", odd) == f"c Odd: unchecked: {odd.reason}"


# --------------------------------------------------------------------------- mutants
# Each test below was written for mutants of the core that survived the suite (mutmut 3.8.1,
# CONTRIBUTING.md's "Mutation testing"): the change named in its docstring passes every other
# test.


def test_bounded_takes_an_integer_within_its_range_and_names_it_otherwise():
    """(``least`` 0 -> 1, ``or`` -> ``and``, ``<=`` -> ``<`` at either end, the message.)"""
    assert core.bounded("rows", 0, 5) == 0 and core.bounded("rows", 5, 5) == 5
    assert type(core.bounded("rows", np.int64(3), 5)) is int
    for value, words in [
        (3.0, "rows is 3.0, not an integer"),
        (True, "rows is True, not an integer"),
        ("3", "rows is '3', not an integer"),
        (6, "rows 6 is outside 0 .. 5: no model has that"),
        (-1, "rows -1 is outside 0 .. 5: no model has that"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(words)}$"):
            core.bounded("rows", value, 5)


def test_relative_never_warns_and_calls_a_division_by_zero_infinite():
    """(``np.errstate`` dropped or given ``None``: the division warns, or raises where
    floating-point errors raise; ``initial`` dropped: nothing to compare raises.)"""
    with np.errstate(all="raise"):
        assert core.relative([0.0, 1.0], [0.0, 1.0]) == 0.0  # equal, zeros included
        assert core.relative([0.0, math.nan], [0.0, math.nan]) == math.inf
        assert core.relative([1.0], [0.0]) == math.inf
        assert core.relative([], []) == 0.0
    assert core.relative(3.0, 2.0) == 0.5 and core.relative([2.0, 1.0], [2.0, 2.0]) == 0.5


@pytest.mark.parametrize(
    "held, what, value",
    [
        ({"softmax_scale": math.nan}, "the softmax scale", "nan"),
        ({"inv_freq": np.array([1.0, 0.5, 0.0])}, "the inverse frequency of pair 2", "0.0"),
        ({"inv_freq": np.array([1.0, math.inf])}, "the inverse frequency of pair 1", "inf"),
        ({"inv_freq": np.array([1.0, -0.25])}, "the inverse frequency of pair 1", "-0.25"),
        ({"inv_freq": [1.0, 0.5, math.nan]}, "the inverse frequency of pair 2", "nan"),
    ],
)
def test_a_parameter_that_is_not_a_positive_number_is_named_with_its_value(held, what, value):
    """(Its name, its value, ``&`` -> ``|`` and ``> 0`` -> ``>= 0`` in the frequencies' test.)"""
    found, largest, _ = _explained(PLAIN, **held)
    assert found == [("not_a_number", f"{what} is {value}: not a value a RoPE can use")]
    assert largest is None


def test_every_reason_is_given_a_wrong_rotation_and_wrong_frequencies_both():
    """(The early return taken on any finding, ``found +=`` -> ``found =``: the rotation's
    reason, or the base's, was lost.)"""
    inv_freq = sinpe.rope_config({**PLAIN, "rope_theta": 5e5}).frequencies(None)[0]
    found, largest, _ = _explained(
        {**PLAIN, "model_type": "llama"}, rotation="pairs", inv_freq=inv_freq, base=5e5
    )
    assert [code for code, _ in found] == ["rotation", "base"], found
    assert largest > 0.1


def test_fitted_frequencies_are_judged_within_the_fit_tolerance_stored_ones_within_16_ulps():
    """(The fit's tolerance never used: frequencies fitted from float32 angles, 1e-5 off,
    were called a mismatch.) And no frequencies: no largest difference."""
    inv_freq = sinpe.rope_config(PLAIN).frequencies(None)[0] * (1 + 1e-5)
    fitted, largest, _ = _explained(PLAIN, inv_freq=inv_freq, fitted=True)
    assert fitted == [] and largest == pytest.approx(1e-5)
    stored, _, _ = _explained(PLAIN, inv_freq=inv_freq)
    assert stored and stored[0][0] != "not_a_number"
    assert _explained(PLAIN, width=64)[:2] == ([], None)


def test_a_table_verdict_says_what_its_bound_is_of_and_its_worst_entry_within_it():
    """(``kind`` "table" dropped from the verdict; the worst entry's allowance as the drift
    rate minus the match bound.)"""
    verdict = _judge(lambda p: _angles(p), 4096)
    data = verdict.as_json()
    assert verdict.verdict == "drift" and data["bound"]["of"] == "table"
    worst = data["worst"]
    assert 0 < worst["error"] <= worst["allowed"] and worst["allowed"] >= data["bound"]["value"]


def test_a_defect_in_the_first_block_of_rows_is_not_forgotten_by_the_next(monkeypatch):
    """(The tally's ``&=`` -> ``=``: a table read in several blocks was judged by its last.)
    Blocks of 8 rows here; a real audit reads at most 193 rows of up to 32,768 pairs in
    blocks of 2^20 entries, so a wide table spans several."""
    monkeypatch.setattr(core, "BLOCK_ENTRIES", 8 * 32)

    def read(positions, off=1e-3):
        cos, sin = _exact(positions)
        cos[positions < 8] += off  # only the first block
        return cos, sin

    assert _judge(read, 4096).verdict == "mismatch"
    assert _judge(lambda p: read(p, 2e-7), 4096, dtype="float64").verdict != "match"


def test_an_mrope_and_a_dynamic_table_are_judged_at_their_axes_and_length():
    """(``_exact`` without its text-run broadcast over M-RoPE's three axes, or without the
    current length: a dynamic table is exact only at its own length.)"""
    data = json.loads((CONFIGS_DIR / "qwen2-vl-2b-instruct-awq.json").read_text())
    spec = sinpe.rope_config(data)
    assert spec.n_axes == 3

    def text(positions):  # a text run: the same position on every axis
        return spec.rope_at(np.broadcast_to(positions, (3, len(positions))), layout="compact")

    table = core.judge_table(
        spec._one(), text, 4096, np.arange(spec.head_dim // 2), "float64", 4096
    )
    assert table.verdict.verdict == "match", table.verdict
    dynamic = sinpe.rope_config({**PLAIN, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}})
    at = 16384  # past the trained 4096: the base rescaled for this length

    def longer(positions):
        return dynamic.rope_at(positions, layout="compact", seq_len=at)

    h = dynamic.head_dim // 2
    judged = core.judge_table(dynamic._one(), longer, at, np.arange(h), "float64", at)
    assert judged.verdict.verdict == "match", judged.verdict
    trained = core.judge_table(dynamic._one(), longer, 4096, np.arange(h), "float64", 4096)
    assert trained.verdict.verdict == "mismatch"


def test_a_table_with_no_rows_is_never_a_match():
    """(The largest error of no rows taken as 0: an engine's empty cache was a "match".)"""
    torch = pytest.importorskip("torch")
    from sinpe.vllm import audit_layer

    spec = sinpe.rope_config(PLAIN)
    with pytest.raises(ValueError, match="the table's rows 0 is outside 1 .. "):
        core.judge_table(spec._one(), _exact, 0, np.arange(32), "float32", 1)
    layer = _vllm()
    layer.cos_sin_cache = torch.zeros(0, 64)
    with pytest.raises(ValueError, match="the cache's rows 0 is outside 1 .. "):
        audit_layer(layer, spec, ["l"])


def test_a_mismatched_table_names_its_worst_entry_and_keeps_its_bound():
    """(The reason's position, error or allowance taken from the wrong field; the mismatch
    verdict without its bound, its largest error or its kind.)"""
    verdict = _judge(lambda p: _angles(p, 5e5), 4096)
    assert verdict.verdict == "mismatch"
    position, error, allowed = verdict.worst
    (reason,) = verdict.findings
    assert reason.text == (
        f"at position {position:,} the error is {error:.3g}, where {allowed:.3g} is allowed"
    )
    assert error > allowed and verdict.largest >= error
    data = verdict.as_json()
    assert data["bound"] == {"value": 8 * 2.0**-24, "of": "table"}
    assert data["largest_error"] == verdict.largest > 0.1


def test_a_held_table_is_judged_whole_and_a_computed_one_at_the_core_s_positions():
    """(The core owns coverage: ``judge_table`` takes a row count, never positions, and
    reads every row once, a block at a time; ``judge_computed`` probes the core's own
    positions.) A table of 300,000 rows with one wrong row anywhere is a mismatch naming
    it; its verdict counts every entry, and its words say so."""
    spec = sinpe.rope_config({**PLAIN, "max_position_embeddings": 300_000})
    exact = spec.rope_at(np.arange(300_005), layout="compact", dtype=np.float32)
    asked = []

    def read(positions):
        asked.append(positions.copy())
        return exact[0][positions], exact[1][positions]

    table = core.judge_table(spec._one(), read, 300_000, np.arange(32), "float32", 300_005, 5)
    rows = np.concatenate(asked)
    assert np.array_equal(rows, np.arange(5, 300_005))  # every row, once, in order
    assert max(len(a) for a in asked) == core.BLOCK_ENTRIES // 32
    assert table.verdict.compared == table.verdict.held == 300_000 * 32 * 2
    assert "every entry within" in table.verdict.text
    assert table.verdict.as_json()["entries"] == {"compared": 19_200_000, "held": 19_200_000}
    assert np.array_equal(table.positions, np.arange(5, 300_005))
    for row in (2500, 123_457, 299_999):
        broken = [a.copy() for a in exact]
        broken[0][row, 7] += 0.25
        asked.clear()
        judged = core.judge_table(
            spec._one(), read_of(broken), 300_000, np.arange(32), "float32", 300_000
        )
        assert judged.verdict.verdict == "mismatch", row
        assert judged.verdict.worst[0] == row
    probed = core.probe_positions(300_000)
    assert np.array_equal(probed[:64], np.arange(64)) and probed[-1] == 300_000 - 1
    computed = core.judge_computed(spec._one(), read_of(exact), np.arange(32), "float32", 300_000)
    assert computed.verdict.compared == probed.size * 64 and computed.verdict.held is None
    assert computed.verdict.text.startswith(
        f"matches the exact table at float32 rounding (each of the {probed.size * 64:,} "
        "entries computed at the positions probed within"
    )
    assert "positions" not in inspect.signature(core.judge_table).parameters


def read_of(arrays):
    """``read(positions)`` of a table held as ``(cos, sin)`` arrays from position 0."""
    return lambda positions: (arrays[0][positions], arrays[1][positions])


def test_decades_group_the_errors_by_position_decade_in_order():
    """(``decades``: a last position on a decade's edge left out, its order, no rows.)"""
    found = core.decades(np.array([0, 10, 9, 100]), np.array([1.0, 2.0, 3.0, 4.0]))
    assert found == ((0, 9, 3.0), (10, 10, 2.0), (100, 100, 4.0))
    assert core.decades(np.array([], np.int64), np.array([])) == ()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_table_entry_that_is_not_a_number_is_named_without_a_floating_point_warning(value):
    """(``np.errstate`` around the table's errors dropped: an infinite entry warns, or raises
    where floating-point errors raise.)"""

    def read(positions):
        cos, sin = _exact(positions)
        cos[positions == 40, 3] = value
        return cos, sin

    with np.errstate(all="raise"):
        verdict = _judge(read, 4096)
    assert verdict.verdict == "mismatch"
    assert verdict.findings[0].text.startswith("the entry at position 40, column 3 is ")


# --------------------------------------------------------------------------- layers


def test_a_layer_is_placed_by_its_name():
    """(``layer_index``: its pattern, the group it reads, a name without a layer.)"""
    from sinpe._verdict.layers import layer_index

    assert layer_index("model.layers.3.self_attn.rotary_emb") == 3
    assert layer_index("/model/layers.12/attn/GroupQueryAttention") == 12
    assert layer_index("model.layers.7") == 7  # the name ends at the layer
    assert layer_index("model.rotary_emb") is None and layer_index("layers.x.rope") is None


def test_a_layers_type_comes_from_layer_types_then_the_pattern_then_the_family():
    """(``layer_types_of``, ``_pattern``, ``layer_spec``: the text config's keys, a pattern
    that is not a positive integer, the last layer, the reason's layer.)"""
    from sinpe._verdict.layers import LayerUnknown, layer_spec, layer_types_of

    data = json.loads((CONFIGS_DIR / "gemma-3-4b-it.json").read_text())
    spec = sinpe.rope_config(data)
    full, sliding = spec.layer("full_attention"), spec.layer("sliding_attention")
    text = dict(data["text_config"])
    types = ["sliding_attention", "full_attention"]
    assert layer_types_of({"layer_types": types}) == types
    assert layer_types_of({"text_config": {"layer_types": types}}) == types
    assert layer_types_of({"layer_types": "full_attention"}) is None
    assert layer_types_of({"text_config": {}}) is None and layer_types_of({}) is None
    nested = {"text_config": {**text, "layer_types": types}}
    assert [layer_spec(spec, nested, i) for i in (0, 1)] == [sliding, full]
    # past the end of layer_types, the pattern decides; a top-level pattern first
    for config in (
        {**data, "sliding_window_pattern": 2},
        {"text_config": {**text, "sliding_window_pattern": 2}},
    ):
        assert [layer_spec(spec, config, i) for i in range(4)] == [sliding, full] * 2
    assert layer_spec(spec, {"sliding_window_pattern": 1}, 0) == full  # every layer full
    for pattern in (0, -6, True, 2.0, None):  # not a pattern: the family's default, 6
        config = {"text_config": {**text, "sliding_window_pattern": pattern}}
        assert [layer_spec(spec, config, i) for i in (4, 5)] == [sliding, full], pattern
    with pytest.raises(LayerUnknown) as unknown:
        layer_spec(spec, {"model_type": "x", "layer_types": types}, 2)
    assert unknown.value.finding.code == "layer_of" and "layer 2" in str(unknown.value)
    assert str(unknown.value) == unknown.value.finding.text
    with pytest.raises(LayerUnknown, match="for a module outside the numbered layers"):
        layer_spec(spec, {"model_type": "x"}, None)


def test_an_explanation_and_a_log_line_say_each_part_once():
    """(``explanation``: its default offset, a part left out or joined otherwise;
    ``layer_line``: the count of other layers, a reason's colon; ``unchecked``: the kind of
    bound it claims, none.)"""
    from sinpe._verdict import verdict as words

    found = words.explanation(1e-3, layout="interleaved", offset=5, width=32, config_width=64)
    assert found.text == (
        "best explanation: layout interleaved, offset 5 (given 0), rotary width 32 (the "
        "config's is 64): leaves an error of 0.001"
    )
    assert words.explanation(2e-3, offset=7, given=3).text == (
        "best explanation: offset 7 (given 3): leaves an error of 0.002"
    )
    verdict = words.unchecked("unknown_class", engine="MyRotaryEmbedding")
    assert verdict.kind == "none" and verdict.as_json()["bound"] is None
    assert words.layer_line(["a", "b"], ("X", "cache"), verdict) == (
        "a (+1 more) X cache: unchecked: MyRotaryEmbedding is not a rotary class sinpe knows: "
        "not judged"
    )
    drift = _judge(lambda p: _angles(p), 4096)
    line = words.layer_line(["only"], "X", drift, ("a note",), "replaced")
    assert line == f"only X: {drift.text} (a note) [exact: replaced]"


def test_the_spacing_below_a_tables_largest_value():
    """(``ulp``: a power of two's spacing below it is half its own.)"""
    assert core.ulp("float32", 1.0) == 2.0**-24 and core.ulp("float64", 1.0) == 2.0**-53
    assert core.ulp("float32", 2.0) == 2.0**-23 and core.ulp("float32", 1.5) == 2.0**-23
    assert core.ulp("float16", 1.2079441541679836) == 2.0**-10


def test_a_base_is_said_to_its_digits_a_fitted_one_to_five():
    """(``explain_frequencies``: an unfitted base rounded as a fitted one is; one frequency
    alone, whose base cannot be fitted.)"""
    inv_freq = sinpe.rope_config({**PLAIN, "rope_theta": 123456.7}).frequencies(None)[0]
    found, _, _ = _explained(PLAIN, inv_freq=inv_freq)
    assert found[0] == ("base", "base 123457 where the config gives 10000.0"), found
    fitted, _, _ = _explained(PLAIN, inv_freq=inv_freq.astype(np.float32), fitted=True)
    assert fitted[0] == ("base", "base 123460.0 where the config gives 10000.0"), fitted
    one = {**PLAIN, "head_dim": 2}
    found, largest, _ = _explained(one, inv_freq=np.array([0.5]))
    assert found and largest == pytest.approx(0.5) and found[0][0] != "base"


def test_one_engine_module_serving_layers_of_two_types_is_judged_per_type():
    """(``specs_of``, whose tests were the vLLM leg's: the names grouped by the spec each
    layer is judged by, in order.)"""
    from sinpe._verdict.layers import specs_of

    data = json.loads((CONFIGS_DIR / "gemma-3-4b-it.json").read_text())
    spec = sinpe.rope_config(data)
    names = [f"model.layers.{i}.self_attn.rotary_emb" for i in (0, 5, 6, 11)]
    groups = specs_of(spec, data, names)
    assert groups == {
        spec.layer("sliding_attention"): [names[0], names[2]],
        spec.layer("full_attention"): [names[1], names[3]],
    }
    assert list(groups) == [spec.layer("sliding_attention"), spec.layer("full_attention")]


def test_words_without_a_title_and_json_with_its_options():
    """(``finding``/``evidence``: the empty default title; ``explained`` with no reasons;
    ``worst_text`` of a verdict without a worst entry; ``dumps``: its options passed on, an
    array's values each made strict; ``frequencies_text`` of no comparison.)"""
    from sinpe._verdict import verdict as words

    assert words.finding("attention_factor", engine="1.2", config="1.0", detail="").text == (
        "attention factor 1.2 where the config gives 1.0"
    )
    assert words.evidence("no_scaling_type", config=8) == (
        "no rope.scaling.type where the config gives x8"
    )
    wrong = words.mismatch([words.finding("base", engine="5e5", config="1e4")])
    assert words.explained(wrong, []) is wrong and wrong.findings
    assert words.worst_text(words.unchecked("no_cache")) == ""
    assert (
        words.dumps({"a": np.array([1.0, math.nan])}, indent=1)
        == '{\n "a": [\n  1.0,\n  null\n ]\n}'
    )
    assert core.frequencies_text(None) == (
        "not compared (the widths differ, or a value is not a number)"
    )


@pytest.mark.parametrize("factor", [1.0, 1.2])
def test_a_fit_reads_the_frequencies_and_the_factor_off_a_tables_rows(factor):
    """(``fit``: the rows it needs, a table without sin or with a value that is not a
    number, the factor of 1 itself, which rows the angles come from.)"""
    spec = sinpe.rope_config(PLAIN)
    inv_freq, _ = spec.frequencies(None)

    def read(positions, broken=False):
        cos, sin = _exact(positions)
        if broken:
            sin[-1, 5] = math.nan
        return cos * factor, sin * factor

    held = core.fit(read, 4096)
    assert held.fitted and held.attention_factor == pytest.approx(factor, rel=1e-12)
    assert core.relative(held.inv_freq, inv_freq) < 1e-9
    assert core.fit(read, 2).inv_freq.shape == (32,)  # positions 0 and 1 suffice
    assert core.fit(read, 1) is None
    assert core.fit(lambda p: (read(p)[0], None), 4096) is None
    assert core.fit(lambda p: read(p, broken=True), 4096) is None


# --------------------------------------------------------------------------- unturned pairs


def test_equal_values_differ_by_nothing_zeros_included():
    """A frequency of 0 held as 0 (proportional RoPE's unrotated pairs) is no difference;
    anything else against 0, or not a number, is an infinite one."""
    assert core.relative([0.0, 1.0], [0.0, 1.0]) == 0.0
    assert core.relative([1e-300], [0.0]) == math.inf
    assert core.relative([math.nan], [math.nan]) == math.inf
    assert core.relative([1.0 + 2**-40], [1.0]) == 2**-40


def test_a_pair_the_config_leaves_unrotated_may_turn_below_float32_rounding():
    """llama.cpp writes Gemma 4's unrotated pairs as factors of 1e30: they turn by less than
    2**-24 up to the length judged, so cos rounds to 1 and sin stays below float32's rounding
    of 1; they count as 0. One that turns more, or a length not known, is a difference."""
    want = np.array([0.5, 0.0])
    length = 2**20 + 1
    edge = 2.0**-24 / (length - 1)
    assert core._unturned([0.5, edge], want, length).tolist() == [0.5, 0.0]
    assert core._unturned([0.5, 2 * edge], want, length).tolist() == [0.5, 2 * edge]
    assert core._unturned([0.5, edge], want, None).tolist() == [0.5, edge]
    assert core._unturned([0.25, edge], [0.25, 1.0], length).tolist() == [0.25, edge]
    spec = sinpe.rope_config(CONFIGS_DIR / "gemma-4-e2b-it.json").layer("full_attention")
    w, _ = spec.frequencies()
    assert (w == 0).sum() == 192
    held = core.Held(inv_freq=np.where(w == 0, np.float64(np.float32(0.5)) / 1e30, w))
    assert core.judge_parameters(spec, held, 131072) == ([], 0.0)
    found, largest = core.judge_parameters(
        spec, held._replace(inv_freq=np.where(w == 0, 1e-9, w)), 131072
    )
    assert largest == math.inf and [f.code for f in found] == ["frequencies"]
    assert "pair 64" in found[0].text  # the first pair left unrotated
    # held at 0 exactly, as the config: a value a RoPE can use there, and nowhere else
    assert core.judge_parameters(spec, held._replace(inv_freq=w), 131072) == ([], 0.0)
    found, _ = core.judge_parameters(spec, held._replace(inv_freq=np.where(w == w[0], 0.0, w)), 1)
    assert [f.code for f in found] == ["not_a_number"] and "pair 0 is 0.0" in found[0].text


def test_the_frequencies_explanation_at_its_edges():
    """(``explain_frequencies``, from the core's mutation run at 83b6547: a fitted base is
    compared at the fit's tolerance, so a base of many digits fitted to five is not "another
    base"; a base the engine states is the one said; two pairs are enough to fit a base;
    pairs that do not fall give no base; a pair held at 0 beside it, where the config has 0
    too, warns nothing.)"""
    odd = {**LLAMA3, "rope_theta": 123456.7}
    plain = sinpe.rope_config({**PLAIN, "rope_theta": 123456.7}).frequencies(None)[0]
    found, _, _ = _explained(odd, inv_freq=plain.astype(np.float32), fitted=True)
    assert found == [("scaling_not_applied", "Llama-3 scaling not applied")], found
    found, _, _ = _explained(PLAIN, inv_freq=np.array([0.5]), base=20000.0)
    assert found[0] == ("base", "base 20000.0 where the config gives 10000.0"), found
    two = {**PLAIN, "head_dim": 4}
    wide = sinpe.rope_config({**two, "rope_theta": 20000.0}).frequencies(None)[0]
    found, _, _ = _explained(two, inv_freq=wide)
    assert found == [("base", "base 20000.0 where the config gives 10000.0")], found
    found, _, _ = _explained(PLAIN, inv_freq=np.full(32, 0.5))
    assert [code for code, _ in found] == ["frequencies"], found
    spec = sinpe.rope_config(CONFIGS_DIR / "gemma-4-e2b-it.json").layer("full_attention")
    w, _ = spec.frequencies()
    found, _ = core.judge_parameters(spec, core.Held(inv_freq=w / 2), 131072)  # warns nothing
    assert [f.text for f in found] == ["every frequency divided by 2.0"], found


def test_a_verdicts_json_carries_every_documented_field():
    """(``Verdict.as_json``: the fields docs/rope.md names, with the verdict's own values,
    the decades each as ``first``/``last``/``error``; a mismatch's worst entry as
    ``position``/``error``/``allowed``.)"""
    drift = _judge(lambda p: _angles(p), 4096)
    data = drift.as_json()
    assert set(data) == {"verdict", "verdict_text", "bound", "reasons", "largest_error",
                         "decades", "worst", "drift", "dtype", "entries"}  # fmt: skip
    assert (data["verdict"], data["verdict_text"], data["drift"]) == (
        "drift",
        drift.text,
        "float32",
    )
    assert data["decades"] == [{"first": a, "last": b, "error": e} for a, b, e in drift.decades]
    assert data["largest_error"] == drift.largest and data["dtype"] == "float32"
    for name in ("verdict_text", "decades", "largest_error"):
        assert f"`{name}`" in (Path(__file__).parents[1] / "docs" / "rope.md").read_text()

    def read(positions):
        cos, sin = _exact(positions)
        return cos + 1e-6, sin

    off = _judge(read, 4096).as_json()
    assert off["verdict"] == "mismatch" and off["worst"]["position"] == 0, off
    assert set(off["worst"]) == {"position", "error", "allowed"}


def test_float32_frequencies_of_the_right_base_are_not_another_base():
    """(``explain_frequencies``: a base worked out from two float32 pairs carries their
    rounding times the width / 2, so it is compared within that.) A traced inv_freq in
    float32 at the config's base, without Llama-3's scaling: the scaling is the reason, not
    "base 9999.98"; at twice the base, both."""
    config = {**PLAIN, "head_dim": 128, "rope_scaling": LLAMA3["rope_scaling"]}
    for theta, want in [
        (1e4, [("scaling_not_applied", "Llama-3 scaling not applied")]),
        (2e4, [("base", "base 20000 where the config gives 10000.0"),
               ("scaling_not_applied", "Llama-3 scaling not applied")]),
    ]:  # fmt: skip
        plain = sinpe.rope_config({**PLAIN, "head_dim": 128, "rope_theta": theta})
        single = plain.frequencies(None)[0].astype(np.float32).astype(np.float64)
        found, _, _ = _explained(config, inv_freq=single)
        assert found == want, found


def test_the_core_s_fields_where_its_mutation_run_found_them_unasked():
    """(From the core's mutation run at 83b6547.) A finding's engine and config values kept
    as they are (None, a float, a NumPy integer as its digits); a dynamic-NTK table judged
    against the exact table at the length asked; a mismatch, NaN or not, keeping its dtype
    and decades; an all-zero cache fitted with no attention factor."""
    from sinpe._verdict import verdict as words

    assert words.finding("no_cache").engine is None
    assert words.finding("no_cache").as_json()["config"] is None
    assert words.finding("rotary_width", engine=np.int64(64), config=32).engine == "64"

    def off(positions):
        cos, sin = _exact(positions)
        return cos + 1e-6, sin

    table = _judge(off, 4096)
    ((code, engine),) = [(f.code, f.engine) for f in table.findings]
    assert code == "table" and engine == table.worst[1] and isinstance(engine, float)
    assert table.dtype == "float32" and table.decades[-1][1] == 4095

    def nan(positions):
        cos, sin = _exact(positions)
        cos[positions == 7, 3] = np.nan
        return cos, sin

    broken = _judge(nan, 4096)
    assert broken.findings[0].code == "not_a_number"
    assert broken.dtype == "float32" and broken.decades and broken.decades[-1][1] == 4095
    dynamic = {**PLAIN, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}
    spec = sinpe.rope_config({**dynamic, "max_position_embeddings": 4096})
    exact = spec.rope_at(np.arange(16384), layout="compact", seq_len=16384)

    def read(positions):
        return exact[0][positions], exact[1][positions]

    verdict = core.judge_table(spec._one(), read, 4096, np.arange(32), "float64", 16384)
    assert verdict.verdict.verdict == "match", verdict.verdict
    held = core.fit(lambda p: (np.zeros((len(p), 32)), np.zeros((len(p), 32))), 4096)
    assert held is not None and held.attention_factor is None
    yarn = {**PLAIN, "max_position_embeddings": 32768}
    yarn["rope_scaling"] = {
        "rope_type": "yarn",
        "factor": 8.0,
        "original_max_position_embeddings": 4096,
    }
    fitted = sinpe.rope_config({**yarn, "rope_theta": 5e5}).frequencies(None)[0]
    found, _, _ = _explained(yarn, inv_freq=fitted.astype(np.float32), fitted=True)
    assert [code for code, _ in found] == ["base", "frequencies"], found  # the base and by how much
