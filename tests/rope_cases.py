"""The rope-type cases of tests/test_rope.py: one scaling of each kind, and
``(name, scaling, head_dim, base, seq_len)`` for each rule a type has, and the Phi-3 LongRoPE
configs of other test files. tools/arm/digest.py runs the same cases on an aarch64 kernel
under qemu, where only NumPy and sinpe are installed: this module imports nothing."""

LLAMA31 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
YARN_DEEPSEEK = {
    "type": "yarn",
    "factor": 40,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 0.707,
    "truncate": False,
}
LONGROPE = {
    "rope_type": "longrope",
    "short_factor": [1.0 + 0.05 * i for i in range(8)],
    "long_factor": [1.0 + 1.5 * i for i in range(8)],
    "original_max_position_embeddings": 4096,
    "max_position_embeddings": 131072,
}
DYNAMIC = {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 2048}

CASES = [
    ("default", None, 64, 10000.0, None),
    ("linear", {"rope_type": "linear", "factor": 4.0}, 64, 10000.0, None),
    ("dynamic below", DYNAMIC, 64, 10000.0, 1000),
    ("dynamic above", DYNAMIC, 64, 10000.0, 5000),
    ("yarn", YARN, 128, 1000000.0, None),
    ("yarn deepseek", YARN_DEEPSEEK, 64, 10000.0, None),
    ("yarn no truncate", {**YARN, "truncate": False}, 128, 1000000.0, None),
    (
        "yarn factor from lengths",
        {**YARN, "factor": None, "max_position_embeddings": 131072},
        128,
        1000000.0,
        None,
    ),
    ("yarn attention", {**YARN, "attention_factor": 0.8, "beta_fast": 16}, 64, 10000.0, None),
    ("longrope short", LONGROPE, 16, 10000.0, 4096),
    ("longrope long", LONGROPE, 16, 10000.0, 4097),
    ("longrope none", LONGROPE, 16, 10000.0, None),
    ("llama3", LLAMA31, 128, 500000.0, None),
    ("proportional", {"rope_type": "proportional", "partial_rotary_factor": 0.25}, 64, 1e6, None),
]


def phi3_longrope(
    hidden_size,
    num_attention_heads,
    max_position_embeddings,
    original_max_position_embeddings,
    **more,
):
    """A Phi-3 config with LongRoPE: short factors 1 + 0.01 i, long ones 1 + 0.5 i, one per
    rotated pair (``more``, say ``partial_rotary_factor``, follows the head count)."""
    head_dim = hidden_size // num_attention_heads
    pairs = int(head_dim * more.get("partial_rotary_factor", 1.0)) // 2
    return {
        "model_type": "phi3",
        "hidden_size": hidden_size,
        "num_attention_heads": num_attention_heads,
        **more,
        "max_position_embeddings": max_position_embeddings,
        "original_max_position_embeddings": original_max_position_embeddings,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0 + 0.01 * i for i in range(pairs)],
            "long_factor": [1.0 + 0.5 * i for i in range(pairs)],
        },
    }
