"""A hard case's entry as every function that writes a table writes it: tests/test_correct.py
checks each against the oracle; tools/arm/digest.py records them on an aarch64 kernel under
qemu, where only NumPy and sinpe are installed: this module imports nothing else."""

import numpy as np

import sinpe


def written(case, dtype, backend):
    """``[(function, cos, sin)]``: the case's entry as every table function writes it."""
    p, w = case["p"], case["w"]
    out = []
    c, s = sinpe.rope_at([p], 2, inv_freq=[w], layout="compact", dtype=dtype, backend=backend)
    out.append(("rope_at", c[0, 0], s[0, 0]))
    c, s = sinpe.rope_at([p], 2, inv_freq=[w], layout="half", dtype=dtype, backend=backend)
    out.append(("rope_at half", c[0, 1], s[0, 1]))
    if float(p).is_integer():
        p = int(p)
        c, s = sinpe.rope(
            1, 2, offset=p, inv_freq=[w], layout="interleaved", dtype=dtype, backend=backend
        )
        out.append(("rope", c[0, 0], s[0, 1]))
        cache = sinpe.rope_cache(1, 2, offset=p, inv_freq=[w], dtype=dtype, backend=backend)
        out.append(("rope_cache vllm", cache[0, 0], cache[0, 1]))
        pairs = sinpe.rope_cache(
            1, 2, offset=p, inv_freq=[w], format="pairs", dtype=dtype, backend=backend
        )
        out.append(("rope_cache pairs", pairs[0, 0, 0], pairs[0, 0, 1]))
        if dtype == "float32":
            z = sinpe.rope_cache(
                1, 2, offset=p, inv_freq=[w], format="complex", dtype=np.complex64, backend=backend
            )
            out.append(("rope_cache complex64", z[0, 0].real, z[0, 0].imag))
    if w == 1.0:  # column 0 of every sinusoidal table
        t = sinpe.encode([p], 4, dtype=dtype, backend=backend)
        out.append(("encode", t[0, 1], t[0, 0]))
        if isinstance(p, int):
            t = sinpe.sinusoidal_positional_encoding(2, 4, offset=p, dtype=dtype, backend=backend)
            out.append(("sinusoidal_positional_encoding", t[0, 1], t[0, 0]))
    if case["kind"] == "search":
        t = sinpe.sinusoidal_positional_encoding(
            1, 128, offset=case["p"], dtype=dtype, backend=backend
        )
        value = t[0, case["column"]]
        out.append(("table", value, None) if case["value"] == "cos" else ("table", None, value))
    return out
