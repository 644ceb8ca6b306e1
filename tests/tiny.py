"""The one tiny decoder the tests against transformers and the engines start from (2 layers,
width 64, ids 0, 1, 2 for pad, bos, eos; nothing downloaded): each file overrides what its
models need (tests/test_transformers_live.py, tests/vlms.py, tests/vllm_models.py)."""

TEXT = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2)
TEXT.update(num_attention_heads=4, num_key_value_heads=2, head_dim=16)
TEXT.update(pad_token_id=0, bos_token_id=1, eos_token_id=2)
# every MoE family's names for a few small experts
MOE = dict(num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2)
MOE.update(moe_intermediate_size=32)
