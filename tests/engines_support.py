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
