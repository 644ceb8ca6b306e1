"""sinpe's vLLM plugin in its exact mode on a CUDA device: tools/gpu_check.py's vLLM step
(its subprocess, in the venv with vLLM's CUDA build), kept apart as tools/sglang_gpu.py keeps
SGLang's. Alone:

    python tools/vllm_gpu.py [--device cpu]     # prints the step's JSON; exit 0 when it held

On ``device`` (bfloat16 caches on CUDA, float16 below compute capability 8.0; float32 on
the CPU), each tiny random twin of tests/vllm_models.py is loaded by ``vllm.LLM`` with
``SINPE_VLLM=exact`` (in-process, so that the plugin's reports are this process's, one LLM
at a time), generates, and then every cache is judged
again by ``sinpe.vllm.check`` (a filled cache: match) and compared with sinpe's table in the
cache's dtype bit for bit; llama-partial (a mismatch) must be left as vLLM made it. Then
tests/test_vllm.py's long prompt: a sliding-window Mistral's log-probabilities of tokens
1-64 and of the last 64 of 100,032 with SINPE_VLLM off and exact against the float64
reference (transformers with sinpe's exact table, on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))  # vllm_models, as the tests make the twins


def _step_result(status: str, summary: str, figures: dict | None = None, **versions) -> dict:
    return {"status": status, "summary": summary, "figures": figures or {}, "versions": versions}


def _vllm(folder, device: str, dtype: str, **keywords):
    import vllm

    if device == "cuda":
        keywords.setdefault("gpu_memory_utilization", 0.15)  # tiny models, one at a time
    keywords = {"max_model_len": 4096, "seed": 0, **keywords}
    return vllm.LLM(model=str(folder), skip_tokenizer_init=True, dtype=dtype,
                    enforce_eager=True, **keywords)  # fmt: skip


def _free() -> None:
    """After ``del llm`` in the frame that held it: the LLM collected now, before the next is
    made (one collected later tears down the process groups the next one uses)."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _rotary_caches(model) -> dict:
    """Every rotary cache of a loaded vLLM model, on the host, by name (with the module's
    original_max_position_embeddings: where Phi-3's long rows start)."""
    found = {}
    for name, module in model.named_modules():
        for buffer in ("cos_sin_cache", "long_short_cos_sin_cache"):
            if hasattr(module, buffer) and type(module).__name__.endswith("RotaryEmbedding"):
                split = getattr(module, "original_max_position_embeddings", None)
                found[f"{name}.{buffer}"] = (getattr(module, buffer).detach().cpu(), split)
    return found


def _is_sinpes_table(spec, name: str, cache, split) -> bool:
    """Whether ``cache`` holds sinpe's table of the config (of one of its layer types) in the
    cache's dtype, bit for bit (Phi-3's short and long parts each at its own length)."""
    import numpy as np

    dtype = str(cache.dtype).removeprefix("torch.")
    held = cache.float().numpy()
    candidates = [spec] if not spec.layer_types else [spec.layer(t) for t in spec.layer_types]
    for one in candidates:
        if name.endswith("long_short_cos_sin_cache"):
            parts = [
                one.rope_cache(split, dtype=dtype),
                one.rope_cache(len(held) - split, dtype=dtype),
            ]
            want = np.concatenate(parts)
        else:
            want = one.rope_cache(len(held), dtype=dtype)
        if np.array_equal(held, want.astype(np.float32)):
            return True
    return False


def _vllm_family(folder, name: str, device: str, dtype: str) -> dict:
    """One twin loaded with SINPE_VLLM=exact: the plugin's reports, then after generate the
    caches judged again (``sinpe.vllm.check``) and compared with sinpe's table."""
    import vllm

    import sinpe
    import sinpe.vllm as sv

    os.environ["SINPE_VLLM"] = "exact"
    llm = _vllm(folder, device, dtype)
    try:
        params = vllm.SamplingParams(max_tokens=4, temperature=0.0)
        llm.generate([{"prompt_token_ids": list(range(3, 40))}], params, use_tqdm=False)
        before = sv.reports()
        after = {(r.names[0], r.cache): r.verdict for r in sv.check(llm)}
        caches = llm.apply_model(_rotary_caches)[0]
    finally:
        del llm
        _free()
    spec = sinpe.rope_config(os.path.join(folder, "config.json"))
    tables = {n: _is_sinpes_table(spec, n, c, s) for n, (c, s) in caches.items()}
    replaced = [r for r in before if r.replaced]
    return {
        "before": [
            f"{r.names[0]} {r.cache} {r.dtype} {r.verdict}{' replaced' * r.replaced}"
            for r in before
        ],
        "after": sorted(f"{n} {c} {v}" for (n, c), v in after.items()),
        "replaced_all_that_may_be": bool(before)
        and all(r.replaced == (r.verdict in ("match", "drift")) for r in before),
        "match_after": all(after.get((r.names[0], r.cache)) == "match" for r in replaced),
        "sinpes_table": sorted(n for n, same in tables.items() if same),
        "all_sinpes_table": bool(replaced) and all(tables.values()),
    }


