"""The conformance corpus: published ``config.json`` files shipped with sinpe (``corpus/``,
their sources in ``corpus/README.md`` and ``corpus/index.json``), each read as
:func:`sinpe.rope_config` reads it; plus, where transformers is installed, every model type
whose config class builds a RoPE from its defaults. A config sinpe refuses stays in the
corpus with its reason (``CorpusConfig.refused``), never silently dropped."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from .._files import reading
from .._rope.config import rope_config
from .._rope.rope_types import ROPE_TYPES

__all__ = [
    "CORPUS",
    "CorpusConfig",
    "configs",
    "folder_configs",
    "kit_refusal",
    "select_corpus",
    "transformers_defaults",
]

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
_INDEX_BYTES = 1 << 20


class CorpusConfig(NamedTuple):
    """One config of the corpus.

    Attributes
    ----------
    name : str
        The file's name without ``.json`` (``":"`` and the layer type for one layer type of
        a config with a RoPE per layer type: ``"gemma-3-4b-it:sliding_attention"``).
    config : dict
        The parsed ``config.json``.
    source : str
        Where the file was copied from (repository: path @ commit), or how it was made.
    rope_type : str or None
        The rope type sinpe reads (``"default"``, ``"yarn"``, ``"llama3"``, ...); ``None``
        where sinpe refuses the config.
    family : str or None
        The ``model_type`` whose record sinpe reads (the text config's for a multimodal one).
    form : str
        How the file spells its RoPE: ``"rope_scaling"`` (transformers 4), ``"rope_parameters"``
        (transformers 5), ``"per_layer"`` (``rope_parameters`` keyed by layer type),
        ``"plain"`` (``rope_theta`` alone), ``"defaults"`` (a config class's defaults).
    features : tuple of str
        What else it exercises: ``"partial"`` (rotary width below the head size),
        ``"multi_axis"`` (M-RoPE: frequencies reading several position axes),
        ``"nested"`` (a ``text_config``), ``"layer_types"``, ``"moe"``, ``"multimodal"``.
    layer_type : str or None
        The layer type this entry judges, for a config with a RoPE per layer type.
    refused : str or None
        Why :func:`sinpe.rope_config` refuses the config (its error's words), else ``None``.
    path : str or None
        The file, where the config is one.
    """

    name: str
    config: dict
    source: str
    rope_type: str | None
    family: str | None
    form: str
    features: tuple = ()
    layer_type: str | None = None
    refused: str | None = None
    path: str | None = None


def _form(config: dict) -> str:
    for data in (config, config.get("text_config")):
        if not isinstance(data, dict):
            continue
        params = data.get("rope_parameters")
        if isinstance(params, dict):
            nested = params and all(isinstance(v, dict) or v is None for v in params.values())
            return "per_layer" if nested else "rope_parameters"
        if isinstance(data.get("rope_scaling"), dict):
            return "rope_scaling"
    return "plain"


def _text_config(config: dict) -> dict:
    """The text model's config: a nested ``text_config``, else the config itself."""
    nested = config.get("text_config")
    return nested if isinstance(nested, dict) else config


def _features(config: dict, spec) -> tuple:
    text = _text_config(config)
    found = []
    if isinstance(config.get("text_config"), dict):
        found.append("nested")
    if "vision_config" in config or "image_token_id" in config or "vision_config" in text:
        found.append("multimodal")
    if any(k in text for k in ("num_experts", "n_routed_experts", "num_local_experts")):
        found.append("moe")
    if text.get("layer_types") is not None or spec.layer_types is not None:
        found.append("layer_types")
    one = spec if spec.layer_types is None else None
    if one is not None and one.axes is not None and len(set(one.axes)) > 1:
        found.append("multi_axis")
    hidden, heads = text.get("hidden_size"), text.get("num_attention_heads")
    head = text.get("head_dim") or (hidden // heads if hidden and heads else None)
    if one is not None and isinstance(head, int) and one.head_dim and one.head_dim < head:
        found.append("partial")
    return tuple(found)


def _entries(name: str, config: dict, source: str, form: str, path=None) -> list:
    """The corpus entries of one config: one, or one per layer type with a RoPE."""
    try:
        spec: Any = rope_config(config)
    except (TypeError, ValueError) as exc:
        return [CorpusConfig(name, config, source, None, None, form, (), None, str(exc), path)]
    features = _features(config, spec)
    if kit_refusal(spec) is not None:
        kind = spec.scaling["rope_type"]
        refused = kit_refusal(spec)
        return [
            CorpusConfig(
                name, config, source, kind, spec.model_type, form, features, None, refused, path
            )
        ]
    if spec.layer_types is None:
        kind = spec.scaling["rope_type"]
        return [
            CorpusConfig(
                name, config, source, kind, spec.model_type, form, features, None, None, path
            )
        ]
    found = []
    for layer_type in spec.layer_types:
        try:
            layer = spec.layer(layer_type)
        except ValueError:
            continue  # a layer type without RoPE (its entry is null): nothing to judge
        found.append(
            CorpusConfig(
                f"{name}:{layer_type}",
                config,
                source,
                layer.scaling["rope_type"],
                spec.model_type,
                form,
                features,
                layer_type,
                None,
                path,
            )
        )
    return found


_CACHE: dict = {}
# index.json's finding for a file transformers builds no rotary module for (Nemotron-H's
# attention has none): a RoPE sinpe's common rules would read is not the model's
_NO_MODULE = (
    "transformers 5.24.0 builds no rotary module for this config (tools/transformers_rope.py "
    "--published, 2026-12-07): the model has no RoPE to judge, though sinpe.rope_config reads "
    "one by its common rules"
)


def kit_refusal(spec) -> str | None:
    """Why the kit cannot judge a spec by text positions (a vision grid), else ``None``."""
    if spec.layer_types is None and ROPE_TYPES[spec.scaling["rope_type"]].axes > 1:
        return (
            "a vision grid's RoPE (axial): its positions are (row, column) pairs, not a text "
            "run, and the kit judges a RoPE at text positions"
        )
    return None


def _shipped() -> list:
    if "shipped" not in _CACHE:
        index = reading.read_json(
            os.path.join(CORPUS, "index.json"), what="corpus index", max_bytes=_INDEX_BYTES
        )
        found = []
        for row in index["files"]:
            path = os.path.join(CORPUS, row["file"])
            config = rope_config_data(path)
            name = row["file"][: -len(".json")]
            entries = _entries(name, config, row["source"], _form(config), path)
            if row.get("transformers_5_24") == "no rotary module":
                entries = [e if e.refused else e._replace(refused=_NO_MODULE) for e in entries]
            found += entries
        _CACHE["shipped"] = found
    return list(_CACHE["shipped"])


def rope_config_data(path: str) -> dict:
    """A ``config.json`` as a dict, through the reading room (as ``rope_config`` reads it)."""
    from .._rope.config import load_config

    return load_config(path)


def folder_configs(folder) -> list:
    """The corpus entries of every ``*.json`` file in ``folder`` (a user's own corpus),
    sources being the files' paths."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise ValueError(f"the corpus folder {folder!r} is not a directory")
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".json") and os.path.isfile(path):
            config = rope_config_data(path)
            found += _entries(name[: -len(".json")], config, path, _form(config), path)
    if not found:
        raise ValueError(f"the corpus folder {folder!r} holds no .json file")
    return found


def transformers_defaults() -> list:
    """Every model type whose transformers config class gives a RoPE from its defaults
    (``rope_parameters`` or ``rope_theta`` in ``ConfigClass().to_dict()``), as corpus
    entries of form ``"defaults"``: computed, not files, and only where transformers is
    installed (else an empty list)."""
    if "defaults" in _CACHE:
        return list(_CACHE["defaults"])
    try:
        import transformers
        from transformers import CONFIG_MAPPING
    except ImportError:
        return []
    from transformers.utils import logging as transformers_logging

    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # default configs' token-id complaints
    try:
        found = _defaults(CONFIG_MAPPING, transformers.__version__)
    finally:
        transformers_logging.set_verbosity(verbosity)
    _CACHE["defaults"] = found
    return list(found)


def _defaults(mapping, version: str) -> list:
    """The entries of each config class of ``mapping`` built with no argument."""
    import warnings

    found = []
    for model_type in sorted(mapping.keys()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls = mapping[model_type]
                config: dict[str, Any] = cls().to_dict()
        except Exception:  # a class that needs arguments or extras: not a default config
            continue
        text = _text_config(config)
        if not any(k in text for k in ("rope_parameters", "rope_theta")):
            continue
        source = f"transformers {version}: {cls.__name__}() defaults"
        found += _entries(f"defaults:{model_type}", config, source, "defaults")
    return found


def configs(rope_type: str | None = None, family: str | None = None, form: str | None = None):
    """The corpus' configs, selected.

    Parameters
    ----------
    rope_type : str, optional
        Keep the entries of this rope type (``"default"``, ``"linear"``, ``"dynamic"``,
        ``"yarn"``, ``"longrope"``, ``"llama3"``, ...); ``"refused"``: the configs sinpe
        refuses.
    family : str, optional
        Keep this ``model_type`` (``"llama"``, ``"qwen3_vl_text"``, ...).
    form : str, optional
        Keep this spelling (``"rope_scaling"``, ``"rope_parameters"``, ``"per_layer"``,
        ``"plain"``) or feature (``"partial"``, ``"multi_axis"``, ``"nested"``,
        ``"layer_types"``, ``"moe"``, ``"multimodal"``); ``"defaults"`` gives transformers'
        default configs instead (computed; empty without transformers).

    Returns
    -------
    list of CorpusConfig
        In file order; one entry per layer type for a config with a RoPE per layer type.

    Examples
    --------
    >>> from sinpe.testing import configs
    >>> [c.name for c in configs(rope_type="llama3", family="llama")][:2]
    ['llama-3.1-8b', 'llama-3.2-1b-instruct']
    """
    for what, value in (("rope_type", rope_type), ("family", family), ("form", form)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{what} must be a str or None, got {type(value).__name__}")
    entries = transformers_defaults() if form == "defaults" else _shipped()
    if rope_type == "refused":
        entries = [e for e in entries if e.refused is not None]
    elif rope_type is not None:
        entries = [e for e in entries if e.rope_type == rope_type]
    if family is not None:
        entries = [e for e in entries if e.family == family]
    if form not in (None, "defaults"):
        entries = [e for e in entries if e.form == form or form in e.features]
    return entries


def select_corpus(which: str | None, **select) -> list:
    """The entries ``which`` names (``--sinpe-corpus``, ``sinpe conformance --corpus``):
    ``"all"`` (or ``None``), ``"defaults"``, a rope type, or a folder of config.json files;
    narrowed by ``select`` (``configs``' arguments). ``ValueError`` for anything else."""
    if which is not None and os.path.isdir(which):
        entries = folder_configs(which)
        for key, value in select.items():
            if value is not None:
                entries = [e for e in entries if getattr(e, key) == value]
        return entries
    if which in (None, "all"):
        return configs(**select)
    if which == "defaults":
        return configs(**{**select, "form": "defaults"})
    found = configs(**{**select, "rope_type": which})
    if not found and not configs(rope_type=which):
        raise ValueError(
            f"the corpus {which!r} is not 'all', 'defaults', a rope type of the corpus, "
            "nor a folder"
        )
    return found
