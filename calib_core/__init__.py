"""calib_core: calibration metrics, reliability data and recalibration for classifiers.

The public names below are a contract (see ``calib_core_api.md``): checks outside
this repository import them from the package root and compare the numbers with
independent implementations.
"""
from calib_core.validation import CalibrationInputError, as_probs, softmax

__all__ = [
    "CalibrationInputError",
    "as_probs",
    "softmax",
]
