"""The verdict core's words: every reason's words and JSON field (``REASONS``), the causes
said beside a reason (``_EVIDENCE``), the notes (``NOTES``) and the verdicts' own words
(``_TEXTS``). ``verdict.py`` makes every finding and note from them, and only from them: one
finding reads the same whichever engine it comes from."""

from __future__ import annotations

# code -> words. The code is the reason's JSON field (``"code"``); ``{engine}`` is what the
# engine holds, ``{config}`` what the config gives; ``{title}`` the rope type's name in prose
# ("YaRN ", with its space; empty for a plain RoPE).
REASONS = {
    # what every engine can get wrong
    "rotary_width": "rotary width {engine} where the config gives {config}",
    "rotation": "rotates {engine}{detail} where the model's attention rotates {config}",
    "not_a_number": "{what} is {engine}: not a value a RoPE can use",
    "base": "base {engine} where the config gives {config}",
    "attention_factor": "{title}attention factor {engine} where the config gives {config}{detail}",
    "softmax_scale": "softmax scale x{engine} where the config gives x{config} "
    "(yarn mscale_all_dim)",
    "scaling_not_applied": "{title}scaling not applied",
    "uniform_factor": "every frequency divided by {engine}",
    "frequencies": "frequencies differ from the config's by up to {engine} (relative, pair {pair})",
    "table": "at position {position:,} the error is {engine:.3g}, where {config:.3g} is allowed",
    "radius": "at position {position:,}, pair {pair}, cos and sin have magnitude {engine} where "
    "the attention factor is {config}: not an angle's error (one keeps cos^2 + sin^2)",
    "shifted": "the rows are the exact table {engine:+d} positions on (off by {engine:+d}): "
    "it leaves an error of {error:.3g}",
    "not_drift": "the error does not grow as float32 angles make it: at position {position:,}, "
    "pair {pair}, it is {engine:.3g}, where float32 angles err by at most {config:.3g}",
    "length_regime": "{title}{engine} factors at every length (transformers: {config} factors "
    "while the sequence is {op} {original})",
    "past_width": "the module changes the elements past its rotary width",
    "rotation_unknown": "its rotation is neither halves nor pairs: not judged",
    # what ONNX Runtime GenAI's builder and traced exports make of a config
    "ramp_unrounded": "{title}correction range not rounded (truncate): {engine} of {config} "
    "pairs off, up to {error:.0%}",
    "frozen": "{title}frozen to its {engine} factors: no switch in the graph (transformers "
    "switches at the original length {original})",
    # a table's form (a cache file)
    "explanation": "best explanation: {engine}: leaves an error of {error:.3g}",
    "unexplained": "no explanation tried fits better (layouts, offsets 0 and 1, the width "
    "without partial_rotary_factor): the error stays {engine:.3g}",
    "rounded": "the values are rounded to {engine} (stored as {config}), at this config and layout",
    "cache_width": "the cache's width {engine} does not fit the config's rotary dim {config}",
    # a scaling as a GGUF file carries it (llama.cpp's reading)
    "scaling_missing": "{title}scaling missing: {engine}",
    "factor": "{title}factor {engine} where the config gives {config}",
    "original_length": "{title}original context {engine} where the config gives {config}",
    "key_not_read": "{title}{key} {config} in the config: llama.cpp reads none for {arch!r} "
    "(rope.scaling.yarn_{key} is not read)",
    "truncate": "{title}truncate false in the config: llama.cpp always rounds the ramp",
    "factors_missing": "{title}factors missing: no rope_factors_long or rope_factors_short tensor",
    "short_factors_only": "{title}short factors only: no rope_factors_long tensor",
    "factors_swapped": "{title}factors swapped: rope_factors_{engine} holds the config's "
    "{config} ones",
    "factors_differ": "{engine} differ from the config's {config}",
    "factors_chosen": "llama.cpp uses {engine} at context {context:,} where the config uses its "
    "{title}{config} factors (original length {original} in the config, {file} in the file)",
    "factors_elsewhere": "{title}scaling read from {engine}, not rope_freqs",
    "unexpected_tensor": "a {engine} tensor where the config has no such scaling",
    "unexpected_scaling": "{engine} scaling x{factor} where the config has none",
    "no_such_scaling": "llama.cpp has no {title}scaling",
    "unknown_architecture": "llama.cpp {commit} does not know the architecture {engine!r}",
    "no_rope": "llama.cpp runs {engine!r} without RoPE",
    "big_endian": "a big-endian file: llama.cpp reads little-endian GGUF only",
    # why a layer is not judged (unchecked)
    "unknown_class": "{engine} is not a rotary class sinpe knows: not judged",
    "vision": "{engine} belongs to a vision encoder (an image's positions, not the config's "
    "text RoPE): not judged",
    "dual_chunk": "dual-chunk attention keeps five caches of its own",
    "fope": "FoPE mixes its cache with learned weights at the first forward",
    "vision_grid": "a complex 2-D vision grid, not a cos/sin table of positions",
    "inverse_tail": "DeepSeek-V4 rotates the last dimensions, inverse too",
    "padded": "Gemma 4 pads its cache to the head size with cos 1, sin 0",
    "stacked_factors": "{engine} linear scaling factors stacked in one cache",
    "no_cache": "no [cos | sin] cache sinpe knows in it",
    "missing_attribute": "{engine} has no {config}: not judged",
    "unreadable": "{engine} could not be read ({config}): not judged",
    "config_refused": "sinpe.rope_config refuses {engine}: {config}",
    "remote_code": "{engine} is the model's own code (auto_map), which a config alone does "
    "not carry: not judged",
    "layer_of": "the config says no layer type for {engine} (layer_types)",
    # a run line (run.py): the engine's log-probabilities against the exact float64 twin's
    "run_breaks": "at p = {position:,} its log-probabilities are {engine:.3g} from the exact "
    "twin's, where float32 arithmetic and angles allow {config:.3g}: not the config's "
    "model{detail}",
    "run_missing": "the engine did not run p = {engine}",
    "run_no_signal": "the twin's positions move its log-probabilities by {engine:.3g} only "
    "(at least {config:.3g} is needed to tell a RoPE from another)",
}
_EVIDENCE = {  # the causes said beside a reason, in parentheses
    "attn_factor_key": "rope.scaling.attn_factor {engine}",
    "attn_factor_unread": "llama.cpp does not read rope.scaling.yarn_attn_factor for {engine!r}",
    "no_mscale_keys": "GGUF has no key for the config's short_mscale and long_mscale",
    "no_factor_tensor": "no {engine} tensor",
    "no_scaling_type": "no rope.scaling.type where the config gives {title}x{config}",
    "scaling_type": "rope.scaling.type is {engine!r} where the config gives {title}x{config}",
    "neox_style": " (is_neox_style={engine})",
}
NOTES = {
    "written_in_vain": "written but never read by llama.cpp for {arch!r}: {engine}",
    "rotation_as_expected": "llama.cpp rotates {arch!r} as {engine} ({turns}), as the config's "
    "attention does",
    "rotation_permuted": "llama.cpp rotates {arch!r} as {engine} ({turns}); the config's "
    "attention rotates {config} (not in the file: the converter permutes the Q/K weights "
    "where the two differ)",
    "rotation_permuted_weights": "vLLM rotates {engine} and permutes the query and key "
    "weights at load, so the model's {config} rotation is kept",
    "parameters_only": "a file holds parameters: llama.cpp forms its angles in float32 at run "
    "time (docs/engines.md), which no file can show",
    "ties": "{engine} fit{s} equally",
    "ties_mismatch": "{engine} as near: {config} matches",
    "longrope_policy": "the {engine} factors' rows; vLLM uses its {config} factors for every "
    "sequence (max_model_len against the original length), transformers switches per sequence "
    "at the original length",
    "longrope_batch": "the {engine} factors' rows; SGLang switches a whole batch to its long "
    "factors once any of its positions exceeds {config:,} (transformers: each sequence once it "
    "is longer than {config:,}, one position earlier)",
    "grown_rows": "the rows {engine} appended past the {config:,} its class made (SGLang's "
    "reserve_rope_cache_for_long_sequences, before CUDA-graph capture), judged apart",
    "dynamic_static": "{engine}'s cache is static, built at its largest length; transformers' "
    "dynamic base follows the current length (the two agree only for sequences that long)",
    "config_source": "config: {engine}",
    "hf_config_source": "{who}'s hf_config (no config.json found)",
    "hf_config_differs": "{who}'s hf_config reads {engine}",
    "hf_field": "{field} {engine!r} where config.json gives {config!r}",
    "left": "left as {who} made it ({engine})",
    "at_length": "largest error {engine:.3g} up to {length} {config:,}",
    "rounded_twice": "rounded twice: {engine} of {config} entries are not the exact "
    "value rounded once to {dtype} (a float32 table rounded again)",
    "softmax_not_checked": "the attention's softmax scale is not read from this engine",
    "llama4_scale_unread": "the config's llama_4_scaling_beta {config} is not applied: "
    "{engine}'s attention takes Llama 4's query scale from config.llama_4_scaling only (set "
    "from Mistral's params.json), so past {length:,} tokens its queries go unscaled where "
    "transformers scales them by 1 + beta ln(1 + floor(p / {length:,})) (the run line: a "
    "mismatch there)",
    "unread_attention": "the attention's position-dependent query scale could not be read "
    "({engine})",
    "llama4_scale_length": "{engine}'s attention scales its queries by 1 + beta ln(1 + "
    "floor(p / {found})) where transformers divides by the config's original length "
    "{length:,} (rope_parameters' original_max_position_embeddings): from p = {length:,} on, "
    "its queries are scaled otherwise",
}
_TEXTS = {"mismatch": "does not match this config", "misread": "does not read as the config"}
