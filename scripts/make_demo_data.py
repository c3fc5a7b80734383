"""Build the bundled demo predictions in ``data/demo`` from real models.

Trains scikit-learn classifiers on datasets that ship inside scikit-learn
(no downloads): digits (10 classes), breast cancer (binary), wine and iris
(3 classes). Each dataset is split once, stratified, into train (50 %),
calibration (25 %) and test (25 %) with a fixed seed; every model is fitted
on the train rows only, and its predictions on the calibration and test rows
are written to ``data/demo/<dataset>_<model>.csv`` with the columns

    label, p_<class>... (or logit_<class>... for the SVC), split

``label`` is the integer class index, ``split`` is ``calibration`` or
``test``.

One more file has a real group attribute, for the subgroup analysis
(:func:`calib_core.by_group`, the Groups page): ``fair_logistic_regression.csv``,
a logistic regression predicting whether a woman reported any extramarital
affair in Fair's 1974 Redbook survey (statsmodels' bundled ``fair`` data set,
6366 rows), with the column ``occupation`` (her occupation, six groups; not a
feature of the model) next to ``label, p_no, p_yes, split``. It is calibrated on
average and not in every occupation (the smallest group, students, has too few
rows to say anything). It needs statsmodels (a test dependency). Probabilities are renormalised and written with 8 significant
digits, so every row sums to 1 within 1e-6. The models are chosen because
they miscalibrate differently: Gaussian naive Bayes is overconfident, a
random forest underconfident, logistic regression and a small MLP close to
calibrated (the MLP with near-0/1 probabilities), and an RBF SVC gives
decision values (written as logits) whose softmax is far too flat, which
temperature scaling can repair.

Run from the repository root::

    python scripts/make_demo_data.py            # writes data/demo/*.csv and README.md

The output is deterministic: re-running it reproduces the same files.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

SEED = 20240611
REPO = Path(__file__).resolve().parent.parent
FLOAT_FORMAT = "%.8g"


@dataclass(frozen=True)
class Dataset:
    name: str
    loader: Callable[..., object]
    description: str
    #: An optional group column written beside the predictions: (name, rule from the features to a group per row).
    group: tuple[str, Callable[[np.ndarray], np.ndarray]] | None = None


def stroke_weight(features: np.ndarray) -> np.ndarray:
    """Each digit image's ink (the sum of its 64 pixel intensities), in thirds of all images: light, medium, heavy.

    A property of the input that the models see only through the pixels: the Groups page asks whether the
    probabilities are as trustworthy for faint digits as for bold ones.
    """
    ink = features.sum(axis=1)
    cuts = np.quantile(ink, [1 / 3, 2 / 3])
    return np.array(["light", "medium", "heavy"])[np.searchsorted(cuts, ink, side="right")]


@dataclass(frozen=True)
class Model:
    name: str
    make: Callable[[int], ClassifierMixin]
    outputs: str  # "probabilities" or "logits"
    description: str


DATASETS = (
    Dataset("digits", load_digits, "scikit-learn `load_digits`: 8x8 images of handwritten digits 0-9 "
            "(a copy of the UCI optical digits test set), 1797 samples, 64 features; group column `strokes`: "
            "the image's ink (sum of its pixel intensities) in thirds of all images, `light`, `medium`, `heavy`",
            group=("strokes", stroke_weight)),
    Dataset("breast_cancer", load_breast_cancer, "scikit-learn `load_breast_cancer`: Wisconsin "
            "diagnostic breast cancer, 569 samples, 30 features, classes malignant / benign"),
    Dataset("wine", load_wine, "scikit-learn `load_wine`: UCI wine recognition, 178 samples, "
            "13 features, 3 cultivars"),
    Dataset("iris", load_iris, "scikit-learn `load_iris`: Fisher's iris, 150 samples, 4 features, "
            "3 species"),
)

MODELS = (
    Model("gaussian_nb", lambda seed: GaussianNB(), "probabilities",
          "`GaussianNB()` on raw features (independence assumption -> overconfident)"),
    Model("random_forest", lambda seed: RandomForestClassifier(n_estimators=100, random_state=seed),
          "probabilities", "`RandomForestClassifier(n_estimators=100)` (averaged votes -> underconfident)"),
    Model("logistic_regression",
          lambda seed: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
          "probabilities", "`StandardScaler` + `LogisticRegression(C=1)` (close to calibrated; the "
          "L2 penalty makes it a little underconfident on the smallest sets)"),
    Model("mlp",
          lambda seed: make_pipeline(StandardScaler(), MLPClassifier(
              hidden_layer_sizes=(32,), alpha=1e-6, max_iter=2000, random_state=seed)),
          "probabilities", "`StandardScaler` + `MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-6)` "
          "(fits the train set exactly; on these small tabular sets it stays close to calibrated, "
          "with very sharp probabilities, unlike the overconfident deep networks in the papers)"),
    Model("svc", lambda seed: make_pipeline(StandardScaler(), SVC(kernel="rbf", C=1.0)),
          "logits", "`StandardScaler` + `SVC(kernel='rbf', C=1)`; `decision_function` values written "
          "as logits (one-vs-rest for K > 2; for the binary case the columns are [0, d], so "
          "softmax gives sigmoid(d))"),
)


def split_indices(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stratified 50 / 25 / 25 train / calibration / test row indices."""
    rows = np.arange(labels.size)
    train, held_out = train_test_split(rows, test_size=0.5, stratify=labels, random_state=seed)
    calibration, test = train_test_split(held_out, test_size=0.5, stratify=labels[held_out],
                                         random_state=seed + 1)
    return np.sort(train), np.sort(calibration), np.sort(test)


