"""Bits of every sinpe table, for comparing machines (x86 native vs aarch64 under qemu).

    python digest.py OUT_DIR [--hard HARD_CASES_JSON]

Prints one sha256 per (engine, group) and an overall digest, writes OUT_DIR/digest.json and
OUT_DIR/<engine>__<group>.npz (every array, for locating a difference), and, with --hard,
OUT_DIR/hard.json: each hard case as every table function writes it (float64 bits:
tests/written.py, as tests/test_correct.py checks them). The rope types' cases are
tests/rope_cases.py's (tests/test_rope.py's). Engines: the compiled kernel at every instruction
set this CPU runs ("cython@c", "cython@avx2", ...) and the NumPy fallback ("numpy").
"""

import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import sinpe
from sinpe._tables import backends
from sinpe._tables.checks import bfloat16

# the tests' cases, from the two modules of tests/ that import nothing but NumPy and sinpe
sys.path.append(str(Path(__file__).resolve().parents[2] / "tests"))
from rope_cases import CASES as SCALINGS  # noqa: E402  (name, scaling, head_dim, base, seq_len)
from written import written  # noqa: E402

T0 = time.perf_counter()
kernel = backends.kernel
BF16 = bfloat16()
DTYPES = ["float64", "float32", "float16"] + (["bfloat16"] if BF16 is not None else [])
NARROW = ["float32", "float16"] + (["bfloat16"] if BF16 is not None else [])

rng = np.random.default_rng(11)
POSITIONS = np.concatenate(
    [rng.integers(0, 2**50, 40), rng.uniform(-1e7, 1e7, 40), [0.5, -3.25, 0.0, 1.0, 2.0**52 - 1]]
)
INT_POSITIONS = np.concatenate([np.arange(20), rng.integers(0, 2**40, 20)])


def by_scaling(table, layouts, **kw):
    """[((name, layout, dtype, i), array)]: the arrays of ``table(head_dim, seq_len, ...)`` for
    every dtype, rope-type case and layout."""
    return [
        ((name, lay, dt, i), a)
        for dt in DTYPES
        for name, sc, dim, base, sl in SCALINGS
        for lay in layouts
        for i, a in enumerate(table(dim, sl, base=base, scaling=sc, layout=lay, dtype=dt, **kw))
    ]


def groups(backend, threads):
    """{group: [(label, array)]} for one engine."""
    kw = dict(backend=backend)
    g = {}
    g["sinusoidal"] = [
        (
            (d, c, o, b, dt),
            sinpe.sinusoidal_positional_encoding(
                37, d, dtype=dt, convention=c, offset=o, base=b, threads=threads, **kw
            ),
        )
        for dt in DTYPES
        for d in (2, 6, 14, 30, 66, 130, 602)
        for c in sinpe.conventions.names()
        for o in (0, 1000, 2**40 + 3)
        for b in (10000.0, 500000.0)
        if not (c == "diffusers" and d % 2)  # every width here is even
    ]
    g["sinusoidal_big"] = [
        (
            dt,
            sinpe.sinusoidal_positional_encoding(
                2048, 256, offset=3, dtype=dt, threads=threads, **kw
            ),
        )
        for dt in DTYPES
    ]
    g["encode"] = [
        ((d, c, dt), sinpe.encode(POSITIONS, d, dtype=dt, convention=c, **kw))
        for dt in DTYPES
        for d in (6, 26, 100)
        for c in ("vaswani", "tensor2tensor", "hf-marian")
    ]
    axes = [np.arange(5.0), np.array([0.5, 3.0, 1e6, -7.25]), np.arange(3.0) * 1000.5]
    g["encode_grid"] = [
        ((w, dt), sinpe.encode_grid(axes[: len(w)], w, dtype=dt, **kw))
        for dt in DTYPES
        for w in ((4, 6), (8, 8), (6, 10, 14))
    ]
    g["encode_grid"] += [
        (
            ("vaswani", dt),
            sinpe.encode_grid(axes[:2], [5, 7], convention="vaswani", base=100.0, dtype=dt, **kw),
        )
        for dt in DTYPES
    ]
    g["rope_frequencies"] = []
    for name, sc, dim, base, sl in SCALINGS:
        inv, att = sinpe.rope_frequencies(dim, base=base, scaling=sc, seq_len=sl)
        g["rope_frequencies"].append((name, np.concatenate([inv, [att]])))
    g["rope_plain"] = [
        ((hd, lay, o, dt), a)
        for dt in DTYPES
        for hd in (2, 10, 34, 64, 130)
        for lay in ("half", "interleaved", "compact")
        for o in (0, 5000, 2**45)
        for a in sinpe.rope(29, hd, layout=lay, dtype=dt, offset=o, threads=threads, **kw)
    ]
    seq = 40  # length-dependent types: the 40 rows up to seq_len
    g["rope_scaled"] = by_scaling(
        lambda dim, sl, **k: sinpe.rope(seq, dim, offset=0 if sl is None else sl - seq, **k),
        ("half", "interleaved", "compact"),
        threads=threads,
        **kw,
    )
    g["rope_at"] = by_scaling(
        lambda dim, sl, **k: sinpe.rope_at(POSITIONS, dim, seq_len=sl, **k),
        ("half", "compact"),
        threads=threads,
        **kw,
    )
    g["rope_cache"] = []
    for fmt in ("vllm", "pairs", "sincos", "complex"):
        dts = ("complex64", "complex128") if fmt == "complex" else DTYPES
        for dt in dts:
            for name, sc, dim, base, _sl in SCALINGS[:1] + SCALINGS[4:5] + SCALINGS[12:13]:
                for o in (0, 2**33 + 1):
                    a = sinpe.rope_cache(
                        33,
                        dim,
                        format=fmt,
                        base=base,
                        scaling=sc,
                        offset=o,
                        dtype=dt,
                        threads=threads,
                        **kw,
                    )
                    g["rope_cache"].append(((fmt, dt, name, o), a))
    if backend == "cython":
        r = np.random.default_rng(9)
        values = np.concatenate(
            [
                r.choice([-1, 1], 20000) * 2.0 ** r.uniform(-150, 130, 20000),
                (
                    np.arange(1, 2048, 2)[:, None]
                    * 2.0**-25
                    * (1 + np.array([-(2.0**-40), 0, 2.0**-40]))
                ).ravel(),
                [0.0, -0.0, 1.0, 65520.0, 65519.999, np.inf, -np.inf, 5e-324, 2.0**-126, 1e300],
            ]
        )
        g["round_half"] = []
        for dt in NARROW[1:]:
            out = np.empty(values.shape, dtype=np.float16 if dt == "float16" else BF16)
            kernel.round_half(values, out)
            g["round_half"].append((dt, out))
    return g


