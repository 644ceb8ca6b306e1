"""The compiled kernel (``sinpe._c._kernel``) and its NumPy twin (``sinpe._twin``) are twins:
the one home of the tests that compare them directly, in the manner of Bottleneck, which
tests each C function against its pure-Python "slow" twin on generated inputs.

1. Names and signatures. The kernel's stub ``_c/_kernel.pyi`` (parsed with ``ast``) is the
   contract: its names are exactly the twin's ``__all__``, the few private helpers both
   backends have (``SHARED_PRIVATE``) and the kernel-only ones (``KERNEL_ONLY``, each with
   its reason), so that no new name slips through unshared. Every shared function (and
   ``Plan``'s ``__init__`` and attributes) has the stub's parameters, in the same order and
   of the same kinds, in the twin, and in the kernel wherever Cython gives a signature; the
   kernel has every name of the stub and nothing public the stub lacks.
2. The same bits on generated input. ``exact_cos_sin``, ``prepare_frequency_table``,
   ``log_dd``, ``power_vector``, ``Plan`` + ``fill``, ``round_half``, ``tally_block`` (the
   verdict core's pass over a block: NaN and inf entries, ties, float32 rows, halves read
   in place) and ``correctly_rounded`` are called on the kernel and on the twin with the
   same arguments (hypothesis, seeded generators and edge cases: odd widths, width 1, no
   frequencies, no rows, offsets crossing anchors, positions up to 2**53, frequencies past
   2**32, factors other than 1, every output dtype, one and two threads) and their outputs
   compared bit for bit (a NaN is equal to itself as bits). The inputs of ``fill`` are built by the
   front's own helpers (``_tables.plan``), but every comparison calls the backends'
   functions themselves. ``correctly_rounded`` reaches the same bits by other operations
   (double-doubles in C, big integers in the twin): both are correct. A difference this
   file found is a strict expected failure, with its reason, until it is fixed.
3. An oracle anchor, so that the twins are not only consistent with each other:
   ``exact_cos_sin``, ``correctly_rounded`` and ``fill`` of both against mpmath
   (``tests/oracle.py``).

The kernel runs at the instruction set in force (``test_isa`` compares the sets with each
other); without a compiled kernel only the twin's half of part 1 runs.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import numpy as np
import oracle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layouts import random_layout

import sinpe
from sinpe import _twin
from sinpe._exactmath.constants import GRID_SPAN, GRID_SPAN_BITS
from sinpe._rope.rotary import rope_layout
from sinpe._tables import backends, plan
from sinpe._tables.checks import bfloat16
from sinpe._tables.tables import table_layout
from sinpe._twin import turns

pytestmark = pytest.mark.compiled  # the kernel's own tests: every build runs them

kernel = backends.kernel
needs_kernel = pytest.mark.skipif(
    kernel is None, reason=f"compiled kernel not built: {backends.KERNEL_ERROR}"
)
BF16 = bfloat16()
needs_bfloat16 = pytest.mark.skipif(BF16 is None, reason="bfloat16 needs ml_dtypes (not installed)")
DTYPES = ["float64", "float32", "float16"] + (["bfloat16"] if BF16 is not None else [])
ALL_DTYPES = ["float64", "float32", "float16", pytest.param("bfloat16", marks=needs_bfloat16)]
NARROW = ["float32", "float16", "bfloat16"]  # correctly_rounded takes names: no ml_dtypes needed
ROOT = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- the stub

STUB = Path(sinpe.__file__).parent / "_c" / "_kernel.pyi"

# Names of the stub the twin does not have, and why it has no use for them.
KERNEL_ONLY = {
    "THREADS": "the kernel's thread runtime (team.h); the twin runs on the calling thread",
    "ISA_NAMES": "the instruction sets the C loops are compiled for; NumPy has none to pick",
    "ISA_REASON": "why the kernel runs the instruction set it runs (SINPE_ISA or the CPU)",
    "CPU_ISA": "the best instruction set this CPU and build run: a property of the C build",
    "EMULATED": "AVX-512 on SIMDe's portable intrinsics: a build option of the C code",
    "DEBUG": "a SINPE_DEBUG_BUILD=1 build, which checks the trusted C arguments",
    "BOUNDS_CHECKED": "Cython's boundscheck directive in force in that build",
    "C_ASSERTS": "C assert() live (NDEBUG undefined) in that build",
    "CHECKED": "the correct-rounding switch; the twin keeps it as _twin.correct.CHECKED",
    "_set_isa": "switches the kernel's instruction set; the twin has only NumPy's",
    "_set_exact_tiny": "tests only: correct.h's exact decision of tiny arguments off (step 5), "
    "so that the undecided ring can be filled on purpose; the twin decides them in Python",
    "threadpool_threads": "the limit threadpoolctl set on the kernel's thread pool",
    "helpers": "how many helper threads the kernel's pool has made",
}
# Private names of the stub that both backends have (not in the twin's ``__all__``).
SHARED_PRIVATE = {
    "_set_checked": "tests and benchmarks switch correct rounding off on either backend",
}

_TREE = ast.parse(STUB.read_text(), filename=str(STUB))
FUNCTIONS = {node.name: node for node in _TREE.body if isinstance(node, ast.FunctionDef)}
CLASSES = {node.name: node for node in _TREE.body if isinstance(node, ast.ClassDef)}
VARIABLES = {
    node.target.id: node.annotation
    for node in _TREE.body
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
}
STUB_NAMES = set(FUNCTIONS) | set(CLASSES) | set(VARIABLES)
SHARED = set(_twin.__all__) | set(SHARED_PRIVATE)
_TYPES = {"str": str, "bool": bool, "int": int, "float": float, "tuple": tuple}

Parameter = inspect.Parameter


def stub_parameters(function: ast.FunctionDef, method: bool = False) -> list[tuple]:
    """``(name, kind, has a default)`` of each parameter of a stub function (without
    ``self`` for a method)."""
    args = function.args
    positional = [(a, Parameter.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, Parameter.POSITIONAL_OR_KEYWORD) for a in args.args]
    first_default = len(positional) - len(args.defaults)
    params = [(a.arg, kind, i >= first_default) for i, (a, kind) in enumerate(positional)]
    if args.vararg:
        params.append((args.vararg.arg, Parameter.VAR_POSITIONAL, False))
    for a, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append((a.arg, Parameter.KEYWORD_ONLY, default is not None))
    if args.kwarg:
        params.append((args.kwarg.arg, Parameter.VAR_KEYWORD, False))
    return params[1:] if method else params


def runtime_parameters(function) -> list[tuple]:
    """The same triples from ``inspect.signature`` (``ValueError`` where there is none)."""
    parameters = inspect.signature(function).parameters.values()
    return [(p.name, p.kind, p.default is not p.empty) for p in parameters]


def annotated_type(annotation: ast.expr) -> type:
    """The runtime type a stub annotation names (``tuple[str, ...]``: tuple)."""
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _TYPES[node.id]  # type: ignore[attr-defined]


def class_attributes(node: ast.ClassDef) -> list[str]:
    return [
        item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]


def class_methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def _shared_functions():
    yield from sorted(SHARED & set(FUNCTIONS))


# --------------------------------------------------------------------------- comparisons


def bits(x: float) -> bytes:
    return np.float64(x).tobytes()


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: object = "") -> None:
    """Same dtype, shape and bytes; else the first element that differs, as bits."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape)
    size = got.dtype.itemsize
    a = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(-1, size)
    b = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(-1, size)
    differ = np.flatnonzero((a != b).any(axis=1))
    if differ.size:
        i = int(differ[0])
        index = tuple(int(k) for k in np.unravel_index(i, got.shape))
        raise AssertionError(
            f"{what}: {differ.size} of {a.shape[0]} elements differ, first at {index}: "
            f"kernel {a[i].tobytes().hex()} ({got[index]!r}), "
            f"twin {b[i].tobytes().hex()} ({want[index]!r})"
        )


