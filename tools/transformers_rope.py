"""transformers' rotary modules, enumerated: what each does with its own configuration class's
defaults, and how sinpe compares. One harness for the data file the ordinary suite reads and
for the torch leg's live tests (``tests/test_transformers_rope.py``), which import it.

Run by hand in a throwaway virtual environment per release (transformers is never a
dependency), once for each of ``VERSIONS``, the family defaults from the newest; this is the
one step for every new release (add it to ``VERSIONS``, write its data file, then the
defaults, and read the diff):

    python3.11 -m venv /tmp/tf && /tmp/tf/bin/pip install transformers==5.24.0 torch==2.13.0
    /tmp/tf/bin/pip install .      # sinpe, for --published
    /tmp/tf/bin/python tools/transformers_rope.py --write tests/data/transformers_rope_5.24.0.json
    # the same with transformers==5.25.0 (--no-deps: its `kernels` pin is not on PyPI, and
    # nothing on the CPU imports it), then also:
    /tmp/tf/bin/python tools/transformers_rope.py --write tests/data/transformers_rope_5.25.0.json \
        --defaults src/sinpe/_rope/family_defaults.py
    /tmp/tf/bin/python tools/transformers_rope.py --published tests/data/configs/*.json

Every class named ``...RotaryEmbedding`` defined in a ``transformers.models.*.modeling_*``
module is listed (a class several modules import is listed once, where it is defined). Its
configuration class is the one its ``__init__`` annotates, built with no arguments; the
module is built from it, its ``inv_freq`` buffers (``<layer_type>_inv_freq`` per layer type)
and attention factors read, and a probe ``forward`` at a few positions tells its output's
layout: ``half`` (``cat(freqs, freqs)``), ``interleaved`` (``repeat_interleave``),
``compact`` (the frequencies once), ``complex`` (``freqs_cis``), and whether every value is
``attention_scaling * cos(p * inv_freq)`` (sin likewise) in that layout ("standard") or
something else (its largest difference from that, at float32 precision).
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import inspect
import json
import math
import pkgutil
import sys
import warnings

import numpy as np

# The transformers releases enumerated, oldest first: one data file each
# (tests/data/transformers_rope_<version>.json); the family defaults module is the newest's,
# and rope_config follows the newest where two releases read a config differently.
VERSIONS = ("5.24.0", "5.25.0")
NEWEST = VERSIONS[-1]
# keys of a config's to_dict() that nothing RoPE-related reads (kept out of the data file)
_DROPPED = {
    "id2label",
    "label2id",
    "architectures",
    "auto_map",
    "transformers_version",
    "_name_or_path",
    "quantization_config",
    "task_specific_params",
    "torch_dtype",
    "dtype",
}
_SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "thinker_config", "talker_config")


# --------------------------------------------------------------------------- enumeration


def rotary_classes():
    """``(module name, class name, class)`` of every rotary-embedding class transformers
    defines, sorted by module and name."""
    import transformers.models as models

    found = []
    for info in pkgutil.iter_modules(models.__path__):
        name = f"transformers.models.{info.name}.modeling_{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception:  # a model whose optional dependencies are absent, or no modeling file
            continue
        for attribute, value in vars(module).items():
            if (
                attribute.endswith(("RotaryEmbedding", "RopePositionEmbedding"))
                and inspect.isclass(value)
                and value.__module__ == module.__name__
            ):
                found.append((module.__name__, attribute, value))
    return sorted(found, key=lambda item: (item[0], item[1]))


def forward_arguments(cls) -> list:
    return list(inspect.signature(cls.forward).parameters)[1:]


def takes_position_ids(cls) -> bool:
    """``forward(x, position_ids[, layer_type])``: the modules patch() may replace."""
    arguments = forward_arguments(cls)
    return arguments[:2] == ["x", "position_ids"] and arguments[2:] in ([], ["layer_type"])


def is_vision(class_name: str, config) -> bool:
    model_type = getattr(config, "model_type", "") or ""
    return any(word in class_name for word in ("Vision", "Visual", "ViT")) or "vision" in model_type


def config_class(module_name: str, cls):
    """The configuration class ``cls.__init__`` annotates, from the model's package."""
    parameter = inspect.signature(cls.__init__).parameters.get("config")
    annotation = getattr(parameter, "annotation", inspect.Parameter.empty)
    if annotation is inspect.Parameter.empty:
        return None
    if not isinstance(annotation, str):
        return annotation
    package = module_name.rsplit(".", 1)[0]
    short = package.rsplit(".", 1)[1]
    for candidate in (f"{package}.configuration_{short}", module_name):
        try:
            found = getattr(importlib.import_module(candidate), annotation.split("|")[0].strip())
        except (ImportError, AttributeError):
            continue
        return found
    return None


