"""Data shared by the engine tests (tests/engines/): a prediction table as the engines read it."""
from __future__ import annotations

import numpy as np
import pandas as pd


def prediction_frame(seed: int, n: int, k: int, concentration: float, *, tied_rows: int = 0) -> pd.DataFrame:
    """``label, p_0 .. p_{k-1}``: Dirichlet(``concentration``) rows and uniform labels; the first
    ``tied_rows`` rows rounded to one decimal (exact ties and values on bin edges) and renormalised."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, concentration), size=n)
    probs[:tied_rows] = np.round(probs[:tied_rows], 1)
    probs[:tied_rows] /= probs[:tied_rows].sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    return pd.DataFrame({"label": labels, **{f"p_{j}": probs[:, j] for j in range(k)}})


def binary_predictions(seed: int, n: int, *, shrink: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(p, y)``: P(class 1) uniform on [0.05, 0.95] and labels drawn with P(y = 1) = ``0.5 + shrink (p - 0.5)``:
    calibrated at ``shrink=1``, clearly overconfident at ``shrink=0.5`` (top-label ECE about 0.11)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    return p, (rng.uniform(size=n) < 0.5 + shrink * (p - 0.5)).astype(int)


def write_binary(path, p: np.ndarray, y: np.ndarray, **columns) -> str:
    """A CSV ``label, p_0, p_1`` (plus ``columns``) of binary predictions; returns the path as text."""
    frame = pd.DataFrame({"label": y, "p_0": 1.0 - p, "p_1": p, **columns})
    frame.to_csv(path, index=False, float_format="%.17g")
    return str(path)