def frequency_constants(w) -> np.ndarray:
    """The evaluator's constants ``(8, n)`` of finite ``w``, as the front makes them."""
    return plan.prepare(np.asarray(w, dtype=np.float64)).table


# =========================================================================== 1. names


def test_the_stub_names_are_the_twins_and_the_kernel_only_ones():
    """Every name of the stub is shared (the twin's ``__all__`` or ``SHARED_PRIVATE``) or
    listed as kernel-only, never both; a new name in the stub fails here until it is
    given to the twin or listed with its reason."""
    assert len(_twin.__all__) == len(set(_twin.__all__))
    assert not set(_twin.__all__) & set(KERNEL_ONLY)
    assert not set(SHARED_PRIVATE) & (set(KERNEL_ONLY) | set(_twin.__all__))
    assert STUB_NAMES == set(_twin.__all__) | set(KERNEL_ONLY) | set(SHARED_PRIVATE)
    for name in SHARED:
        assert hasattr(_twin, name), name
    for name in KERNEL_ONLY:
        assert not hasattr(_twin, name), f"{name} is in the twin: share it or say why not"
    for name, reason in {**KERNEL_ONLY, **SHARED_PRIVATE}.items():
        assert reason and "\n" not in reason, name


@pytest.mark.parametrize("name", list(_shared_functions()))
def test_twin_functions_have_the_stubs_parameters(name):
    expected = stub_parameters(FUNCTIONS[name])
    function = getattr(_twin, name)
    assert callable(function)
    assert runtime_parameters(function) == expected


@pytest.mark.parametrize("name", sorted(SHARED & set(CLASSES)))
def test_twin_classes_have_the_stubs_init_methods_and_attributes(name):
    node = CLASSES[name]
    cls = getattr(_twin, name)
    assert inspect.isclass(cls)
    methods = class_methods(node)
    assert runtime_parameters(cls) == stub_parameters(methods["__init__"], method=True)
    for method_name, method in methods.items():
        if method_name != "__init__":
            expected = stub_parameters(method, method=True)
            assert runtime_parameters(getattr(cls, method_name)) == expected, method_name
    assert name == "Plan"  # the one class: an instance, for its (instance) attributes
    instance = cls(*_small_plan_arguments())
    for attribute in class_attributes(node):
        assert hasattr(instance, attribute), attribute


@pytest.mark.parametrize("name", sorted(SHARED & set(VARIABLES)))
def test_twin_constants_have_the_stubs_types(name):
    assert isinstance(getattr(_twin, name), annotated_type(VARIABLES[name]))
    if name == "NAME":
        assert _twin.NAME == "numpy"


@needs_kernel
@pytest.mark.parametrize("name", sorted(STUB_NAMES))
def test_the_kernel_has_every_stub_name(name):
    """Presence and kind of every name; the parameters wherever Cython exposes a signature
    (``def`` functions do; an extension type's ``__init__`` does not)."""
    assert hasattr(kernel, name), name
    value = getattr(kernel, name)
    if name in VARIABLES:
        assert isinstance(value, annotated_type(VARIABLES[name]))
        return
    assert callable(value)
    if name in CLASSES:
        node = CLASSES[name]
        assert inspect.isclass(value)
        expected = stub_parameters(class_methods(node)["__init__"], method=True)
        try:
            assert runtime_parameters(value) == expected
        except ValueError:  # no signature for a builtin type: the attributes, at least
            pass
        for attribute in class_attributes(node):
            assert hasattr(value, attribute), attribute
        return
    try:
        got = runtime_parameters(value)
    except ValueError:  # a Cython build without signatures: presence is what we can check
        return
    assert got == stub_parameters(FUNCTIONS[name])


