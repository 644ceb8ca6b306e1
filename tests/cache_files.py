"""Cache files written by hand, byte for byte, for the readers' tests and the fuzzers' seeds
(tools/fuzz/seeds.py): what another program might write, without the library that would."""

from __future__ import annotations

import json
import struct

import numpy as np


def safetensors_bytes(arrays: dict, metadata: dict | None = None) -> bytes:
    """A ``.safetensors`` file of float32 ``arrays`` (name -> array), with ``metadata``."""
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, array in arrays.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape)}
        header[name]["data_offsets"] = [offset, offset + array.nbytes]
        offset += array.nbytes
    text = json.dumps(header).encode()
    body = b"".join(np.ascontiguousarray(a, "<f4").tobytes() for a in arrays.values())
    return struct.pack("<Q", len(text)) + text + body
