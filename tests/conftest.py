import pytest

import sinpe._api as api

AVAILABLE_BACKENDS = sorted(api._FILLERS)


@pytest.fixture(params=["cython", "numpy"])
def backend(request):
    """Every test that takes `backend` runs on both fillers (cython skipped only when absent)."""
    if request.param not in api._FILLERS:
        pytest.skip(f"compiled kernel not built: {api._KERNEL_ERROR}")
    return request.param