@needs_kernel
def test_the_kernel_exports_nothing_the_stub_lacks():
    public = {
        name
        for name in dir(kernel)
        if not name.startswith("_") and not inspect.ismodule(getattr(kernel, name))
    }
    assert public <= STUB_NAMES, sorted(public - STUB_NAMES)
    assert kernel.NAME == "cython"


# =========================================================================== 2. same bits

positions_st = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1).map(float),
    st.floats(-(2.0**53) + 1, 2.0**53 - 1),
    st.sampled_from([0.0, -0.0, 0.5, 1e-300, 2.0**40, 2.0**40 + 3, 2.0**52 + 0.5, 2.0**53 - 1]),
)
frequencies_st = st.one_of(
    st.floats(1e-12, 1e3),
    st.floats(-1e3, -1e-12),
    st.sampled_from(
        [0.0, -0.0, 5e-324, 1e-300, 1.0, 2.0**31, np.nextafter(2.0**32, 0), 2.0**32, 2.0**40]
    ),
)


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(
    positions=st.lists(positions_st, max_size=30),
    w=st.lists(frequencies_st, max_size=40),
    threads=st.sampled_from([1, 2]),
)
def test_exact_cos_sin_on_generated_input(positions, w, threads):
    """Frequencies of 2**32 and more are left to the big-integer path: both backends leave
    those columns untouched (the NaN fill shows it)."""
    positions = np.array(positions, dtype=np.float64)
    table = frequency_constants(w)
    got = np.full((positions.size, 2, len(w)), np.nan)
    want = got.copy()
    kernel.exact_cos_sin(positions, table, got, threads)
    _twin.exact_cos_sin(positions, table, want, 1)
    assert_same_bits(got, want, "exact_cos_sin")


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_exact_cos_sin_every_width_and_many_rows(threads):
    """Widths 1..40 (every vector tail), then 5000 rows (many chunks for the threads)."""
    rng = np.random.default_rng(5)
    positions = np.concatenate(
        [rng.integers(0, 2**52, 20).astype(np.float64), rng.uniform(-1e9, 1e9, 20)]
    )
    for n_w in range(1, 41):
        table = frequency_constants(10.0 ** rng.uniform(-9, 2, n_w))
        got, want = np.empty((positions.size, 2, n_w)), np.empty((positions.size, 2, n_w))
        kernel.exact_cos_sin(positions, table, got, threads)
        _twin.exact_cos_sin(positions, table, want, threads)
        assert_same_bits(got, want, n_w)
    table = frequency_constants(sinpe.frequencies(64))
    many = np.concatenate([np.arange(4000) * 1.37e9, rng.integers(-(2**53) + 1, 2**53, 1000)])
    got, want = np.empty((many.size, 2, 32)), np.empty((many.size, 2, 32))
    kernel.exact_cos_sin(many, table, got, threads)
    _twin.exact_cos_sin(many, table, want, threads)
    assert_same_bits(got, want, "5000 rows")


def _assert_same_frequency_table(w: np.ndarray) -> None:
    got = np.full((turns.TABLE_ROWS, w.size), np.nan)
    want = got.copy()
    exact = kernel.prepare_frequency_table(w, got)
    twin_exact = _twin.prepare_frequency_table(w, want)
    assert (exact is None) == (twin_exact is None), (exact, twin_exact)
    if exact is not None:
        assert_same_bits(np.asarray(exact, np.intp), np.asarray(twin_exact, np.intp), "columns")
    assert_same_bits(got, want, "prepare_frequency_table")


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(w=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=60))
def test_prepare_frequency_table_on_any_doubles(w):
    """Any double, not finite ones included; the columns sent to the big-integer path are
    the same, and so is every value written."""
    _assert_same_frequency_table(np.array(w, dtype=np.float64))


@needs_kernel
def test_prepare_frequency_table_over_the_whole_range():
    """w from 2**-760 to 2**40 (fast, tiny, huge, not finite): a few percent fail the
    certificate or are tiny, so the marking of columns for big integers is exercised."""
    rng = np.random.default_rng(12)
    w = np.concatenate(
        [
            2.0 ** rng.uniform(-760, 40, 50000) * rng.choice([-1.0, 1.0], 50000),
            [0.0, -0.0, 5e-324, 2.0**-700, 2.0**-701, 2.0**32, np.nextafter(2.0**32, 0)],
            [np.inf, -np.inf, np.nan, 1.0, -1.0],
            sinpe.frequencies(4096),
        ]
    )
    _assert_same_frequency_table(w)
    exact = kernel.prepare_frequency_table(w, np.empty((turns.TABLE_ROWS, w.size)))
    assert exact is not None and exact.size > 100  # the certificate's fallback is exercised
    assert np.all(np.abs(w[exact]) < turns.FAST_W_LIMIT)  # only fast-path columns go there


def bases(low: float, high: float, *samples: float):
    """Bases over ``[low, high]``, with the ones just above 1 and the published ones."""
    published = [10000.0, 500000.0, 2.0, 0.5, *samples]
    return st.one_of(
        st.floats(low, high), st.floats(1.0, 2.0, exclude_min=True), st.sampled_from(published)
    )


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(base=bases(5e-324, 1.7976931348623157e308, 1.0000001, 1e300, 1e-300, 5e-324))
def test_log_dd_on_generated_bases(base):
    got, want = kernel.log_dd(base), _twin.log_dd(base)
    assert len(got) == len(want) == 2
    assert [bits(x) for x in got] == [bits(x) for x in want], (base, got, want)


