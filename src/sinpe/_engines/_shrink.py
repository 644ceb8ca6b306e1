"""The twin of a model's config: every key that says how the model rotates kept as the config
gives it (head dims, rotary widths, rope parameters, layer types and patterns, lengths), the
sizes that say nothing of the rotation shrunk, so that an engine builds the model in seconds:
two attention heads (one key-value head where the model groups them), at most four experts,
small MLPs and vocabularies, and only as many layers as it takes to hold one of each kind
(all of them where an engine keys the model's attention on their count: EXAONE 4.0 32B's 64
in llama.cpp).
An MLP of four times the hidden size stays four times the twin's (a converter may write it so).

The ratio ``hidden_size / num_attention_heads`` is kept (an engine that takes the head dim from
it, ignoring ``head_dim``, reads the twin as it reads the model), and so is every per-layer
list's pattern, cut to the layers kept. Token ids past the small vocabulary are set inside it.

A twin keeps the shapes an engine's kernels constrain too, so that an engine that builds the
model builds the twin: a mixture of experts' hidden and intermediate sizes are multiples of
``MOE_ALIGNMENT`` (more heads where the head dim alone does not make one: gpt-oss's 45 takes
32 heads, DeepSeek-V3's 56 four).
"""

from __future__ import annotations

import copy
import math

from .._verdict.layers import DEFAULT_PATTERN

__all__ = ["HEADS", "MOE_ALIGNMENT", "VOCAB", "shrink"]

HEADS = 2
VOCAB = 512
# vLLM's CPU experts (model_executor/layers/fused_moe/experts/cpu_moe.py,
# CPUUnquantizedExperts._supports_grouped_gemm) take no hidden or intermediate size that is
# not a multiple of their output_alignment, 32 on x86, Arm and the portable path alike
MOE_ALIGNMENT = 32
# size keys and what they become (where the config has them)
_SMALL = {
    "intermediate_size": 64,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "ffn_hidden_size": 64,
    "q_lora_rank": 64,
    # kv_lora_rank is kept: vLLM's MLA backends take only the published latent width
    # (kv_lora_rank + qk_rope_head_dim = 576, v1/attention/backends/mla/cpu_mla.py,
    # CPUMLABackend.get_supported_head_sizes): a twin's 32 + 64 = 96 raises "Head dimension
    # 96 is not supported by MLA" at its first batch
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "hidden_size_per_layer_input": 16,
    "vocab_size_per_layer_input": VOCAB,
    "num_nextn_predict_layers": 0,
    "mtp_num_hidden_layers": 0,
    "num_kv_shared_layers": 0,
}
# expert counts: at most 4, and no more chosen per token than there are
_EXPERTS = ("n_routed_experts", "num_experts", "num_local_experts")
_INTERMEDIATE = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size")
_PER_TOKEN = ("num_experts_per_tok", "moe_topk", "top_k")
_GROUPS = ("n_group", "topk_group")
# a layer pattern's period: the twin keeps at least one whole period
_PERIODS = (
    "sliding_window_pattern",
    "_sliding_window_pattern",
    "full_attention_interval",
    "interleave_moe_layer_step",
    "no_rope_layer_interval",
    "decoder_sparse_step",
)
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")
# layer counts an engine keys a model's attention on, kept where the config has one: llama.cpp
# gives EXAONE 4 its sliding layers (and leaves its full layers unrotated) only for 64 layers
# (src/models/exaone4.cpp, llama_model_exaone4::load_arch_hparams: the 32B); with fewer it
# rotates every layer, which the published model does not
_KEYED_LAYERS = {"exaone4": (64,)}


def shrink(config: dict) -> dict:
    """The twin of ``config`` (a ``config.json`` as a dict; a multimodal config's
    ``text_config`` shrunk the same way, its vision tower too where it has one)."""
    twin = copy.deepcopy(config)
    _shrink_text(twin, vocabulary="text_config" not in twin)
    for key in ("text_config", "vision_config", "audio_config", "thinker_config"):
        if isinstance(twin.get(key), dict):
            _shrink_text(twin[key], vocabulary=key == "text_config")
            if key != "text_config":
                _tower_apart(twin[key])
    if isinstance(twin.get("text_config"), dict) and "vocab_size" not in twin:
        # said at the top too: MLX-LM's Gemma 3 (mlx_lm/models/gemma3.py, ModelArgs) sets
        # the text model's vocabulary from the top level's, 262,208 where none is given
        twin["vocab_size"] = VOCAB
    return twin


