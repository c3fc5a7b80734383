"""The tests of the optional compiled kernels (numba, ``calib_core._accel.compiled``): one helper for all.

CI installs numba and sets ``CALIB_STUDIO_REQUIRE_ALL=1``: a missing kernel
fails there, so both the compiled and the numpy path of each kernel are
tested; elsewhere the compiled half is skipped.
"""
import os

import pytest

from calib_core._accel import compiled as _compiled


def require_kernel(name: str):
    """The compiled kernel ``_compiled.<name>``; skip the test (fail it in CI) when numba is not installed."""
    kernel = getattr(_compiled, name)
    if kernel is None:
        if os.environ.get("CALIB_STUDIO_REQUIRE_ALL") == "1":
            pytest.fail(f"numba is not installed: the compiled {name} kernel is untested")
        pytest.skip("numba is not installed (pip install calib-core[fast])")
    return kernel


def kernel_paths(name: str, fixture_name: str):
    """A fixture, ``fixture_name``, that runs each test using it twice: with ``_compiled.<name>`` (numba) and
    with the numpy path it replaces (the kernel set to None)."""
    @pytest.fixture(params=["compiled", "numpy"], name=fixture_name)
    def path(request, monkeypatch):
        if request.param == "compiled":
            require_kernel(name)
        else:
            monkeypatch.setattr(_compiled, name, None)
        return request.param

    return path
