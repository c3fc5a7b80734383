"""Fit time of every recalibration method on N x K synthetic logits (default 50,000 x 100),
and the ratio to scikit-learn's equivalent where one exists, measured in the same run.

    python bench/bench_recalibration.py [--rows 50000] [--classes 100] [--seed 0] [--json out.json]
    python bench/bench_recalibration.py --page 100000x10 20000x1000 50000x1000 [--boot 200] [--methods ...]

``--page`` times the Recalibration page's own work at each size (float32
logits, a stratified random half for fitting and half for evaluation, as the
page does for a file without a split column): each default method's fit and
evaluation (:func:`calib_core.recalibration.compare.fit_method`), the paired
bootstrap intervals, the temperature surface and the ranking under the 32 GCE
variants. ``--methods`` times the named methods instead of the default set.

The logits are over-confident (true temperature 2) with class-dependent
offsets, so every method has something to fit. scikit-learn equivalents:
``IsotonicRegression(out_of_bounds="clip")`` one-vs-rest on the probability
columns (vs ``IsotonicCalibration(input="probs")``) and an unpenalised
``LogisticRegression`` on each class's log-odds (vs
``PlattScaling(smooth_targets=False)``). Binary-only methods (quadratic
scaling) are timed on binary logits of the same row count. Structured
vector/matrix scaling and quadratic scaling are also timed beside their
reference code (probmetrics; live when importable, else the time stored with
the reference fixture) on the sets of ``tests/recalibration/reference``.
Issue 27 item 5, in the same run: SVS at ``--svs-size`` (default 50,000 x
1,000, ImageNet's shape) and every binary method on ``--binary-rows`` (default
50,000) binary logits, each beside its reference implementation on the same
data: scikit-learn's ``LogisticRegression`` on the logit (Platt scaling on
logits), ``IsotonicRegression``, cir-model, splinecalib and venn-abers, and
probmetrics for SVS and quadratic scaling when importable (it needs torch,
absent from this venv: the row then says so and the stored fixture time
above stands in, on the fixture's own size, not the same data). ``--quick``
shrinks every size (1,000 x 10 for the main table, 2,000 binary rows, SVS at
2,000 x 100) for a check that the script runs.

``--data next-word`` takes the logits from the real 1,000-class set instead
(``data/next_word``: next-word prediction in the Python documentation by a
fitted language model, not ImageNet; at most 60,000 rows; see
``tests/recalibration/reference/sets.py``): at 1,000 classes its rows in file
order, at 2 classes (the binary methods) the model's probability that the next
word is outside its 999 words (``<other>``, 19% of words) against that event,
as binary logits ``(log(1 - p), log p)``; ``--reference-only`` runs only the
same-data table of issue 27 item 5 (the all-methods table at 1,000 classes
would fit matrix scaling's 10^6 parameters).

The 1-minute load average is printed because other processes on a 2-core
machine change every figure.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calib_core.recalibration import IsotonicCalibration, PlattScaling, all_recalibrators  # noqa: E402
from calib_core.recalibration._numeric import class_log_probs  # noqa: E402

BUDGET_SECONDS = 30.0
#: The Recalibration page skips the bootstrap above this predicted time
#: (studio.compute_recalibration.BOOT_BUDGET_SECONDS).
PAGE_BOOT_BUDGET = 60.0


def synthetic_logits(n_rows: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n_rows, n_classes)) + 0.3 * rng.normal(size=n_classes)
    probs = np.exp(z - z.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (probs.cumsum(axis=1) > rng.uniform(size=(n_rows, 1))).argmax(axis=1)
    row_offsets = rng.normal(size=(n_rows, 1))  # logits of real networks have per-row offsets
    return 2.0 * z + row_offsets, labels


#: Sources of the bench's logits (``--data``).
DATA = ("synthetic", "next-word")


def bench_logits(n_rows: int, n_classes: int, seed: int, data: str = "synthetic") -> tuple[np.ndarray, np.ndarray]:
    """``(logits, labels)`` of ``n_rows`` x ``n_classes``: :func:`synthetic_logits`, or the real next-word set."""
    if data == "synthetic":
        return synthetic_logits(n_rows, n_classes, seed)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "recalibration" / "reference"))
    from sets import next_word

    if n_classes not in (2, 1000):
        raise SystemExit(f"--data next-word has 1,000 classes (or 2: '<other>' against the rest), not {n_classes}")
    logits, labels = next_word(n_rows)
    if labels.size < n_rows:
        raise SystemExit(f"--data next-word has {labels.size:,} rows, fewer than the {n_rows:,} asked for")
    if n_classes == 1000:
        return logits, labels
    other = logits.shape[1] - 1
    log_p, log_not_p = class_log_probs(logits)
    return np.column_stack([log_not_p[:, other], log_p[:, other]]), (labels == other).astype(np.intp)


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def sklearn_isotonic(probs: np.ndarray, labels: np.ndarray) -> None:
    from sklearn.isotonic import IsotonicRegression

    for k in range(probs.shape[1]):
        IsotonicRegression(out_of_bounds="clip").fit(probs[:, k], labels == k)


def sklearn_platt(log_odds: np.ndarray, labels: np.ndarray) -> None:
    from sklearn.linear_model import LogisticRegression

    for k in range(log_odds.shape[1]):
        LogisticRegression(C=np.inf, max_iter=1000).fit(log_odds[:, k : k + 1], labels == k)


def _size(text: str) -> tuple[int, int]:
    rows, classes = text.lower().split("x")
    return int(rows), int(classes)


def page_bench(n_rows: int, n_classes: int, *, seed: int, n_boot: int, methods: list[str] | None,
               force_boot: bool = False, data: str = "synthetic") -> dict:
    """The Recalibration page's work at one size, seconds per step (see the module docstring)."""
    from calib_core.recalibration import compare, defaults, sweeps

    logits, labels = bench_logits(n_rows, n_classes, seed, data)
    logits = logits.astype(np.float32).astype(np.float64)  # what a float32 Parquet file gives the page
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    chosen = list(methods) if methods else list(defaults.default_methods(n_classes))
    print(f"page work on {n_rows:,} x {n_classes} float32 logits ({data}; load average {os.getloadavg()[0]:.1f}); "
          f"default methods at K = {n_classes}: {', '.join(defaults.default_methods(n_classes))}")
    out: dict = {"rows": n_rows, "classes": n_classes, "methods": {}, "load_average": os.getloadavg()[0]}
    start = time.perf_counter()
    ev = compare.evaluation_set(logits, probs, labels, compare.Protocol("random"), input="logits")
    out["evaluation_set"] = time.perf_counter() - start
    print(f"  {'evaluation rows and before-metrics':<42s} {out['evaluation_set']:7.2f} s")
    fits = {}
    out["methods_cpu"] = {}
    for name in chosen:
        start, cpu = time.perf_counter(), time.process_time()
        fits[name] = compare.fit_method(name, logits, labels, ev)
        seconds = time.perf_counter() - start
        out["methods"][name] = seconds
        out["methods_cpu"][name] = time.process_time() - cpu
        status = "" if fits[name].ok else f"  FAILED: {fits[name].message[:60]}"
        print(f"  {name:<42s} {seconds:7.2f} s  (fit {fits[name].fit_seconds:.2f} s; "
              f"CPU {out['methods_cpu'][name]:.2f} s){status}")
    out["fits_total"] = sum(out["methods"].values())
    print(f"  {'all fits (fit + predict + metrics)':<42s} {out['fits_total']:7.2f} s  "
          f"(CPU {sum(out['methods_cpu'].values()):.2f} s, all threads: on a busy machine closer to the idle time)")
    ok = {name: fit for name, fit in fits.items() if fit.ok}
    predicted = compare.bootstrap_seconds(ev, n_boot, len(ok))
    if n_boot and predicted > PAGE_BOOT_BUDGET and not force_boot:
        print(f"  {f'paired bootstrap ({n_boot} resamples)':<42s} skipped, as the page does: predicted "
              f"{predicted:.0f} s > {PAGE_BOOT_BUDGET:.0f} s")
    elif n_boot:
        start = time.perf_counter()
        compare.intervals(ev, ok, n_boot=n_boot, seed=seed)
        out["intervals"] = time.perf_counter() - start
        print(f"  {f'paired bootstrap ({n_boot} resamples)':<42s} {out['intervals']:7.2f} s  "
              f"(predicted {predicted:.1f} s)")
    start = time.perf_counter()
    sweeps.temperature_surface(logits[ev.eval_index], ev.labels, seed=seed)
    out["temperature_surface"] = time.perf_counter() - start
    print(f"  {'temperature surface':<42s} {out['temperature_surface']:7.2f} s")
    start = time.perf_counter()
    sweeps.gce_ranking({compare.BEFORE: ev.before, **{n: f.probs for n, f in ok.items()}}, ev.labels, seed=seed)
    out["gce_ranking"] = time.perf_counter() - start
    print(f"  {'ranking under the 32 GCE variants':<42s} {out['gce_ranking']:7.2f} s")
    out["total"] = out["evaluation_set"] + out["fits_total"] + sum(
        out.get(k, 0.0) for k in ("intervals", "temperature_surface", "gce_ranking"))
    print(f"  {'total':<42s} {out['total']:7.2f} s")
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument("--page", nargs="+", type=_size, default=None, metavar="NxK",
                        help="time the Recalibration page's work at these sizes instead")
    parser.add_argument("--boot", type=int, default=200, help="bootstrap resamples of --page (0: none)")
    parser.add_argument("--methods", nargs="+", default=None, help="methods of --page (default: the default set)")
    parser.add_argument("--force-boot", action="store_true", help="run the bootstrap even above the page's budget")
    parser.add_argument("--svs-size", type=_size, default=(50_000, 1_000), metavar="NxK",
                        help="size of the SVS-against-reference timing (default 50000x1000)")
    parser.add_argument("--binary-rows", type=int, default=50_000,
                        help="rows of the binary methods-against-reference timing (default 50000)")
    parser.add_argument("--data", choices=DATA, default="synthetic",
                        help="the logits: synthetic, or the real next-word set (1,000 or 2 classes, <= 60,000 rows)")
    parser.add_argument("--reference-only", action="store_true",
                        help="only the new methods beside their references on the same data (issue 27 item 5)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes everywhere (1000 x 10, 2000 binary rows, SVS 2000 x 100; "
                             "2000 x 1000 with --data next-word)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.classes, args.binary_rows, args.svs_size = 1_000, 10, 2_000, (2_000, 100)
        if args.data == "next-word":  # its only multi-class K
            args.svs_size = (2_000, 1_000)
    if args.page:
        results = {f"{n}x{k}": page_bench(n, k, seed=args.seed, n_boot=args.boot, methods=args.methods,
                                          force_boot=args.force_boot, data=args.data)
                   for n, k in args.page}
        if args.json is not None:
            args.json.write_text(json.dumps(results, indent=2))
        return results
    if args.reference_only:
        results = {"same_data": same_data_reference_bench(args.binary_rows, args.svs_size, seed=args.seed,
                                                          data=args.data)}
        if args.json is not None:
            args.json.write_text(json.dumps(results, indent=2))
        return results

    logits, labels = bench_logits(args.rows, args.classes, args.seed, args.data)
    print(f"recalibration fit times on {args.rows:,} x {args.classes} logits "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    results: dict = {"rows": args.rows, "classes": args.classes, "load_average": os.getloadavg()[0], "methods": {}}
    total = 0.0
    binary = bench_logits(args.rows, 2, args.seed, args.data)
    for name, method in all_recalibrators(input="logits").items():
        # binary-only methods (quadratic scaling) are timed on binary logits of the same row count
        x, y = binary if getattr(method, "binary_only", False) else (logits, labels)
        seconds = _timed(lambda: method.fit(x, y))
        total += seconds
        note = ""
        if hasattr(method, "converged_"):
            note = f"  ({method.n_iter_} L-BFGS iterations{'' if method.converged_ else ', NOT converged'})"
        results["methods"][name] = seconds
        if x is not logits:
            note += "  (binary logits)"
        print(f"  {name:<42s} {seconds:7.2f} s{note}")
    results["total"] = total
    verdict = "within" if total <= BUDGET_SECONDS else "OVER"
    print(f"  {'total (all methods)':<42s} {total:7.2f} s   {verdict} the {BUDGET_SECONDS:.0f} s budget")

    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    log_p, log_not_p = class_log_probs(logits)
    log_odds = log_p - log_not_p
    comparisons = {
        "isotonic (one-vs-rest, from probabilities)": (
            lambda: IsotonicCalibration(input="probs").fit(probs, labels), lambda: sklearn_isotonic(probs, labels),
            "sklearn IsotonicRegression x K"),
        "Platt (one-vs-rest, unsmoothed targets)": (
            lambda: PlattScaling(smooth_targets=False).fit(logits, labels), lambda: sklearn_platt(log_odds, labels),
            "sklearn LogisticRegression x K"),
    }
    print("ratio to scikit-learn (same data, same run; < 1 means faster than scikit-learn)")
    results["sklearn"] = {}
    for label, (ours, theirs, their_name) in comparisons.items():
        ours_s, theirs_s = _timed(ours), _timed(theirs)
        results["sklearn"][label] = {"ours": ours_s, "sklearn": theirs_s, "ratio": ours_s / theirs_s}
        print(f"  {label:<44s} ours {ours_s:6.2f} s   {their_name} {theirs_s:6.2f} s   ratio {ours_s / theirs_s:5.2f}")
    results["reference"] = structured_reference_bench()
    results["same_data"] = same_data_reference_bench(args.binary_rows, args.svs_size, seed=args.seed, data=args.data)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


def structured_reference_bench() -> dict:
    """Fit seconds of SVS, SMS and quadratic scaling beside their reference code's (probmetrics), on the
    reference sets of ``tests/recalibration/reference``: the reference is timed live when probmetrics (and
    torch) are importable, else its time stored by ``scripts/make_structured_reference.py`` is shown."""
    reference_dir = Path(__file__).resolve().parents[1] / "tests" / "recalibration" / "reference"
    sys.path.insert(0, str(reference_dir))
    from sets import load_set

    from calib_core.recalibration import QuadraticScaling, StructuredMatrixScaling, StructuredVectorScaling

    with np.load(reference_dir / "structured_reference.npz") as data:
        stored = {key: data[key] for key in data.files}
    try:
        from probmetrics.calibrators import get_calibrator
        from probmetrics.calibrators.logistic import BinaryLogisticCalibrator
        live = {"svs": lambda: get_calibrator("svs", svs_print_init_info=False),
                "sms": lambda: get_calibrator("sms", sms_print_init_info=False),
                "quadratic": lambda: BinaryLogisticCalibrator(type="quadratic")}
        source = "probmetrics, timed now"
    except ImportError:
        live, source = None, f"probmetrics {stored['probmetrics_version']}, stored when the fixture was made"
    ours = {"svs": StructuredVectorScaling, "sms": StructuredMatrixScaling, "quadratic": QuadraticScaling}
    print(f"structured and quadratic scaling vs the reference code ({source})")
    out: dict = {}
    for key in sorted(k.rsplit("/", 1)[0] for k in stored if k.endswith("/probs")):
        method, name = key.split("/")
        fit_probs, labels, _ = load_set(name)
        ours_s = _timed(lambda: ours[method]().fit(np.log(fit_probs), labels))
        if live is not None:
            theirs_s = _timed(lambda: live[method]().fit(fit_probs, labels))
        else:
            theirs_s = float(stored[f"{key}/fit_seconds"])
        out[key] = {"ours": ours_s, "reference": theirs_s}
        print(f"  {key:<22s} {fit_probs.shape[0]:>6,} x {fit_probs.shape[1]:<5d} ours {ours_s:6.2f} s   "
              f"reference {theirs_s:6.2f} s")
    return out


def _binary_references(logits: np.ndarray, labels: np.ndarray) -> dict:
    """(our fit, the reference's fit, reference name) per binary method, on the same binary logits.

    A reference whose package is not importable is ``None`` with the reason.
    """
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    from calib_core.recalibration import (CenteredIsotonic, QuadraticScaling, SplineCalibration, VennAbers)

    z = (logits[:, 1] - logits[:, 0])[:, None]  # the binary logit
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    positive = labels == 1

    def optional(module: str, make):
        try:
            __import__(module)
        except ImportError as exc:
            return None, f"{module} not importable ({exc.name} missing)"
        return make, module

    def cir():
        import cir_model

        cir_model.CenteredIsotonicRegression().fit(probs[:, 1], positive.astype(float))

    def spline():
        import splinecalib

        splinecalib.SplineCalib().fit(probs, labels)

    def venn():
        import venn_abers

        venn_abers.VennAbers().fit(probs, labels)

    def quadratic():
        from probmetrics.calibrators.logistic import BinaryLogisticCalibrator

        BinaryLogisticCalibrator(type="quadratic").fit(probs, labels)

    return {
        "Platt scaling (logits)": (lambda: PlattScaling().fit(logits, labels),
                                   (lambda: LogisticRegression(C=np.inf, max_iter=1000).fit(z, positive)),
                                   "sklearn LogisticRegression on the logit"),
        "Isotonic regression": (lambda: IsotonicCalibration(input="probs").fit(probs, labels),
                                lambda: IsotonicRegression(out_of_bounds="clip").fit(probs[:, 1], positive),
                                "sklearn IsotonicRegression"),
        "Centred isotonic regression": (lambda: CenteredIsotonic().fit(probs, labels), *optional("cir_model", cir)),
        "Spline calibration": (lambda: SplineCalibration().fit(probs, labels), *optional("splinecalib", spline)),
        "Venn-Abers": (lambda: VennAbers().fit(probs, labels), *optional("venn_abers", venn)),
        "Quadratic scaling": (lambda: QuadraticScaling().fit(logits, labels), *optional("probmetrics", quadratic)),
    }


def _wall_and_cpu(function) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of one call: on a loaded 2-core machine CPU time is the steadier."""
    start, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - start, time.process_time() - cpu


def _same_data_row(name: str, rows: int, classes: int, ours, theirs, their_name: str) -> dict:
    ours_s, ours_cpu = _wall_and_cpu(ours)
    theirs_s, theirs_cpu = (None, None) if theirs is None else _wall_and_cpu(theirs)
    shown = "not timed" if theirs_s is None else f"{theirs_s:7.2f} s (CPU {theirs_cpu:7.2f} s)"
    print(f"  {name:<30s} {rows:>7,} x {classes:<5d} ours {ours_s:7.2f} s (CPU {ours_cpu:6.2f} s)   "
          f"reference {shown}  ({their_name})")
    return {"rows": rows, "classes": classes, "ours": ours_s, "reference": theirs_s, "ours_cpu": ours_cpu,
            "reference_cpu": theirs_cpu, "reference_name": their_name}


def same_data_reference_bench(binary_rows: int, svs_size: tuple[int, int], *, seed: int,
                              data: str = "synthetic") -> dict:
    """Issue 27 item 5: each new method's fit time beside its reference's, on the same data, in this run.

    The binary methods on ``binary_rows`` binary logits; structured vector scaling at ``svs_size`` (its
    reference, probmetrics, timed only when importable). Wall and CPU seconds of each fit.
    """
    from calib_core.recalibration import StructuredVectorScaling

    out: dict = {"binary_rows": binary_rows, "svs_size": list(svs_size), "data": data, "methods": {}}
    logits, labels = bench_logits(binary_rows, 2, seed, data)
    print(f"new methods vs their reference implementation, same data ({data}), same run "
          f"(load average {os.getloadavg()[0]:.1f})")
    for name, (ours, theirs, their_name) in _binary_references(logits, labels).items():
        out["methods"][name] = _same_data_row(name, binary_rows, 2, ours, theirs, their_name)
    n_rows, n_classes = svs_size
    logits, labels = bench_logits(n_rows, n_classes, seed, data)
    try:
        from probmetrics.calibrators import get_calibrator
    except ImportError as exc:
        theirs, their_name = None, f"probmetrics not importable ({exc.name} missing)"
    else:
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        theirs, their_name = (lambda: get_calibrator("svs", svs_print_init_info=False).fit(probs, labels),
                              "probmetrics SVSCalibrator")
    svs = StructuredVectorScaling()
    out["methods"]["Structured vector scaling"] = _same_data_row(
        "Structured vector scaling", n_rows, n_classes, lambda: svs.fit(logits, labels), theirs, their_name)
    out["methods"]["Structured vector scaling"]["ours_iterations"] = int(svs.n_iter_)
    print(f"  (ours: {svs.n_iter_} L-BFGS iterations{'' if svs.converged_ else ', NOT converged'}; "
          f"load average now {os.getloadavg()[0]:.1f})")
    return out


if __name__ == "__main__":
    main()
