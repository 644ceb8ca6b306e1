"""docs/matrix.md's second table: what each engine computes (``sinpe engines --run``), one
cell per family and engine: the run line's verdict and its distance from the exact float64
twin at the farthest ``p`` the engine ran (docs/engines.md, "What each engine computes").
Where the run line and the table line disagree (a right table applied wrongly, or a wrong
one that does not show in the logits), the footnote is the finding; ``WHERE_RUN`` names the
engine's file and function where it was read in the engine's source.

``tools/matrix.py --run`` collects the run lines with the table lines (one ``sinpe.engines``
call per config) and renders this section after the table's."""

from __future__ import annotations

from pathlib import Path

_PHI = ("phi-3.5-mini-instruct.autoconfig-dump", "phi-4-mini-instruct.markdown-block")
_PHI_WHY = (
    "for every sequence, the 32 tokens at p = 0 too, where transformers (and the exact twin "
    "with it) switch per sequence at the original length and rotate a short one with the "
    "short factors: the same distance at p = 0 in vLLM, llama.cpp and MLX-LM, and a drift "
    "at the far p, where both use the long factors (the table line's note says the policy)"
)

# (engine key, words of its run line's reasons or notes[, the only families: a name or a
# tuple of them]) -> the place. A file named ``transformers/...`` is the transformers
# installed beside the engine (tests/test_matrix_where.py finds it there).
_BETAS = (
    "the table line's finding: llama.cpp reads no YaRN `beta_fast` or `beta_slow` for this "
    "architecture ({file}, {loader}), so its ramp is the default 32 and 1's, and the "
    "frequencies in it are not the config's; a RoPE's error is in every relative position, "
    "so the distance is flat in p, p = 0 included. Shown: the same run with the config's "
    "betas given to llama.cpp at run time (the context's `yarn_beta_fast` and "
    "`yarn_beta_slow`, `src/llama-context.cpp`, `llama_context::llama_context`) drifts as "
    "transformers does ({shown})"
)