# a dry run's twins (tests/test_vllm.py judges every one on the CPU): a cache per layer
# type, Phi-3's two parts, a mismatch
ON_THE_CPU = ("llama-3.1", "gemma-3", "phi-3-longrope", "llama-partial")


def step(device: str, planted: bool = False) -> dict:
    """vLLM's exact mode on its caches on ``device`` (bfloat16 on CUDA, float32 on the CPU):
    each twin of tests/vllm_models.py; llama-partial (a mismatch) must be left as made. Then
    the 100,000-position log-probabilities (``_vllm_logprobs``)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return _step_result("skipped", "skipped: not installed (vllm)")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the reports in-process
    if device == "cpu":
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import vllm
    import vllm_models

    dtype = "float32"
    if device == "cuda":  # vLLM refuses bfloat16 below compute capability 8.0
        import torch

        dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    figures: dict = {"cache_dtype_asked": dtype}
    checks = {}
    with tempfile.TemporaryDirectory(prefix="sinpe-gpu-vllm-") as folder:
        for name in vllm_models.MODELS if device == "cuda" else ON_THE_CPU:
            twin = vllm_models.save(name, Path(folder) / name)
            found = figures[name] = _vllm_family(twin, name, device, dtype)
            if name == "llama-partial":  # the mismatch: left, and still a mismatch after
                checks[name] = not any(" replaced" in r for r in found["before"]) and all(
                    a.endswith("mismatch") for a in found["after"]
                )
            else:
                checks[name] = found["replaced_all_that_may_be"] and found["match_after"]
                checks[name] = checks[name] and found["all_sinpes_table"]
        figures["logprobs"] = _vllm_logprobs(Path(folder) / "mistral", device, planted)
    errors = figures["logprobs"]
    checks["logprobs"] = errors["exact"]["100000"] < errors["off"]["100000"]
    checks["logprobs"] = checks["logprobs"] and max(errors["exact"].values()) <= 1e-5
    figures["checks"] = checks
    summary = (f"{sum(checks.values())}/{len(checks)} checks; past 100,000: exact "
               f"{errors['exact']['100000']:.2e}, off {errors['off']['100000']:.2e} "
               f"from float64")  # fmt: skip
    status = "held" if all(checks.values()) else "failed"
    return _step_result(status, summary, figures, vllm=vllm.__version__)


def _vllm_logprobs(folder: Path, device: str, planted: bool = False) -> dict:
    """tests/test_vllm.py's long-prompt recipe on ``device``: a sliding-window Mistral
    (float32), one 100,032-token prompt, SINPE_VLLM off and exact; the largest distance of
    the log-probabilities of its tokens 1-64 and of its last 64 from the float64 reference
    (transformers on the CPU with sinpe's exact table, on the tokens a 64-token window over
    two layers sees)."""
    import numpy as np
    import torch
    import transformers
    import vllm
    import vllm_models

    config = transformers.MistralConfig(
        **vllm_models.TEXT, max_position_embeddings=131072, sliding_window=64,
        rope_parameters=dict(rope_type="default", rope_theta=1e6),
    )  # fmt: skip
    torch.manual_seed(0)
    transformers.MistralForCausalLM(config).save_pretrained(folder)
    n = 100_032
    prompt = np.random.default_rng(0).integers(3, 256, n)
    reference = {"0": _float64_logprobs(folder, prompt[:65], 65)}
    reference["100000"] = _float64_logprobs(folder, prompt, 200)
    if planted:
        reference["100000"][3] += 1e-3
    errors: dict = {}
    for mode in ("off", "exact"):
        os.environ["SINPE_VLLM"] = mode
        llm = _vllm(folder, device, "float32", max_model_len=n + 8)
        try:
            params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0)
            out = llm.generate([{"prompt_token_ids": prompt.tolist()}], params, use_tqdm=False)
        finally:
            del llm
            _free()
        found = np.array([next(iter(d.values())).logprob for d in out[0].prompt_logprobs[1:]])
        errors[mode] = {
            "0": float(np.abs(found[:64] - reference["0"]).max()),
            "100000": float(np.abs(found[-64:] - reference["100000"]).max()),
        }
    return errors


def _float64_logprobs(folder, prompt, k: int):
    """The log-probability of each of the prompt's last 64 tokens, float64 with sinpe's
    exact table, from its last ``k`` tokens at their own positions (as tests/test_vllm.py)."""
    import numpy as np
    import torch
    import transformers

    import sinpe.torch as st

    model = transformers.MistralForCausalLM.from_pretrained(
        folder, dtype=torch.float64, attn_implementation="eager"
    )
    assert st.patch(model.eval(), warn=False)
    n = len(prompt)
    with torch.no_grad():
        ids = torch.tensor(prompt[-k:])[None]
        logits = model(ids, position_ids=torch.arange(n - k, n)[None]).logits[0]
    logprobs = torch.log_softmax(logits, -1)
    return np.array([float(logprobs[k - 65 + j, prompt[n - 64 + j]]) for j in range(64)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    result = step(parser.parse_args().device)
    print(json.dumps(result, indent=1, default=str))
    return 0 if result["status"] == "held" else 1


if __name__ == "__main__":
    sys.exit(main())
