"""The bundled demo prediction files in ``data/demo`` (see ``scripts/make_demo_data.py``)."""
from __future__ import annotations

from pathlib import Path

from calib_core.io.loading import load_predictions
from calib_core.io.predictions import Predictions
from calib_core.validation import CalibrationInputError

__all__ = ["demo_datasets", "load_demo", "DEMO_GROUP_COLUMNS"]

#: The group column :func:`load_demo` reads for demos that have one.
DEMO_GROUP_COLUMNS = {"fair_logistic_regression": "occupation", "confidence_digits_random_forest": "task",
                      **{f"digits_{model}": "strokes"
                         for model in ("gaussian_nb", "logistic_regression", "mlp", "random_forest", "svc")}}


def _demo_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "demo"


def demo_datasets() -> dict[str, Path]:
    """The bundled demo prediction files, by name (file stem), sorted.

    Returns
    -------
    dict of str to Path
        ``{"digits_gaussian_nb": Path(".../data/demo/digits_gaussian_nb.csv"), ...}``;
        empty when the package is installed without the ``data/demo`` folder.
    """
    folder = _demo_dir()
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.csv"))}


def load_demo(name: str) -> Predictions:
    """Load one bundled demo file by name (see :func:`demo_datasets`).

    Demos with a real group attribute (:data:`DEMO_GROUP_COLUMNS`:
    ``fair_logistic_regression`` grouped by ``occupation``, the digits models
    by ``strokes``, the ink of each image in thirds) are loaded with that
    column as :attr:`Predictions.groups`.

    Raises
    ------
    CalibrationInputError
        For an unknown name; the message lists the available ones.

    Examples
    --------
    >>> pred = load_demo("digits_gaussian_nb")
    >>> pred.n_classes, pred.split_names
    (10, ('calibration', 'test'))
    """
    available = demo_datasets()
    if name not in available:
        listing = ", ".join(available) if available else "none (the data/demo folder is missing)"
        raise CalibrationInputError(f"unknown demo {name!r}; available demos: {listing}.")
    return load_predictions(available[name], name=name, group=DEMO_GROUP_COLUMNS.get(name))
