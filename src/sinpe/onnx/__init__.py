"""sinpe for ONNX models (ONNX Runtime GenAI's builder, optimum's exports): ``check(path,
config)`` judges the RoPE a model holds (its cos/sin caches, or a traced ``inv_freq``) against
its config, in the words of every engine's verdict (``sinpe check model.onnx``);
``fix(path, out, config)`` writes a copy whose caches are sinpe's exact tables (``sinpe check
model.onnx --fix OUT``). Neither imports onnx or onnxruntime: the model is read by sinpe's
own bounded reader. docs/onnx.md has the details."""

from .._check.onnx import OnnxPart, OnnxReport, find_caches
from .._check.onnx import check_onnx as check
from .._check.onnx_fix import fix

__all__ = ["OnnxPart", "OnnxReport", "check", "find_caches", "fix"]
