"""docs/matrix.md: families x engines, each cell the verdict of ``sinpe engines`` on a published
config of the family (tests/data/configs), every disagreement a footnote with the engine's
reasons, the largest error at the trained length and, where it was read in the engine's
source, the file and function it comes from.

    python tools/matrix.py --python vllm=/path/bin/python --python sglang=... \\
        [--out docs/matrix.md] tests/data/configs/NAME.json ...

On several machines (a CI job matrix, .github/workflows/matrix.yml): each runs one shard,
``--shard I/N --json part-I.json`` with the same arguments, and one merges them,
``--merge part-*.json --out docs/matrix.md``: the page is the one machine's but for the
line saying how long it took. A merge refuses parts of different runs, a shard missing or
twice, or a config not run exactly once.

Each engine runs in the interpreter given for it (else this one), as ``sinpe engines
--python`` runs it; an engine absent there is a column of "not installed". SGLang's model
files and vLLM's vision-language ones import torchvision, whose PyPI build does not load
beside a CPU torch: put ``tests/stubs`` (a stand-in, nothing of it runs) on ``PYTHONPATH``.

``--run`` adds each engine's run line (``sinpe engines --run``) and the page's second table,
what each engine computes (``tools/matrix_runs.py``), from the same calls."""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys
import time
from pathlib import Path

import sinpe
from sinpe._engines import ENGINES

