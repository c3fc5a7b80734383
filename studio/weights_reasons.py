"""Which numbers are weighted by a model's row weights, and why the others are not: one table for the app and the report.

The pages (:mod:`studio.weights_note`, which draws the note at the top of a page) and the HTML report
(:mod:`studio.report`, which the command line imports without streamlit) read the same sentences from here, so a
page and its report say the same thing about the weights. Plain data: no streamlit.
"""
from __future__ import annotations

__all__ = ["REPORT_UNWEIGHTED", "UNWEIGHTED", "UNWEIGHTED_PARTS", "WEIGHTED_PAGES", "weighted_size"]

#: Pages whose numbers are weighted (their calls in studio/compute.py pass ``sample_weight``).
WEIGHTED_PAGES = ("Data", "Metrics", "Reliability", "Per-class", "Groups", "Bin sensitivity", "Simplex", "Recalibration",
                  "Deployment")

#: Why each other page shows unweighted numbers (docs/weights.md, "Not (yet) weighted").
UNWEIGHTED = {
    "Estimators": "the estimator comparisons resample unweighted rows (its what-recalibration-can-fix part "
                  "is weighted, as on the Metrics page)",
    "Lab": "the Lab simulates from the predictions, one row per prediction",
    "Large tables": "this page shows summaries written by the command line, not the loaded models (a summary "
                    "made with --weight-column is weighted and says so)",
}

#: Parts of the weighted pages whose calib_core functions take no weights, and why (the page and the report say so).
UNWEIGHTED_PARTS = {
    "Compare systems": "it compares confidence files, which are read without a weight column (calib_core."
                       "compare_systems takes sample_weight=, one weight per item shared by the systems)",
    "How many labels": "calib_core.plan_labels simulates one row per prediction (no sample_weight)",
}

#: The report's sections (:data:`studio.report.REPORT_SECTIONS`, and "decisions"/"deployment") that are not
#: weighted, with the page or part whose reason they share.
REPORT_UNWEIGHTED = {
    "systems": ("Compare systems", UNWEIGHTED_PARTS["Compare systems"]),
}


def weighted_size(predictions) -> int:
    """N of a model as its weighted curves count it: the rows, or a weighted model's summed weight (rounded, at
    least 1; integer weights: the repeated rows). The Bin sensitivity page and the report mark their bin counts
    with it."""
    if predictions.sample_weight is None:
        return int(predictions.n_samples)
    return max(1, round(float(predictions.sample_weight.sum())))
