"""One OpenBLAS kernel for every test run, whatever the CPU.

OpenBLAS picks its matrix-product kernels by CPU (Haswell, SkylakeX, Zen ...),
and they round differently. Most numbers move by about 1e-16 between them, but
the full-matrix fits (matrix and Dirichlet scaling) on near-separable data
follow L-BFGS-B along a flat objective to its iteration cap and end up far
apart: up to 0.15 in probability on the wine demo, and the digits demo's Brier
interval moved by 5e-6, between an Intel AVX-512 machine (where the recorded
numbers were made) and an AMD EPYC one (where they then failed). The tests'
recorded numbers are made and checked with the AVX2 kernel, which every x86-64
CPU with AVX2 runs; ``tests/conftest.py`` pins it before numpy is imported
(OpenBLAS reads ``OPENBLAS_CORETYPE`` once, when it is loaded).
"""
from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

#: The OpenBLAS kernel of the recorded numbers.
PINNED_CORETYPE = "Haswell"

#: One thread in each BLAS and OpenMP pool of a test process (unless the environment says otherwise).
#: scripts/run_tests.sh runs one pytest-xdist worker per CPU; a pool of one thread per CPU in each worker put
#: two threads on every core, and OpenBLAS's and libgomp's idle threads spin, on the very cores the other worker
#: needs: on 2 cores a LogisticRegression fit on the digits took 5 s of CPU instead of 0.08 s, and a
#: HistGradientBoostingClassifier fit 50 s instead of 4 s. The children a test starts (the command line, a
#: browser test's server) inherit it. calib_core's own block threads (``calib_core._accel.threads``) are not
#: limited, and its results do not depend on them.
THREAD_LIMITS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def can_pin() -> bool:
    """Whether this CPU runs the pinned kernel: x86-64 with AVX2 (elsewhere nothing is pinned)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def pinned_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) with ``OPENBLAS_CORETYPE`` pinned where the CPU can run it, and
    :data:`THREAD_LIMITS` where ``environ`` sets no limit of its own."""
    env = dict(os.environ if environ is None else environ)
    for name, value in THREAD_LIMITS.items():
        env.setdefault(name, value)
    if can_pin():
        env["OPENBLAS_CORETYPE"] = PINNED_CORETYPE
    return env


def pin_this_process() -> None:
    """Pin the kernel and the thread limits in this process's environment (before numpy or scipy load OpenBLAS,
    and scikit-learn its OpenMP runtime) and its children's."""
    os.environ.update(pinned_environment())


def openblas_architectures() -> set[str]:
    """The kernels of the OpenBLAS libraries loaded in this process (numpy's and scipy's)."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's)
    import threadpoolctl

    return {info["architecture"] for info in threadpoolctl.threadpool_info() if info["internal_api"] == "openblas"}
