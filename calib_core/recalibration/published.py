"""Published standing of the recalibration methods: CalArena's win rates, cited for context in the advice.

CalArena (probkit/CalArena, 2026; Berta et al., "CalArena: A Large-Scale
Post-Hoc Calibration Benchmark", arXiv:2605.30188) compares 20 binary and 19
multi-class calibration methods over hundreds of dataset-model pairs and
ranks them by their *win rate* on the Brier score: per experiment, the share
of the other methods with a strictly higher test Brier score, averaged over
the experiments of a benchmark (its ``utils.compute_winrates``, ``metric="brier"``).

The numbers below are those point estimates, recomputed from the
repository's per-method results files (``results/{benchmark}/{method}.csv``,
commit a0afa15) by ``scripts/calarena_winrates.py`` exactly as
``compute_winrates`` does; they agree with the bars of its leaderboard
figures (``figures/binary_winrates.png``, ``figures/multiclass_winrates.png``).
The ImageNet benchmark (K = 1,000, 8 models, 9 methods) is not in those
figures; its numbers come from ``results/imagenet-multiclass`` the same way.

They are context, not evidence about the user's model: the advice itself is
made on the user's rows (:func:`calib_core.recalibration.recommendation.recommend`).
"""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CALARENA_NAMES", "CALARENA_SOURCE", "CALARENA_WIN_RATES", "published_standing"]

CALARENA_SOURCE = ("CalArena (probkit/CalArena, 2026; Brier-score win rates from its results files, "
                   "commit a0afa15)")

#: calib_core display name -> CalArena's method name. Our histogram binning has equal-mass bins
#: (CalArena's ``Hist-quantile``); our Platt scaling works on logits (``Platt-logits``).
CALARENA_NAMES = {
    "Temperature scaling": "TS", "Ensemble temperature scaling": "ETS", "Vector scaling": "VS",
    "Structured vector scaling": "SVS", "Structured matrix scaling": "SMS", "Matrix scaling (ODIR)": "MS",
    "Dirichlet calibration": "Dirichlet", "Isotonic regression": "Isotonic", "Centred isotonic regression": "CIR",
    "Histogram binning": "Hist-quantile", "Spline calibration": "Spline", "Venn-Abers": "Venn-Abers",
    "Platt scaling": "Platt-logits", "Beta calibration": "Beta", "Quadratic scaling": "Quadratic",
}

#: Benchmark group -> (benchmark names in order, {CalArena method: win rate per benchmark}).
CALARENA_WIN_RATES = {
    "binary": (("TabRepo", "TabArena", "CV"), {
        "Spline": (0.628, 0.738, 0.696), "Quadratic": (0.620, 0.738, 0.785), "Beta": (0.616, 0.733, 0.733),
        "CIR": (0.592, 0.652, 0.563), "ETS": (0.588, 0.669, 0.583), "Platt-logits": (0.573, 0.709, 0.818),
        "Isotonic": (0.538, 0.535, 0.579), "TS": (0.533, 0.626, 0.595), "Venn-Abers": (0.524, 0.513, 0.753),
        "Hist-quantile": (0.242, 0.173, 0.344), "Base-model": (0.495, 0.497, 0.186),
    }),
    "multiclass": (("TabRepo", "TabArena", "CV"), {
        "SMS": (0.703, 0.679, 0.947), "SVS": (0.645, 0.647, 0.850), "VS": (0.621, 0.680, 0.817),
        "CIR": (0.619, 0.616, 0.572), "Spline": (0.619, 0.684, 0.661), "Dirichlet": (0.591, 0.590, 0.531),
        "ETS": (0.556, 0.593, 0.586), "Isotonic": (0.555, 0.546, 0.581), "MS": (0.548, 0.616, 0.425),
        "TS": (0.541, 0.538, 0.614), "Venn-Abers": (0.415, 0.280, 0.608), "Hist-quantile": (0.151, 0.128, 0.178),
        "Base-model": (0.479, 0.533, 0.189),
    }),
    "imagenet": (("ImageNet",), {
        "ETS": (0.984,), "SVS": (0.844,), "TS": (0.703,), "VS": (0.625,), "CIR": (0.406,), "Isotonic": (0.250,),
        "Hist-quantile": (0.000,), "Base-model": (0.562,),
    }),
}

#: Above this many classes the ImageNet benchmark (K = 1,000) is cited besides the multi-class one.
IMAGENET_FROM_CLASSES = 101


def _rates(values: tuple[float, ...]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def _group_sentence(group: str, methods: Sequence[str]) -> str:
    benchmarks, table = CALARENA_WIN_RATES[group]
    known = [m for m in dict.fromkeys(methods) if CALARENA_NAMES.get(m) in table]
    parts = [f"{m} {_rates(table[CALARENA_NAMES[m]])}" for m in known]
    leader = max(table, key=lambda name: sum(table[name]))
    ours = {v: k for k, v in CALARENA_NAMES.items()}
    leader_name = ours.get(leader, leader)
    if leader_name not in known:
        parts.append(f"top there: {leader_name} {_rates(table[leader])}")
    parts.append(f"uncalibrated {_rates(table['Base-model'])}")
    where = " / ".join(benchmarks)
    return f"{where}: " + ", ".join(parts)


def published_standing(methods: Sequence[str], n_classes: int) -> str:
    """For context: each method's CalArena win rate for a model with ``n_classes`` classes (plain text).

    Binary models (K = 2) get the binary benchmarks (TabRepo, TabArena, CV);
    multi-class models the multi-class ones, and above 100 classes also the
    ImageNet benchmark (K = 1,000). Methods CalArena did not compare are named
    as such; no number is given for them.

    Parameters
    ----------
    methods : sequence of str
        Display names of :data:`calib_core.RECALIBRATORS` (the advice's methods).
    n_classes : int
        K of the model.

    Returns
    -------
    str
        One sentence, starting "Published standing, for context".

    Examples
    --------
    >>> published_standing(["Temperature scaling"], 2)[:60]
    'Published standing, for context: CalArena (probkit/CalArena,'
    """
    groups = ["binary"] if int(n_classes) == 2 else ["multiclass"]
    if int(n_classes) >= IMAGENET_FROM_CLASSES:
        groups.append("imagenet")
    kind = "binary" if groups[0] == "binary" else "multi-class"
    text = (f"Published standing, for context: {CALARENA_SOURCE}, {kind} benchmarks, win rate of each method "
            "(share of the other methods it beats, averaged over experiments; 0.5 is the middle), "
            + "; ".join(_group_sentence(g, methods) for g in groups) + ".")
    missing = [m for m in dict.fromkeys(methods) if CALARENA_NAMES.get(m) not in CALARENA_WIN_RATES[groups[0]][1]]
    if missing:
        text += f" Not compared there: {', '.join(missing)}."
    return text
