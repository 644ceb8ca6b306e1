"""llama.cpp's rotation type per GGUF architecture, read from its source.

    python tools/llama_cpp_rope.py LLAMA_CPP_DIR [--write src/sinpe/_check/llama_cpp_types.py]

``LLAMA_CPP_DIR`` is a llama.cpp checkout (llama-cpp-python's sdist has it under
``vendor/llama.cpp``). The table is ``llama_model_rope_type`` in ``src/llama-model.cpp`` (a
``switch`` of ``case LLM_ARCH_*:`` groups, each ending in ``return LLAMA_ROPE_TYPE_*;``), with
the architectures' GGUF names from ``LLM_ARCH_NAMES`` in ``src/llama-arch.cpp``. A case whose
code chooses at run time (``use_mrope()``, DFlash's fields) is written as its types joined by
``|``. The engine leg's test extracts the table from the pinned sdist and compares it with the
module this writes (``tests/test_llama_cpp.py``).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

_NAMES = re.compile(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\"([^\"]*)\"\s*\}")
_SIGNATURE = "llama_rope_type llama_model_rope_type(const llama_model * model) {"


def _names(source: str) -> dict:
    block = re.search(r"LLM_ARCH_NAMES\s*=\s*\{(.*?)\n\};", source, re.S)
    if block is None:
        raise SystemExit("LLM_ARCH_NAMES not found in src/llama-arch.cpp")
    return dict(_NAMES.findall(block.group(1)))


def _switch(source: str) -> dict:
    """``LLM_ARCH_*`` -> the rope type(s) its case returns."""
    start = source.index(_SIGNATURE)
    body = source[start:]
    body = re.sub(r"//[^\n]*", "", body[: body.index("\n}\n")])
    pending: list = []
    table = {}
    for token in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|return\s+([^;]+);", body):
        if token.group(1):
            pending.append(token.group(1))
            continue
        if not pending:  # a second return in the same case: gathered below
            continue
        if not re.findall(r"LLAMA_ROPE_TYPE_(\w+)", token.group(2)):
            pending = []
            continue
        end = body.find("case ", token.end())
        kinds: list = []
        for kind in re.findall(r"LLAMA_ROPE_TYPE_(\w+)", body[token.start() : end]):
            if kind not in kinds:
                kinds.append(kind)
        for arch in pending:
            table[arch] = "|".join(kinds)
        pending = []
    return table


def extract(root: pathlib.Path) -> dict:
    """``{GGUF architecture name: rope type}`` from a llama.cpp checkout."""
    names = _names((root / "src/llama-arch.cpp").read_text())
    switch = _switch((root / "src/llama-model.cpp").read_text())
    unnamed = sorted(set(switch) - set(names) - {"LLM_ARCH_UNKNOWN"})
    if unnamed:
        raise SystemExit(f"in the switch but not in LLM_ARCH_NAMES: {unnamed}")
    return {names[enum]: kind for enum, kind in switch.items() if enum != "LLM_ARCH_UNKNOWN"}


# the RoPE keys an architecture's own loader may read (the generic loader reads the others)
_ARCH_KEYS = {
    "LLM_KV_ROPE_FREQ_BASE_SWA": "rope.freq_base_swa",
    "LLM_KV_ROPE_SCALING_YARN_BETA_FAST": "rope.scaling.yarn_beta_fast",
    "LLM_KV_ROPE_SCALING_YARN_BETA_SLOW": "rope.scaling.yarn_beta_slow",
    "LLM_KV_ROPE_SCALING_YARN_EXT_FACTOR": "rope.scaling.yarn_ext_factor",
    "LLM_KV_ROPE_SCALING_YARN_ATTN_FACTOR": "rope.scaling.yarn_attn_factor",
    "LLM_KV_ROPE_SCALING_YARN_LOG_MUL": "rope.scaling.yarn_log_multiplier",
}


def _loaders(root: pathlib.Path, names: dict) -> dict:
    """GGUF architecture name -> the body of its ``load_arch_hparams`` (its class from the
    ``case LLM_ARCH_X: return new llama_model_y(params);`` of ``src/llama-model.cpp``)."""
    source = (root / "src/llama-model.cpp").read_text()
    classes: dict = {}
    pending: list = []
    for token in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|return new (llama_model_\w+)", source):
        if token.group(1):
            pending.append(token.group(1))
        elif pending:
            classes.update({arch: token.group(2) for arch in pending})
            pending = []
    bodies = {}
    for path in sorted((root / "src/models").glob("*.cpp")):
        text = path.read_text()
        for found in re.finditer(r"void (llama_model_\w+)::load_arch_hparams\([^)]*\)\s*\{", text):
            end = text.find("\n}\n", found.end())
            bodies[found.group(1)] = (text[found.end() : end], text)
    return {names[a]: bodies.get(c, ("", "")) for a, c in classes.items() if a in names}


# a graph that rotates its sliding-window layers without the factor tensor (Gemma 4's
# full layers carry proportional RoPE in rope_freqs; Step-3.5)
_SWA_NO_FACTORS = re.compile(
    r"is_swa\w*\s*\?\s*nullptr\s*:\s*model\.(?:layers\[il\]\.rope_freqs|get_rope_factors)"
    r"|if\s*\(\s*!\s*hparams\.is_swa\(il\)\s*\)\s*\{[^}]*rope_freqs"
)


def arch_rules(root: pathlib.Path) -> dict:
    """What each architecture's own loader does to the RoPE: the keys it reads beyond the
    generic ones, where its sliding-window layers' base and scale come from ("full": copied
    from the full layers', else the file's ``rope.freq_base_swa`` or 10000, and 1), a YaRN
    ``beta_fast`` default of its own, and ``swa_factors`` "none" where its graph rotates the
    sliding-window layers without the factor tensor. Only architectures with one of these."""
    names = _names((root / "src/llama-arch.cpp").read_text())
    rules = {}
    for arch, (body, graph) in sorted(_loaders(root, names).items()):
        body = re.sub(r"//[^\n]*", "", body)
        found: dict = {}
        if _SWA_NO_FACTORS.search(re.sub(r"//[^\n]*", "", graph)):
            found["swa_factors"] = "none"
        reads = sorted(key for enum, key in _ARCH_KEYS.items() if re.search(enum + r"\b", body))
        if reads:
            found["reads"] = reads
        if re.search(r"rope_freq_base_train_swa\s*=\s*hparams\.rope_freq_base_train\b", body):
            found["swa_base"] = "full"
        if re.search(r"rope_freq_scale_train_swa\s*=\s*hparams\.rope_freq_scale_train\b", body):
            found["swa_scale"] = "full"
        beta = re.search(r"hparams\.yarn_beta_fast\s*=\s*([0-9.]+)f?;", body)
        if beta:
            found["beta_fast"] = float(beta.group(1))
        if re.search(r"rope_yarn_log_mul\s*/=\s*0\.1f?", body):
            found["log_mul"] = "x10"
        if found:
            rules[arch] = found
    return rules


def scaling_types(root: pathlib.Path) -> dict:
    """``rope.scaling.type``'s strings (``LLAMA_ROPE_SCALING_TYPES``): ``{"YARN": "yarn", ...}``;
    any other string is an abort in llama.cpp."""
    source = (root / "src/llama-model.cpp").read_text()
    block = re.search(r"LLAMA_ROPE_SCALING_TYPES\s*=\s*\{(.*?)\n\};", source, re.S)
    if block is None:
        raise SystemExit("LLAMA_ROPE_SCALING_TYPES not found in src/llama-model.cpp")
    found = re.findall(r"LLAMA_ROPE_SCALING_TYPE_(\w+)\s*,\s*\"([^\"]*)\"", block.group(1))
    return dict(found)


def _commit(root: pathlib.Path) -> str:
    """The checkout's commit, where its git metadata says it (else "unknown")."""
    from sinpe._engines.llama_cpp import commit_of

    return commit_of(root) or "unknown"