def json_safe(value):
    """``value`` as JSON data (numbers, strings, lists, dicts, None), or a ValueError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("not finite")
        return value
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    raise ValueError(type(value).__name__)


def config_data(config) -> dict:
    """The config's to_dict(), without what nothing RoPE-related reads (vision and audio
    sub-configs of a text model included)."""
    data = {}
    for key, value in config.to_dict().items():
        if key in _DROPPED or (key in _SUB_CONFIGS and key != "text_config"):
            continue
        try:
            data[key] = json_safe(value)
        except ValueError:
            continue
    if isinstance(data.get("text_config"), dict):
        data["text_config"] = {
            k: v
            for k, v in data["text_config"].items()
            if k not in _DROPPED and k not in _SUB_CONFIGS
        }
    return data


# --------------------------------------------------------------------------- probing

# Positions per position axis for a probe: the text axis first; further axes (M-RoPE's
# height and width, a vision grid's) other values, so that each column's axis shows.
PROBE_AXES = [
    [0, 1, 2, 3, 17, 100, 1000, 4093],
    [5, 9, 40, 7, 11, 3, 2000, 60],
    [13, 4, 29, 61, 3, 50, 777, 1],
]


def _buffers(module) -> dict:
    """``{layer type or None: (inv_freq float64, attention factor, rope_type)}``."""
    import torch

    layers = {}
    for name, buffer in module.named_buffers(recurse=False):
        if name == "inv_freq":
            key = None
        elif name.endswith("_inv_freq") and "original" not in name and "long" not in name:
            key = name[: -len("_inv_freq")]
        else:
            continue
        prefix = "" if key is None else f"{key}_"
        factor = getattr(module, f"{prefix}attention_scaling", None)
        rope_type = getattr(module, "rope_type", None)
        if isinstance(rope_type, dict):
            rope_type = rope_type.get(key)
        w = buffer.detach().to(torch.float64).cpu().numpy().reshape(-1)
        layers[key] = (w, None if factor is None else float(factor), rope_type)
    return layers


def _mrope_sections(module, config, layer_type=None):
    sections = getattr(module, "mrope_section", None)
    if isinstance(sections, dict):
        sections = sections.get(layer_type)
    if sections is None:
        parameters = getattr(config, "rope_parameters", None) or {}
        if isinstance(parameters, dict) and layer_type in parameters:
            parameters = parameters[layer_type] or {}
        if isinstance(parameters, dict):
            sections = parameters.get("mrope_section")
    return None if sections is None else list(sections)


def probe_ids(n_axes: int, vision: bool):
    """Position ids for a probe: ``(1, S)`` for text, ``(n_axes, 1, S)`` for M-RoPE, and
    ``(S, 2)`` for a vision grid (height, width)."""
    import torch

    if vision:
        return torch.tensor(PROBE_AXES[:2], dtype=torch.long).T.contiguous()
    if n_axes == 1:
        return torch.tensor(PROBE_AXES[:1], dtype=torch.long)
    return torch.tensor(PROBE_AXES[:n_axes], dtype=torch.long)[:, None, :]


def run_forward(module, ids, layer_type=None, dtype=None):
    """The module's forward on a copy (dynamic and longrope modules change their state)."""
    import torch

    module = copy.deepcopy(module)
    length = ids.shape[0] if ids.ndim == 2 and ids.shape[-1] == 2 else ids.shape[-1]
    x = torch.zeros(1, 1, length, 8, dtype=dtype or torch.float32)
    with torch.no_grad():
        if layer_type is None:
            return module(x, ids)
        return module(x, ids, layer_type)


def _planes(output):
    """``(cos, sin)`` float64 arrays ``(S, width)`` of a forward's output, its kind."""
    import torch

    if isinstance(output, torch.Tensor) and output.is_complex():
        cos, sin = output.real, output.imag
        kind = "complex"
    elif isinstance(output, (tuple, list)) and len(output) == 2:
        cos, sin = output
        kind = "real"
    else:
        return None, None, f"returns {type(output).__name__}"
    cos = cos.detach().to(torch.float64).cpu().numpy()
    sin = sin.detach().to(torch.float64).cpu().numpy()
    if cos.shape != sin.shape or cos.ndim < 2:
        return None, None, f"cos {list(cos.shape)}, sin {list(sin.shape)}"
    return cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1]), kind


def column_map(output, w: np.ndarray, factor: float, n_axes: int, n_positions: int):
    """What a forward's output holds, read off its values: ``{"layout", "width", "columns"
    (per compact column: [frequency index, position axis]), "error"}``; the layout is
    ``half`` (the compact columns twice), ``interleaved`` (each twice in place),
    ``compact`` or ``complex``; ``error`` is the largest difference from ``factor *
    cos(p * w[i])`` (sin likewise) at the column's own axis positions."""
    cos, sin, kind = _planes(output)
    if cos is None:
        return {"layout": "unknown", "why": kind}
    rows = cos.shape[0]
    if rows % n_positions or (rows != n_positions and rows != n_positions * n_axes):
        return {"layout": "unknown", "why": f"{rows} rows for {n_positions} positions"}
    cos, sin = cos[:n_positions], sin[:n_positions]  # the first batch row
    width = cos.shape[1]
    layout, compact_cos, compact_sin = "compact", cos, sin
    if kind == "complex":
        layout = "complex"
    elif width % 2 == 0:
        half = width // 2
        if np.array_equal(cos[:, :half], cos[:, half:]) and np.array_equal(
            sin[:, :half], sin[:, half:]
        ):
            layout, compact_cos, compact_sin = "half", cos[:, :half], sin[:, :half]
        elif np.array_equal(cos[:, 0::2], cos[:, 1::2]) and np.array_equal(
            sin[:, 0::2], sin[:, 1::2]
        ):
            layout, compact_cos, compact_sin = "interleaved", cos[:, 0::2], sin[:, 0::2]
    positions = np.array(PROBE_AXES[:n_axes], dtype=np.float64)[:, :n_positions]  # (axes, S)
    # every (frequency, axis) candidate's values: (axes, S, h)
    want_cos = factor * np.cos(positions[:, :, None] * w[None, None, :])
    want_sin = factor * np.sin(positions[:, :, None] * w[None, None, :])
    columns, error = [], 0.0
    for j in range(compact_cos.shape[1]):
        diff = np.maximum(
            np.abs(want_cos - compact_cos[None, :, j : j + 1]).max(axis=1),
            np.abs(want_sin - compact_sin[None, :, j : j + 1]).max(axis=1),
        )  # (axes, h)
        axis, index = np.unravel_index(int(np.argmin(diff)), diff.shape)
        if j < w.shape[0] and diff[:, j].min() <= diff[axis, index]:  # ties: the identity
            axis, index = int(np.argmin(diff[:, j])), j
        columns.append([int(index), int(axis)])
        error = max(error, float(diff[axis, index]))
    return {"layout": layout, "width": width, "columns": columns, "error": error}


def float32_tolerance(w: np.ndarray, positions, factor: float = 1.0) -> float:
    """The float32 angle error of transformers' own forward: 2**-21 (1 + p max w) times the
    attention factor, the bound patch() verifies against."""
    largest = float(np.abs(w).max(initial=0.0))
    return 2.0**-21 * (1.0 + max(positions) * largest) * max(1.0, factor)


