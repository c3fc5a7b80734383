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


def can_pin() -> bool:
    """Whether this CPU runs the pinned kernel: x86-64 with AVX2 (elsewhere nothing is pinned)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def pinned_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) with ``OPENBLAS_CORETYPE`` pinned where the CPU can run it."""
    env = dict(os.environ if environ is None else environ)
    if can_pin():
        env["OPENBLAS_CORETYPE"] = PINNED_CORETYPE
    return env


def pin_this_process() -> None:
    """Pin the kernel in this process's environment (before numpy or scipy load OpenBLAS) and its children's."""
    os.environ.update(pinned_environment())


def openblas_architectures() -> set[str]:
    """The kernels of the OpenBLAS libraries loaded in this process (numpy's and scipy's)."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's)
    import threadpoolctl

    return {info["architecture"] for info in threadpoolctl.threadpool_info() if info["internal_api"] == "openblas"}