WHERE_RUN: list = [
    (
        "llama.cpp",
        "not the config's model",
        _BETAS.format(
            file="`src/models/deepseek2.cpp`",
            loader="`llama_model_deepseek2::load_arch_hparams`",
            shown="0.0 at p = 0, 0.00098 at 131,040",
        ),
        "kimi-k2-instruct",
    ),
    (
        "llama.cpp",
        "not the config's model",
        _BETAS.format(
            file="`src/models/laguna.cpp`",
            loader="`llama_model_laguna::load_arch_hparams`",
            shown="0.0 at p = 0, 0.036 at 262,112",
        ),
        "laguna-xs.2-fp8",
    ),
    (
        "llama.cpp",
        "not the config's model",
        "the table line's finding: `ggml/src/ggml.c`, `ggml_rope_yarn_corr_dims` always "
        "floors and ceils the YaRN ramp's ends, where the config says `truncate: false`; a "
        "RoPE's error is in every relative position, so p = 0 shows it. Shown: judged against "
        "the config with `truncate: true` (what llama.cpp does), the same llama.cpp run drifts "
        "(2e-05 at p = 0, 0.036 at 131,040) and the table line is a match",
        "gpt-oss-20b",
    ),
    (
        "keras-hub",
        "not the config's model",
        "`keras_hub/src/utils/transformers/convert_llama3.py`, `convert_backbone_config`: it "
        "passes no `layer_norm_epsilon`, so every RMSNorm of the backbone uses "
        "`LlamaBackbone`'s default 1e-6 where the config's `rms_norm_eps` is 1e-5: the first "
        "decoder layer departs at p = 0 already (a reading of the config, not of the RoPE)",
        "llama-3.1-8b",
    ),
    (
        "keras-hub",
        "not the config's model",
        "`keras_hub/src/utils/transformers/convert_qwen.py`, `convert_backbone_config`: "
        "`rope_scaling` is never read (the table line's finding), so YaRN's attention factor "
        "(1 + 0.1 ln 4 = 1.139 on cos and sin, 1.30 on every query-key product) is missing at "
        "p = 0 already, and its frequencies at the far p",
        "qwen2.5-7b-instruct.yarn-4x",
    ),
    (
        "keras-hub",
        "not the config's model",
        "`keras_hub/src/utils/transformers/convert_qwen3.py`, `convert_backbone_config`: "
        "`rope_scaling` is never read (the table line's finding), so YaRN's attention factor "
        "(1 + 0.1 ln 4 = 1.139 on cos and sin, 1.30 on every query-key product) is missing at "
        "p = 0 already, and its frequencies at the far p",
        "qwen3-8b.yarn-4x",
    ),
    (
        "keras-hub",
        "not the config's model",
        "`keras_hub/src/utils/transformers/convert_mistral.py`, `convert_weights`: every "
        "weight is rounded to float16 on the way in (`hf_tensor.astype(np.float16)`), an "
        "error beyond float32's at every p, the rotation's or not",
        "mistral-7b-instruct-v0.3.markdown-block",
    ),
    (
        "vllm",
        "not the config's model",
        "`model_executor/models/mistral.py`, `MistralAttention.__init__`: Llama 4's "
        "position-dependent query scale (`_get_llama_4_attn_scale`: 1 + beta ln(1 + "
        "floor(p / 8,192)), 1.26 at p = 100,000) is applied only where `config.llama_4_scaling` "
        "is set, which vLLM's reader of Mistral's own params.json "
        "(`transformers_utils/configs/mistral.py`) does; a config.json holds it as "
        '`rope_parameters["llama_4_scaling_beta"]` (transformers\' '
        "`transformers/models/ministral3/modeling_ministral3.py`, "
        "`Ministral3Attention.forward`, reads it there), which vLLM never reads: past the "
        "original length its queries go unscaled. Shown: the same run with `llama_4_scaling` "
        "filled from `rope_parameters` before vLLM builds its attention drifts as transformers "
        "does (0.0035 at 100,000, 0.0086 at 393,184)",
        "devstral-small-2-24b-instruct",
    ),
    (
        "vllm",
        "not the config's model",
        "`model_executor/models/registry.py`, `_TRANSFORMERS_SUPPORTED_MODELS`: vLLM runs this "
        "architecture with its Transformers backend, so with the rotary module of the "
        "transformers installed beside it (vLLM 0.32.0 requires transformers < 5.20; 5.19.0 "
        "in its leg): `transformers/models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py`, "
        "`HunYuanDenseV1RotaryEmbedding.forward`, labelled `dynamic` with a fixed `alpha`, "
        "is wrapped in `dynamic_rope_update` (`transformers/modeling_rope_utils.py`, "
        "`dynamic_rope_update`), which past the original length (32,768) recomputes the "
        "frequencies as dynamic NTK without `alpha`: the last frequency 1.15e-07 becomes "
        "3.78e-05 at p = 100,000 (read in vLLM's process). transformers 5.24 (the "
        "transformers column) gives a fixed alpha its own type, `ntk_alpha`, whose frequencies "
        "stay: a defect of transformers 5.19 that vLLM's backend inherits",
        "hunyuan-promptenhancer-7b",
    ),
    (
        "vllm",
        "not the config's model",
        "`model_executor/layers/rotary_embedding/phi3_long_rope_scaled_rope.py`, "
        "`Phi3LongRoPEScaledRotaryEmbedding.forward`: with `use_long_rope` (set in `__init__` "
        "when `max_model_len` exceeds `original_max_position_embeddings`) it rotates with the "
        "long factors' rows " + _PHI_WHY,
        _PHI,
    ),
    (
        "llama.cpp",
        "not the config's model",
        "`src/llama-model.cpp`, `llama_model::get_rope_factors`: the long factors "
        "(`rope_long`) whenever the context per sequence (`n_ctx_seq`) is longer than the "
        "original length (`n_ctx_orig_yarn`), " + _PHI_WHY,
        _PHI,
    ),
    (
        "mlx-lm",
        "not the config's model",
        "`mlx_lm/models/rope_utils.py`, `SuScaledRoPE.__init__`: the long factors only "
        "(`self._freqs`; the short ones are taken and never used), " + _PHI_WHY,
        _PHI,
    ),
    (
        "vllm",
        "fused_moe/router/cpu_router.py",
        "`model_executor/layers/fused_moe/router/cpu_router.py`, "
        "`CPURouter._compute_routing`: on the CPU, experts without grouped top-k or a routing "
        "function of their own are routed by softmax only (`assert self.scoring_func == "
        '"softmax"`); this model scores its experts with a sigmoid (MiniMax-M2: the '
        "config's `scoring_func`; Laguna: `model_executor/models/laguna.py` sets it), as the "
        "published model does: a limit of vLLM's CPU path, not a reading of the RoPE",
    ),
    (
        "mlx-lm",
        "not the config's model",
        "the table line's finding: `mlx_lm/models/rope_utils.py`, `YarnRoPE.__init__` always "
        "floors and ceils the YaRN ramp's ends, where the config says `truncate: false`; a "
        "RoPE's error is in every relative position, so p = 0 shows it. Shown: judged against "
        "the config with `truncate: true` (what MLX-LM does), the same MLX-LM run drifts "
        "(5.3e-05 at p = 0, 0.034 at 131,040). The run model's experts are given as the "
        "published checkpoint holds them, in MXFP4 (`sinpe/_check/published.py`, "
        "`published_layout`): `mlx_lm/models/gpt_oss.py`, `Model.sanitize` turns unquantized "
        "`gate_up_proj` and `down_proj` tensors, as transformers saves them, into names its "
        "model has no parameter for",
        "gpt-oss-20b",
    ),
    (
        "onnxruntime-genai",
        "not the config's model",
        "`builders/base.py`, `Model.__init__`: the LayerNorm epsilon is read from "
        "`rms_norm_eps` only (`epsilon = config.rms_norm_eps if hasattr(config, "
        '"rms_norm_eps") else 1e-06`); Phi-2 names it `layer_norm_eps` (1e-5), so every '
        "LayerNorm of the graph uses 1e-6 and the first layer departs at p = 0 already (a "
        "reading of the config, not of the RoPE). Shown: the same built model with its "
        "LayerNorms' epsilon set to 1e-5 is 7.4e-07 from the exact twin at p = 0 and 5.3e-06 "
        "at 2,016",
        "phi-2",
    ),
    (
        "onnxruntime-genai",
        "not the config's model",
        "the table line's finding: `builders/base.py`, `Model.make_inv_freq_rescaled_with_ntk` "
        "neither floors nor ceils the YaRN ramp's ends (`truncate` never read), an error in "
        "every relative position, p = 0 included; and Llama 4's query scale "
        "(`rope_parameters`' `llama_4_scaling_beta`, 1.26 at p = 100,000) is read nowhere in "
        "the builder, whose attention scale is the constant `1 / np.sqrt(self.head_size)` "
        "(`builders/base.py`, `Model.__init__`). Shown: with `truncate: false` the same run is "
        "1.9e-06 at p = 0 and 0.34 at 100,000; with `llama_4_scaling_beta: 0` too it drifts "
        "(0.002 at 100,000, 0.0039 at 393,184)",
        "devstral-small-2-24b-instruct",
    ),
    (
        "vllm",
        "CPU GDN attention requires BF16",
        "`model_executor/layers/mamba/ops/cpu/gdn_attention.py`, `cpu_gdn_attention_core`: on "
        "the CPU, the Gated DeltaNet (linear-attention) layers run only in bfloat16 (`assert "
        "mixed_qkv.dtype == torch.bfloat16`, reached from "
        "`model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py`, "
        "`QwenGatedDeltaNetAttention.forward_cpu`, at the first batch), and the run is "
        "float32; the published model is bfloat16, so it passes there. A limit of vLLM's CPU "
        "path, not a reading of the RoPE (its full-attention layers' table is the table "
        "line's). Not judged in bfloat16: run so (with the twin's linear head dims at the "
        "published 128, which `chunk_gated_delta_rule_cpu` needs), vLLM is 0.16 (Qwen3.5) and "
        "0.068 (Qwen3-Next) from the float64 twin at every p, p = 0 included, as transformers "
        "in bfloat16 with exact tables is (0.16, 0.67): bfloat16's rounding, four decades "
        "past float32's bound (5e-05) and above the drift a RoPE's float32 angles make",
    ),
    (
        "mlx-lm",
        "not the config's model",
        "`mlx_lm/models/gemma3_text.py`, `ModelArgs`: only the legacy `rope_theta`, "
        "`rope_local_base_freq` and `rope_scaling` keys, not the `rope_parameters` "
        "transformers 5 writes, so the full layers rotate without the linear factor 8 "
        "(`Attention.__init__`, `initialize_rope(..., scaling_config=args.rope_scaling)`, "
        "None; the bases are the class defaults, which happen to be the config's). A "
        "scaling's error is in every relative position, so the distance is flat in p, p = 0 "
        "included (0.929). Shown: the same config in the legacy keys runs 0.245 from the exact "
        "twin at p = 0, and the rest is no RoPE: `Gemma3Model.__call__` scales the embeddings "
        "by the square root of the width rounded to bfloat16 (`mx.array(self.args.hidden_size"
        "**0.5, mx.bfloat16)`), where transformers rounds it to the weights' dtype (float32 "
        "here); with both, the run matches at p = 0 (0.0032) and drifts at the far p (0.31 at "
        "131,040)",
        "gemma-3-4b-it.transformers-5",
    ),
    (
        "llama.cpp",
        "not the config's model",
        "`src/models/qwen2vl.cpp`, `llama_model_qwen2vl::load_arch_hparams`: it reads only the "
        "M-RoPE sections, never the RMS norm's epsilon (`LLM_KV_ATTENTION_LAYERNORM_RMS_EPS`, "
        "which `src/models/qwen2.cpp`, `llama_model_qwen2::load_arch_hparams` reads; the "
        "`// fall through` left after it is the old switch's, into Qwen2's case), so every RMS "
        "norm runs with epsilon 0 (its log: `f_norm_rms_eps = 0.0e+00`; the file holds "
        "1e-06): the embeddings match, the first norm's output departs (1.4e-3 relative), the "
        "same at every p, no RoPE's. Shown: against the exact twin with `rms_norm_eps` 0 the "
        "same run matches at p = 0 (1.0e-06) and drifts at the far p (0.0043 at 127,968), as "
        "transformers does",
        "qwen2.5-vl-7b-instruct",
    ),
]

