import pytest

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
    run `-m compiled`; the rest of the suite does not depend on how the kernel was built."""
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.compiled)
