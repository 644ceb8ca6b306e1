"""The tiny random models of the vLLM tests (tests/test_vllm.py) and of the drift table in
docs/vllm.md (benchmarks/vllm_drift.py): one per family vLLM's CPU build runs, saved with
transformers' ``save_pretrained`` (nothing downloaded). Needs torch and transformers."""

import tiny

# vLLM's CPU attention takes head_dim 32, 64, 80, ...
TEXT = dict(tiny.TEXT, hidden_size=128, intermediate_size=256, head_dim=64)
TEXT.update(num_attention_heads=2, num_key_value_heads=1)
LLAMA3 = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0)
LLAMA3.update(high_freq_factor=4.0, original_max_position_embeddings=8192)
# name: (config class, model class, config keywords, the verdict of each cache, reason)
MODELS = {
    "llama-3.1": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(max_position_embeddings=131072, rope_parameters=LLAMA3),
        ["drift"],
        "",
    ),
    "qwen2": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        dict(
            max_position_embeddings=32768, rope_parameters=dict(rope_type="default", rope_theta=1e6)
        ),
        ["drift"],
        "",
    ),
    "qwen3-yarn": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        dict(
            max_position_embeddings=131072,
            rope_parameters=dict(
                rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=32768
            ),
        ),
        ["drift"],
        "",
    ),
    "phi-3-longrope": (
        "Phi3Config",
        "Phi3ForCausalLM",
        dict(
            max_position_embeddings=131072,
            original_max_position_embeddings=4096,
            rope_parameters=dict(
                rope_type="longrope",
                rope_theta=10000.0,
                short_factor=[1.0 + 0.01 * i for i in range(32)],
                long_factor=[1.0 + 0.5 * i for i in range(32)],
                original_max_position_embeddings=4096,
            ),
        ),
        ["drift", "drift"],
        "",
    ),
    "gemma-3": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        dict(
            max_position_embeddings=32768,
            sliding_window=64,
            layer_types=["sliding_attention", "full_attention"],
            rope_parameters=dict(
                sliding_attention=dict(rope_type="default", rope_theta=10000.0),
                full_attention=dict(rope_type="linear", rope_theta=1e6, factor=8.0),
            ),
        ),
        ["drift", "drift"],
        "",
    ),
    # transformers' Llama ignores partial_rotary_factor for its default RoPE; vLLM's get_rope
    # applies it: a config the two read differently
    "llama-partial": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(
            max_position_embeddings=4096,
            rope_parameters=dict(
                rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5
            ),
        ),
        ["mismatch"],
        "rotary width 32 where the config gives 64",
    ),
}


def save(name: str, folder) -> str:
    """Model ``name`` of MODELS, randomly initialised (seed 0), saved in ``folder``."""
    import torch
    import transformers

    config_cls, model_cls, keywords, _, _ = MODELS[name]
    config = getattr(transformers, config_cls)(**TEXT, **keywords)
    torch.manual_seed(0)
    getattr(transformers, model_cls)(config).save_pretrained(folder)
    return str(folder)


def load(folder, **keywords):
    """A ``vllm.LLM`` of the model in ``folder``: float32, eager, in-process as the tests
    run it (no tokenizer: prompts are token ids)."""
    import vllm

    keywords = {"max_model_len": 4096, **keywords}
    return vllm.LLM(
        model=str(folder), skip_tokenizer_init=True, dtype="float32", enforce_eager=True, **keywords
    )