_JUDGED = ("match", "drift")


def _where(key: str, words: str, family: str, table_where=()) -> str:
    """The place of a run line's footnote: the first ``WHERE_RUN`` entry whose engine, words
    and families fit; else the table's (``tools/matrix.py``'s ``WHERE``) where the run line
    says what a table line of that engine said (the same error raised building or loading the
    run model: a builder's dispatch, a converter's refusal, an exporter's version cap)."""
    for engine, said, place, *only in [*WHERE_RUN, *table_where]:
        families = (only[0],) if only and isinstance(only[0], str) else (only[0] if only else ())
        if engine == key and said in words and (not families or family in families):
            return f" Where: {place}."
    return ""


def _cell(line: dict) -> tuple:
    """``(text, footnote or None)`` of one engine's run line."""
    run = line.get("run")
    if run is None:
        return "not run", None
    verdict = run["verdict"]
    rows = run.get("distances") or []
    far = max(rows, key=lambda r: r["p"]) if rows else None
    shown = f" ({far['distance']:.2g} at {far['p']:,})" if far else ""
    said = "; ".join(r.rstrip(".") for r in run.get("reasons", ()))
    notes = "; ".join(n.rstrip(".") for n in run.get("notes", ()))
    disagree = (verdict in _JUDGED) != (line["verdict"] in _JUDGED)
    if verdict == "not installed":
        return verdict, None
    if verdict in _JUDGED and not disagree and not notes:
        return verdict + shown, None
    text = f"{verdict}{shown}" + (f": {said}" if said else "") + (f" ({notes})" if notes else "")
    if disagree:
        text += f"; the table line says {line['verdict']}"
    return verdict + shown, text


