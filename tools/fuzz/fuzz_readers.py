"""Coverage-guided fuzzing of sinpe's file readers with atheris (pinned: atheris==3.0.0).

    python tools/fuzz/fuzz_readers.py FORMAT [libFuzzer options] [corpus folders]
    python tools/fuzz/fuzz_readers.py npz -max_total_time=180 -timeout=10 /tmp/c tests/data/fuzz/npz

FORMAT is one of npy, npz, safetensors, pt, gguf, onnx, openvino. Each input is written to a
file of that suffix and read as ``sinpe check`` reads it (``files.load``, ``gguf_file.read``,
``onnx_file.read`` and every tensor's values; an OpenVINO IR's XML beside a fixed ``.bin`` of
``OPENVINO_BIN`` bytes, ``openvino_file.read``, every float Const's values and the check's
walks of its graph); the only accepted outcome besides a reading is
a ``ValueError`` (the refusal). Anything else, and a refusal that says "out of memory" (the
reader allocated what the file asked for), is a finding: libFuzzer stops, and the input is
kept in the current folder (``finding-<sha1>.<format>``). The process runs under an
address-space limit (``SINPE_FUZZ_ADDRESS_SPACE_GIB``, default 4), so an allocation a file
asks for fails here instead of swapping the machine; ``-timeout=10`` makes a slow input a
finding too. The seeds are small valid files written by the project's test helpers:
``tools/fuzz/seeds.py`` writes them to ``tests/data/fuzz/<format>/``.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
import tempfile
from array import array

import atheris

FORMATS = ("npy", "npz", "safetensors", "pt", "gguf", "onnx", "openvino")
MAX_VALUES = 1 << 12  # values of one ONNX tensor read per input (the check reads rows)
OPENVINO_BIN = 4096  # the .bin beside each IR: float32 values 0, 1, 2, ...


def _limit_address_space(gib: float) -> None:
    limit = int(gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _reader(fmt: str):
    """The function reading a file of ``fmt``, its modules imported under instrumentation."""
    if fmt == "pt":
        import torch  # noqa: F401  (imported before instrumenting: torch is not under test)
    with atheris.instrument_imports(include=["sinpe", "zipfile", "json"]):
        from sinpe._check import openvino as openvino_check
        from sinpe._files import caches as files
        from sinpe._files import gguf as gguf_file
        from sinpe._files import onnx as onnx_file
        from sinpe._files import openvino as openvino_file

    def read_onnx(path: str) -> None:
        model = onnx_file.read(path)
        for tensor in model.graph.initializers.values():
            try:
                onnx_file.tensor_values(model, tensor, MAX_VALUES)
            except ValueError:
                continue

    def read_openvino(path: str) -> None:
        weights = os.path.splitext(path)[0] + ".bin"
        if not os.path.exists(weights):
            with open(weights, "wb") as stream:
                stream.write(bytes(memoryview(array("f", range(OPENVINO_BIN // 4)))))
        ir = openvino_file.read(path)
        for layer in ir.layers.values():
            if layer.type == "Const" and layer.data.get("element_type") in openvino_file.FLOATS:
                try:
                    openvino_file.const_values(ir, layer, MAX_VALUES)
                except ValueError:
                    continue
        openvino_check.find_frequencies(ir)
        openvino_check.find_tables(ir, 8)

    if fmt == "openvino":
        return read_openvino
    if fmt == "gguf":
        return lambda path: gguf_file.read(path, tensors=("rope_freqs.weight",))
    if fmt == "onnx":
        return read_onnx
    return files.load


def _keep(data: bytes, fmt: str) -> None:
    """The finding's input in the current folder (libFuzzer may die before it writes its own,
    out of address space)."""
    name = f"finding-{hashlib.sha1(data).hexdigest()}.{fmt}"
    with open(name, "wb") as stream:
        stream.write(data)
    print(f"kept {os.path.abspath(name)}", file=sys.stderr)


def main(argv: list) -> None:
    """Fuzz the reader of ``argv[1]`` with libFuzzer's options and corpora in ``argv[2:]``."""
    fmt = argv[1] if len(argv) > 1 else ""
    if fmt not in FORMATS:
        raise SystemExit(f"usage: {argv[0]} {{{','.join(FORMATS)}}} [libFuzzer options]")
    gib = float(os.environ.get("SINPE_FUZZ_ADDRESS_SPACE_GIB", "4"))
    read = _reader(fmt)
    folder = tempfile.mkdtemp(prefix=f"sinpe-fuzz-{fmt}-")
    path = os.path.join(folder, f"input.{fmt}")

    def one_input(data: bytes) -> None:
        with open(path, "wb") as stream:
            stream.write(data)
        try:
            read(path)
        except ValueError as exc:
            if "out of memory" in str(exc):
                _keep(data, fmt)
                raise AssertionError(f"a refusal only after allocating: {exc}") from None
        except BaseException:
            _keep(data, fmt)
            raise

    _limit_address_space(gib)  # after the imports: torch alone maps gigabytes of address space
    atheris.Setup([argv[0], *argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