POWER_EDGES = [  # (base, numerator, denominator, scale, first, length)
    (10000.0, 2, 512.0, 1.0, 0, 256),
    (2.0, 2, 1.0, 1000.0, 0, 1200),  # subnormal results, an exact tie at i = 539
    (1.0000001, 1, 3.0, 1.0, 7, 20000),  # three blocks of the method, from an offset
    (1e300, 1, 0.01, 1.0, 0, 50),  # the step saturates
    (0.5, 2, 7.0, 1e-300, 3, 3000),
    (500000.0, 2, 128.0, 1e308, 0, 64),  # overflow to inf
    (1e-300, 1, 1.0, 1.0, 0, 10),
    (10000.0, 2, 512.0, 0.0, 0, 10),
    (2.0, 2, 1.0, 5e-324, 0, 2000),
    (10000.0, 2, 64.0, -3.5, 0, 40),
    (10000.0, 2, 4096.0, 1.0, 2**40, 100),  # a huge first index
    (10000.0, 2, 4096.0, 1.0, 5, 0),  # nothing to write
]


def _assert_same_power_vector(base, numerator, denominator, scale, first, length):
    log_hi, log_lo = _twin.log_dd(base)
    got, want = np.full(length, np.nan), np.full(length, np.nan)
    rule = (first, log_hi, log_lo, float(numerator), denominator, scale)
    kernel.power_vector(got, *rule)
    _twin.power_vector(want, *rule)
    assert_same_bits(got, want, (base, numerator, denominator, scale, first, length))


@needs_kernel
@pytest.mark.parametrize("rule", POWER_EDGES, ids=str)
def test_power_vector_on_edge_rules(rule):
    _assert_same_power_vector(*rule)


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(
    base=bases(1e-300, 1e300),
    numerator=st.integers(1, 4),
    denominator=st.one_of(st.integers(1, 5000).map(float), st.floats(1e-3, 1e4)),
    scale=st.one_of(st.sampled_from([1.0, -3.5, 5e-324, 1e-300, 1e308]), st.floats(-10, 10)),
    first=st.one_of(st.integers(0, 100), st.integers(0, 2**40)),
    length=st.integers(0, 3000),
)
def test_power_vector_on_generated_rules(base, numerator, denominator, scale, first, length):
    _assert_same_power_vector(base, numerator, denominator, scale, first, length)


# --------------------------------------------------------------------------- round_half


def _half(dtype: str) -> np.dtype:
    return np.dtype(np.float16) if dtype == "float16" else BF16


def _round_half_both(values: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    got, want = np.empty(values.shape, _half(dtype)), np.empty(values.shape, _half(dtype))
    kernel.round_half(values, got)
    _twin.round_half(values, want)
    return got, want


def _every_finite_half(dtype: str) -> np.ndarray:
    """Every finite non-negative value of the format, ascending, as float64."""
    if dtype == "float16":
        return np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    upper = np.arange(0x7F80, dtype=np.uint32) << np.uint32(16)  # bfloat16 = float32's top
    return upper.view(np.float32).astype(np.float64)


HALF_DTYPES = ["float16", pytest.param("bfloat16", marks=needs_bfloat16)]


@needs_kernel
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_round_half_on_every_halfway_point(dtype):
    """Every halfway point between neighbours of the format and the doubles beside it, both
    signs, random magnitudes over the whole range, and the edges."""
    rng = np.random.default_rng(7)
    grid = _every_finite_half(dtype)
    halfway = (grid[:-1] + grid[1:]) / 2  # exact in float64
    values = np.concatenate(
        [
            halfway,
            np.nextafter(halfway, 0),
            np.nextafter(halfway, np.inf),
            grid,
            2.0 ** rng.uniform(-150, 130, 20000) * rng.choice([-1.0, 1.0], 20000),
            [0.0, 1.0, 65504.0, 65519.99, 65520.0, 65520.01, 1e300, np.inf, 5e-324],
            [2.0**-133, 2.0**-134, 3 * 2.0**-135, 3.3961776e38, 3.4e38, 1.7976931348623157e308],
        ]
    )
    values = np.concatenate([values, -values])
    for piece in (values, values[:1], values[:17], values[3:40]):  # vector bodies and tails
        got, want = _round_half_both(np.ascontiguousarray(piece), dtype)
        assert_same_bits(got, want, dtype)


@needs_kernel
@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(allow_nan=False, allow_infinity=True), max_size=70),
    dtype=st.sampled_from(["float16"] + (["bfloat16"] if BF16 is not None else [])),
)
def test_round_half_on_generated_doubles(values, dtype):
    """Any double but NaN (``test_round_half_keeps_a_nan_a_nan``)."""
    got, want = _round_half_both(np.array(values, dtype=np.float64), dtype)
    assert_same_bits(got, want, dtype)


@needs_kernel
@pytest.mark.parametrize(
    "dtype",
    [
        "float16",  # half.h's scalar encoder wrote 1.5 (0x3E00) before it tested for NaN
        pytest.param("bfloat16", marks=needs_bfloat16),
    ],
)
def test_round_half_keeps_a_nan_a_nan(dtype):
    """NaN is no value of a table, but ``round_half`` takes any double: both backends give
    a NaN of the same sign (the payload is not compared)."""
    values = np.array([np.nan, -np.nan, np.inf, 1.0, -np.inf])
    got, want = _round_half_both(values, dtype)
    for out in (got, want):
        as_float = out.astype(np.float64)
        assert np.isnan(as_float[:2]).all(), out.view(np.uint16)
        assert list(np.signbit(as_float[:2])) == [False, True]
    assert_same_bits(got[2:], want[2:], dtype)


# --------------------------------------------------------------------------- correctly_rounded