# ONNX Runtime GenAI's builder takes every nn.Linear whose out_features is the vocabulary size
# for the LM head (onnxruntime_genai/models/builders/base.py, Model.has_lm_head, asked of every
# module in Model.make_model, a vision tower's included): the twin keeps its other widths off
# its vocabulary, as the published models' are (Phi-4-mini: a fused qkv of 5,120 beside
# 200,064 ids; Pixtral's MLP: 4,096 beside 131,072), where a shrunk one would be VOCAB.
# Model types whose attention and MLP are fused projections in transformers:
_FUSED = ("phi3",)


def _widths(config: dict) -> set:
    """The output widths, as far as the config gives them, of the projections a text model
    has beside its LM head that a shrunk config may make ``VOCAB`` wide: its hidden size (the
    attention's and the MLP's outputs), and where the model fuses them (``_FUSED``: Phi-3's
    and Phi-4-mini's ``qkv_proj`` and ``gate_up_proj``) the fused query-key-value and
    gate-up widths. Separate q/k/v projections are not counted: Gemma 3's twin has a query
    projection 512 wide (2 heads of 256), which this builder never reaches (it stops on
    Gemma 3's per-layer-type `rope_parameters` first)."""
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    if not (isinstance(heads, int) and isinstance(hidden, int) and heads > 0 and hidden > 0):
        return set()
    out = {hidden}
    if config.get("model_type") in _FUSED:
        dim = config.get("head_dim")
        dim = dim if isinstance(dim, int) else hidden // heads
        kv = config.get("num_key_value_heads")
        kv = kv if isinstance(kv, int) else heads
        out.add((heads + 2 * kv) * dim)
        if isinstance(config.get("intermediate_size"), int):
            out.add(2 * config["intermediate_size"])
    return out


def _text_apart(config: dict, heads: int | None, fourfold: bool) -> None:
    """The twin's query heads one more (as ``_shrink_heads`` keeps them: the hidden size with
    them, where it follows the heads, and a fourfold MLP with it) until no projection is
    ``VOCAB`` wide, and never more than the config's ``heads``."""
    kept, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    if not (isinstance(heads, int) and isinstance(kept, int) and isinstance(hidden, int)):
        return
    ratio = hidden // kept if "head_dim" not in config and hidden % kept == 0 else None
    grouped = config.get("num_key_value_heads") != kept
    while VOCAB in _widths(config) and kept < heads:
        kept += 1
        config["num_attention_heads"] = kept
        if ratio is not None:
            config["hidden_size"] = kept * ratio
            if fourfold:
                config["intermediate_size"] = 4 * config["hidden_size"]
        if not grouped and "num_key_value_heads" in config:
            config["num_key_value_heads"] = kept


def _tower_apart(tower: dict) -> None:
    """A tower's (vision, audio) MLP off the twin's vocabulary: half the width where its
    fourfold MLP (a 128-wide twin's) is ``VOCAB`` wide."""
    for key in _INTERMEDIATE:
        if tower.get(key) == VOCAB:
            tower[key] = VOCAB // 2


def _shrink_text(config: dict, vocabulary: bool) -> None:
    """``vocabulary``: the config of a language model, whose vocabulary is shrunk even where
    it gives none (the class default: Gemma 3's is 262,208 ids)."""
    # a quantized checkpoint's scheme says nothing of the rotation, and ties the twin to
    # kernels and dtypes an engine may not have on this machine (gpt-oss's MXFP4)
    config.pop("quantization_config", None)
    alignment = MOE_ALIGNMENT if _has_experts(config) else 1
    fourfold = _fourfold(config)
    heads = config.get("num_attention_heads")
    _shrink_layers(config)
    _shrink_heads(config, alignment)
    for key, small in _SMALL.items():
        if isinstance(config.get(key), int) and config[key] > small:
            config[key] = small
    if fourfold:
        config["intermediate_size"] = 4 * config["hidden_size"]
    for key in _INTERMEDIATE:
        if isinstance(config.get(key), int) and config[key] > 0:
            config[key] = _round_up(config[key], alignment)
    _shrink_experts(config)
    if vocabulary and alignment == 1:  # one head more may break an MoE's alignment
        _text_apart(config, heads, fourfold)
    if vocabulary or isinstance(config.get("vocab_size"), int):
        config["vocab_size"] = VOCAB
        for key in _TOKEN_IDS:
            config[key] = _inside(config.get(key))


def _shrink_layers(config: dict) -> None:
    """The layers kept (``_layers_kept``), every per-layer list cut to them."""
    layers = config.get("num_hidden_layers")
    if not (isinstance(layers, int) and layers > 0):
        return
    kept = _layers_kept(config, layers)
    config["num_hidden_layers"] = kept
    for key, value in list(config.items()):
        if isinstance(value, list) and len(value) == layers and key != "architectures":
            config[key] = value[:kept]
    for key in ("first_k_dense_replace", "max_window_layers"):
        if isinstance(config.get(key), int):
            config[key] = min(config[key], kept - 1 if kept > 1 else kept)


