"""``calib-core check``: a calibration gate for CI whose verdict knows its power.

Each condition ends as **pass**, **fail** or **inconclusive**; the exit
status is 1 when any condition fails, else 3 when any is inconclusive, else
0; 2 for invalid input or usage (no condition is evaluated then).

Conditions
----------
* A metric and a bar (``--metric ece --max 0.03``, or ``--min`` for a metric
  that must stay high, e.g. ``accuracy`` or ``cox_slope``). ``--on upper``
  (the default) judges the metric's interval, made as its registry entry
  declares (:func:`calib_core.metric_interval`): with ``--max``, pass when its
  upper end is at most the bar, fail when its lower end is above it,
  inconclusive when it straddles the bar (``--min``: the mirror image). A
  metric without an interval (``interval="none"``) is inconclusive under
  ``--on upper``. ``--on estimate`` compares the point estimate alone.
* A calibration test (``--test hosmer_lemeshow``): its verdict
  (:mod:`calib_core.inference.verdicts`): miscalibrated fails, consistent
  passes, inconclusive is inconclusive.
* A baseline (``--baseline OLD --max-increase 0.01``): the paired bootstrap
  difference new - baseline of the metric on matched rows
  (:mod:`calib_core.engines.cli_compare`); fail when its interval lies above
  the allowed increase, pass when it lies below, inconclusive otherwise
  (``--on estimate``: the difference alone). For accuracy, a decrease is the
  worsening.

Never a silent pass: fewer rows than the condition's minimum, labels of one
class only, a metric or test that cannot be computed, or a value that is not
finite make the condition inconclusive, with the reason.

Several conditions come from a policy file (``--policy calibration.toml``,
:func:`read_policy`); see ``docs/calibration.example.toml``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from calib_core.engines.cli_common import (EXIT_BAD_INPUT, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, _select_split,
                                           add_loader_flags, check_metric_kind)
from calib_core.engines.cli_common import json_number as _finite
from calib_core.engines.cli_compare import (DEFAULT_N_BOOT, add_metric_flags, add_pairing_flags, check_resampling,
                                            load_rows, matched_rows, paired_metric)
from calib_core.inference.calibration_tests import TEST_METHODS, calibration_test
from calib_core.inference.intervals import metric_interval
from calib_core.metrics.registry import get_metric, metric_function, metric_name
from calib_core.recalibration.compare import HIGHER_IS_BETTER
from calib_core.validation import CalibrationInputError

#: A condition on fewer rows than this is inconclusive unless the condition sets its own minimum: a 15-bin
#: ECE on fewer than about seven rows per bin is mostly estimator noise.
DEFAULT_MIN_ROWS = 100
#: The outcomes of a condition, and the exit status each gives when it is the worst.
STATUSES = {"pass": EXIT_PASS, "inconclusive": EXIT_INCONCLUSIVE, "fail": EXIT_FAIL}
#: Keys a policy file's ``[[condition]]`` may hold (and its ``[defaults]``, the shared ones).
CONDITION_KEYS = ("metric", "test", "bar", "side", "on", "max_increase", "n_bins", "binning", "bandwidth",
                  "alpha", "seed", "n_boot", "min_rows", "name")
DEFAULT_KEYS = ("alpha", "seed", "n_boot", "min_rows", "on", "n_bins", "binning")


@dataclass(frozen=True)
class Condition:
    """One condition of the gate (a metric against a bar, a calibration test, or a baseline).

    Attributes
    ----------
    metric : str or None
        Registry key (metric and baseline conditions).
    test : str or None
        A method of :data:`calib_core.TEST_METHODS` (test conditions).
    bar : float or None
        The bar of a metric condition.
    side : {"max", "min"}
        ``"max"``: the metric must stay at most ``bar``; ``"min"``: at least.
    max_increase : float or None
        A baseline condition: the largest worsening allowed over the baseline.
    on : {"upper", "estimate"}
        Judge the interval (``"upper"``) or the point estimate.
    """

    metric: str | None = None
    test: str | None = None
    bar: float | None = None
    side: str = "max"
    max_increase: float | None = None
    on: str = "upper"
    n_bins: int = 15
    binning: str = "uniform"
    bandwidth: float | None = None
    alpha: float = 0.05
    seed: int = 0
    n_boot: int = DEFAULT_N_BOOT
    min_rows: int = DEFAULT_MIN_ROWS
    name: str | None = None

    @property
    def kind(self) -> str:
        return "test" if self.test is not None else "baseline" if self.max_increase is not None else "metric"

    def title(self) -> str:
        """The condition in words (the JUnit test case's name)."""
        if self.name:
            return self.name
        if self.kind == "test":
            return f"calibration test {self.test} (alpha {self.alpha:g})"
        label = metric_name(self.metric, n_bins=self.n_bins, binning=self.binning, bandwidth=self.bandwidth)
        where = "upper end of the interval" if self.on == "upper" else "estimate"
        if self.kind == "baseline":
            return f"{label}: worsening over the baseline <= {self.max_increase:g} ({where})"
        if self.on == "upper" and self.side == "min":
            where = "lower end of the interval"
        return f"{label} {'<=' if self.side == 'max' else '>='} {self.bar:g} ({where})"


@dataclass
class Outcome:
    """What one condition found (JSON-ready)."""

    condition: str
    kind: str
    status: str
    reason: str
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    interval: str = ""
    settings: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- the conditions

def _checked(condition: Condition) -> Condition:
    """The condition with its settings checked (:class:`CalibrationInputError`, exit 2, names the problem)."""
    if (condition.metric is None) == (condition.test is None):
        raise CalibrationInputError("each condition needs one `metric` or one `test`.")
    if condition.side not in ("max", "min"):
        raise CalibrationInputError(f"`side` must be \"max\" or \"min\", got {condition.side!r}.")
    if condition.on not in ("upper", "estimate"):
        raise CalibrationInputError(f"`on` must be \"upper\" or \"estimate\", got {condition.on!r}.")
    if not isinstance(condition.min_rows, int) or condition.min_rows < 1:
        raise CalibrationInputError(f"`min_rows` must be a whole number of at least 1, got {condition.min_rows!r}.")
    check_resampling(argparse.Namespace(n_boot=condition.n_boot, seed=condition.seed, alpha=condition.alpha))
    if condition.test is not None:
        if condition.test not in TEST_METHODS:
            raise CalibrationInputError(f"unknown test {condition.test!r}; known: {', '.join(TEST_METHODS)}.")
        return condition
    spec = get_metric(condition.metric)  # an unknown key: the registry's error lists the known ones
    bandwidth = condition.bandwidth if spec.with_bandwidth is not None else None
    if condition.bandwidth is not None and bandwidth is None:
        raise CalibrationInputError(f"a bandwidth applies to kernel metrics only; {spec.label} has no kernel.")
    metric_function(condition.metric, n_bins=condition.n_bins, binning=condition.binning, bandwidth=bandwidth)
    numbers = {"bar": condition.bar, "max_increase": condition.max_increase}
    for key, value in numbers.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise CalibrationInputError(f"`{key}` must be a finite number, got {value!r}.")
    if condition.bar is None and condition.max_increase is None:
        raise CalibrationInputError(f"the condition on {condition.metric} needs a bar (--max/--min, or `bar`) or "
                                    "an allowed worsening over a baseline (--max-increase, or `max_increase`).")
    if condition.bar is not None and condition.max_increase is not None:
        raise CalibrationInputError("a condition has either a bar or a `max_increase`; write two conditions.")
    if condition.max_increase is not None and (spec.signed or spec.ideal not in (0.0, None)):
        raise CalibrationInputError(f"--max-increase needs a metric where lower (or, for accuracy, higher) is "
                                    f"better; {spec.label} is signed or has an ideal value of {spec.ideal}.")
    return condition


def _degenerate(condition: Condition, probs: np.ndarray, labels: np.ndarray) -> str | None:
    """Why these rows cannot support a verdict (None when they can)."""
    n_rows = labels.size
    if n_rows < condition.min_rows:
        return (f"{n_rows:,} rows, fewer than the minimum of {condition.min_rows:,}: too few to support a verdict "
                "(collect more rows, or lower min_rows if the interval is trusted at this size).")
    present = np.unique(labels)
    if present.size < 2:
        return (f"every label is class {int(present[0])}: a calibration error measured on one class cannot tell a "
                "calibrated model from one that always predicts it.")
    if not np.isfinite(probs).all():
        return "the probabilities hold values that are not finite."
    return None


def _judge(value: float, low: float, high: float, bar: float, side: str, on: str) -> tuple[str, str]:
    """``(status, reason)`` of a value and its interval against ``bar`` (``side="max"``: at most ``bar``)."""
    sign = 1.0 if side == "max" else -1.0
    if on == "estimate":
        ok = sign * (value - bar) <= 0
        return ("pass" if ok else "fail",
                f"estimate {value:.6g} {'is within' if ok else 'breaks'} the bar {bar:g}")
    if not (math.isfinite(low) and math.isfinite(high)):
        return "inconclusive", "no interval to judge"
    near, far = (high, low) if side == "max" else (low, high)
    interval = f"[{low:.6g}, {high:.6g}]"
    if sign * (near - bar) <= 0:
        return "pass", f"the whole interval {interval} is within the bar {bar:g}"
    if sign * (far - bar) > 0:
        return "fail", f"the whole interval {interval} is beyond the bar {bar:g}"
    return "inconclusive", f"the interval {interval} straddles the bar {bar:g}: more rows would decide"


def evaluate_condition(condition: Condition, predictions, baseline=None) -> Outcome:
    """One checked condition on the loaded rows (and the matched baseline rows)."""
    probs, labels = predictions.probs, predictions.labels
    settings = {k: v for k, v in asdict(condition).items() if v is not None and k != "name"}
    outcome = Outcome(condition.title(), condition.kind, "inconclusive", "", settings=settings)
    why = _degenerate(condition, probs, labels)
    if why is not None:
        outcome.reason = why
        return outcome
    if condition.kind == "test":
        try:
            found = calibration_test(probs, labels, condition.test, alpha=condition.alpha, seed=condition.seed)
        except CalibrationInputError as exc:
            outcome.reason = f"the test cannot be computed here: {' '.join(str(exc).split())}"
            return outcome
        outcome.estimate = _finite(found.p_value)
        outcome.interval = f"p = {found.p_value:.4g}"
        outcome.status = {"miscalibrated": "fail", "consistent": "pass"}.get(found.verdict, "inconclusive")
        outcome.reason = f"{found.verdict} (p = {found.p_value:.4g}): {found.verdict_reason}"
        return outcome
    spec = get_metric(condition.metric)
    bandwidth = condition.bandwidth if spec.with_bandwidth is not None else None
    try:
        if condition.kind == "baseline":
            return _baseline_outcome(condition, outcome, predictions, baseline, bandwidth)
        found = metric_interval(condition.metric, probs, labels, n_bins=condition.n_bins, binning=condition.binning,
                                bandwidth=bandwidth, n_boot=condition.n_boot if condition.on == "upper" else 0,
                                alpha=condition.alpha, seed=condition.seed)
    except CalibrationInputError as exc:
        outcome.reason = f"{spec.label} cannot be computed here: {' '.join(str(exc).split())}"
        return outcome
    outcome.estimate, outcome.low, outcome.high = _finite(found.estimate), _finite(found.low), _finite(found.high)
    outcome.interval = found.note
    if not math.isfinite(found.estimate):
        outcome.reason = f"{spec.label} is not a finite number here ({found.estimate})."
        return outcome
    if condition.on == "upper" and found.method == "none":
        outcome.reason = (f"{spec.label} has no interval ({found.note.removeprefix('none: ')}); gate on the point "
                          "estimate with --on estimate (on = \"estimate\") if that is enough.")
        return outcome
    outcome.status, outcome.reason = _judge(found.estimate, found.low, found.high, condition.bar, condition.side,
                                            condition.on)
    outcome.reason = f"{spec.label} {found.estimate:.6g}: {outcome.reason}"
    return outcome


def _baseline_outcome(condition: Condition, outcome: Outcome, predictions, baseline, bandwidth) -> Outcome:
    """new - baseline (baseline - new for accuracy) with its paired interval, against ``max_increase``."""
    found = paired_metric(condition.metric, [baseline.probs, predictions.probs], predictions.labels,
                          n_bins=condition.n_bins, binning=condition.binning, bandwidth=bandwidth,
                          n_boot=condition.n_boot, seed=condition.seed, alpha=condition.alpha)
    change, low, high = found.difference(0, 1)
    if condition.metric in HIGHER_IS_BETTER:  # worsening is a decrease
        change, low, high = -change, -high, -low
    outcome.estimate, outcome.low, outcome.high = _finite(change), _finite(low), _finite(high)
    outcome.interval = (f"paired bootstrap, {condition.n_boot:,} resamples; new {found.estimates[1]:.6g}, "
                        f"baseline {found.estimates[0]:.6g}")
    if not math.isfinite(change):
        outcome.reason = "the difference is not a finite number here."
        return outcome
    outcome.status, reason = _judge(change, low, high, condition.max_increase, "max", condition.on)
    outcome.reason = f"worsening over the baseline {change:+.6g}: {reason}"
    return outcome


# ----------------------------------------------------------------------------- policy and flags

def read_policy(path: str, base: Condition) -> tuple[list[Condition], str | None]:
    """The conditions of a TOML policy file, and its baseline file (resolved beside the policy) if it names one.

    Layout: optional top-level ``baseline = "FILE"``; optional ``[defaults]``
    (``alpha``, ``seed``, ``n_boot``, ``min_rows``, ``on``, ``n_bins``,
    ``binning``) shared by every condition; one ``[[condition]]`` table per
    condition with ``metric`` + ``bar`` (+ ``side``, default ``"max"``) or
    ``metric`` + ``max_increase``, or ``test``, and any setting of its own.
    An unknown key is refused (a typo must not silently loosen the gate).
    """
    try:
        with open(path, "rb") as handle:
            policy = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise CalibrationInputError(f"policy {path} is not valid TOML: {exc}") from None
    unknown = set(policy) - {"baseline", "defaults", "condition"}
    if unknown:
        raise CalibrationInputError(f"policy {path}: unknown top-level key(s) {', '.join(sorted(unknown))}; "
                                    "allowed: baseline, [defaults], [[condition]].")
    defaults = policy.get("defaults", {})
    if not isinstance(defaults, dict) or set(defaults) - set(DEFAULT_KEYS):
        raise CalibrationInputError(f"policy {path}: [defaults] may hold {', '.join(DEFAULT_KEYS)}; got "
                                    f"{', '.join(sorted(defaults)) if isinstance(defaults, dict) else defaults!r}.")
    tables = policy.get("condition", [])
    if not isinstance(tables, list) or not tables:
        raise CalibrationInputError(f"policy {path} has no [[condition]] table.")
    conditions = []
    for number, table in enumerate(tables, start=1):
        extra = set(table) - set(CONDITION_KEYS)
        if extra:
            raise CalibrationInputError(f"policy {path}, condition {number}: unknown key(s) "
                                        f"{', '.join(sorted(extra))}; allowed: {', '.join(CONDITION_KEYS)}.")
        try:
            conditions.append(_checked(replace(base, **{**defaults, **table})))
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"policy {path}, condition {number}: {exc}") from None
    baseline = policy.get("baseline")
    if baseline is not None:
        if not isinstance(baseline, str):
            raise CalibrationInputError(f"policy {path}: `baseline` must be a file name, got {baseline!r}.")
        baseline = os.path.join(os.path.dirname(os.path.abspath(path)), baseline)
    return conditions, baseline


