"""Tiny random models for the ONNX leg (tests/test_onnx_genai.py): saved by transformers 5.24
with a byte-level BPE tokenizer trained here (ONNX Runtime GenAI's builder loads one; nothing
is downloaded), built by the builder itself, and run by onnxruntime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

COMMON = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2)
COMMON.update(head_dim=64, intermediate_size=256, vocab_size=512, bos_token_id=1, eos_token_id=2)
COMMON.update(pad_token_id=3, tie_word_embeddings=False)
LLAMA3 = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0)
LLAMA3.update(high_freq_factor=4.0, original_max_position_embeddings=8192)
QWEN_YARN = dict(
    rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=4096
)
QWEN_YARN.update(beta_fast=32.0, beta_slow=1.0)
MINISTRAL_YARN = dict(QWEN_YARN, factor=16.0, original_max_position_embeddings=16384)
GPT_OSS = dict(rope_type="yarn", rope_theta=150000.0, factor=32.0, beta_fast=32.0, beta_slow=1.0)
GPT_OSS.update(truncate=False, original_max_position_embeddings=4096)
SHORT = [1.0 + 0.01 * i for i in range(32)]
LONG = [1.0 + 0.5 * i for i in range(32)]
GEMMA = dict(sliding_attention=dict(rope_type="default", rope_theta=10000.0))
GEMMA.update(full_attention=dict(rope_type="linear", factor=8.0, rope_theta=1e6))
PHI3 = (  # saved two ways: in the published form ("phi-3-longrope", see save) and as is
    "Phi3Config",
    dict(max_position_embeddings=131072, original_max_position_embeddings=4096)
    | dict(intermediate_size=192, rope_parameters=dict(rope_type="longrope", rope_theta=1e4))
    | dict(head_dim=None),
)

# name: (config class, keywords); the Phi-3s' gate_up width (2 x 192) is kept off the vocabulary
# size, which the builder takes for the LM head's (builders/base.py's has_lm_head)
MODELS = {
    "llama-3.1": ("LlamaConfig", dict(max_position_embeddings=131072, rope_parameters=LLAMA3)),
    "qwen3-yarn": ("Qwen3Config", dict(max_position_embeddings=16384, rope_parameters=QWEN_YARN)),
    "ministral-yarn": (
        "MistralConfig",
        dict(max_position_embeddings=262144, rope_parameters=MINISTRAL_YARN),
    ),
    "phi-3-longrope": PHI3,
    "gpt-oss": (
        "GptOssConfig",
        dict(num_key_value_heads=1, max_position_embeddings=131072, num_local_experts=4)
        | dict(num_experts_per_tok=2, sliding_window=128, rope_parameters=GPT_OSS)
        | dict(layer_types=["sliding_attention", "full_attention"]),
    ),
    # the shift test past 100,000 (a past of zeros: a 64-token window keeps it out of the
    # attention, in onnxruntime and in the reference alike); q and k sharpened as the shift
    # model's, so that the angles matter
    "mistral-window": (
        "MistralConfig",
        dict(max_position_embeddings=131072, sliding_window=64)
        | dict(layer_types=["sliding_attention"] * 2)
        | dict(rope_parameters=dict(rope_type="default", rope_theta=1e6)),
    ),
    # the builder stops on these (docs/onnx.md): YaRN without betas, partial rotary, Gemma 3,
    # Phi-3 as transformers 5 saves it (rope_parameters, no "type")
    "qwen3-yarn-no-betas": (
        "Qwen3Config",
        dict(max_position_embeddings=16384, rope_parameters=dict(QWEN_YARN, beta_fast=None)),
    ),
    "qwen3-yarn-partial": (
        "Qwen3Config",
        dict(max_position_embeddings=16384, rope_parameters=dict(QWEN_YARN))
        | dict(partial_rotary_factor=0.5),
    ),
    "phi-3-longrope-v5": PHI3,  # the same model, its config.json left as transformers 5 saves it
    "gemma-3": (
        "Gemma3TextConfig",
        dict(num_key_value_heads=1, max_position_embeddings=4096, sliding_window=64)
        | dict(layer_types=["sliding_attention", "full_attention"], query_pre_attn_scalar=64)
        | dict(rope_parameters=GEMMA),
    ),
}


def tokenizer(folder) -> None:
    """A byte-level BPE tokenizer of at most 500 ids (the builder loads one): the one
    ``sinpe engines`` makes for the builder's twin."""
    from sinpe._engines._weights import tokenizer as make

    make(folder)