def storable(a):
    """bfloat16 (ml_dtypes) as its uint16 bits: npz stores plain NumPy types only."""
    return a.view(np.uint16) if a.dtype == BF16 else np.ascontiguousarray(a)


def tobytes(a):
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def hard_cases(path):
    cases = json.loads(open(path).read())["cases"]
    out = []
    for engine in engines():
        backend = activate(engine)
        for dtype in NARROW:
            for i, case in enumerate(cases):
                if case.get("dtype", dtype) != dtype:
                    continue
                for name, c, s in written(case, dtype, backend):
                    rec = {"engine": engine, "dtype": dtype, "case": i, "fn": name}
                    for key, v in (("cos", c), ("sin", s)):
                        rec[key] = (
                            None if v is None else float(np.asarray(v).astype(np.float64)).hex()
                        )
                    out.append(rec)
    return out


def engines():
    names = []
    if kernel is not None:
        isas = kernel.ISA_NAMES[: kernel.ISA_NAMES.index(kernel.CPU_ISA) + 1]
        names += [f"cython@{n}" for n in isas]
    return names + ["numpy"]


def activate(engine):
    if engine.startswith("cython@"):
        kernel._set_isa(engine.split("@")[1])
    sinpe.clear_cache()
    return engine.split("@")[0]


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    info = {
        "machine": platform.machine(),
        "numpy": np.__version__,
        "backend": sinpe.BACKEND,
        "engines": engines(),
        "bfloat16": BF16 is not None,
    }
    print(json.dumps(info), flush=True)
    result = {"info": info, "digests": {}}
    for engine in engines():
        backend = activate(engine)
        for threads in (1, 2):
            t = time.perf_counter()
            total = hashlib.sha256()
            for name, items in groups(backend, threads).items():
                h = hashlib.sha256()
                for _, a in items:
                    h.update(tobytes(a))
                total.update(h.digest())
                key = f"{engine} threads={threads} {name}"
                result["digests"][key] = h.hexdigest()
                print(f"{key:45s} {len(items):5d} arrays  {h.hexdigest()[:16]}", flush=True)
                if threads == 1:
                    np.savez(
                        os.path.join(out_dir, f"{engine}__{name}.npz"),
                        **{f"a{i}": storable(a) for i, (_, a) in enumerate(items)},
                    )
                    with open(os.path.join(out_dir, f"{engine}__{name}.labels.json"), "w") as f:
                        json.dump([[repr(label), str(a.dtype)] for label, a in items], f)
            result["digests"][f"{engine} threads={threads} ALL"] = total.hexdigest()
            print(
                f"{engine} threads={threads} ALL {total.hexdigest()}  "
                f"({time.perf_counter() - t:.1f} s)",
                flush=True,
            )
    if "--hard" in sys.argv:
        t = time.perf_counter()
        result["hard"] = hard_cases(sys.argv[sys.argv.index("--hard") + 1])
        print(f"hard cases: {len(result['hard'])} values ({time.perf_counter() - t:.1f} s)")
    result["seconds"] = time.perf_counter() - T0
    with open(os.path.join(out_dir, "digest.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"total {result['seconds']:.1f} s")


if __name__ == "__main__":
    main()