def conditions_from_flags(args: argparse.Namespace) -> tuple[list[Condition], str | None]:
    """The conditions the flags (and the policy file) ask for, checked; and the baseline file."""
    base = Condition(on=args.on, n_bins=args.n_bins, binning=args.binning, bandwidth=args.bandwidth,
                     alpha=args.alpha, seed=args.seed, n_boot=args.n_boot, min_rows=args.min_rows)
    conditions, baseline = [], args.baseline
    if args.policy is not None:
        conditions, from_policy = read_policy(args.policy, base)
        baseline = baseline or from_policy
    if args.max is not None and args.min is not None:
        raise CalibrationInputError("give --max or --min, not both (two bars: use a policy file).")
    bar = args.max if args.max is not None else args.min
    if args.metric is not None:
        if bar is None and args.max_increase is None:
            raise CalibrationInputError(f"--metric {args.metric} needs a bar: --max X (or --min X), or "
                                        "--baseline FILE --max-increase D.")
        if bar is not None:
            conditions.append(_checked(replace(base, metric=args.metric, bar=bar,
                                               side="max" if args.max is not None else "min")))
        if args.max_increase is not None:
            conditions.append(_checked(replace(base, metric=args.metric, max_increase=args.max_increase)))
    elif bar is not None or args.max_increase is not None:
        raise CalibrationInputError("--max, --min and --max-increase need --metric NAME.")
    for method in args.test or ():
        conditions.append(_checked(replace(base, test=method)))
    if not conditions:
        raise CalibrationInputError("nothing to check: give --metric NAME --max X, --test METHOD, or --policy FILE.")
    if any(c.kind == "baseline" for c in conditions) and baseline is None:
        raise CalibrationInputError("--max-increase compares with a baseline: give --baseline FILE.")
    return conditions, baseline