def model_outputs(model: Model, fitted: ClassifierMixin, features: np.ndarray) -> np.ndarray:
    """(N, K) probabilities (renormalised) or logits."""
    if model.outputs == "logits":
        decision = np.asarray(fitted.decision_function(features), dtype=np.float64)
        if decision.ndim == 1:  # binary: d > 0 favours class 1
            decision = np.column_stack([np.zeros_like(decision), decision])
        return decision
    probs = np.asarray(fitted.predict_proba(features), dtype=np.float64)
    return probs / probs.sum(axis=1, keepdims=True)


def top_label_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Top-label ECE with uniform bins (lo, hi], the first bin also holding 0."""
    confidence = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    inner_edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    bins = np.searchsorted(inner_edges, confidence, side="left")  # x == edge -> lower bin
    gap = np.bincount(bins, weights=confidence - correct, minlength=n_bins)
    return float(np.abs(gap).sum() / labels.size)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def build(out_dir: Path, seed: int = SEED) -> list[dict[str, object]]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: list[dict[str, object]] = []
    for dataset in DATASETS:
        bunch = dataset.loader()
        features = np.asarray(bunch.data, dtype=np.float64)
        labels = np.asarray(bunch.target, dtype=np.intp)
        class_names = [str(c) for c in bunch.target_names]
        train, calibration, test = split_indices(labels, seed)
        held_out = np.concatenate([calibration, test])
        split = np.array(["calibration"] * calibration.size + ["test"] * test.size)
        for model in MODELS:
            estimator = model.make(seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                estimator.fit(features[train], labels[train])
            outputs = model_outputs(model, estimator, features[held_out])
            prefix = "logit_" if model.outputs == "logits" else "p_"
            frame = pd.DataFrame(outputs, columns=[f"{prefix}{c}" for c in class_names])
            frame.insert(0, "label", labels[held_out])
            frame["split"] = split
            if dataset.group is not None:
                group_name, group_rule = dataset.group
                frame[group_name] = group_rule(features)[held_out]
            path = out_dir / f"{dataset.name}_{model.name}.csv"
            frame.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
            # Check what was written, as the loader will see it.
            written = pd.read_csv(path)
            values = written[[f"{prefix}{c}" for c in class_names]].to_numpy()
            probs = softmax(values) if model.outputs == "logits" else values
            if model.outputs == "probabilities":
                worst = float(np.abs(values.sum(axis=1) - 1.0).max())
                if worst > 1e-6:
                    raise RuntimeError(f"{path.name}: a row sums to 1 only within {worst:.3g}")
            is_test = written["split"].to_numpy() == "test"
            summary.append({
                "file": path.name, "dataset": dataset.name, "model": model.name,
                "outputs": model.outputs, "K": len(class_names),
                "n_calibration": int((~is_test).sum()), "n_test": int(is_test.sum()),
                "n_train": int(train.size),
                "test_accuracy": float(np.mean(probs[is_test].argmax(axis=1) == written["label"][is_test])),
                "test_ece": top_label_ece(probs[is_test], written["label"].to_numpy()[is_test]),
                "all_accuracy": float(np.mean(probs.argmax(axis=1) == written["label"])),
                "all_ece": top_label_ece(probs, written["label"].to_numpy()),
                "bytes": path.stat().st_size,
            })
    summary.append(build_group_demo(out_dir, seed))
    write_readme(out_dir, summary, seed)
    return summary


#: Fair (1978)'s occupation codes, as in statsmodels' ``fair`` NOTE.
OCCUPATIONS = {1: "student", 2: "unskilled", 3: "white collar", 4: "skilled", 5: "managerial",
               6: "professional"}
GROUP_FEATURES = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation_husb"]
GROUP_DEMO_DESCRIPTION = (
    "statsmodels `datasets.fair`: Fair's 1974 Redbook survey of 6366 married women (Fair 1978, \"A Theory of "
    "Extramarital Affairs\", J. Political Economy 86). Label: any time spent in extramarital affairs (`yes`/`no`); "
    "features: marriage rating, age, years married, children, religiousness, education, husband's occupation; "
    "group column `occupation` (her own occupation, not a feature): student, unskilled (farming, semi-skilled or "
    "unskilled), white collar, skilled (teacher, nurse, artist, technician, skilled worker), managerial, "
    "professional (advanced degree)")


def build_group_demo(out_dir: Path, seed: int = SEED) -> dict[str, object]:
    """``fair_logistic_regression.csv``: a model on statsmodels' ``fair`` data with its ``occupation`` column."""
    import statsmodels.api as sm  # a test dependency; only this demo needs it

    data = sm.datasets.fair.load_pandas().data
    features = data[GROUP_FEATURES].to_numpy(dtype=np.float64)
    labels = (data["affairs"].to_numpy() > 0).astype(np.intp)
    occupation = data["occupation"].astype(int).map(OCCUPATIONS).to_numpy()
    train, calibration, test = split_indices(labels, seed)
    held_out = np.concatenate([calibration, test])
    model = MODELS[2]  # logistic regression
    estimator = model.make(seed).fit(features[train], labels[train])
    probs = model_outputs(model, estimator, features[held_out])
    frame = pd.DataFrame(probs, columns=["p_no", "p_yes"])
    frame.insert(0, "label", labels[held_out])
    frame["split"] = ["calibration"] * calibration.size + ["test"] * test.size
    frame["occupation"] = occupation[held_out]
    path = out_dir / "fair_logistic_regression.csv"
    frame.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    written = pd.read_csv(path)
    values = written[["p_no", "p_yes"]].to_numpy()
    if float(np.abs(values.sum(axis=1) - 1.0).max()) > 1e-6:
        raise RuntimeError(f"{path.name}: a row does not sum to 1 within 1e-6")
    is_test = written["split"].to_numpy() == "test"
    y = written["label"].to_numpy()
    return {
        "file": path.name, "dataset": "fair", "model": model.name, "outputs": model.outputs, "K": 2,
        "n_calibration": int((~is_test).sum()), "n_test": int(is_test.sum()), "n_train": int(train.size),
        "test_accuracy": float(np.mean(values[is_test].argmax(axis=1) == y[is_test])),
        "test_ece": top_label_ece(values[is_test], y[is_test]),
        "all_accuracy": float(np.mean(values.argmax(axis=1) == y)),
        "all_ece": top_label_ece(values, y),
        "bytes": path.stat().st_size,
    }


