"""The same bits on every instruction set: AVX-512, AVX2, SSE2 and plain C.

The kernel runs one rotation (rotate.h) and one exact evaluator (exact_simd.h, exact.h) per
instruction set, chosen at import by cpuid and the OS's register state, or forced by
SINPE_ISA. Here every set this CPU (or an avx512-emulated build) runs is switched on in
turn, with every cache emptied, and each table compared byte for byte with the plain C
one: every dtype, every layout and convention, odd widths (vector tails), far offsets
(anchors), fractional positions, the half-precision converter on adversarial doubles. CI
also runs the whole suite with each set forced (.ci/run)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import sinpe
from sinpe._tables import backends, plan
from sinpe._tables.checks import bfloat16

kernel = backends.kernel
pytestmark = [
    pytest.mark.compiled,  # the kernel's own tests: every build runs them
    pytest.mark.skipif(kernel is None, reason="compiled kernel not built"),
]
needs_bfloat16 = pytest.mark.skipif(bfloat16() is None, reason="bfloat16 needs ml_dtypes")
DTYPES = (
    "float64",
    "float32",
    "float16",
    pytest.param("bfloat16", marks=needs_bfloat16),
)


def available():
    names = kernel.ISA_NAMES
    return names[: names.index(kernel.CPU_ISA) + 1]


def on_every_isa(make):
    """make() run with each instruction set in force (caches emptied first): {name: bytes}."""
    results = {}
    before = kernel.ISA
    try:
        for name in available():
            kernel._set_isa(name)
            assert kernel.ISA == name
            sinpe.clear_cache()
            results[name] = [np.ascontiguousarray(a).view(np.uint8).tobytes() for a in make()]
    finally:
        kernel._set_isa(before)
        sinpe.clear_cache()
    return results


def assert_same_bits(results):
    reference = results["c"]
    for name, got in results.items():
        for i, (a, b) in enumerate(zip(got, reference)):
            assert a == b, f"{name} differs from plain C in array {i}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d_model", [2, 6, 14, 18, 30, 66, 130, 602, 1024])
def test_sinusoidal_tables(dtype, d_model):
    def make():
        return [
            sinpe.sinusoidal_positional_encoding(37, d_model, dtype=dtype, convention=c, offset=o)
            for c in ("vaswani", "tensor2tensor")
            for o in (0, 1000, 2**40 + 3)
        ]

    assert_same_bits(on_every_isa(make))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim", [2, 10, 34, 64, 130])
def test_rope_tables_every_layout(dtype, head_dim):
    def make():
        out = []
        for layout in ("half", "interleaved", "compact"):
            for offset in (0, 5000, 2**45):
                out += sinpe.rope(29, head_dim, layout=layout, dtype=dtype, offset=offset)
            out += sinpe.rope(
                29,
                head_dim,
                layout=layout,
                dtype=dtype,
                scaling={
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 32,
                },
            )
        return out

    assert_same_bits(on_every_isa(make))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scattered_and_fractional_positions(dtype):
    rng = np.random.default_rng(11)
    positions = np.concatenate(
        [rng.integers(0, 2**50, 40), rng.uniform(-1e7, 1e7, 40), [0.5, -3.25]]
    )

    def make():
        return [sinpe.encode(positions, d, dtype=dtype) for d in (6, 26, 100)]

    assert_same_bits(on_every_isa(make))


def test_exact_evaluator_every_width():
    """The evaluator alone, at widths 1..40 (every tail length of every vector width) and
    positions up to 2**52, with frequencies on both sides of its fast-path limit (the NaN
    fill shows that the kernel leaves the slow path's columns alone on every set)."""
    rng = np.random.default_rng(5)
    positions = np.concatenate(
        [rng.integers(0, 2**52, 20).astype(float), rng.uniform(-1e9, 1e9, 20)]
    )

    def make():
        out = []
        for n_w in range(1, 41):
            w = 10.0 ** rng.uniform(-9, 2, n_w)
            if n_w % 7 == 0:
                w[0] = 2.0**33  # the slow path's column: left to the big-integer code
            table = plan.prepare(w).table
            o = np.full((positions.size, 2, n_w), np.nan)
            kernel.exact_cos_sin(positions, table, o, 1)
            out.append(o)
        return out

    # the same random frequencies for every set
    state = rng.bit_generator.state
    results = {}
    before = kernel.ISA
    try:
        for name in available():
            rng.bit_generator.state = state
            kernel._set_isa(name)
            results[name] = [a.view(np.uint8).tobytes() for a in make()]
    finally:
        kernel._set_isa(before)
    assert_same_bits(results)


@pytest.mark.parametrize("dtype", ("float16", pytest.param("bfloat16", marks=needs_bfloat16)))
def test_half_converter(dtype):
    rng = np.random.default_rng(9)
    values = np.concatenate(
        [
            rng.choice([-1, 1], 20000) * 2.0 ** rng.uniform(-150, 130, 20000),
            np.nextafter(np.float32(1 + 2.0**-11), 2).astype(float) + np.arange(-4, 5) * 2.0**-52,
            # float16's subnormal halfway points and their neighbours
            (
                np.arange(1, 2048, 2)[:, None]
                * 2.0**-25
                * (1 + np.array([-(2.0**-40), 0, 2.0**-40]))
            ).ravel(),
            [
                0.0,
                -0.0,
                1.0,
                65520.0,
                65519.999,
                np.inf,
                -np.inf,
                np.nan,
                5e-324,
                -5e-324,
                2.0**-126,
                2.0**-133,
                3.3961776e38,
                1e300,
            ],
        ]
    )
    values = np.concatenate([values, -values])

    def make():
        out = np.empty(values.shape, dtype=np.float16 if dtype == "float16" else bfloat16())
        kernel.round_half(values, out)
        return [out]

    assert_same_bits(on_every_isa(make))


def run(env, code):
    """The child gets the compiled backend and only the instruction set it is given, whatever
    the user's environment says (``SINPE_BACKEND=numpy`` there would leave it no kernel)."""
    full = {k: v for k, v in os.environ.items() if k not in ("SINPE_ISA", "SINPE_BACKEND")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-W", "always::RuntimeWarning", "-c", code],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_forcing_an_instruction_set():
    """SINPE_ISA forces a set this CPU runs; one it lacks, or a name that is none, warns once
    at import and runs the best available; `sinpe info` says which runs and why."""
    code = "import sinpe._c._kernel as k; print(k.ISA); print(k.ISA_REASON)"
    for name in available():
        done = run({"SINPE_ISA": name}, code)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[0] == name
        assert "Warning" not in done.stderr
    done = run({"SINPE_ISA": "avx1024"}, code)
    assert done.stdout.split("\n")[0] == kernel.CPU_ISA
    assert done.stderr.count("RuntimeWarning") == 1 and "'avx1024' is not one of" in done.stderr
    if kernel.CPU_ISA != kernel.ISA_NAMES[-1]:
        best = kernel.ISA_NAMES[-1]
        done = run({"SINPE_ISA": best}, code)
        assert done.stdout.split("\n")[0] == kernel.CPU_ISA
        assert done.stderr.count("RuntimeWarning") == 1
        assert f"lacks {best}; running {kernel.CPU_ISA}" in done.stderr
    done = run({"SINPE_ISA": "c"}, "import sinpe.cli; sinpe.cli.main(['info'])")
    assert done.returncode == 0, done.stderr
    assert "instruction set: c (SINPE_ISA=c; this CPU and build run up to" in done.stdout