def module_text(table: dict, rules: dict, scaling: dict, commit: str, origin: str) -> str:
    rows = "\n".join(f"    {name!r}: {table[name]!r}," for name in sorted(table))
    rule_rows = "\n".join(f"    {name!r}: {rules[name]!r}," for name in sorted(rules))
    return f'''"""llama.cpp's rotation type for each GGUF architecture (``llama_model_rope_type``),
from {origin}, llama.cpp {commit}. NORM rotates element pairs ``(2i, 2i+1)``,
NEOX ``(i, i + n_rot/2)``, MROPE and IMROPE are NEOX-ordered with a position per section
(contiguous or interleaved), NONE has no RoPE; ``A|B`` is chosen by the file (``use_mrope()``:
``rope.dimension_sections`` with its first two entries > 0). Generated by
tools/llama_cpp_rope.py: do not edit by hand."""

LLAMA_CPP = {commit!r}
ORIGIN = {origin!r}

# rope.scaling.type's strings, by llama.cpp's enum names (LLAMA_ROPE_SCALING_TYPES); any
# other string is an abort in llama.cpp
SCALING_TYPES: dict[str, str] = {scaling!r}

ROPE_TYPES: dict[str, str] = {{
{rows}
}}

# each architecture's own loader (``load_arch_hparams`` in src/models/): "reads", the RoPE keys
# it reads beyond the generic loader's (a key it does not read is written in vain); "swa_base"
# and "swa_scale" "full" where its sliding-window layers copy the full layers' base and
# scale (else the file's rope.freq_base_swa or 10000, and 1); "beta_fast", its own YaRN
# default; "log_mul" "x10" where rope.scaling.yarn_log_multiplier is divided by 0.1;
# "swa_factors" "none" where its graph (src/models/) rotates the sliding-window layers without
# the factor tensor
ARCH_RULES: dict[str, dict] = {{
{rule_rows}
}}
'''


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=pathlib.Path, help="a llama.cpp checkout")
    parser.add_argument("--write", type=pathlib.Path, help="write the data module here")
    parser.add_argument("--origin", default="llama-cpp-python 0.3.36's sdist")
    args = parser.parse_args(argv)
    table = extract(args.root)
    rules, scaling = arch_rules(args.root), scaling_types(args.root)
    text = module_text(table, rules, scaling, _commit(args.root), args.origin)
    if args.write:
        args.write.write_text(text)
        print(f"wrote {len(table)} architectures to {args.write}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
