import pytest

import sinpe._backends as backends

AVAILABLE_BACKENDS = sorted(backends.FILLERS)


@pytest.fixture(params=["cython", "numpy"])
def backend(request):
    """Every test that takes `backend` runs on both fillers (cython skipped only when absent)."""
    if request.param not in backends.FILLERS:
        pytest.skip(f"compiled kernel not built: {backends.KERNEL_ERROR}")
    return request.param
