"""Reference outputs of probmetrics for structured scaling and quadratic scaling (issue 27's test fixtures).

Run in a venv with ``torch``, ``pytorch-minimize``, ``numba`` and
``probmetrics==1.3.0`` (not calib_core's dependencies: torch alone is
gigabytes, too heavy for CI), from the repository root::

    PYTHONPATH=. python scripts/make_structured_reference.py

It fits, on the three real sets of ``tests/recalibration/reference/sets.py``
(binary and 10-class demos; at 1,000 classes the next-word set of
``data/next_word``, not ImageNet: its first 2,000 rows fit, the next 2,000
evaluate; needs pandas, pyarrow and threadpoolctl too, for calib_core's loaders),
probmetrics' ``get_calibrator("svs")`` and ``get_calibrator("sms")`` (ridge,
torchmin BFGS, the reference's defaults) and, on the binary set,
``BinaryLogisticCalibrator(type="quadratic")`` (the factory's
``"quadratic-scaling"``: the unpenalised fit; its penalised twin
``RegularizedQuadraticScalingCalibrator`` is fitted by SAGA with a step of
``1 / (0.75 max_i ||(1, z, z^2)||^2)``, which at logits near 35 stops far from
the minimum after its 200 epochs, so it is no reference for the minimiser),
and writes their calibrated probabilities
on the evaluation rows (the first 100 rows at 1,000 classes), their fitted
parameters and fit seconds to ``tests/recalibration/reference/structured_reference.npz``.
SMS is not run at 1,000 classes (10^6 parameters; above calib_core's limit).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recalibration" / "reference"))

from sets import SETS, load_set  # noqa: E402

OUT = ROOT / "tests" / "recalibration" / "reference" / "structured_reference.npz"
EVAL_ROWS = 100  # rows of the evaluation set stored at 1,000 classes


def main() -> None:
    from importlib.metadata import version

    from probmetrics.calibrators import get_calibrator
    from probmetrics.calibrators.logistic import BinaryLogisticCalibrator

    out: dict[str, np.ndarray] = {"probmetrics_version": np.array(version("probmetrics"))}
    for name in SETS:
        fit_probs, labels, eval_probs = load_set(name)
        stored = eval_probs if name != "thousand" else eval_probs[:EVAL_ROWS]
        runs = {"svs": lambda: get_calibrator("svs", svs_print_init_info=False)}
        if name != "thousand":
            runs["sms"] = lambda: get_calibrator("sms", sms_print_init_info=False)
        if name == "binary":
            runs["quadratic"] = lambda: BinaryLogisticCalibrator(type="quadratic")
        for method, make in runs.items():
            cal = make()
            start = time.perf_counter()
            cal.fit(fit_probs, labels)
            seconds = time.perf_counter() - start
            key = f"{method}/{name}"
            out[f"{key}/probs"] = np.asarray(cal.predict_proba(stored), dtype=np.float64)
            out[f"{key}/fit_seconds"] = np.array(seconds)
            if method in ("svs", "sms"):
                out[f"{key}/invtemp"] = np.array(float(cal.ts_.cal_.invtemp_))
                out[f"{key}/bias"] = np.asarray(cal.b_ if method == "svs" else cal.W_[:, -1], dtype=np.float64)
            print(f"{key:<24s} fit {seconds:8.3f} s")
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
