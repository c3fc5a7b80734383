"""Compile calib_core's numba kernels into numba's on-disk cache, so the first visitor of a new
container does not wait for them (the Dockerfile runs this at build time, as the runtime user, with
the image's ``NUMBA_CACHE_DIR``).

It runs the CLI's HTML report (two 3-class models, bootstrap intervals), a binary JSON report and the
streaming engine on small synthetic files: the paths a first visit takes, with the array types the
app passes (float64 probabilities, integer labels), so the kernels are compiled for the signatures
they are called with. The numbers are thrown away. Prints which kernels are cached and the time.

numba keys a cached kernel by its source (a hash of ``calib_core/_accel/compiled.py`` or ``compiled_draws.py``), the Python version and the
CPU: a container on a host with another CPU model compiles again on first use (as without this
script), and so does one whose ``NUMBA_CACHE_DIR`` is not the build's (``docker run --read-only``
with a tmpfs over /tmp). Without numba it prints so and does nothing.

    python scripts/warm_kernels.py
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from calib_core.engines import cli  # noqa: E402
from calib_core._accel import compiled as _compiled  # noqa: E402

ROWS = 2_000


def _write_predictions(path: Path, n_classes: int, sharpness: float, seed: int) -> None:
    """A CSV of ``ROWS`` rows: ``label, p_0 ... p_{K-1}``, labels drawn from softmax(sharpness * logits)
    so that the model is over- or underconfident."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(ROWS, n_classes))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    truth = np.exp(sharpness * logits - (sharpness * logits).max(axis=1, keepdims=True))
    truth /= truth.sum(axis=1, keepdims=True)
    labels = (truth.cumsum(axis=1) < rng.random((ROWS, 1))).sum(axis=1).clip(max=n_classes - 1)
    header = ",".join(["label"] + [f"p_{k}" for k in range(n_classes)])
    np.savetxt(path, np.column_stack([labels, probs]), delimiter=",", header=header, comments="",
               fmt=["%d"] + ["%.8g"] * n_classes)


def _cached(cache_dir: str | None) -> list[str]:
    if not cache_dir or not Path(cache_dir).is_dir():
        return []
    return sorted({path.name.split("-")[0].split(".")[-1] for path in Path(cache_dir).rglob("compiled*.nbi")})


def main() -> int:
    if _compiled.row_max is None:
        print("warm_kernels: numba is not installed (or CALIB_CORE_NO_NUMBA is set): nothing to compile")
        return 0
    start = time.perf_counter()
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    print(f"warm_kernels: compiling calib_core's kernels into {cache_dir or 'numba default cache'}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        over, under, binary = folder / "over.csv", folder / "under.csv", folder / "binary.csv"
        _write_predictions(over, 3, 0.5, seed=1)
        _write_predictions(under, 3, 2.0, seed=2)
        _write_predictions(binary, 2, 0.7, seed=3)
        runs = [["report", "--html", str(folder / "report.html"), "--n-boot", "20", str(over), str(under)],
                ["report", "--json", "--n-boot", "20", str(binary)],
                ["report", "--json", "--engine", "stream", str(over)]]
        for argv in runs:
            with contextlib.redirect_stdout(io.StringIO()):
                status = cli.main(argv)
            if status:
                print(f"warm_kernels: `calib-core {' '.join(argv)}` exited with {status}", file=sys.stderr)
                return status
    kernels = _cached(cache_dir)
    print(f"warm_kernels: {len(kernels)} kernels cached ({', '.join(kernels) or 'none found'}) "
          f"in {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
