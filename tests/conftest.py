import pytest

from sinpe._front import backends

AVAILABLE_BACKENDS = sorted(backends.BACKENDS)


@pytest.fixture(params=["cython", "numpy"])
def backend(request):
    """Every test that takes `backend` runs on both backends (cython skipped only when absent)."""
    if request.param not in backends.BACKENDS:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    return request.param
