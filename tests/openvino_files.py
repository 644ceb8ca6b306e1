"""OpenVINO IR files written by hand for the reader's tests and the fuzzer's seeds: a traced
rotary module as optimum-intel exports it (position ids -> MatMul with an ``inv_freq`` Const
-> Concat -> Sin/Cos, each optionally multiplied by an attention-factor Const), a LongRoPE
pair of ``inv_freq`` chosen by a ``Select``, and cos/sin tables folded into Consts feeding a
``RoPE`` op. Each is ``(xml text, bin bytes)``."""

from __future__ import annotations

import numpy as np

_TYPES = {"float32": "f32", "float16": "f16", "int64": "i64"}


class Net:
    """A top-level graph being written: layers, edges and the ``.bin`` they index."""

    def __init__(self):
        self.layers: list = []
        self.edges: list = []
        self.data = bytearray()

    def layer(self, kind: str, inputs=(), name: str = "", data: str = "") -> int:
        number = len(self.layers)
        self.layers.append((number, name or f"{kind}_{number}", kind, data))
        for port, source in enumerate(inputs):
            self.edges.append((source, number, port))
        return number

    def const(self, values, name: str = "", shape=None) -> int:
        values = np.asarray(values)
        shape = values.shape if shape is None else shape
        offset = len(self.data)
        self.data += values.tobytes()
        kind = _TYPES[values.dtype.name] if values.dtype.name != "uint16" else "bf16"
        text = ", ".join(map(str, shape))
        data = f'element_type="{kind}" shape="{text}" offset="{offset}" size="{values.nbytes}"'
        return self.layer("Const", (), name, data)

    def xml(self, head: str = '<?xml version="1.0"?>\n') -> str:
        rows = [head + '<net name="m" version="11">', "<layers>"]
        for number, name, kind, data in self.layers:
            inner = f"<data {data} />" if data else ""
            rows.append(
                f'<layer id="{number}" name="{name}" type="{kind}" version="opset1">{inner}'
                '<output><port id="9" /></output></layer>'
            )
        rows.append("</layers><edges>")
        for source, target, port in self.edges:
            rows.append(
                f'<edge from-layer="{source}" from-port="9" to-layer="{target}" to-port="{port}" />'
            )
        rows.append('</edges><rt_info><optimum><optimum_intel_version value="2.2.0" />')
        rows.append("</optimum></rt_info></net>")
        return "\n".join(rows)


def traced(inv_freq, factor=None, second=None, switch=None, more=()) -> tuple:
    """A traced rotary module: ``inv_freq`` (float32) times the position ids, Sin and Cos
    (each times ``factor`` where given); with ``second``, a ``Select`` between the two by
    ``seq_len > switch`` (LongRoPE's short and long factors); ``more``: ``(inv_freq,
    factor)`` of other rotary modules beside it (one per layer type)."""
    net = Net()
    positions = net.layer("Parameter", name="position_ids", data='shape="?,?" element_type="i64"')
    freq = net.const(np.asarray(inv_freq, np.float32).reshape(1, -1, 1), "inv_freq")
    if second is not None:
        other = net.const(np.asarray(second, np.float32).reshape(1, -1, 1), "inv_freq_long")
        shape = net.layer("ShapeOf", (positions,))
        limit = net.const(np.asarray([switch], np.int64), "switch", shape=())
        condition = net.layer("Greater", (shape, limit))
        freq = net.layer("Select", (condition, other, freq))
    modules = [(freq, factor)]
    for k, (values, scale) in enumerate(more, 1):
        const = net.const(np.asarray(values, np.float32).reshape(1, -1, 1), f"inv_freq_{k}")
        modules.append((const, scale))
    for freq, scale in modules:
        ids = net.layer("Convert", (positions,), data='destination_type="f32"')
        angles = net.layer("MatMul", (freq, ids))
        both = net.layer("Concat", (angles, angles), data='axis="-1"')
        for trig in ("Sin", "Cos"):
            out = net.layer(trig, (both,))
            if scale is not None:
                out = net.layer("Multiply", (out, net.const(np.float32([scale]), shape=(1, 1, 1))))
            net.layer("Result", (out,))
    return net.xml(), bytes(net.data)


def tables(cos, sin) -> tuple:
    """cos/sin tables folded into Consts, fed to a ``RoPE`` op."""
    net = Net()
    x = net.layer("Parameter", name="x", data='shape="?,?" element_type="f32"')
    c = net.const(np.asarray(cos, np.float32), "cos_cache")
    s = net.const(np.asarray(sin, np.float32), "sin_cache")
    net.layer("Result", (net.layer("RoPE", (x, c, s)),))
    return net.xml(), bytes(net.data)


def write(folder, xml: str, data: bytes, config: dict | None = None):
    """``openvino_model.xml`` and ``.bin`` (and ``config.json``) in ``folder``; the xml path."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "openvino_model.xml").write_text(xml, encoding="utf-8")
    (folder / "openvino_model.bin").write_bytes(data)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder / "openvino_model.xml"