def probe(module, config, layer_type, w, factor, vision):
    """The column map of a module's forward at its probe positions, and whether it is
    standard (every column within float32 precision of its frequency at its axis)."""
    sections = _mrope_sections(module, config, layer_type)
    n_axes = 2 if vision else (len(sections) if sections else 1)
    ids = probe_ids(n_axes, vision)
    try:
        output = run_forward(module, ids, layer_type)
    except Exception as exc:
        return {"layout": "unknown", "why": f"forward fails: {_why(exc)}"}
    found = column_map(output, w, factor, n_axes, len(PROBE_AXES[0]))
    if "error" in found:
        tolerance = float32_tolerance(w, [p for axis in PROBE_AXES for p in axis], factor)
        found["standard"] = found["error"] <= tolerance
        if all(c == [j, 0] for j, c in enumerate(found["columns"])):
            found["columns"] = None  # frequency j at column j, one axis: the common case
    found["sections"] = sections
    found["dtype"] = _output_dtype(module, ids, layer_type)
    return found


def _output_dtype(module, ids, layer_type) -> str | None:
    """What the forward returns for bfloat16 ``x``: ``"x"`` (x's dtype) or a dtype name."""
    import torch

    try:
        output = run_forward(module, ids, layer_type, dtype=torch.bfloat16)
    except Exception:
        return None
    tensor = output if isinstance(output, torch.Tensor) else output[0]
    return "x" if tensor.dtype == torch.bfloat16 else str(tensor.dtype).rpartition(".")[2]


def _pack(values) -> str:
    """float32 values as base64 (4 bytes each, little-endian)."""
    import base64

    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def unpack(text: str) -> np.ndarray:
    """The float64 values of ``_pack``'s float32 ones."""
    import base64

    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float64)


def _why(exc: Exception) -> str:
    """An exception as a stable line: its type and message, sets of names in it sorted (their
    order follows the hash seed)."""
    import re

    text = re.sub(
        r"\{([^{}]*)\}",
        lambda m: "{" + ", ".join(sorted(p.strip() for p in m.group(1).split(","))) + "}",
        str(exc),
    )
    return f"{type(exc).__name__}: {text}"[:300]


def probe_module(cls, config, vision) -> dict:
    """``{"layers": {layer type or "": {...}}}`` of a class built from ``config``, or a
    ``{"status": why}``."""
    import torch

    try:
        with torch.device("cpu"):
            module = cls(config)
    except Exception as exc:
        return {"status": f"module fails: {_why(exc)}"}
    buffers = _buffers(module)
    if not buffers:
        return {"status": "no inv_freq buffer"}
    layers = {}
    for layer_type, (w, factor, rope_type) in sorted(buffers.items(), key=lambda kv: kv[0] or ""):
        layer = {"rope_type": rope_type, "inv_freq": _pack(w), "attention_factor": factor}
        layer.update(probe(module, config, layer_type, w, factor or 1.0, vision))
        layers[layer_type or ""] = layer
    return {"status": "ok", "layers": layers}


# Each class is built from its configuration class's defaults and from these changes to them,
# so that a rule is checked and not only a default: partial_rotary_factor (does the default
# RoPE apply it?), a scaled type (every scaled type does, with transformers' head_dim rule),
# yarn (the original length copied, the attention factor), and a legacy rope_scaling mapping
# (where a per-layer config puts it).
def variants(config):
    """``{name: kwargs}`` for ``type(config)(**kwargs)``."""
    parameters = getattr(config, "rope_parameters", None) or {}
    labels = getattr(config, "_rope_type_labels", None) or getattr(config, "layer_types", None)
    nested = [key for key in parameters if labels and key in labels]

    def mapping(**scaling):
        if not nested:
            theta = parameters.get("rope_theta") if isinstance(parameters, dict) else None
            return {"rope_parameters": {**({"rope_theta": theta} if theta else {}), **scaling}}
        return {
            "rope_parameters": {
                key: (
                    None
                    if parameters[key] is None
                    else {"rope_theta": parameters[key].get("rope_theta"), **scaling}
                )
                for key in nested
            }
        }

    return {
        "defaults": {},
        "partial": {"partial_rotary_factor": 0.5},
        "linear": mapping(rope_type="linear", factor=2.0),
        "linear_partial": {**mapping(rope_type="linear", factor=2.0), "partial_rotary_factor": 0.5},
        "yarn": mapping(rope_type="yarn", factor=4.0),
        "legacy_linear": {"rope_scaling": {"rope_type": "linear", "factor": 3.0}},
    }


def configs_within(config) -> list:
    """The config, then its sub-configs breadth first, each level's ``text_config`` first
    (a composite's text model; a thinker's text_config inside thinker_config, as Qwen2.5-Omni
    nests it)."""
    found, queue = [], [config]
    while queue:
        current = queue.pop(0)
        found.append(current)
        keys = sorted(
            getattr(current, "sub_configs", None) or {}, key=lambda k: (k != "text_config", k)
        )
        for key in keys:
            sub = getattr(current, key, None)
            if hasattr(sub, "to_dict") and all(sub is not f for f in found + queue):
                queue.append(sub)
    return found


def candidate_configs(config) -> list:
    """The configs a rotary class is tried on, in order: ``config``, then a text model's
    config (model_type ``*_text``) among its sub-configs, then the others
    (:func:`configs_within`): where several build the module (Qwen2.5-Omni's thinker and
    talker), the text model's is the one recorded."""
    candidates = configs_within(config)
    texts = [c for c in candidates[1:] if str(getattr(c, "model_type", "")).endswith("_text")]
    return [candidates[0], *texts, *(c for c in candidates[1:] if all(c is not t for t in texts))]