HARD_CASES = json.loads((ROOT / "data" / "hard_cases.json").read_text())["cases"]


def _assert_same_correct_rounding(p, w, factor, dtype):
    got = kernel.correctly_rounded(p, w, factor, dtype)
    want = _twin.correctly_rounded(p, w, factor, dtype)
    assert len(got) == len(want) == 3
    got_bits = bits(got[0]), bits(got[1]), got[2]
    want_bits = bits(want[0]), bits(want[1]), want[2]
    assert got_bits == want_bits, (p, w, factor, dtype, got, want)


@needs_kernel
@pytest.mark.parametrize("dtype", NARROW)
def test_correctly_rounded_on_the_hard_cases(dtype):
    """Values within 2**-52 of a halfway point of each type and positions next to multiples
    of pi/2 (``tools/hard_cases.py``), with and without a factor."""
    for case in HARD_CASES:
        for factor in (1.0, 1.37, 0.1):
            _assert_same_correct_rounding(float(case["p"]), case["w"], factor, dtype)


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(
    p=st.one_of(
        st.integers(-(2**53) + 1, 2**53 - 1).map(float),
        st.floats(-1e6, 1e6),
        st.sampled_from([0.0, -0.0, 1.0, 0.5, 2.0**40 + 3, 2.0**53 - 1]),
    ),
    w=st.one_of(
        st.floats(1e-9, 10.0),
        st.floats(-10.0, -1e-9),
        st.sampled_from([0.0, 1.0, 1e-300, 2.0**31]),
    ),
    factor=st.one_of(st.sampled_from([1.0, 1.37, 0.1, -1.0, 0.5]), st.floats(0.01, 100.0)),
    dtype=st.sampled_from(NARROW),
)
def test_correctly_rounded_on_generated_input(p, w, factor, dtype):
    _assert_same_correct_rounding(p, w, factor, dtype)


@needs_kernel
@pytest.mark.parametrize("dtype", NARROW)
def test_correctly_rounded_keeps_the_sign_of_an_underflowing_product(dtype):
    """The exact sine is a tiny negative number: -0.0 in every narrow type (p * w underflows
    to zero in float64; correct.h gave +0.0 before it kept the sign of p w factor)."""
    p, w = -5.392280301070388e-174, 1e-300
    want = oracle.cos_sin_narrow([p], [w], dtype)[0, :, 0]
    assert (bits(want[0]), bits(want[1])) == (bits(1.0), bits(-0.0))
    got = _twin.correctly_rounded(p, w, 1.0, dtype)
    assert (bits(got[0]), bits(got[1])) == (bits(1.0), bits(-0.0))
    _assert_same_correct_rounding(p, w, 1.0, dtype)


# --------------------------------------------------------------------------- Plan and fill


def _small_plan_arguments():
    """``Plan``'s arguments for a real 4-column table (vaswani, width 4)."""
    frequencies = plan.prepare(sinpe.frequencies(4))
    layout = table_layout(sinpe.conventions.VASWANI.column_map(4), 4)
    grid = plan._grid(_twin, frequencies)
    return grid, frequencies.table, layout.array(), 4, 1, -1, 1.0


class Fill:
    """One ``(w, factor, layout)`` planned on both backends from the same arrays (the
    front's ``prepare`` and ``_grid``), and ``fill`` called on both with the same
    arguments, built as ``_tables.plan.fill_run`` and ``fill_at`` build them."""

    def __init__(self, w, factor: float, layout: plan.Layout):
        self.layout = layout
        self.frequencies = plan.prepare(np.asarray(w, dtype=np.float64))
        self.grid = plan._grid(_twin, self.frequencies)
        arguments = (
            self.grid,
            self.frequencies.table,
            layout.array(),
            layout.width,
            layout.planes,
            layout.pad_col,
            factor,
        )
        self.plans = {"kernel": kernel.Plan(*arguments), "twin": _twin.Plan(*arguments)}
        ours, theirs = self.plans["kernel"], self.plans["twin"]
        for name in ("grid", "table", "segments"):
            assert getattr(ours, name) is getattr(theirs, name), name
        for name in ("width", "planes", "pad_col", "axes"):
            assert getattr(ours, name) == getattr(theirs, name), name
        assert bits(ours.factor) == bits(theirs.factor)
        self.evaluable = not self.frequencies.slow.size  # every frequency below 2**32

    def anchors(self, positions: np.ndarray) -> np.ndarray:
        return plan.exact_values(_twin, positions, self.frequencies)

    def both(self, n: int, dtype, arguments: tuple, threads: int, what: object) -> None:
        """``fill(plan, out0, out1, *arguments, threads)`` on both; the same bits."""
        results = {}
        for name, module in (("kernel", kernel), ("twin", _twin)):
            outs = [
                np.full((n, self.layout.width), 9.0, dtype=dtype) for _ in range(self.layout.planes)
            ]
            out1 = outs[1] if self.layout.planes == 2 else None
            module.fill(self.plans[name], outs[0], out1, *arguments, threads)
            results[name] = outs
        for k, (got, want) in enumerate(zip(results["kernel"], results["twin"])):
            assert_same_bits(got, want, (what, f"plane {k}"))

    def run(self, offset: int, n: int, dtype, threads: int = 1, evaluate=False) -> None:
        """Rows of positions ``offset .. offset + n - 1``: from anchors, or (``evaluate``)
        from the filler's own evaluator."""
        start = offset & (GRID_SPAN - 1)
        first = offset - start
        if evaluate:
            self.both(n, dtype, (None, None, None, start, float(first)), threads, "run")
            return
        n_anchors = ((start + n - 1) >> GRID_SPAN_BITS) + 1 if n else 0
        anchors = self.anchors(np.arange(n_anchors, dtype=np.float64) * GRID_SPAN + first)
        self.both(n, dtype, (anchors, None, None, start, float(first)), threads, "run")

    def at(self, positions: np.ndarray, dtype, threads: int = 1, evaluate=False) -> None:
        """Row r at ``positions[:, r]`` (one row per position axis): distinct anchors, or
        (``evaluate``) each row's anchor evaluated by the filler."""
        values, u = plan._anchor_values(positions)
        if evaluate:
            self.both(positions.shape[1], dtype, (None, values, u, 0, 0.0), threads, "at")
            return
        distinct, index = plan._distinct(values)
        codes = (index.astype(np.int64) << GRID_SPAN_BITS) | u
        arguments = (self.anchors(distinct), values, codes, 0, 0.0)
        self.both(positions.shape[1], dtype, arguments, threads, "at")


