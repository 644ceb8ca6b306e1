"""A patched model under torch.compile against the same model unpatched, side by side in one
run: a tiny random Llama-3.1 (hidden 64, 2 layers, llama3 scaling, 131,072 positions), each
compiled with fullgraph=True, on a one-token decode step at position 100,000 (no cache: the
step's own work), a 4096-token prefill, and the rotary module alone (4096 ids and one id).

    python benchmarks/torch_compiled.py [--rounds N] [--device cpu|cuda] [--clock wall|cpu]

Needs torch and transformers (pip install '.[torch]' transformers==5.24.0): both are
optional, so the script says what is missing and exits 0 without them. The device is CUDA
where one is present (the same code runs there), else the CPU with one torch thread. Each
row is the median of per-round ratios patched / unpatched (quartiles in brackets); the
target is at most 1.0 (exit 1 when a row misses it by more than the rounds' own spread).
``--clock cpu`` times the calling thread's CPU time instead of the wall clock (the CPU
device, one torch thread: all the work is that thread's), for a shared or overloaded machine.
"""

import copy
import statistics
import sys
import time
import warnings

from ratios import rounds_parser
from torch_modules import TINY  # Llama-3.1's RoPE, a tiny model's sizes


def timed(torch, fn, device, repeat, clock=time.perf_counter):
    """Seconds per call of ``fn`` (``repeat`` calls, the device synchronised around them)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = clock()
    for _ in range(repeat):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (clock() - start) / repeat


def spread(values):
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return median, low, high


def main(argv=None):
    parser = rounds_parser(__doc__)
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    try:
        import torch
        import transformers
    except ImportError as exc:
        print(f"torch_compiled.py needs torch and transformers ({exc}); nothing measured")
        return 0
    import sinpe
    import sinpe.torch as st

    warnings.filterwarnings("ignore")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(1)
    elif args.clock == "cpu":
        parser.error("--clock cpu times the CPU device only")
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    torch.manual_seed(0)
    unpatched = transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY)).eval()
    unpatched = unpatched.to(device)
    patched = copy.deepcopy(unpatched)
    report = st.patch(patched)
    x = torch.zeros(1, 1, 64, device=device)
    cases = {
        "decode step, 1 token at position 100,000": (
            lambda m: m,
            (torch.randint(0, 100, (1, 1), device=device),),
            {"position_ids": torch.tensor([[100_000]], device=device), "use_cache": False},
            50,
        ),
        "prefill, 4096 tokens": (
            lambda m: m,
            (torch.randint(0, 100, (1, 4096), device=device),),
            {"position_ids": torch.arange(4096, device=device)[None], "use_cache": False},
            3,
        ),
        "rotary module, 4096 ids": (
            lambda m: m.model.rotary_emb,
            (x, torch.arange(4096, device=device)[None]),
            {},
            50,
        ),
        "rotary module, 1 id at 100,000": (
            lambda m: m.model.rotary_emb,
            (x, torch.tensor([[100_000]], device=device)),
            {},
            500,
        ),
    }
    print(
        f"sinpe {sinpe.__version__}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}, {device}"
        f"{', one torch thread' if device.type == 'cpu' else ''}; torch.compile(fullgraph=True)"
        f"; {'thread CPU time' if args.clock == 'cpu' else 'wall clock'}"
        f"; {args.rounds} paired rounds; patch(): {list(report)}, tables "
        f"{report.table_bytes / 2**20:.0f} MiB\n"
    )
    print("| row | unpatched (median) | patched (median) | patched / unpatched | target |")
    print("|---|---|---|---|---|")
    failed = 0
    with torch.no_grad():
        for name, (pick, positional, keywords, repeat) in cases.items():
            compiled = {
                "unpatched": torch.compile(pick(unpatched), fullgraph=True),
                "patched": torch.compile(pick(patched), fullgraph=True),
            }
            calls = {
                k: (lambda c=c, a=positional, kw=keywords: c(*a, **kw)) for k, c in compiled.items()
            }
            for call in calls.values():  # compile, and warm up
                call()
                call()
            times = {k: [] for k in calls}
            ratios = []
            for _ in range(args.rounds):  # paired: both once per round
                sample = {k: timed(torch, call, device, repeat, clock) for k, call in calls.items()}
                for k, t in sample.items():
                    times[k].append(t)
                ratios.append(sample["patched"] / sample["unpatched"])
            median, low, high = spread(ratios)
            ok = median <= 1.0 or low <= 1.0  # within the rounds' own spread of 1.0
            failed += not ok
            print(
                f"| {name} | {statistics.median(times['unpatched']) * 1e6:,.1f} us | "
                f"{statistics.median(times['patched']) * 1e6:,.1f} us | **{median:.2f}** "
                f"({low:.2f}-{high:.2f}) | <= 1.0 {'ok' if ok else 'MISSED'} |"
            )
            torch._dynamo.reset()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