def record(module_name: str, class_name: str, cls) -> dict:
    """What one rotary class does with its configuration class's defaults and variants."""
    import torch  # noqa: F401  (transformers' modules need it)

    entry = {"class": class_name, "module": module_name, "forward": forward_arguments(cls)}
    config_cls = config_class(module_name, cls)
    if config_cls is None:
        entry["status"] = "no configuration class annotated"
        return entry
    entry["config_class"] = config_cls.__name__
    try:
        config = config_cls()
    except Exception as exc:
        entry["status"] = f"config class fails with no arguments: {_why(exc)}"
        return entry
    if not takes_position_ids(cls):
        entry["status"] = "forward does not take (x, position_ids[, layer_type])"
        entry["model_type"] = getattr(config, "model_type", None)
        return entry
    # the annotated class, else a sub-config of it (a composite's text_config; a thinker's
    # text_config inside thinker_config, as Qwen2.5-Omni nests it)
    candidates = candidate_configs(config)
    found = None
    for candidate in candidates:
        found = probe_module(cls, candidate, is_vision(class_name, candidate))
        if found["status"] == "ok":
            config = candidate
            break
    entry["model_type"] = getattr(config, "model_type", None)
    entry["config_class"] = type(config).__name__
    # the class of its own model_type (not another package's rotary module on that config)
    entry["primary"] = type(config).__module__.rsplit(".", 1)[0] == module_name.rsplit(".", 1)[0]
    entry["vision"] = is_vision(class_name, config)
    entry["text_config"] = config is not candidates[0]
    try:
        entry["config"] = config_data(config)
    except Exception as exc:
        entry["status"] = f"to_dict fails: {_why(exc)}"
        return entry
    if found["status"] != "ok":
        entry["status"] = f"module fails on the defaults: {found['status']}"[:300]
        return entry
    failing = [
        layer["why"]
        for layer in found["layers"].values()
        if str(layer.get("why", "")).startswith("forward fails")
    ]
    if failing:
        entry["status"] = f"module's forward fails on the defaults: {failing[0]}"[:300]
        return entry
    entry["status"] = "ok"
    entry["variants"] = {"defaults": {"kwargs": {}, **found}}
    if entry["vision"]:
        return entry
    for name, kwargs in variants(config).items():
        if name == "defaults":
            continue
        try:
            # a copy: config classes update the dicts they are given in place
            changed = type(config)(**copy.deepcopy({**_init_kwargs(config), **kwargs}))
        except Exception as exc:
            entry["variants"][name] = {"kwargs": kwargs, "status": f"config fails: {_why(exc)}"}
            continue
        result = probe_module(cls, changed, False)
        before = entry["config"]
        after = config_data(changed)
        result["round_trip"] = _round_trips(cls, changed, result)
        result["changes"] = {k: v for k, v in after.items() if before.get(k) != v}
        result["removed"] = sorted(k for k in before if k not in after)
        result["kwargs"] = json_safe(kwargs)
        entry["variants"][name] = result
    return entry


def _round_trips(cls, config, result) -> bool:
    """Whether transformers, reloading the config's own to_dict(), builds the same module (it
    does not always: Mistral4 built with rope_scaling loses its partial factor, and regains it
    on reload)."""
    if result.get("status") != "ok":
        return True
    try:
        again = probe_module(cls, type(config).from_dict(config.to_dict()), False)
    except Exception:
        return False
    if again.get("status") != "ok":
        return False
    first, second = result["layers"], again["layers"]
    return first.keys() == second.keys() and all(
        first[k]["inv_freq"] == second[k]["inv_freq"] for k in first
    )


def _init_kwargs(config) -> dict:
    """The kwargs a sub-config was built with, where its class needs some (none here)."""
    return {}


def record_all() -> list:
    warnings.filterwarnings("ignore")
    return [record(*item) for item in rotary_classes()]


# --------------------------------------------------------------------------- comparing

# transformers computes inv_freq in float32: the exponent 2i/d rounded (relative 2**-24) and
# then raised, which multiplies that error by |log w|; the yarn and llama3 blends add a few
# roundings. sinpe's exact frequencies are compared with the module's within this many
# float32 ulps plus |log w| of them.
ULPS = 4.0


