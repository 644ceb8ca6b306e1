"""Tiny random models for the engine leg's tests (MLX, llama.cpp): saved by transformers, with a
tokenizer trained here where a converter needs one (nothing downloaded). The Llama-3.1 is the
shift model (tests/shift.py); the others are one of each RoPE kind the issue names: Qwen3 with
YaRN, Phi-3 with LongRoPE, Gemma 3 with its sliding-window base, DeepSeek-V3 (MLA) with YaRN,
gpt-oss (YaRN with ``truncate: false``).
Their query and key weights are scaled as the shift model's, so that RoPE matters."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import shift

TEXT = {k: v for k, v in shift.CONFIG.items() if k not in ("rope_parameters",)}
YARN = dict(rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=4096)
LONGROPE = dict(rope_type="longrope", rope_theta=10000.0, original_max_position_embeddings=4096)
LONGROPE.update(short_factor=[1.0 + 0.01 * i for i in range(32)])
LONGROPE.update(long_factor=[1.0 + 0.5 * i for i in range(32)])
GEMMA = dict(sliding_attention=dict(rope_type="default", rope_theta=10000.0))
GEMMA.update(full_attention=dict(rope_type="linear", rope_theta=1e6, factor=8.0))
DEEPSEEK_YARN = dict(rope_type="yarn", rope_theta=10000.0, factor=40.0, beta_fast=32.0)
DEEPSEEK_YARN.update(original_max_position_embeddings=4096, beta_slow=1.0, mscale=1.0)
DEEPSEEK_YARN.update(mscale_all_dim=1.0)
GPT_OSS_YARN = dict(rope_type="yarn", rope_theta=150000.0, factor=32.0, beta_fast=32.0)
GPT_OSS_YARN.update(beta_slow=1.0, truncate=False, original_max_position_embeddings=4096)
MLA = dict(q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=32)
MLA.update(v_head_dim=32, head_dim=32, n_routed_experts=4, n_shared_experts=1)
MLA.update(num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=1)
MLA.update(n_group=1, topk_group=1, num_key_value_heads=2, max_position_embeddings=163840)

# name: (config class, model class, keywords) for the models beside the shift model
MODELS = {
    "qwen3-yarn": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        dict(max_position_embeddings=16384, rope_parameters=YARN),
    ),
    "phi3-longrope": (
        "Phi3Config",
        "Phi3ForCausalLM",
        dict(max_position_embeddings=131072, original_max_position_embeddings=4096)
        | dict(pad_token_id=0, rope_parameters=LONGROPE),
    ),
    # Gemma 3's own 5:1 pattern: llama.cpp's loader assumes a period of 6 (no layer_types)
    "gemma3": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        dict(num_hidden_layers=6, max_position_embeddings=131072, sliding_window=64)
        | dict(layer_types=["sliding_attention"] * 5 + ["full_attention"], rope_parameters=GEMMA),
    ),
    "deepseek-v3": (
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        dict(MLA, rope_parameters=DEEPSEEK_YARN),
    ),
    # gpt-oss: YaRN with truncate false, which llama.cpp does not read (it rounds the ramp)
    "gpt-oss": (
        "GptOssConfig",
        "GptOssForCausalLM",
        dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=64)
        | dict(layer_types=["sliding_attention", "full_attention"], rope_parameters=GPT_OSS_YARN),
    ),
}
BPE = ("deepseek-v3", "gpt-oss")  # the models whose converter takes a GPT-2 tokenizer.json


def _corpus(n: int = 4000):
    from sinpe._engines._weights import corpus

    return corpus(n)


def sentencepiece_tokenizer(folder) -> None:
    """A sentencepiece ``tokenizer.model`` of ``shift.VOCAB`` pieces (llama.cpp's converter
    takes it for Llama, Phi-3, Qwen3 and Gemma): the one ``sinpe engines`` makes."""
    from sinpe._engines._weights import sentencepiece_tokenizer as make

    make(folder, shift.VOCAB)


def bpe_tokenizer(folder) -> int:
    """A byte-level BPE ``tokenizer.json`` of at most ``shift.VOCAB`` ids, and its size
    (DeepSeek's converter takes the GPT-2 path only; tests/llama_cpp_convert.py names its
    unknown pre-tokenizer)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=shift.VOCAB,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(), trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(folder)
    return tokenizer.get_vocab_size()


def save(name: str, folder, *, tokenizer: bool = False) -> Path:
    """Model ``name`` (``"llama-3.1"``: the shift model; else of ``MODELS``), randomly
    initialised (seed 0), q and k scaled by ``shift.SHARP``, saved in ``folder``."""
    import torch
    import transformers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = shift.VOCAB
    if tokenizer and name in BPE:
        vocab = bpe_tokenizer(folder)
    elif tokenizer:
        sentencepiece_tokenizer(folder)
    if name == "llama-3.1":
        shift.save(folder)
    else:
        config_cls, model_cls, keywords = MODELS[name]
        config = getattr(transformers, config_cls)(**{**TEXT, **keywords, "vocab_size": vocab})
        torch.manual_seed(0)
        model = getattr(transformers, model_cls)(config)
        _sharpen(model)
        model.save_pretrained(folder)
    return folder


def _sharpen(model) -> None:
    """q and k (or their per-head norms, where the model normalises them) times SHARP."""
    import torch

    config = model.config
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if name.endswith(("q_proj.weight", "k_proj.weight", "q_b_proj.weight")):
                weight.mul_(shift.SHARP)
            elif name.endswith("qkv_proj.weight"):  # Phi-3: the q and k rows, then v
                head = config.hidden_size // config.num_attention_heads
                weight[: (config.num_attention_heads + config.num_key_value_heads) * head].mul_(
                    shift.SHARP
                )
            elif name.endswith(("q_norm.weight", "k_norm.weight")):
                gemma = "Gemma" in type(model).__name__  # its norm is x * (1 + w)
                weight.fill_(shift.SHARP - 1.0 if gemma else shift.SHARP)


def with_legacy_keys(folder, target) -> Path:
    """A copy of ``folder`` whose config.json has its RoPE in transformers 4's keys
    (``rope_theta``, ``rope_scaling``; Gemma 3: ``rope_local_base_freq`` and
    ``sliding_window_pattern``), which mlx_lm reads for most families."""
    target = Path(target)
    shutil.copytree(folder, target, dirs_exist_ok=True)
    config = json.loads((target / "config.json").read_text())
    parameters = dict(config.pop("rope_parameters"))
    if "full_attention" in parameters:
        full = dict(parameters["full_attention"])
        config["rope_theta"] = full.pop("rope_theta")
        config["rope_local_base_freq"] = parameters["sliding_attention"]["rope_theta"]
        config["rope_scaling"] = full
        types = config["layer_types"]
        config["sliding_window_pattern"] = types.index("full_attention") + 1
    else:
        config["rope_theta"] = parameters.pop("rope_theta")
        config["rope_scaling"] = {**parameters, "type": parameters["rope_type"]}
    (target / "config.json").write_text(json.dumps(config, indent=2))
    return target


def convert(llama_cpp: str, folder, out, *options: str) -> Path:
    """``folder`` converted to an F32 GGUF ``out`` by llama.cpp's own ``convert_hf_to_gguf.py``
    (of the checkout ``llama_cpp``, with its ``options``), in a process of its own."""
    import subprocess
    import sys

    script = Path(__file__).with_name("llama_cpp_convert.py")
    env = dict(os.environ, LLAMA_CPP_DIR=llama_cpp)
    done = subprocess.run(
        [sys.executable, str(script), str(folder), "--outfile", str(out), "--outtype", "f32"]
        + list(options),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(out)