def section(run: dict, table_where=()) -> list:
    """The runtime table's lines (empty where the run has no run lines); ``table_where``: the
    table's places (``tools/matrix.py``'s ``WHERE``), a footnote's place where no
    ``WHERE_RUN`` entry names one."""
    if not any(line.get("run") for row in run["rows"] for line in row["lines"]):
        return []
    names, versions, rows, notes = {}, {}, [], []
    ran = [row for row in run["rows"] if any(line.get("run") for line in row["lines"])]
    for row in ran:
        cells = []
        for line in row["lines"]:
            names[line["engine"]] = line["name"]
            if line.get("version"):
                versions[line["engine"]] = line["version"]
            text, note = _cell(line)
            if note is not None:
                words = note
                notes.append(
                    f"{line['name']} on `{Path(row['config']).name}`: {note}."
                    + _where(line["engine"], words, row["family"], table_where)
                )
                text += f" [r{len(notes)}]"
            cells.append(text)
        rows.append((row["family"], cells))
    heads = [names[k] + (f" {versions[k]}" if k in versions else "") for k in run["engines"]]
    lines = [
        "## What each engine computes",
        "",
        'Each cell is the run line of `sinpe engines --run` (docs/engines.md, "What each engine '
        "computes\"): the engine runs the family's twin with random weights, its query and key "
        "sharpened, on 32 tokens at positions `p .. p + 31` for p = 0, 100,000 and the trained "
        "length's last 32 (an engine that cannot set positions: the farthest its prefill "
        "reaches, said), judged against the twin in float64 with sinpe's exact tables; in "
        "parentheses, the largest distance of the log-probabilities at the farthest `p` run. "
        "A footnote (`[rN]`) where the line says more, and wherever the run line and the table "
        "line above disagree: that is the finding."
        + (
            f" Run so far for {len(ran)} of the {len(run['rows'])} families"
            + (f", in {run['run_seconds']:.0f} s" if run.get("run_seconds") else "")
            + " (the others: not yet run)."
            if len(ran) < len(run["rows"])
            else (
                f" Run for all {len(ran)} families in {run['run_seconds']:.0f} s."
                if run.get("run_seconds")
                else ""
            )
        ),
        "",
        "| family | " + " | ".join(heads) + " |",
        "| --- | " + " | ".join("---" for _ in heads) + " |",
    ]
    lines += [f"| {family} | " + " | ".join(cells) + " |" for family, cells in rows]
    lines += ["", *[f"r{i}. {note}" for i, note in enumerate(notes, 1)], ""]
    return lines