def ulps_off(module_w: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """How far each float32 value is from the exact one, in float32 ulps of the exact one,
    less the allowance for transformers' float32 exponent (|log w| ulps): <= ULPS agrees."""
    exact = np.asarray(exact, dtype=np.float64)
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        off = np.where(
            exact == 0, np.where(module_w == 0, 0.0, np.inf), np.abs(module_w - exact) / spacing
        )
        allowance = np.where(exact > 0, np.abs(np.log(np.where(exact > 0, exact, 1.0))), 0.0)
    return off - allowance


def module_columns(layer: dict):
    """``(column frequencies, column axes, layout, factor)`` a recorded layer holds."""
    w = unpack(layer["inv_freq"])
    columns = layer.get("columns")
    width = layer.get("width") or 0
    if columns is None:
        n = width if layer["layout"] in ("compact", "complex") else width // 2
        columns = [[j, 0] for j in range(n)]
    freqs = np.array([w[i] for i, _ in columns])
    axes = tuple(a for _, a in columns)
    return freqs, axes, layout_name(layer["layout"]), layer.get("attention_factor") or 1.0


def layout_name(layout: str) -> str:
    return layout


def compare_layer(spec, layer: dict) -> tuple[str, str, float]:
    """``(verdict, detail, worst ulps)`` of sinpe's spec against one recorded module layer:
    "agrees", or "disagrees" saying what differs."""
    freqs, axes, layout, factor = module_columns(layer)
    w, attention = spec.frequencies()
    if w.shape[0] != freqs.shape[0]:
        return "disagrees", f"width {2 * w.shape[0]} against the module's {2 * freqs.shape[0]}", 0.0
    off = float(ulps_off(freqs, w).max(initial=-np.inf)) if w.size else 0.0
    worst = float((np.abs(freqs - w) / np.spacing(np.abs(w).astype(np.float32))).max(initial=0))
    if off > ULPS:
        i = int(np.argmax(ulps_off(freqs, w)))
        return "disagrees", f"inv_freq[{i}] {w[i]!r} against the module's {freqs[i]!r}", worst
    spec_axes = spec.axes if spec.axes is not None else (0,) * w.shape[0]
    if tuple(spec_axes) != axes:
        return "disagrees", f"axes {spec_axes} against the module's {axes}", worst
    if not abs(attention - factor) <= 1e-6 * factor:
        return "disagrees", f"attention factor {attention!r} against the module's {factor!r}", worst
    if spec.layout != layout:
        return "disagrees", f"layout {spec.layout!r} against the module's {layout!r}", worst
    return "agrees", "", worst


def variant_configs(entry: dict, variant: dict) -> dict:
    """The configs a variant is read from: ``to_dict`` (what transformers wrote after
    building it) and ``given`` (what was handed to the config class: the defaults without a
    rope mapping, and the variant's own keys; a config.json in the format it was written in)."""
    base = dict(entry["config"])
    written = {k: v for k, v in base.items() if k not in variant.get("removed", [])}
    written.update(variant.get("changes", {}))
    forms = {}
    if variant.get("round_trip", True):  # else transformers itself reads its to_dict otherwise
        forms["to_dict"] = written
    if entry.get("text_config") and not variant.get("kwargs"):
        return forms  # built by the composite class: the text class alone has other defaults
    given = {k: v for k, v in written.items() if k not in ("rope_parameters", "rope_scaling")}
    given.update(variant.get("kwargs", {}))
    forms["given"] = given
    return forms


def compare_entry(entry: dict, sinpe) -> list:
    """Every (variant, form, layer type) of a recorded class against ``sinpe.rope_config``:
    ``[{"variant", "form", "layer", "verdict", "detail", "ulps"}]`` with verdicts "agrees",
    "refuses" (sinpe raised, naming why), "disagrees" (a silent disagreement: a failure) and
    "module is not standard" (sinpe must refuse those, else it disagrees)."""
    results = []
    for name, variant in entry.get("variants", {}).items():
        if variant.get("status") != "ok":
            continue
        layers = variant["layers"]
        for form, config in variant_configs(entry, variant).items():
            base = {"variant": name, "form": form}
            try:
                spec = sinpe.rope_config(config)
            except (ValueError, TypeError) as exc:
                for layer_type in layers:
                    results.append(
                        {
                            **base,
                            "layer": layer_type,
                            "verdict": "refuses",
                            "detail": str(exc)[:200],
                            "ulps": 0.0,
                        }
                    )
                continue
            names = set(spec.layer_types or [""])
            if names != set(layers) and not (spec.layer_types and set(layers) <= names):
                results.append(
                    {
                        **base,
                        "layer": "",
                        "verdict": "disagrees",
                        "ulps": 0.0,
                        "detail": f"layer types {sorted(names)} against {sorted(layers)}",
                    }
                )
                continue
            for layer_type, layer in layers.items():
                item = {**base, "layer": layer_type}
                try:
                    one = spec.layer(layer_type) if spec.layer_types else spec
                    if not layer.get("standard"):
                        verdict, detail, ulps = (
                            "disagrees",
                            "the module is not standard: "
                            + (layer.get("why") or f"error {layer.get('error')}"),
                            0.0,
                        )
                    else:
                        verdict, detail, ulps = compare_layer(one, layer)
                except (ValueError, TypeError) as exc:
                    verdict, detail, ulps = "refuses", str(exc)[:200], 0.0
                results.append({**item, "verdict": verdict, "detail": detail, "ulps": ulps})
    return results


_REASONS = (
    ("recomposes M-RoPE", "an M-RoPE recomposition sinpe does not reproduce"),
    ("vision tower", "a vision tower sinpe does not build"),
    ("rotary width of", "an odd rotary width (int(head_dim * partial_rotary_factor))"),
    ("rope_scaling", "a rope_scaling mapping its class keeps aside or cannot read"),
    ("reads no rope type", "a rope type its module does not read"),
    ("some rope types and not", "a top-level key its class applies to some rope types only"),
    ("has no", "a key the config and its class leave out"),
)


def refusal_reason(result: dict) -> str:
    """A refusal's reason, as docs/rope.md counts them."""
    for word, reason in _REASONS:
        if word in result["detail"]:
            return reason
    return "other: " + result["detail"][:60]


# --------------------------------------------------------------------------- family records

# The keys of a config class's defaults that a RoPE can read (family_defaults.py keeps them).
DEFAULT_KEYS = (
    "head_dim",
    "hidden_size",
    "num_attention_heads",
    "max_position_embeddings",
    "original_max_position_embeddings",
    "partial_rotary_factor",
    "rotary_pct",
    "rotary_emb_base",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "rotary_dim",
    "attention_head_dim",
    "kv_channels",
    "global_head_dim",
    "rope_local_base_freq",
    "embed_dim",
    "num_heads",
)


def _field_defaults(config_cls) -> dict:
    """The class's own defaults of the RoPE keys: its dataclass fields' (or its __init__'s),
    never a value its __post_init__ derives (Llama's head_dim is hidden // heads, whatever
    the default hidden_size is)."""
    import dataclasses

    fields = getattr(config_cls, "__dataclass_fields__", None)
    if fields:
        found = {
            k: fields[k].default
            for k in DEFAULT_KEYS
            if k in fields and fields[k].default is not dataclasses.MISSING
        }
    else:
        parameters = inspect.signature(config_cls.__init__).parameters
        found = {k: parameters[k].default for k in DEFAULT_KEYS if k in parameters}
    numbers = (int, float)
    return {k: v for k, v in found.items() if isinstance(v, numbers) and not isinstance(v, bool)}


def _config_class_of(entry):
    package = entry["module"].rsplit(".", 1)[0]
    short = package.rsplit(".", 1)[1]
    for name in (f"{package}.configuration_{short}", entry["module"]):
        try:
            found = getattr(importlib.import_module(name), entry["config_class"], None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


_PROBES = {"rope_theta": 12345.0, "partial_rotary_factor": 0.375}


def _given(config, rope_type="default", theta=False):
    """A mapping of ``rope_type`` with no partial factor (and no base, unless ``theta``: the
    default mapping's), nested as the class's."""
    labels = getattr(config, "_rope_type_labels", None) or getattr(config, "layer_types", None)
    default = getattr(config, "rope_parameters", None) or {}
    nested = [k for k in default if labels and k in labels]
    one = {"rope_type": rope_type, **({"factor": 2.0} if rope_type == "linear" else {})}

    def base(mapping):
        if theta and isinstance(mapping, dict) and mapping.get("rope_theta"):
            return {"rope_theta": mapping["rope_theta"]}
        return {}

    if nested:
        return {k: None if default[k] is None else {**one, **base(default[k])} for k in nested}
    return {**one, **base(default)}


def _module_layers(cls, config_cls, **kwargs):
    """``{layer or "": inv_freq}`` of the module the class builds from ``kwargs``, or {}."""
    import torch

    try:
        with torch.device("cpu"):
            module = cls(config_cls(**kwargs))
    except Exception:
        return {}
    return {k or "": w for k, (w, _, _) in _buffers(module).items()}


def _takes(cls, config_cls, config, given_mapping: bool) -> dict:
    """Which of rope_theta and partial_rotary_factor a config's own top-level value changes,
    per layer type, seen in the module: with the class's default mapping (``given_mapping``
    False), or with a given mapping that lacks them (True). ``{layer or "": [keys]}``."""
    found = {}
    for key, value in _PROBES.items():
        # a given mapping of a scaled type (every one applies partial_rotary_factor; the
        # default type where the class refuses linear, as Phi-3's), its base there when the
        # probe is of the partial factor
        theta = key != "rope_theta"
        for rope_type in ("linear", "default"):
            base = {"rope_parameters": _given(config, rope_type, theta)} if given_mapping else {}
            before = _module_layers(cls, config_cls, **copy.deepcopy(base))
            if before:
                break
        after = _module_layers(cls, config_cls, **copy.deepcopy(base), **{key: value})
        for layer, w in after.items():
            old = before.get(layer)
            if old is not None and (old.shape != w.shape or not np.array_equal(old, w)):
                found.setdefault(layer, []).append(key)
    return found


def _fill(config_cls, config) -> dict:
    """What the class fills into a mapping it is given without a base or partial factor:
    ``{layer type or "": {"rope_theta": ..., "partial_rotary_factor": ...}}``."""
    given = _given(config)
    try:
        built = config_cls(rope_parameters=copy.deepcopy(given)).rope_parameters
    except Exception:
        return {}
    layers = {k: built.get(k) for k in given} if "rope_type" not in given else {"": built}
    return {
        layer: {k: mapping[k] for k in _PROBES if k in mapping}
        for layer, mapping in layers.items()
        if isinstance(mapping, dict)
    }


def _source_rules(cls) -> dict:
    """What the class's own default RoPE reads, from its source: whether it applies
    partial_rotary_factor (and its default there), and its head-dimension rule; and whether
    its model's attention multiplies the softmax scale by yarn's mscale squared (its module
    defines yarn_apply_mscale: the MLA families)."""
    import re

    rules = {}
    if callable(getattr(sys.modules[cls.__module__], "yarn_apply_mscale", None)):
        rules["softmax_mscale"] = True
    compute = getattr(cls, "compute_default_rope_parameters", None)
    if compute is None:
        return rules
    source = inspect.getsource(compute)
    found = re.search(r'get\("partial_rotary_factor",\s*([0-9.]+)\)', source)
    if found:
        rules["partial_in_default"] = True
        if float(found.group(1)) != 1.0:
            rules["partial_default"] = float(found.group(1))
    if "head_dim" not in source.split("dim =")[1].split("\n")[0] if "dim =" in source else True:
        rules["head_dim"] = "hidden"
    return rules


def apply_rotation(fn, q, cos, sin):
    """A transformers rotation function ``fn`` applied to ``q`` (batch 1, heads, seq, dim)
    with ``cos`` and ``sin`` of shape (1, seq, columns) in the layout ``fn`` takes (compact
    for a ``freqs_cis`` one, which gets ``cos + i sin``); None where its signature is not a
    known one."""
    import torch

    params = list(inspect.signature(fn).parameters)
    if params[:4] == ["q", "k", "cos", "sin"]:
        return fn(q, q.clone(), cos, sin)[0]
    if params[:3] == ["x", "cos", "sin"]:  # one tensor at a time (Gemma 3n and 4, DeepSeek-V4)
        return fn(q, cos, sin)
    if params[:3] == ["tensor", "sin", "cos"]:  # GPT-J, CodeGen: (batch, seq, heads, dim)
        return fn(q.transpose(1, 2), sin, cos).transpose(1, 2)
    if params[:3] != ["xq", "xk", "freqs_cis"]:
        return None
    cis = torch.complex(cos.float(), sin.float())
    for order in ((0, 1, 2, 3), (0, 2, 1, 3)):  # DeepSeek-V2 (b, heads, s, d); Llama 4 (b, s, h, d)
        x = q.permute(order)
        try:
            out = fn(x, x.clone(), cis)[0].permute(order)
        except (RuntimeError, ValueError):
            continue
        if out.shape == q.shape:
            return out
    raise ValueError(f"{fn.__name__}: no (batch, heads, seq, dim) order fits")


def rotation_of(fn, width=8):
    """``(rotation, sin sign)``: which input elements the function rotates together, found
    by running it, "halves" (x[i] with x[i + width/2], NeoX and Llama) or "pairs" (x[2i]
    with x[2i + 1], GPT-J), and the sign it gives sin (-1: it turns by the negative angle,
    as NanoChat's rotate_half does); None where it cannot be run. An element's partner is
    the one whose image spans the same two output elements (a function may also permute
    its output, as DeepSeek's interleave does; dot products do not see that), and element
    a turns into cos at its own place and sign * sin at its partner's."""
    import torch

    q = torch.eye(width).reshape(1, width, 1, width)
    for cols in (width, width // 2):
        cos, sin = torch.full((1, 1, cols), 0.6), torch.full((1, 1, cols), 0.8)
        try:
            out = apply_rotation(fn, q, cos, sin)
        except Exception:
            continue
        if out is None:
            return None
        if out.shape != q.shape:
            continue
        support = [
            frozenset(torch.nonzero(out[0, j, 0].abs() > 1e-3).flatten().tolist())
            for j in range(width)
        ]
        partner = [j for j in range(1, width) if support[j] == support[0]]
        kind = {width // 2: "halves", 1: "pairs"}.get(partner[0]) if len(partner) == 1 else None
        if len(support[0]) != 2 or kind is None:
            continue
        image = out[0, 0, 0]
        turned = next(i for i in support[0] if abs(float(image[i]) - 0.6) > 1e-3)
        return kind, 1 if float(image[turned]) > 0 else -1
    return None


def rotation_calls(module, prefix=""):
    """{function name: {condition}}: the module's rotation functions (a name with "apply" and
    "rotary", not a vision one) that its classes named ``prefix...`` call (all classes when
    none is), each with the config key it sits under (DeepSeek's ``rope_interleave``) as
    ``(key, value)``, or None. A DSA indexer's own rotation (it scores tokens; the attention
    rotates its queries and keys again) is left out."""
    tree = ast.parse(inspect.getsource(module))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and "Indexer" not in n.name]
    found = {}

    class Visitor(ast.NodeVisitor):
        condition = None

        def visit_If(self, node):
            if "rope_interleave" not in ast.unparse(node.test):
                return self.generic_visit(node)
            outer = self.condition
            for value, body in ((True, node.body), (False, node.orelse)):
                self.condition = ("rope_interleave", value)
                for child in body:
                    self.visit(child)
            self.condition = outer

        def visit_Call(self, node):
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if "apply" in name and "rotary" in name and "vision" not in name:
                found.setdefault(name, set()).add(self.condition)
            self.generic_visit(node)

    for start in (prefix, prefix.removesuffix("Text"), ""):
        for node in classes:
            if start and node.name.startswith(start) or not start:
                Visitor().visit(node)
        if found:
            break
    return found


def _rotation_rules(cls, config) -> dict:
    """Which query/key elements the family's attention rotates together ("halves": NeoX's
    rotate_half, "pairs": GPT-J's rotate_every_two), found by running the rotation function
    its attention calls; where a config key chooses (DeepSeek's ``rope_interleave``),
    ``rotation_key`` is ``(key, rotation when true, rotation when false)`` and ``rotation``
    the one of the class's default. Nothing where it is not one clear answer."""
    module = sys.modules[cls.__module__]
    prefix = cls.__name__.replace("RotaryEmbedding", "").replace("RopePositionEmbedding", "")
    calls = rotation_calls(module, prefix)
    kinds = {}
    for name, conditions in calls.items():
        kind = rotation_of(getattr(module, name))
        for condition in conditions:
            kinds.setdefault(condition, set()).add(kind)
    if any(len(found) != 1 or None in found for found in kinds.values()):
        return {}
    one = {condition: next(iter(found)) for condition, found in kinds.items()}
    if {sign for _, sign in one.values()} != {1}:  # turned back: the whole rotation's sign
        if set(one) != {None}:
            return {}
        return {"rotation": one[None][0], "sin_sign": one[None][1]}
    if set(one) == {None}:
        return {"rotation": one[None][0]}
    on, off = one.get(("rope_interleave", True)), one.get(("rope_interleave", False))
    if set(one) != {("rope_interleave", True), ("rope_interleave", False)}:
        return {}
    when = (on[0], off[0])
    default = when[0] if getattr(config, "rope_interleave", False) else when[1]
    return {"rotation": default, "rotation_key": ["rope_interleave", *when]}


def _config_rules(config_cls) -> dict:
    """What the configuration class's own ``__post_init__`` forces, from its source: MLA
    configs point ``head_dim`` at ``qk_rope_head_dim`` whatever a config.json says (a config
    object built from defaults shows the forced value, a published file may not)."""
    import re

    try:
        source = inspect.getsource(config_cls)
    except (OSError, TypeError):
        return {}
    if re.search(r"self\.head_dim\s*=\s*self\.qk_rope_head_dim\b", source):
        return {"head_dim": "qk_rope_head_dim"}
    return {}


def _variant_rules(entry) -> dict:
    """Rules read off the recorded variants: the output layout, whether a scaled type in the
    mapping is read at all, where a legacy rope_scaling mapping goes, the M-RoPE
    recomposition."""
    variants = entry.get("variants", {})
    defaults = variants["defaults"]["layers"]
    first = next(iter(defaults.values()))
    rules = {"layout": first.get("layout")}
    if first.get("dtype") not in ("x", None):
        rules["output_dtype"] = first["dtype"]
    linear = variants.get("linear", {})
    if linear.get("status") == "ok":
        types = {layer.get("rope_type") for layer in linear["layers"].values()}
        if "linear" not in types:
            rules["reads_types"] = False
    legacy = variants.get("legacy_linear", {})
    if legacy.get("status") != "ok":
        if linear.get("status") == "ok":  # the same mapping as rope_parameters is read
            rules["legacy"] = None
    else:
        layers = legacy["layers"]
        took = sorted(k for k, layer in layers.items() if layer.get("rope_type") == "linear")
        if not took:
            rules["legacy"] = "ignored"
        elif len(took) < len(legacy["layers"]):
            rules["legacy"] = took
    for layer in defaults.values():
        sections = layer.get("sections")
        if not sections or not layer.get("columns"):
            continue
        rules["sections"] = list(sections)
        axes = [a for _, a in layer["columns"]]
        h = len(axes)
        for name in ("contiguous", "interleaved", "paired"):
            if _mrope_axes(sections, name, h) == axes:
                rules["mrope"] = name
                break
        else:
            rules["mrope"] = "unknown"
    return rules


def _mrope_axes(sections, kind, h):
    """Each frequency's position axis under one recomposition: Qwen2-VL's ``contiguous``
    sections, Qwen3-VL's ``interleaved`` ones, ERNIE-4.5-VL's ``paired`` (H, W, H, W, ...
    over two equal sections, then T)."""
    if len(sections) != 3 or (kind != "interleaved" and sum(sections) != h):
        return None
    if kind == "paired":
        return [1, 2] * sections[0] + [0] * sections[2] if sections[0] == sections[1] else None
    if kind == "interleaved":
        axes = [0] * h
        for axis in (1, 2):
            for i in range(axis, min(3 * sections[axis], h), 3):
                axes[i] = axis
        return axes
    return [a for a, n in enumerate(sections) for _ in range(n)]


def family_records(entries) -> tuple[dict, dict]:
    """``({model_type: record}, {composite model_type: its text model_type})``: for every
    model type a text rotary class is built from, its configuration class's defaults (the
    RoPE keys, the default mapping, what it fills into a given mapping, attribute aliases,
    layer types) and the rules its class and variants show."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    records = {}
    classes = {cls_name: cls for _, cls_name, cls in rotary_classes()}
    for entry in entries:
        if entry.get("status") != "ok" or entry["model_type"] in records:
            continue
        if not entry.get("primary"):
            continue
        if entry.get("vision"):  # a vision tower: its layout and M-RoPE-like axes only
            layers = entry["variants"]["defaults"]["layers"]
            first = next(iter(layers.values()))
            records[entry["model_type"]] = {
                "vision": True,
                "rules": {"layout": first.get("layout")},
            }
            continue
        config_cls = _config_class_of(entry)
        if config_cls is None:
            continue
        config = config_cls()
        data = config_data(config)
        record = {
            "config": _field_defaults(config_cls),
            "mapping": data.get("rope_parameters") or {},
            "fill": _fill(config_cls, config),
            "overrides": _takes(classes[entry["class"]], config_cls, config, False),
            "fills": _takes(classes[entry["class"]], config_cls, config, True),
            "rules": {
                **_source_rules(classes[entry["class"]]),
                **_rotation_rules(classes[entry["class"]], config),
                **_config_rules(config_cls),
                **_variant_rules(entry),
            },
        }
        aliases = {
            k: v
            for k, v in (getattr(config_cls, "attribute_map", None) or {}).items()
            if k in (*DEFAULT_KEYS, "layer_types", "rope_theta")
        }
        if aliases:
            record["aliases"] = aliases
        labels = getattr(config, "_rope_type_labels", None) or data.get("layer_types")
        if labels:
            record["layer_types"] = sorted(set(labels))
        records[entry["model_type"]] = record
    for entry in entries:  # modules sinpe cannot probe: their model_type is refused, saying why
        if entry.get("status", "").startswith("forward does not take") and entry.get("model_type"):
            records.setdefault(
                entry["model_type"],
                {
                    "refused": f"its rotary module {entry['class']} takes "
                    f"({', '.join(entry['forward'])}), not position ids: sinpe has no table it "
                    "can check against it"
                },
            )
    composite = {}
    for model_type, config_cls in sorted(CONFIG_MAPPING.items()):
        try:
            text = getattr(config_cls(), "text_config", None)
        except Exception:
            continue
        text_type = getattr(text, "model_type", None)
        if text_type in records and text_type != model_type:
            composite[model_type] = text_type
    return records, composite


def _sorted(value):
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return value


def write_defaults(path: str, entries) -> None:
    import transformers

    records, composite = family_records(entries)
    records = {k: _sorted(v) for k, v in records.items()}  # a set's order follows the hash seed
    text = (
        f'"""What transformers {transformers.__version__}\'s configuration classes and rotary '
        "modules do, by model_type: each\nclass's RoPE defaults (its keys, its default mapping, "
        "what it fills into a mapping it is\ngiven, attribute aliases, layer types) and the "
        "rules its source and probes show (layout,\nwhere partial_rotary_factor applies, where "
        "a legacy mapping goes, M-RoPE); and the composite\n(vision-language) types and the "
        "model_type of their text part. Generated by\ntools/transformers_rope.py --defaults: "
        'do not edit by hand."""\n\n'
        f"TRANSFORMERS = {transformers.__version__!r}\n\n"
        "DEFAULTS = {\n"
        + "".join(f"    {k!r}: {records[k]!r},\n" for k in sorted(records))
        + "}\n\nCOMPOSITE = {\n"
        + "".join(f"    {k!r}: {composite[k]!r},\n" for k in sorted(composite))
        + "}\n"
    )
    with open(path, "w") as handle:
        handle.write(text)


# --------------------------------------------------------------------------- published configs


def check_published(paths, sinpe) -> list:
    """Each published config.json read by transformers (its model_type's configuration
    class; the text part of a composite) and its model's own rotary module probed, against
    ``sinpe.rope_config(path)``: ``[(file, layer type, verdict, detail)]``."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    classes = rotary_classes()
    found = []
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        data = json.load(open(path))
        model_type = {"kimi_k2": "deepseek_v3"}.get(data.get("model_type"), data.get("model_type"))
        try:
            kwargs = {k: v for k, v in data.items() if k != "model_type"}
            top = CONFIG_MAPPING[model_type](**kwargs)
            config = getattr(top, "text_config", None) or top
        except Exception as exc:
            found.append((name, "", "transformers refuses", f"{type(exc).__name__}: {exc}"[:150]))
            continue
        wanted = (type(config), type(top))  # a text module may annotate its composite class
        module = next(
            (
                c
                for m, n, c in classes
                if config_class(m, c) in wanted and takes_position_ids(c) and "Vision" not in n
            ),
            None,
        )
        if module is None:
            found.append((name, "", "no rotary module", type(config).__name__))
            continue
        probed = probe_module(module, config, is_vision(module.__name__, config))
        try:
            spec = sinpe.rope_config(path)
        except (TypeError, ValueError) as exc:
            found.append((name, "", "sinpe refuses", str(exc)[:150]))
            continue
        for layer_type, layer in probed.get("layers", {}).items():
            one = spec.layer(layer_type) if spec.layer_types else spec
            found.append((name, layer_type, *compare_layer(one, layer)[:2]))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="PATH", help="write the data file")
    parser.add_argument("--defaults", metavar="PATH", help="write the class defaults module")
    parser.add_argument(
        "--published", nargs="+", metavar="CONFIG", help="check published config.json files"
    )
    args = parser.parse_args(argv)
    import transformers

    if transformers.__version__ not in VERSIONS:
        sys.exit(f"transformers {transformers.__version__} here; enumerated: {', '.join(VERSIONS)}")
    if args.defaults and transformers.__version__ != NEWEST:
        sys.exit(
            f"the family defaults are the newest release's ({NEWEST}), "
            f"not {transformers.__version__}'s"
        )
    if args.published:
        import sinpe

        warnings.filterwarnings("ignore")
        for row in check_published(args.published, sinpe):
            print(*row)
        return
    entries = record_all()
    data = {"transformers": transformers.__version__}
    if args.write:
        with open(args.write, "w") as handle:  # one class a line: a change is a line's diff
            head = {"transformers": data["transformers"], "positions": PROBE_AXES}
            handle.write(json.dumps(head)[:-1] + ', "classes": [\n')
            lines = [json.dumps(entry, sort_keys=True) for entry in entries]
            handle.write(",\n".join(lines))
            handle.write("\n]}\n")
    if args.defaults:
        write_defaults(args.defaults, entries)
    counts = {}
    for entry in entries:
        key = entry["status"].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    for key, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{count:4d}  {key}")


if __name__ == "__main__":
    main()