def _fourfold(config: dict) -> bool:
    """An MLP four times the hidden size (GPT-2's, Phi-2's, Gemma 3's) stays four times the
    twin's: llama.cpp's Phi-2 converter (``conversion/phi.py``,
    ``Phi2Model.set_gguf_parameters``) writes ``feed_forward_length = 4 * n_embd`` whatever
    ``intermediate_size`` says, and its loader checks the tensors against it."""
    hidden, inner = config.get("hidden_size"), config.get("intermediate_size")
    return (
        isinstance(hidden, int)
        and isinstance(inner, int)
        and not isinstance(hidden, bool)
        and hidden > 0
        and inner == 4 * hidden
        and not _has_experts(config)
    )


def _has_experts(config: dict) -> bool:
    return any(isinstance(config.get(k), int) and config[k] > 1 for k in _EXPERTS)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _shrink_experts(config: dict) -> None:
    """At most four experts, no more chosen per token than two, one group."""
    for key in _EXPERTS:
        if isinstance(config.get(key), int) and config[key] > 4:
            config[key] = 4
    experts = next((config[k] for k in _EXPERTS if isinstance(config.get(k), int)), None)
    for key in _PER_TOKEN:
        if experts and isinstance(config.get(key), int):
            config[key] = min(config[key], 2, experts)
    for key in _GROUPS:
        if isinstance(config.get(key), int):
            config[key] = 1


def active_layers(config: dict) -> int | None:
    """Where the twin keeps all of a model's layers for an engine that keys on their count
    (``_KEYED_LAYERS``), how many a twin would otherwise keep: the run model makes the
    layers past them inert (``_run.save_run_model``), so that the run sees one of each kind
    as in any other twin, with no more float32 noise than theirs. Else None."""
    inner = config.get("text_config")
    text: dict = inner if isinstance(inner, dict) else config
    layers = text.get("num_hidden_layers")
    keyed = _KEYED_LAYERS.get(str(text.get("model_type")), ())
    if not isinstance(layers, int) or layers not in keyed:
        return None
    return _layers_kept({**text, "model_type": None}, layers)


def _layers_kept(config: dict, layers: int) -> int:
    """As many layers as hold one of each kind: the first of each layer type, a whole period
    of every pattern, and at least two (a dense layer and a sparse one); all of them where
    an engine keys the model's attention on their count (``_KEYED_LAYERS``)."""
    if layers in _KEYED_LAYERS.get(str(config.get("model_type")), ()):
        return layers
    needed = 2
    for key in _PERIODS:
        if isinstance(config.get(key), int) and config[key] > 0:
            needed = max(needed, config[key])
    if not any(key in config for key in _PERIODS):  # the pattern its class sets (Gemma 3)
        needed = max(needed, DEFAULT_PATTERN.get(str(config.get("model_type")), 0))
    for key in ("layer_types", "mlp_layer_types"):
        kinds = config.get(key)
        if isinstance(kinds, list) and kinds:
            needed = max(needed, max(kinds.index(kind) for kind in set(map(str, kinds))) + 1)
    if isinstance(config.get("first_k_dense_replace"), int):
        needed = max(needed, config["first_k_dense_replace"] + 1)
    return min(layers, needed)


def _shrink_heads(config: dict, alignment: int = 1) -> None:
    """Two heads, ``hidden_size / num_attention_heads`` as the config has it; one key-value
    head where the model groups them (as many as the heads where it does not). Where the
    hidden size must be a multiple of ``alignment``, as many more heads as that takes (the
    fewest, and never more than the config's); a ratio that is not whole is not kept, and the
    hidden size is rounded up to the multiple."""
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    if not (isinstance(heads, int) and heads > HEADS):
        return
    kept = HEADS
    if isinstance(hidden, int) and hidden % heads == 0:
        ratio = hidden // heads
        kept = min(heads, math.lcm(HEADS, alignment // math.gcd(ratio, alignment)))
        config["hidden_size"] = kept * ratio
    elif isinstance(hidden, int):  # the ratio is not whole: keep the head dim the config gives
        config.setdefault("head_dim", hidden // heads)
        config["hidden_size"] = _round_up(HEADS * math.ceil(hidden / heads), alignment)
    kv = config.get("num_key_value_heads")
    config["num_attention_heads"] = kept
    if isinstance(kv, int):
        config["num_key_value_heads"] = kept if kv >= heads else 1


def _inside(value):
    """A token id (or a list of them) inside the twin's vocabulary."""
    if isinstance(value, list):
        return [_inside(v) for v in value][:2]
    if isinstance(value, int) and value >= VOCAB:
        return VOCAB - 1
    return value