# ----------------------------------------------------------------------------- output

def write_junit(path: str, result: dict) -> None:
    """One JUnit ``testsuite``, one ``testcase`` per condition: ``failure`` for a fail, ``skipped`` for an
    inconclusive condition (CI systems show both), the reason as the message."""
    outcomes = result["conditions"]
    suite = ET.Element("testsuite", name=f"calib-core check {result['model']}", tests=str(len(outcomes)),
                       failures=str(sum(o["status"] == "fail" for o in outcomes)), errors="0",
                       skipped=str(sum(o["status"] == "inconclusive" for o in outcomes)))
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname=f"calib-core.check.{result['model']}",
                             name=outcome["condition"])
        if outcome["status"] == "fail":
            ET.SubElement(case, "failure", message=outcome["reason"], type="calibration").text = outcome["reason"]
        elif outcome["status"] == "inconclusive":
            ET.SubElement(case, "skipped", message=f"inconclusive: {outcome['reason']}")
        ET.SubElement(case, "system-out").text = outcome["reason"]
    root = ET.Element("testsuites", name="calib-core check", tests=suite.get("tests"),
                      failures=suite.get("failures"), errors="0", skipped=suite.get("skipped"))
    root.append(suite)
    ET.indent(root)
    try:
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise CalibrationInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def format_check(result: dict) -> str:
    lines = [f"{result['file']}: {result['n_samples']:,} rows, "
             + ("a confidence model" if result.get("kind") == "confidence" else f"{result['n_classes']} classes")]
    for outcome in result["conditions"]:
        lines.append(f"{outcome['status'].upper():<12}  {outcome['condition']}: {outcome['reason']}")
    counts = {status: sum(o["status"] == status for o in result["conditions"]) for status in STATUSES}
    lines.append(f"check: {result['status'].upper()} ({', '.join(f'{n} {s}' for s, n in counts.items() if n)}; "
                 f"exit status {result['exit_status']})")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the command

