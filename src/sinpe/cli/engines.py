"""``sinpe engines CONFIG``: one line per engine for one model's config (``sinpe.engines``)."""

from __future__ import annotations

import argparse

from .arguments import AddCommand, UsageError


def add_engines_arguments(command: AddCommand) -> None:
    """The ``engines`` subcommand and its arguments."""
    parser = command(
        "engines",
        "each engine's reading of one model's RoPE, side by side (transformers, vLLM, "
        "SGLang, ONNX Runtime GenAI, llama.cpp, MLX-LM, keras-hub, OpenVINO), from the engine's "
        "own code on a tiny twin of the config",
    )
    parser.add_argument(
        "config",
        help="the model's config.json, its folder, or a Hugging Face Hub id (org/name, "
        "through huggingface_hub's cache; HF_HUB_OFFLINE respected) (required)",
    )
    parser.add_argument(
        "--length",
        type=int,
        default=None,
        help="the deployment length judged up to (default: the config's trained length, "
        "max_position_embeddings)",
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="the interpreter of an engine installed in a venv of its own (with this sinpe "
        "beside it), e.g. vllm=/opt/vllm/bin/python; repeat per engine (default: this "
        "interpreter for every engine)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="KEY",
        help="run this engine only (repeat for more; keys: transformers, vllm, sglang, "
        "onnxruntime-genai, llama.cpp, mlx-lm, keras-hub, openvino; default: all)",
    )
    parser.add_argument(
        "--run",
        action="store_true",
        help="also each engine's run line: the twin with random weights run by the engine at "
        "positions p .. p + 31 for p = 0, 100,000 and the trained length, its log-probabilities "
        "judged against the twin in float64 with sinpe's exact tables (needs torch and "
        "transformers in the transformers interpreter)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _pythons(given: list) -> dict:
    pythons = {}
    for item in given:
        key, sep, path = item.partition("=")
        if not sep or not key or not path:
            raise UsageError(
                f"--python takes KEY=PATH (e.g. vllm=/opt/vllm/bin/python), got {item!r}"
            )
        pythons[key] = path
    return pythons


def engines_command(args: argparse.Namespace):
    """``sinpe engines``: the lines printed, or with ``--json`` the report returned as one
    object for ``main`` to print; exit 0 when every installed engine matches or drifts (or
    is not judged), 1 when one mismatches or fails on the twin. A config sinpe refuses or a
    wrong argument raises: ``main`` says it, exit 2 (with ``--json``, one refusal object)."""
    from .._engines import ABSENT, engines

    report = engines(
        args.config,
        length=args.length,
        pythons=_pythons(args.python),
        only=args.only,
        run=args.run,
    )
    if args.json:
        return report.as_dict()
    print(
        f"{report.config}: RoPE as each engine runs it, judged up to position {report.length - 1:,}"
    )
    for note in report.notes:
        print(f"  ({note})")
    for line in report.lines:
        print(f"  {line.text}")
        if line.how and line.verdict != ABSENT:
            print(f"      read: {line.how}" + (f" (python: {line.python})" if line.python else ""))
        if line.run is not None and line.run.verdict != ABSENT:
            print(f"    {line.run.text}")
    return report.exit_code