def random_positions(rng, axes: int, n: int) -> np.ndarray:
    """Integers near 0 and up to 2**52, negative ones, fractions: ``(axes, n)`` float64."""
    kinds = rng.integers(0, 4, (axes, n))
    return np.select(
        [kinds == 0, kinds == 1, kinds == 2],
        [
            rng.integers(0, 3000, (axes, n)).astype(np.float64),
            rng.integers(-(2**52), 2**52, (axes, n)).astype(np.float64),
            rng.uniform(-50, 50, (axes, n)),
        ],
        rng.integers(2**40 - 2000, 2**40 + 2000, (axes, n)).astype(np.float64),
    )


@needs_kernel
@settings(max_examples=250, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(0, 40),
    planes=st.sampled_from([1, 2]),
    axes=st.sampled_from([1, 2, 3]),
    factor=st.sampled_from([1.0, 0.75, 1.3, 2.0**0.5, 0.1]),
    dtype=st.sampled_from(DTYPES),
    n=st.integers(0, 70),
    offset=st.one_of(st.integers(0, 5000), st.integers(0, 2**53 - 5000)),
    threads=st.sampled_from([1, 2]),
)
def test_fill_on_generated_layouts(seed, h, planes, axes, factor, dtype, n, offset, threads):
    """Random layouts, frequencies (some past 2**32: anchors only), positions and runs;
    each way ``fill`` is called: a run or positions, from anchors or from the evaluator."""
    rng = np.random.default_rng(seed)
    layout = random_layout(rng, h, planes, axes)
    w = 10.0 ** rng.uniform(-9, 1, h) * rng.choice([-1.0, 1.0], h)
    if h and rng.random() < 0.2:
        w[int(rng.integers(0, h))] = 2.0**33  # the big-integer path, through the anchors
    fill = Fill(w, factor, layout)
    fill.run(offset, n, dtype, threads)
    positions = random_positions(rng, max(fill.plans["twin"].axes, 1), n)
    fill.at(positions, dtype, threads)
    if fill.evaluable:
        fill.run(offset, n, dtype, threads, evaluate=True)
        fill.at(positions, dtype, threads, evaluate=True)


def _convention_case(name: str, width: int):
    convention = sinpe.conventions.get(name)
    w = sinpe.frequencies(width, convention=name)
    return w, table_layout(convention.column_map(width), width)


def _rope_case(name: str, h: int, axes=None):
    layout, order = rope_layout(name, h, None if axes is None else np.array(axes))
    w = sinpe.rope_frequencies(2 * h, base=500000.0)[0]
    return (w if order is None else w[order]), layout


LAYOUT_CASES = {
    "vaswani-1": lambda: _convention_case("vaswani", 1),  # width 1: one sine
    "tensor2tensor-1": lambda: _convention_case("tensor2tensor", 1),  # no frequency at all
    "vaswani-77": lambda: _convention_case("vaswani", 77),
    "tensor2tensor-77": lambda: _convention_case("tensor2tensor", 77),  # a zero column
    "hf-marian-130": lambda: _convention_case("hf-marian", 130),
    "diffusers-64": lambda: _convention_case("diffusers", 64),
    "rope-half-20": lambda: _rope_case("half", 20),
    "rope-interleaved-17": lambda: _rope_case("interleaved", 17),
    "rope-compact-9": lambda: _rope_case("compact", 9),
    "mrope-3-axes": lambda: _rope_case("interleaved", 12, [0, 1, 2] * 4),
}
RUNS = [  # (offset, rows): none, one, an anchor crossed, far away, at the 2**53 limit
    (0, 0),
    (0, 1),
    (1000, 50),
    (3, 1030),
    (2**40 + 1000, 40),
    (2**53 - 2100, 2100),
]


@needs_kernel
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("case", list(LAYOUT_CASES))
def test_fill_on_the_packages_layouts(case, dtype):
    """The layouts the public functions use, at edge widths, each way ``fill`` is called,
    with the factor 1 of a table and a rope attention factor."""
    w, layout = LAYOUT_CASES[case]()
    rng = np.random.default_rng(len(case))
    for factor in (1.0, 1.37):
        fill = Fill(w, factor, layout)
        for offset, n in RUNS:
            fill.run(offset, n, dtype)
            if fill.evaluable:
                fill.run(offset, n, dtype, evaluate=True)
        positions = random_positions(rng, max(fill.plans["twin"].axes, 1), 60)
        fill.at(positions, dtype)
        fill.at(positions[:, :0], dtype)  # no rows
        if fill.evaluable:
            fill.at(positions, dtype, evaluate=True)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fill_of_many_rows(dtype, threads):
    """5000 rows of 128 columns from a far offset: many chunks, threads sharing them."""
    w, layout = _convention_case("vaswani", 128)
    fill = Fill(w, 1.0, layout)
    fill.run(2**44 + 9, 5000, dtype, threads)
    fill.at(np.arange(5000, dtype=np.float64)[None] * 7919.5, dtype, threads)


