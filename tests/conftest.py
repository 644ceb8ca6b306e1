import pytest

from sinpe import _twin
from sinpe._tables import backends

AVAILABLE_BACKENDS = sorted(backends.BACKENDS)


@pytest.fixture(params=["cython", "numpy"])
def backend(request):
    """Every test that takes `backend` runs on both backends (cython skipped only when absent)."""
    if request.param not in backends.BACKENDS:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    return request.param


def pytest_collection_modifyitems(config, items):
    """The tests of compiled code carry the `compiled` marker: every test that takes the
    `backend` fixture, and the files that say so (`pytestmark = pytest.mark.compiled`).
    The builds CI makes besides the default one (debug, SSE2, plain C, clang, sanitized)
    run `-m "compiled and not numpy_path"`; the rest of the suite does not depend on how the
    kernel was built. A test's instance on the NumPy backend carries `numpy_path`: it runs
    no compiled code, so those builds leave it to the default one (and the NumPy lane)."""
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.compiled)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "numpy":
            item.add_marker(pytest.mark.numpy_path)


def _undecided() -> tuple[int, int]:
    """How many narrow values each backend (the twin, the kernel) rounded undecided."""
    kernel = backends.kernel
    return _twin.undecided(), (kernel.undecided() if kernel is not None else 0)


def _undecided_inputs(made: tuple[int, int]) -> str:
    """The inputs of the undecided values just made (each backend's ring keeps its last 64),
    one line each: to decide with mpmath (tools/hard_cases.py) and keep as hard cases."""
    kernel = backends.kernel
    logs = (_twin.undecided_log(), kernel.undecided_log() if kernel is not None else [])
    return "\n".join(
        f"  p={e['p']!r} w={e['w']!r} factor={e['factor']!r} dtype={e['dtype']} isa={e['isa']}"
        for log, n in zip(logs, made)
        for e in (log[-n:] if n else [])
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A narrow value rounded without being decided (correct.h, _twin/correct.py: each one's
    chance is about 2^-70, none is expected) fails the test during which it was made, named
    with its inputs: the counts are process-wide, so a test reading them at its end would
    blame itself for another test's inputs, and only in some orders."""
    before = _undecided()
    result = yield
    made = tuple(now - then for now, then in zip(_undecided(), before))
    assert made == (0, 0), (
        f"{sum(made)} narrow values rounded without being decided during this test; their "
        f"inputs (the last 64 of each backend at most):\n{_undecided_inputs(made)}"
    )
    return result


def pytest_sessionfinish(session, exitstatus):
    """``SINPE_NO_SKIPS=1`` (an engine leg: its engine is installed, so each of its tests
    must run): any skipped test, a module skipped on a missing import included, fails the
    run, each named."""
    import os

    if os.environ.get("SINPE_NO_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        for report in skipped:
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
            print(f"\nSINPE_NO_SKIPS: skipped {report.nodeid}: {reason}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