def add_commands(commands) -> None:
    """Add ``check`` to the sub-commands."""
    parser = commands.add_parser(
        "check", help="a calibration gate for CI: exit 0 pass, 1 fail, 3 inconclusive, 2 invalid input")
    parser.add_argument("path", metavar="FILE", help="the model's predictions file")
    parser.add_argument("--metric", default=None, metavar="NAME", help="a registry metric key, e.g. ece, ace, brier")
    parser.add_argument("--max", type=float, default=None, metavar="X", help="the metric must stay at most X")
    parser.add_argument("--min", type=float, default=None, metavar="X",
                        help="the metric must stay at least X (e.g. accuracy, cox_slope)")
    parser.add_argument("--on", choices=("upper", "estimate"), default="upper",
                        help="upper (default): the metric's interval must lie within the bar (inside: pass, "
                             "beyond: fail, across: inconclusive); estimate: the point estimate alone")
    parser.add_argument("--test", action="append", default=None, choices=TEST_METHODS, metavar="METHOD",
                        help=f"a calibration test whose verdict gates ({', '.join(TEST_METHODS)}; repeatable)")
    parser.add_argument("--policy", default=None, metavar="FILE.toml",
                        help="conditions from a TOML policy file (see docs/calibration.example.toml); the "
                             "settings it gives take precedence over the flags")
    parser.add_argument("--baseline", default=None, metavar="OTHER",
                        help="the baseline model's predictions on the same rows (with --max-increase)")
    parser.add_argument("--max-increase", type=float, default=None, metavar="D",
                        help="fail when the metric is worse than the baseline's by more than D beyond noise")
    parser.add_argument("--min-rows", type=int, default=DEFAULT_MIN_ROWS, metavar="N",
                        help=f"fewer rows: inconclusive (default {DEFAULT_MIN_ROWS})")
    parser.add_argument("--split", default=None, help="check only the rows of this split (e.g. test)")
    add_metric_flags(parser)
    add_pairing_flags(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--junit", default=None, metavar="OUT.xml", help="also write a JUnit XML report")
    add_loader_flags(parser)
    parser.set_defaults(handler=run_check)


def check(args: argparse.Namespace) -> dict:
    """Every condition's outcome and the gate's status, as a JSON-ready dict."""
    conditions, baseline_path = conditions_from_flags(args)
    predictions = load_rows(args.path, args)
    baseline = load_rows(baseline_path, args) if baseline_path is not None else None
    if args.split is not None:
        predictions = _select_split(predictions, args.split, args.path)
        if baseline is not None:
            baseline = _select_split(baseline, args.split, baseline_path)
    if baseline is not None:
        baseline = matched_rows(predictions, baseline, first_path=args.path, second_path=baseline_path,
                                id_column=args.id_column)
    for condition in conditions:
        if condition.kind != "test":
            check_metric_kind(condition.metric, predictions, "--metric")
    outcomes = [asdict(evaluate_condition(c, predictions, baseline)) for c in conditions]
    status = ("fail" if any(o["status"] == "fail" for o in outcomes) else
              "inconclusive" if any(o["status"] == "inconclusive" for o in outcomes) else "pass")
    return {"file": str(args.path), "model": predictions.name, "baseline": baseline_path,
            "n_samples": predictions.n_samples, "n_classes": predictions.n_classes, "kind": predictions.kind,
            "status": status,
            "exit_status": STATUSES[status], "conditions": outcomes}


def run_check(args: argparse.Namespace) -> int:
    result = check(args)
    if args.junit is not None:
        write_junit(args.junit, result)
    print(json.dumps(result, indent=2) if args.json else format_check(result))
    return result["exit_status"]


__all__ = ["DEFAULT_MIN_ROWS", "EXIT_BAD_INPUT", "Condition", "Outcome", "check", "evaluate_condition",
           "read_policy", "write_junit"]