@needs_kernel
@pytest.mark.parametrize(
    "dtype", ["float32", "float16", pytest.param("bfloat16", marks=needs_bfloat16)]
)
def test_fill_without_the_correct_rounding_test(dtype):
    """``_set_checked(False)`` on both (shared): each narrow value the float64 one rounded
    once, the same bits again; and the switch says what it was on both."""
    before = kernel._set_checked(False), _twin._set_checked(False)
    try:
        assert before == (True, True)
        assert (kernel.CHECKED, _twin.correct.CHECKED) == (False, False)
        for case in ("vaswani-77", "rope-half-20"):
            w, layout = LAYOUT_CASES[case]()
            fill = Fill(w, 1.37, layout)
            fill.run(2**40 + 1000, 1500, dtype)
            fill.at(random_positions(np.random.default_rng(3), 1, 200), dtype)
    finally:
        kernel._set_checked(before[0])
        _twin._set_checked(before[1])
    assert (kernel.CHECKED, _twin.correct.CHECKED) == (True, True)


# =========================================================================== 3. the oracle

ORACLE_POSITIONS = [0.0, 1.0, 3.0, 0.5, -12345.678, 2.0**40 + 3, 2.0**52 + 1, 2.0**53 - 1]
ORACLE_FREQUENCIES = [1.0, 0.5, 10000.0 ** (-200 / 512), 1e-4, 7.5, 2.0**31]


@pytest.mark.parametrize("name", ["kernel", "twin"])
def test_exact_cos_sin_matches_mpmath(name):
    """Both evaluators within 0.5 ulp + 2**-62 of the exact value (exact.h's bound is
    0.5 ulp + 2**-65.3), at small, fractional, negative and far positions."""
    if name == "kernel" and kernel is None:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    module = kernel if name == "kernel" else _twin
    positions = np.array(ORACLE_POSITIONS)
    got = np.empty((positions.size, 2, len(ORACLE_FREQUENCIES)))
    module.exact_cos_sin(positions, frequency_constants(ORACLE_FREQUENCIES), got, 1)
    exact = oracle.cos_sin(ORACLE_POSITIONS, ORACLE_FREQUENCIES)
    excess = np.abs(got - exact) - np.spacing(np.abs(got)) / 2
    assert excess.max() <= 2.0**-62, np.unravel_index(np.argmax(excess), excess.shape)
    assert got[0, 0].tolist() == [1.0] * len(ORACLE_FREQUENCIES)  # position 0: exactly (1, 0)
    assert not got[0, 1].any()


@pytest.mark.parametrize("name", ["kernel", "twin"])
@pytest.mark.parametrize("dtype", NARROW)
def test_correctly_rounded_matches_mpmath(name, dtype):
    """The narrow values of both are mpmath's, rounded once: equal, not merely close."""
    if name == "kernel" and kernel is None:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    module = kernel if name == "kernel" else _twin
    cases = [(c["p"], c["w"]) for c in HARD_CASES if c.get("dtype", dtype) == dtype][:12]
    cases += [(p, w) for p in ORACLE_POSITIONS[1:] for w in ORACLE_FREQUENCIES[:3]]
    for factor in (1.0, 1.37):
        for p, w in cases:
            cos, sin, decided = module.correctly_rounded(float(p), w, factor, dtype)
            want = oracle.cos_sin_narrow([p], [w], dtype, factor)[0, :, 0]
            assert decided, (p, w, factor)
            assert (bits(cos), bits(sin)) == (bits(want[0]), bits(want[1])), (p, w, factor)


@needs_kernel
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fill_matches_mpmath(dtype):
    """A run far away, across an anchor, filled by both: factor * mpmath's value (float64
    within 1e-15 of it, float32 the exact value rounded once)."""
    w, layout = _convention_case("vaswani", 10)
    fill = Fill(w, 1.37, layout)
    offset = 2**40 + 1000
    columns = range(10)
    outs = {}
    for name, module in (("kernel", kernel), ("twin", _twin)):
        out = np.empty((40, 10), dtype=dtype)
        start, first = offset & (GRID_SPAN - 1), offset - (offset & (GRID_SPAN - 1))
        anchors = fill.anchors(np.array([first, first + GRID_SPAN], dtype=np.float64))
        module.fill(fill.plans[name], out, None, anchors, None, None, start, float(first), 2)
        outs[name] = out
    assert_same_bits(outs["kernel"], outs["twin"], "run")
    for r in (0, 23, 24, 39):  # 24: the first row past the anchor at 2**40 + 1024
        exact = oracle.cos_sin([offset + r], w, 1.37, None if dtype == "float64" else dtype)[0]
        want = [exact[1 - c % 2, c // 2] for c in columns]  # sin at even columns
        got = outs["kernel"][r].astype(np.float64)
        if dtype == "float64":
            assert np.abs(got - want).max() <= 1.37e-15, r
        else:
            assert got.tolist() == want, r


# --------------------------------------------------------------------------- tally_block

entry_st = st.one_of(
    st.floats(-2.0, 2.0, allow_nan=False, width=64),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324]),
)


def _tally_both(cos, sin, want_cos, want_sin, cols, positions, rates, match):
    """Both backends' ``tally_block`` on the same block: results and row maxima, each."""
    found = {}
    for name, module in (("kernel", kernel), ("twin", _twin)):
        rows = np.full(cos.shape[0], -7.0)
        counts = module.tally_block(
            cos, sin, want_cos, want_sin, cols, positions, rates, match, rows
        )
        found[name] = (np.array(counts, dtype=np.float64), rows)
    return found