def write_readme(out_dir: Path, summary: list[dict[str, object]], seed: int) -> None:
    lines = [
        "# Demo predictions",
        "",
        "Held-out predictions of real scikit-learn models on datasets that ship inside",
        "scikit-learn (and one that ships inside statsmodels, with a group column), written by",
        "`scripts/make_demo_data.py` (deterministic, seed "
        f"{seed}; re-run it to rebuild these files).",
        "",
        "## Format",
        "",
        "One CSV per dataset and model, `<dataset>_<model>.csv`, with the columns",
        "",
        "- `label`: the true class as an integer index `0..K-1`;",
        "- `p_<class>`: the predicted probability of each class, renormalised and written with",
        "  8 significant digits, so each row sums to 1 within 1e-6; the SVC files have",
        "  `logit_<class>` columns instead (raw `decision_function` values; the loader turns them",
        "  into probabilities with a softmax);",
        "- `split`: `calibration` or `test`.",
        "",
        "Each dataset is split once (stratified, same seed for every model) into train 50 %,",
        "calibration 25 % and test 25 %. Models are fitted on the train rows only; the files hold",
        "the calibration and test rows. Use the calibration rows to fit a recalibration map and",
        "the test rows to evaluate it.",
        "",
        "## Datasets",
        "",
    ]
    for dataset in DATASETS:
        lines.append(f"- **{dataset.name}**: {dataset.description}.")
    lines += [
        f"- **fair** (with a group column): {GROUP_DEMO_DESCRIPTION}. Only the logistic regression is",
        "  bundled: `fair_logistic_regression.csv` has the columns `label, p_no, p_yes, split, occupation`;",
        "  `calib_core.load_demo` reads `occupation` as the group (`Predictions.groups`).",
    ]
    lines += ["", "## Models", ""]
    for model in MODELS:
        lines.append(f"- **{model.name}**: {model.description}.")
    lines += [
        "",
        "## Files",
        "",
        "N = calibration + test rows in the file; accuracy and top-label ECE (15 uniform bins,",
        "computed by the script) are on the test rows.",
        "",
        "| file | dataset | model | outputs | K | N (calibration + test) | train rows | test accuracy | test ECE |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in summary:
        lines.append(
            f"| `{row['file']}` | {row['dataset']} | {row['model']} | {row['outputs']} | {row['K']} | "
            f"{row['n_calibration'] + row['n_test']} ({row['n_calibration']} + {row['n_test']}) | "
            f"{row['n_train']} | {row['test_accuracy']:.3f} | {row['test_ece']:.3f} |"
        )
    lines += [
        "",
        "Sources: the datasets are bundled with scikit-learn (BSD-3-Clause); see the",
        "scikit-learn documentation of each loader for the original references. The `fair`",
        "data set is bundled with statsmodels (BSD-3-Clause; public domain data, Fair 1978).",
        "",
    ]
    (out_dir / "README.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "data" / "demo",
                        help="output folder (default: data/demo in the repository)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    summary = build(args.out, args.seed)
    total = sum(int(row["bytes"]) for row in summary)
    print(f"{'file':40s} {'K':>3s} {'N':>5s} {'test acc':>9s} {'test ECE':>9s} {'all acc':>8s} {'all ECE':>8s}")
    for row in summary:
        print(f"{row['file']:40s} {row['K']:3d} {row['n_calibration'] + row['n_test']:5d} "
              f"{row['test_accuracy']:9.3f} {row['test_ece']:9.3f} {row['all_accuracy']:8.3f} "
              f"{row['all_ece']:8.3f}")
    print(f"{len(summary)} files, {total / 1e6:.2f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
