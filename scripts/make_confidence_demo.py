"""Write ``data/demo/confidence_digits_random_forest.csv``: a bundled confidence file from real predictions.

No real stated-confidence data set (LLM answers with verbalised confidence, judges, forecasts) ships inside
a package we depend on, so the demo confidence file holds the *top-label* confidence and correctness of a real
model: a 20-tree random forest fitted on scikit-learn's bundled ``load_digits`` (1,797 8x8 handwritten digits).
A forest of 20 trees states its confidence in steps of 5 % (the share of trees voting for the answer), as
verbalised LLM confidences do, so the file has the tied confidences such files have.

Columns: ``question_id`` (``digit-<row>``), ``confidence`` (the forest's top-label probability), ``correct``
(0/1), ``task`` (the stroke weight of the image: ``light``, ``medium`` or ``heavy`` ink, terciles of the total
pixel intensity over all images; not a feature the grouping was fitted on, a property of the item such as an
LLM benchmark's task), ``split`` (``calibration`` or ``test``). The forest is fitted on 50 % of the images
(stratified, seed 20240611); the file holds the other 50 %, split in two halves for recalibration.

Run from the repository root: ``python scripts/make_confidence_demo.py`` (deterministic).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

SEED = 20240611
OUT = Path(__file__).resolve().parents[1] / "data" / "demo" / "confidence_digits_random_forest.csv"


def main() -> None:
    digits = load_digits()
    features, labels = digits.data, digits.target
    ink = features.sum(axis=1)
    task = np.asarray(pd.qcut(ink, 3, labels=["light", "medium", "heavy"]).astype(str))
    rows = np.arange(labels.size)
    train, held = train_test_split(rows, test_size=0.5, stratify=labels, random_state=SEED)
    calibration, test = train_test_split(held, test_size=0.5, stratify=labels[held], random_state=SEED)
    forest = RandomForestClassifier(n_estimators=20, random_state=SEED).fit(features[train], labels[train])
    kept = np.concatenate([calibration, test])
    probs = forest.predict_proba(features[kept])
    predicted = forest.classes_[probs.argmax(axis=1)]
    frame = pd.DataFrame({
        "question_id": [f"digit-{r}" for r in kept],
        "confidence": np.round(probs.max(axis=1), 4),
        "correct": (predicted == labels[kept]).astype(int),
        "task": task[kept],
        "split": ["calibration"] * calibration.size + ["test"] * test.size,
    })
    frame.to_csv(OUT, index=False)
    print(f"wrote {OUT} ({len(frame)} rows, accuracy {frame['correct'].mean():.3f}, "
          f"mean confidence {frame['confidence'].mean():.3f})")


if __name__ == "__main__":
    main()
