"""calib_core: calibration metrics, reliability data and recalibration for classifiers.

The public names below are a contract (see ``calib_core_api.md``): checks outside
this repository import them from the package root and compare the numbers with
independent implementations. Each wing lists its public names once, in its own
``__all__``; the root re-exports them (as ``scipy.stats`` does).

=====================  ===========================================================
wing                   what lives there
=====================  ===========================================================
``validation``         the one input validator (``CalibrationInputError``), softmax
``binning``            bin edges, assignment, per-bin sums, the sorted-values sweep
``metrics``            every calibration metric (Cox, ICI too) and the registry of defaults
``inference``          intervals, verdicts, calibration tests, subgroups
``recalibration``      recalibration methods, prevalence shifts, the fit/evaluate protocol
``io``                 loading prediction files, demos, CSV export
``engines``            streaming / Dask / Spark evaluation of large files, the CLI
``lab``                simulated ground truth, the studies run on it, test size/power
=====================  ===========================================================
"""
# Lower floors first: each wing imports only from the ones above it in this list.
from calib_core.validation import CalibrationInputError, as_probs, softmax
from calib_core.binning import BinStats, bin_index, bin_statistics, classwise_bin_statistics, optimal_n_bins
from calib_core import metrics, inference, recalibration, io, lab, engines  # noqa: E402,I001
from calib_core.metrics import *  # noqa: F401,F403
from calib_core.inference import *  # noqa: F401,F403
from calib_core.recalibration import *  # noqa: F401,F403
from calib_core.io import *  # noqa: F401,F403
from calib_core.lab import *  # noqa: F401,F403
from calib_core.engines import *  # noqa: F401,F403

__all__ = ["CalibrationInputError", "as_probs", "softmax", "BinStats", "bin_index", "bin_statistics",
           "classwise_bin_statistics", "optimal_n_bins",
           *metrics.__all__, *inference.__all__, *recalibration.__all__, *io.__all__,
           *engines.__all__, *lab.__all__]