# where a disagreement comes from, read in the engine's source (engine key, words of its
# reason[, the only family it was read for: the words alone say too little]) -> the place:
# each "`file`, `function`" the line that raises or reads, the file relative to the engine's
# source root (tests/test_matrix_where.py: ENGINE_ROOTS; `sinpe/...` for sinpe's own limits),
# and checked there by that test in each engine's leg
LLAMA_CPP_BETA_FAST = (
    "`src/llama-model.cpp`, `llama_model_base::load_hparams`: the generic loader reads no "
    "`rope.scaling.yarn_beta_fast`, and `src/models/{file}`, `{loader}`, this "
    "architecture's own, does not either (of the architectures' loaders only "
    "`src/models/grok.cpp`, `llama_model_grok::load_arch_hparams` and "
    "`src/models/mistral3.cpp`, `llama_model_mistral3::load_arch_hparams` read it); "
    "`llama_hparams::yarn_beta_fast` stays 32 (`src/llama-hparams.h`) unless "
    "`--yarn-beta-fast` is given at run time (`src/llama-context.cpp`, "
    "`llama_context::llama_context`)"
)
NO_KERAS_CONVERTER = (
    "`keras_hub/src/utils/transformers/preset_loader.py`, `TransformersPresetLoader."
    "__init__`: the config's `model_type` is none of those its converters take, and its "
    "last branch raises (a limit of keras-hub, not a reading of the RoPE)"
)
WHERE = [
    (
        "vllm",
        "is not a rotary class sinpe knows",
        "`model_executor/models/registry.py`, `_TRANSFORMERS_SUPPORTED_MODELS`: vLLM 0.32.0 "
        "maps this architecture to its Transformers backend (`TransformersForCausalLM`), so "
        "its rotary module is transformers' own (read in the transformers column), not a "
        "vLLM cache sinpe audits",
    ),
    (
        "onnxruntime-genai",
        "KeyError: 'rope_type'",
        '`builders/base.py`, `Model.make_rope_init`: reads `config.rope_parameters["rope_type"]`, '
        "which transformers 5 nests per layer type for Gemma 3",
    ),
    (
        "onnxruntime-genai",
        "AmbiguousGlobalPerLayerAttributeError",
        '`builders/base.py`, `Model.__init__`: `getattr(config, "head_dim", None)`, which '
        "transformers 5.24 refuses for Gemma 4 (its head dim differs by layer type: "
        "`AmbiguousGlobalPerLayerAttributeError`), reached from `builder.py`, `create_model`, "
        "which builds `Gemma4ForConditionalGeneration` as a `Gemma4MoEModel` (a limit of the "
        "builder with this transformers, not a reading of the RoPE)",
        "gemma-4-e2b-it",
    ),
    (
        "llama.cpp",
        "beta_fast",
        LLAMA_CPP_BETA_FAST.format(
            file="laguna.cpp", loader="llama_model_laguna::load_arch_hparams"
        ),
        "laguna-xs.2-fp8",
    ),
    (
        "llama.cpp",
        "beta_fast",
        LLAMA_CPP_BETA_FAST.format(
            file="deepseek2.cpp", loader="llama_model_deepseek2::load_arch_hparams"
        ),
        "kimi-k2-instruct",
    ),
    (
        "onnxruntime-genai",
        "is not currently supported",
        "`builder.py`, `create_model`: the twin's architecture (`config.architectures[0]`, "
        "the config's own; the trimmed Llama 4, without a `vision_config`, is saved as "
        "`Llama4ForCausalLM`, and its own `Llama4ForConditionalGeneration` is not dispatched "
        "either) is none of those it dispatches on, and its last branch raises (a limit of "
        "the builder, not a reading of the RoPE)",
        "llama-4-scout-17b-16e-instruct.trimmed",
    ),
    (
        "onnxruntime-genai",
        "is not currently supported",
        "`builder.py`, `create_model`: the twin's architecture (`config.architectures[0]`, "
        "the config's own class) is none of those it dispatches on, and its last branch "
        "raises (a limit of the builder, not a reading of the RoPE)",
    ),
    (
        "onnxruntime-genai",
        "ZeroDivisionError",
        "`builders/base.py`, `Model.make_inv_freq_rescaled_with_ntk`: divides by `beta_fast` "
        "and `beta_slow` (`ntk_beta`, `ntk_alpha`), which `Model.make_rope_init` sets to 0 "
        "where the config gives none",
    ),
    (
        "onnxruntime-genai",
        "YaRN correction range not rounded",
        "`builders/base.py`, `Model.make_inv_freq_rescaled_with_ntk`: the ramp's ends neither "
        "floored nor ceiled, `truncate` never read",
    ),
    (
        "llama.cpp",
        "not the config's model",
        "`src/models/exaone4.cpp`, `llama_model_exaone4::load_arch_hparams`: its sliding "
        "pattern, and with it the full layers' running without RoPE, is set only for a model "
        "of 64 layers (`if (hparams.n_layer() == 64)`, the 32B); the twin has 4, so llama.cpp "
        "rotates every layer (its graph's `use_rope` holds wherever no sliding type is set): "
        "the twin's layer count, "
        "sinpe's, not the published 32B's (whose table line the GGUF keys give); an EXAONE 4 "
        "of another depth with sliding layers would be run so",
        "exaone-4.0-32b",
    ),
    (
        "llama.cpp",
        "YaRN truncate false",
        "`ggml/src/ggml.c`, `ggml_rope_yarn_corr_dims`: the ramp's ends always floored and "
        "ceiled; no GGUF key carries `truncate`",
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
    ("keras-hub", "has no converter for", NO_KERAS_CONVERTER),
    (
        "keras-hub",
        "YaRN scaling not applied",
        "`keras_hub/src/utils/transformers/convert_qwen.py`, `convert_backbone_config`: "
        "`rope_theta` is read (`rope_max_wavelength`), `rope_scaling` never",
        "qwen2.5-7b-instruct.yarn-4x",
    ),
    (
        "keras-hub",
        "YaRN scaling not applied",
        "`keras_hub/src/utils/transformers/convert_qwen3.py`, `convert_backbone_config`: "
        "`rope_theta` is read (`rope_max_wavelength`), `rope_scaling` never",
        "qwen3-8b.yarn-4x",
    ),
    (
        "keras-hub",
        "the width it is fed",
        "`sinpe/_engines/keras_hub.py`, `read`: the backbone's forward takes images (a "
        "multimodal backbone), so the width each rotary layer is fed is not seen; a layer "
        "whose head width is not its rotary width (a partial rotary factor) is not judged "
        "(sinpe's limit, not keras-hub's reading)",
    ),
    (
        "openvino",
        "does not allow for the export of the model",
        "`optimum/exporters/openvino/convert.py`, `export`: the export configuration of this "
        "model type sets a `MAX_TRANSFORMERS_VERSION` below the leg's transformers 5.5.4 (the "
        "one optimum-intel 2.2.0 takes for the other families: it wants < 5.6), and the export "
        "stops (a limit of the exporter with this transformers, not a reading of the RoPE)",
    ),
    (
        "openvino",
        "custom or unsupported architecture",
        "`optimum/exporters/openvino/__main__.py`, `main_export`: the config's `model_type` is "
        "none of those its export configurations take (a limit of optimum-intel, not a reading "
        "of the RoPE)",
    ),
    (
        "openvino",
        "Unsupported language model type provided",
        "`optimum/exporters/openvino/model_configs.py`, `get_vlm_internal_text_generation_config`: "
        "the vision-language model's language model type is none of those it exports (a limit "
        "of optimum-intel, not a reading of the RoPE)",
    ),
    (
        "openvino",
        "Qwen3_5DynamicCache",
        "`optimum/exporters/openvino/model_patcher.py`, `Qwen3_5ModelPatcher.__init__`: imports "
        "`Qwen3_5DynamicCache` from transformers' `modeling_qwen3_5`, which the leg's "
        "transformers 5.5.4 does not have (a limit of optimum-intel with this transformers, not "
        "a reading of the RoPE)",
    ),
    (
        "openvino",
        "contains custom code",
        "`transformers/dynamic_module_utils.py`, `resolve_trust_remote_code`: the leg's "
        "transformers 5.5.4 (optimum-intel 2.2.0 wants < 5.6) has no class for this "
        "`model_type`, so it takes the config for remote code sinpe does not run (a limit of "
        "the leg's transformers, not a reading of the RoPE)",
        "laguna-xs.2-fp8",
    ),
    (
        "openvino",
        "has no attribute 'pad_token_id'",
        "`sinpe/_engines/_weights.py`, `save_twin`: the trimmed config has no `vision_config`, "
        "so the twin is not built as its own `Llama4ForConditionalGeneration` but by the auto "
        "causal class, which in the leg's transformers 5.5.4 gives the whole `Llama4Config` to "
        "`transformers/models/llama4/modeling_llama4.py`, `Llama4TextModel.__init__` (reading "
        "`config.pad_token_id`): sinpe's twin, not a reading of OpenVINO's",
        "llama-4-scout-17b-16e-instruct.trimmed",
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


def _shard(text: str) -> tuple:
    """``I/N`` (1 <= I <= N) -> (I, N); anything else is refused naming the option."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes I/N, got {text!r}") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard I/N needs 1 <= I <= N, got {text!r}")
    return index, count


def collect(configs, pythons: dict, shard: tuple = (1, 1), run: bool = False) -> dict:
    """Each config of the shard (round robin over the list as given: I, I + N, ...) through
    ``sinpe.engines`` (with each engine's run line where ``run``): a part as strict JSON, the
    whole list named so that a merge can check every config was run once."""
    index, count = shard
    start = time.monotonic()
    rows = []
    for path in list(configs)[index - 1 :: count]:
        began = time.monotonic()
        report = sinpe.engines(path, pythons=pythons, run=run)
        rows.append(
            {
                "config": str(path),
                "family": _family(Path(path)),
                "length": report.length,
                "lines": [line.as_dict() for line in report.lines],
                "notes": list(report.notes),
                "seconds": round(time.monotonic() - began, 1),
            }
        )
        print(f"{Path(path).name}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return {
        "sinpe": sinpe.__version__,
        "engines": [e.key for e in ENGINES],
        "configs": [str(p) for p in configs],
        "pythons": sorted(pythons),
        "run": run,
        "shard": [index, count],
        "rows": rows,
        "seconds": round(time.monotonic() - start, 1),
    }


def merge(parts: list) -> dict:
    """The shards of one run as one: the same sinpe, engines, config list and engine keys,
    shards 1..N each once, every config in exactly one row; refused (ValueError) otherwise."""
    if not parts:
        raise ValueError("merge needs at least one part")
    first = parts[0]
    for part in parts:
        for key in ("sinpe", "engines", "configs", "pythons", "run"):
            if part.get(key) != first.get(key):
                raise ValueError(f"parts differ in {key!r}: {part[key]!r} and {first[key]!r}")
    count = first["shard"][1]
    shards = sorted(part["shard"][0] for part in parts)
    if any(part["shard"][1] != count for part in parts) or shards != list(range(1, count + 1)):
        raise ValueError(f"parts are shards {shards} of {count}: each of 1..{count} once")
    rows = {row["config"]: row for part in parts for row in part["rows"]}
    if sorted(rows) != sorted(first["configs"]) or len(rows) != len(first["configs"]):
        raise ValueError("the parts' rows are not the config list, each config once")
    return {
        **first,
        "shard": [1, 1],
        "shards": count,
        "rows": [rows[c] for c in first["configs"]],
        "seconds": round(sum(part["seconds"] for part in parts), 1),
    }


def render(run: dict) -> str:
    """docs/matrix.md from a run (one machine's, or merged shards'): the same page either way
    but for the line saying how long it took."""
    rows, notes, versions = [], [], {}
    by_key = {e.key: e for e in ENGINES}
    for row in run["rows"]:
        cells = []
        for line in row["lines"]:
            if line["version"]:
                versions[line["engine"]] = line["version"]
            cell = line["verdict"]
            largest = line["largest"]
            reasons = line["reasons"]
            if cell in ("mismatch", "failed", "unchecked"):
                notes.append(
                    f"{line['name']} on `{Path(row['config']).name}`: {cell}"
                    + (f" (largest error {largest:.3g})" if largest is not None else "")
                    + (f": {'; '.join(r.rstrip('.') for r in reasons)}" if reasons else "")
                    + "."
                    + _where(line["engine"], reasons, row["family"])
                    + "".join(
                        f" The config as the engines got it: {note}."
                        for note in row.get("notes", ())
                    )
                )
                cell += f" [{len(notes)}]"
            elif largest is not None:
                cell += f" ({largest:.2g})"
            cells.append(cell)
        rows.append((row["family"], row["length"], cells))
    names = [by_key[k].name + (f" {versions[k]}" if k in versions else "") for k in run["engines"]]
    command = "python tools/matrix.py " + " ".join(f"--python {k}=..." for k in run["pythons"])
    command += " " + " ".join(run["configs"])
    shards = run.get("shards", 1)
    took = f"{run['seconds']:.0f} s" + (
        f" of machine time in {shards} shards (--shard I/{shards}, then --merge)"
        if shards > 1
        else ""
    )
    text = [
        "# Families x engines",
        "",
        f"Generated by `tools/matrix.py` on {datetime.date.today().isoformat()} in "
        f"{took} (sinpe {run['sinpe']}):",
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
    return "\n".join(text + runs_section(run) + ports_section())


def runs_section(run: dict) -> list:
    """The runtime table (tools/matrix_runs.py: what each engine computes, from the run
    lines), after the engines' table, where the run has run lines (``--run``)."""
    path = Path(__file__).resolve().parent / "matrix_runs.py"
    spec = importlib.util.spec_from_file_location("_matrix_runs", path)
    if spec is None or spec.loader is None:
        return []
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.section(run, WHERE)


def ports_section() -> list:
    """The ports table (tools/ports/table.py, from docs/ports/*.json: implementations
    ``sinpe engines`` does not read, judged by the conformance kit), after the engines'."""
    path = Path(__file__).resolve().parent / "ports" / "table.py"
    spec = importlib.util.spec_from_file_location("_ports_table", path)
    if spec is None or spec.loader is None or not path.exists():
        return []
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = module.table()
    if not lines:
        return []
    return [
        "## Ports",
        "",
        "Implementations `sinpe engines` does not read, each in a venv of its own "
        "(`tools/ports/setup.sh`), judged on the conformance kit's corpus by `tools/ports/run.py` "
        "(docs/testing.md): each cell the verdicts of the family's configs, `·` where the port "
        "takes none. The findings, with the port's file and function, the footnotes and each "
        "port's glue: [ports.md](ports.md).",
        "",
        *lines,
        "",
    ]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--python", action="append", default=[], metavar="KEY=PATH")
    parser.add_argument("--out", type=Path, default=Path("docs/matrix.md"))
    parser.add_argument(
        "--shard", type=_shard, metavar="I/N", help="run only shard I of N (round robin)"
    )
    parser.add_argument("--json", type=Path, metavar="PART", help="write the run as JSON here")
    parser.add_argument(
        "--run", action="store_true", help="each engine's run line too: the runtime table"
    )
    parser.add_argument(
        "--merge", nargs="+", type=Path, metavar="PART", help="render the page from shard parts"
    )
    args = parser.parse_args(argv)
    if args.merge:
        if args.configs or args.shard or args.python:
            parser.error("--merge takes parts only: no configs, --shard or --python")
        try:
            run = merge([json.loads(p.read_text()) for p in args.merge])
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"--merge: {error}")
    else:
        if not args.configs:
            parser.error("give the configs to run (or --merge PART ...)")
        if args.shard and not args.json:
            parser.error("--shard writes a part: give --json PART (then --merge the parts)")
        pythons = dict(item.split("=", 1) for item in args.python)
        run = collect(args.configs, pythons, args.shard or (1, 1), run=args.run)
        if args.json:
            _write(args.json, json.dumps(run, indent=1, allow_nan=False) + "\n")
            print(f"wrote {args.json} ({len(run['rows'])} configs)", file=sys.stderr)
        if args.shard:
            return 0
    _write(args.out, render(run))
    print(
        f"wrote {args.out} ({len(run['rows'])} families, {len(run['engines'])} engines)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