def save(name: str, folder) -> Path:
    """Model ``name`` randomly initialised (seed 0), saved with a tokenizer in ``folder``;
    Phi-3's config.json in the published form (``rope_scaling`` with ``"type": "longrope"``,
    which the builder reads)."""
    import torch
    import transformers

    folder = Path(folder)
    config_class, keywords = MODELS[name]
    keywords = {k: v for k, v in {**COMMON, **keywords}.items() if v is not None}
    parameters = keywords.get("rope_parameters", {})
    if "beta_fast" in parameters and parameters["beta_fast"] is None:
        keywords["rope_parameters"] = {k: v for k, v in parameters.items() if k != "beta_fast"}
    if name.startswith("phi-3-longrope"):
        keywords["rope_parameters"] = dict(keywords["rope_parameters"], short_factor=SHORT)
        keywords["rope_parameters"].update(long_factor=LONG, original_max_position_embeddings=4096)
    config = getattr(transformers, config_class)(**keywords)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if name == "mistral-window":
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight.mul_(4.0)
                layer.self_attn.k_proj.weight.mul_(4.0)
    model.save_pretrained(folder)
    tokenizer(folder)
    if name == "phi-3-longrope":
        data = json.loads((folder / "config.json").read_text())
        data.pop("rope_parameters", None)
        data["rope_theta"] = 10000.0
        data["rope_scaling"] = {"type": "longrope", "short_factor": SHORT, "long_factor": LONG}
        (folder / "config.json").write_text(json.dumps(data, indent=2))
    if name == "qwen3-yarn-no-betas":
        data = json.loads((folder / "config.json").read_text())
        data["rope_parameters"].pop("beta_slow", None)
        (folder / "config.json").write_text(json.dumps(data, indent=2))
    return folder


def build(folder, out, precision: str = "fp32", provider: str = "cpu"):
    """ONNX Runtime GenAI's builder on ``folder`` (its own process): the CompletedProcess."""
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(folder)]
    command += ["-o", str(out), "-p", precision, "-e", provider, "-c", str(Path(out) / "cache")]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


class Session:
    """A built model in onnxruntime (CPU): the log-probabilities of ``tokens`` after a past
    of ``past`` positions (the KV cache of zeros: GroupQueryAttention takes the positions
    from the attention mask's length; a sliding-window model's cache holds its window)."""

    def __init__(self, folder):
        import onnxruntime

        folder = Path(folder)
        decoder = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        self.session = onnxruntime.InferenceSession(
            str(folder / decoder["filename"]), options, providers=["CPUExecutionProvider"]
        )
        self.decoder = decoder
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        window = decoder.get("sliding_window") or {}
        self.window = window.get("window_size", 0) if window.get("layers") else 0

    def logprobs(self, tokens, past: int = 0) -> np.ndarray:
        names, decoder = self.decoder["inputs"], self.decoder
        ids = np.asarray(tokens, np.int64)[None]
        feed = {
            names["input_ids"]: ids,
            names["attention_mask"]: np.ones((1, past + ids.shape[1]), np.int64),
        }
        for layer in range(decoder["num_hidden_layers"]):
            for template in (names["past_key_names"], names["past_value_names"]):
                name = template % layer
                heads = self.inputs[name].shape[1]
                held = self.window or past  # a window's cache: its capacity, the window
                feed[name] = np.zeros((1, heads, held, decoder["head_size"]), np.float32)
        (logits,) = self.session.run([decoder["outputs"]["logits"]], feed)
        logits = logits[0].astype(np.float64)
        logits -= logits.max(-1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(-1, keepdims=True))
