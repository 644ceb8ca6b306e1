"""sinpe.torch against transformers, side by side in one run: RotaryEmbedding.forward against
LlamaRotaryEmbedding.forward (Llama-3.1, (1, 8192) position_ids, float32, CPU), the cost of
building sinpe's exact cache against torch.empty + fill_ of the bytes it keeps, its peak
memory, what patch() costs per module (every transformers rotary class it replaces, from its
class defaults), and the logits of a tiny random Llama-3.1 model before and after patch().

    python benchmarks/torch_modules.py [--rounds N]

Needs torch and transformers (pip install '.[torch]' transformers==5.24.0): both are
optional, so the script says what is missing and exits 0 without them. Ratios are medians of
per-round ratios, quartiles in brackets; targets are those of the PyTorch issue (exit 1 when
one is missed).
"""

import statistics
import sys
import time
import tracemalloc

from peers import LLAMA31_ROPE
from ratios import once, quartiles, rounds_parser

LLAMA31 = dict(
    hidden_size=4096,
    num_attention_heads=32,
    max_position_embeddings=131072,
    rope_theta=500000.0,
    rope_scaling=LLAMA31_ROPE,
)


TINY = dict(  # Llama-3.1's RoPE, a tiny random model's sizes
    LLAMA31,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_hidden_layers=2,
    intermediate_size=128,
    vocab_size=100,
)


def main(argv=None):
    args = rounds_parser(__doc__).parse_args(argv)
    try:
        import torch
        import transformers
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    except ImportError as exc:
        print(f"torch_modules.py needs torch and transformers ({exc}); nothing measured")
        return 0
    import sinpe.torch as st

    failed = 0
    torch.set_num_threads(1)
    config = transformers.LlamaConfig(**LLAMA31)
    theirs, ours = LlamaRotaryEmbedding(config), st.RotaryEmbedding(config)
    x, ids = torch.zeros(1, 1, 4096), torch.arange(8192)[None]
    ours(x, ids)  # the cache, once
    ratios, times = [], {"transformers": [], "sinpe": []}
    for _ in range(args.rounds):
        a, b = once(theirs, x, ids), once(ours, x, ids)
        times["transformers"].append(a)
        times["sinpe"].append(b)
        ratios.append(a / b)
    ratio, text = quartiles(ratios)
    ok = ratio >= 2.0
    failed += not ok
    print(
        f"sinpe {sinpe_version()}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}, one torch thread, {args.rounds} paired rounds\n"
    )
    print("| row | times (median) | ratio | target |")
    print("|---|---|---|---|")
    print(
        f"| LlamaRotaryEmbedding / sinpe RotaryEmbedding, forward (1, 8192) float32 | "
        f"transformers {statistics.median(times['transformers']) * 1e3:.2f} ms, sinpe "
        f"{statistics.median(times['sinpe']) * 1e3:.2f} ms | {text} "
        f"| >= 2 {'ok' if ok else 'MISSED'} |"
    )
    kept = 131072 * 64 * 2 * 4  # cos and sin, compact, float32
    build, fill = [], []
    for _ in range(max(3, args.rounds // 3)):
        build.append(once(st.RotaryEmbedding, config))  # its tables are made at build

        def empty_fill():
            torch.empty(kept // 4, dtype=torch.float32).fill_(1.0)

        fill.append(once(empty_fill))
    ratio, text = quartiles([b / f for b, f in zip(build, fill)])
    ok = ratio <= 2.0
    failed += not ok
    print(
        f"| RotaryEmbedding(config): its 131072 x 128 float32 tables / torch.empty + fill_ of "
        f"their {kept >> 20} MiB | "
        f"sinpe {statistics.median(build) * 1e3:.1f} ms, empty + fill_ "
        f"{statistics.median(fill) * 1e3:.1f} ms | {text} | <= 2 {'ok' if ok else 'MISSED'} |"
    )
    tracemalloc.start()
    st.RotaryEmbedding(config)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    ok = peak <= 2 * kept
    failed += not ok
    print(
        f"| peak memory building it / the bytes it keeps | {peak >> 20} MiB / {kept >> 20} MiB | "
        f"**{peak / kept:.2f}** | <= 2 {'ok' if ok else 'MISSED'} |"
    )
    costs = patch_costs(st, torch)
    if costs:
        worst = max(costs.values())
        ok = worst <= 0.05
        failed += not ok
        slowest = max(costs, key=costs.get)
        print(
            f"| patch() per module (its checks; tables of 4096 positions), {len(costs)} "
            "transformers rotary classes from their defaults"
            f" | median {statistics.median(costs.values()) * 1e3:.1f} ms, slowest "
            f"{worst * 1e3:.1f} ms ({slowest}) | | <= 50 ms {'ok' if ok else 'MISSED'} |"
        )
    torch.manual_seed(0)
    tiny = transformers.LlamaConfig(**TINY)
    model = transformers.LlamaForCausalLM(tiny).eval()
    tokens = torch.randint(0, 100, (1, 64))
    spans = {"0-63": torch.arange(64)[None], "100,000-100,063": torch.arange(64)[None] + 100000}
    with torch.no_grad():
        before = {k: model(tokens, position_ids=p).logits for k, p in spans.items()}
        st.patch(model)
        after = {k: model(tokens, position_ids=p).logits for k, p in spans.items()}
    diffs = ", ".join(f"{k}: {(before[k] - after[k]).abs().max().item():.2g}" for k in spans)
    print(f"\ntiny random Llama-3.1 model, largest logit change from patch() at positions {diffs}")
    return 1 if failed else 0


def patch_costs(st, torch) -> dict:
    """Seconds ``patch()`` takes for a module of each text rotary class it replaces, built
    from its class defaults (tools/transformers_rope.py walks them), best of three."""
    import os
    import warnings

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
    import transformers_rope as harness

    costs = {}
    warnings.filterwarnings("ignore")
    for module_name, name, cls in harness.rotary_classes():
        config_cls = harness.config_class(module_name, cls)
        if config_cls is None or not harness.takes_position_ids(cls) or "Vision" in name:
            continue
        try:
            config = config_cls()
            config = getattr(config, "text_config", None) or config
            module = cls(config)
        except Exception:
            continue
        best = None
        for _ in range(3):
            holder = torch.nn.Module()
            holder.rope = module
            start = time.perf_counter()
            report = st.patch(holder, warn=False, max_positions=4096)  # the checks' cost
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        if report:
            costs[name] = best
    return costs


def sinpe_version():
    import sinpe

    return sinpe.__version__


if __name__ == "__main__":
    sys.exit(main())