@needs_kernel
@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(0, 12),
    m=st.integers(0, 6),
    extra=st.integers(0, 3),
    with_sin=st.booleans(),
    kinds=st.sampled_from([1, 2]),
    dtype=st.sampled_from([np.float64, np.float32]),
    halves=st.booleans(),
    data=st.data(),
)
def test_tally_block_on_generated_blocks(n, m, extra, with_sin, kinds, dtype, halves, data):
    """Every count of a block (errors, NaN and inf entries, ties, the two drift kinds, the
    radii, a column map into wider exact rows; float64 or float32 rows, whole or the halves
    of one [cos | sin] block, read in place) the same bits from both; the row maxima too."""
    width = m + extra

    def block(rows, columns):
        values = data.draw(st.lists(entry_st, min_size=rows * columns, max_size=rows * columns))
        return np.array(values, dtype=np.float64).reshape(rows, columns)

    with np.errstate(over="ignore"):  # 1e300 as float32: inf, an entry without an error
        both = np.concatenate([block(n, m), block(n, m)], axis=1).astype(dtype)
    if halves:
        cos, sin = both[:, :m], both[:, m:]
    else:
        cos, sin = np.ascontiguousarray(both[:, :m]), np.ascontiguousarray(both[:, m:])
    sin = sin if with_sin else None
    want = np.random.default_rng(n * 31 + m).uniform(-1.5, 1.5, (2, n, width))
    cols = np.array(data.draw(st.permutations(range(width)))[:m], dtype=np.intp)
    positions = np.array(data.draw(st.lists(st.integers(0, 2**53), min_size=n, max_size=n)))
    rates = np.array(
        data.draw(
            st.lists(
                st.sampled_from([0.0, 1e-7, 2.5e-16, 3.0]), min_size=kinds * m, max_size=kinds * m
            )
        )
    )
    match = data.draw(st.sampled_from([0.0, 2.0**-21, 0.5]))
    found = _tally_both(
        cos, sin, want[0], want[1], cols, positions.astype(np.int64), rates.reshape(kinds, m), match
    )
    assert_same_bits(found["kernel"][0], found["twin"][0], "counts")
    assert_same_bits(found["kernel"][1], found["twin"][1], "row maxima")


@pytest.mark.parametrize("name", ["kernel", "twin"])
def test_tally_block_known_counts(name):
    """Two 3 x 2 blocks worked by hand. Column 0 reads exact column 2, column 1 column 0.
    All numbers: errors 0 / 0.25, 0 / 0, 0 / 0.25 (the tie at (0, 1) and (2, 1): the first
    is the worst), radii 1, 0.25; float32's bound 0 and float64's 0.01 per position. Then
    entry (1, 0) made inf: it has no error (the first bad entry, NaN in its row and at the
    top) and is past every bound (the worst, at once)."""
    if name == "kernel" and kernel is None:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    module = kernel if name == "kernel" else _twin
    cos = np.array([[1.0, 0.5], [0.0, 0.0], [0.0, 0.5]])
    sin = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    want_cos = np.array([[0.25, 9.0, 1.0], [0.0, 9.0, 0.0], [0.25, 9.0, 0.0]])
    want_sin = np.array([[0.0, 9.0, 0.0], [1.0, 9.0, 1.0], [0.0, 9.0, 1.0]])
    args = (np.array([2, 0], dtype=np.intp), np.array([0, 10, 20], dtype=np.int64))
    rates = np.array([[0.0, 0.0], [0.01, 0.01]])
    rows = np.empty(3)
    counts = module.tally_block(cos, sin, want_cos, want_sin, *args, rates, 0.125, rows)
    top, bad, worst, worst_at, worst_error, other, low, high = counts
    assert (top, bad, worst, worst_at, worst_error) == (0.25, -1, 0.125, 1, 0.25)
    assert other == 0.125  # at position 0, where float64's bound allows nothing more
    assert (low, high) == (0.25, 1.0) and rows.tolist() == [0.25, 0.0, 0.25]
    cos[1, 0] = np.inf
    counts = module.tally_block(cos, sin, want_cos, want_sin, *args, rates, 0.125, rows)
    top, bad, worst, worst_at, worst_error, other, low, high = counts
    assert np.isnan(top) and bad == 2 and np.isnan(rows[1]) and rows[[0, 2]].tolist() == [0.25] * 2
    assert (worst, worst_at, other) == (np.inf, 2, np.inf) and np.isnan(worst_error)
    assert (low, high) == (0.25, 1.0)  # the inf entry's radius is not among them


@needs_kernel
def test_tally_block_refuses_what_it_cannot_read():
    """Rows it cannot read through its pointers (reversed, another dtype, sin strided
    otherwise than cos, a column past the exact rows) and drift rates that are not numbers
    are a ValueError, never read."""
    block = np.zeros((4, 6))
    want, cols, positions = np.zeros((4, 3)), np.arange(3, dtype=np.intp), np.arange(4)
    rates, rows = np.zeros((1, 3)), np.empty(4)
    good = (block[:, :3], block[:, 3:], want, want, cols, positions, rates, 0.0, rows)
    kernel.tally_block(*good)
    bad = {
        0: block[::-1, :3],
        1: np.ascontiguousarray(block[:, 3:]),
        4: np.array([0, 1, 3]),
    }
    for index, value in bad.items():
        args = list(good)
        args[index] = value if index != 4 else value.astype(np.intp)
        with pytest.raises(ValueError):
            kernel.tally_block(*args)
    with pytest.raises(ValueError):
        kernel.tally_block(block[:, :3].astype(np.float16), None, *good[2:])
    with pytest.raises(ValueError, match="drift rate"):
        kernel.tally_block(*good[:6], np.full((1, 3), np.inf), *good[7:])
