"""calib_core: calibration metrics, reliability data and recalibration for classifiers.

The public names below are a contract (see ``calib_core_api.md``): checks outside
this repository import them from the package root and compare the numbers with
independent implementations. Each wing lists its public names once, in its own
``__all__``; the root re-exports them (as ``scipy.stats`` does).

The floors, lowest first: a module imports from its own wing or a lower
floor only (``tests/test_structure.py``).

=====================  ===========================================================
floor                  what lives there
=====================  ===========================================================
``display``            short ``repr`` and Jupyter HTML tables of result objects
``validation``         the one input validator (``CalibrationInputError``), softmax
``binning``            bin edges, assignment, per-bin sums, the sorted-values sweep
``io``                 loading prediction files, demos, CSV export
``metrics``            every calibration metric (Cox, ICI too) and the registry of defaults
``inference``          intervals, verdicts, calibration tests, subgroups
``recalibration``      recalibration methods, prevalence shifts, the fit/evaluate protocol
``lab``                simulated ground truth, the studies run on it, test size/power
``engines``            streaming / Dask / Spark evaluation of large files, the CLI
``plot``               the app's figures from Python (``cc.plot.reliability``, ...;
                       Plotly, the optional ``plot`` extra, imported on first use)
=====================  ===========================================================
"""
# Lower floors first, in the order of the table above.
from calib_core.validation import CalibrationInputError, as_probs, softmax
from calib_core.binning import BinStats, bin_index, bin_statistics, classwise_bin_statistics, optimal_n_bins
from calib_core import io, metrics, inference, recalibration, lab, engines  # noqa: E402,I001
from calib_core.io import *  # noqa: F401,F403
from calib_core.metrics import *  # noqa: F401,F403
from calib_core.inference import *  # noqa: F401,F403
from calib_core.recalibration import *  # noqa: F401,F403
from calib_core.lab import *  # noqa: F401,F403
from calib_core.engines import *  # noqa: F401,F403
from calib_core import plot  # noqa: E402 -- a namespace (cc.plot.reliability), not star-imported

__all__ = ["CalibrationInputError", "as_probs", "softmax", "BinStats", "bin_index", "bin_statistics",
           "classwise_bin_statistics", "optimal_n_bins",
           *io.__all__, *metrics.__all__, *inference.__all__, *recalibration.__all__, *lab.__all__,
           *engines.__all__]
