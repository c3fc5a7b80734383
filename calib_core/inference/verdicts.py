"""Reading a calibration test: one verdict vocabulary and one rule for every test.

Every p-value the package reports (consistency resampling, the calibration
tests of :func:`calib_core.calibration_test`, the lens estimates) is read by
:func:`read_test` into one of three verdicts:

``"miscalibrated"``
    ``p < alpha``: the data show more miscalibration than a perfectly
    calibrated model with these predictions produces by chance.
``"inconclusive"``
    ``p >= alpha`` *and* the test had no power to see miscalibration here:
    the observed estimate lies below the band of its values under perfect
    calibration (the estimator's bias dominates), most rows sit in cells
    too small for their observed frequency to mean anything, or the test's
    power at this N against a clear miscalibration is low (the SKCE test
    states its power; :data:`MIN_POWER`). Not evidence of calibration; the
    reason says which setting would let the test detect miscalibration.
``"consistent"``
    ``p >= alpha`` otherwise: at this sample size the data are consistent
    with a calibrated model (which is not proof that it is calibrated).

A rejection stays a rejection even in sparse cells: the resampled null
distribution is exact for any estimator (the observed value and the
resampled ones are exchangeable under perfect calibration), so a small
p-value is evidence whatever the power of the test was. Low power only
changes what a *large* p-value means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from calib_core.display import compact_display
from calib_core.validation import CalibrationInputError

__all__ = ["DEFAULT_ALPHA", "MIN_POWER", "SPARSE_CELL_ROWS", "SPARSE_ROW_SHARE", "VERDICTS", "CellOccupancy", "Verdict",
           "cell_occupancy", "check_alpha", "read_test"]

#: The three verdicts, from "evidence of miscalibration" to "no evidence either way".
VERDICTS = ("miscalibrated", "consistent", "inconclusive")

#: Significance level used when none is given.
DEFAULT_ALPHA = 0.05

#: A cell holding fewer rows than this ("a handful") gives an observed frequency that is mostly noise.
SPARSE_CELL_ROWS = 5

#: A partition is also too sparse to test when more than this share of the rows sits in such cells.
SPARSE_ROW_SHARE = 0.5

#: A test whose power against its stated reference miscalibration is below this cannot read a non-rejection
#: as "consistent" (the convention of 80 % power, Cohen 1988, Section 2.4).
MIN_POWER = 0.8


def check_alpha(alpha: object) -> float:
    """``alpha`` as a float in (0, 0.5]; raises :class:`CalibrationInputError` otherwise."""
    if isinstance(alpha, bool):
        raise CalibrationInputError(f"`alpha` must be a number in (0, 0.5], got {alpha!r}.")
    try:
        value = float(alpha)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise CalibrationInputError(f"`alpha` must be a number in (0, 0.5], got {alpha!r}.") from None
    if not 0.0 < value <= 0.5:
        raise CalibrationInputError(f"`alpha` must be a number in (0, 0.5], got {alpha!r}.")
    return value


@dataclass(frozen=True)
class CellOccupancy:
    """How full the cells of a partitioned estimator are.

    Attributes
    ----------
    n_rows : int
        Rows partitioned.
    n_cells : int
        Non-empty cells.
    median_rows : float
        Median number of rows per non-empty cell.
    sparse_share : float
        Share of the rows that sit in cells with fewer than
        :data:`SPARSE_CELL_ROWS` rows. The binned estimator weights each cell
        by its share of rows, so this is the share of the estimate that is
        (mostly) noise.
    advice : str
        Settings of the same estimator that would give fuller cells (empty
        when the cells are full enough).
    """

    n_rows: int
    n_cells: int
    median_rows: float
    sparse_share: float
    advice: str = ""

    @property
    def sparse(self) -> bool:
        """True when the cells mostly hold fewer than a handful (5) of rows.

        That is: the median non-empty cell holds fewer than
        :data:`SPARSE_CELL_ROWS` rows, or more than :data:`SPARSE_ROW_SHARE`
        of the rows sit in such cells. (With 10 classes and a uniform grid a
        few full cells at the vertices can hold most rows while hundreds of
        one-row cells still make up most of the estimate: each adds its
        share of rows times a distance near 1 - p_y.)
        """
        return self.median_rows < SPARSE_CELL_ROWS or self.sparse_share > SPARSE_ROW_SHARE

    def describe(self) -> str:
        """One sentence: cells, median rows per cell and the share of rows in sparse cells."""
        rows = "row" if self.median_rows == 1 else "rows"
        return (f"the median of the {self.n_cells:,} non-empty cells holds {self.median_rows:g} {rows}, and "
                f"{self.sparse_share:.0%} of the {self.n_rows:,} rows sit in cells of fewer than "
                f"{SPARSE_CELL_ROWS} rows")


def cell_occupancy(counts: ArrayLike, advice: str = "") -> CellOccupancy:
    """Occupancy summary of a partition from its per-cell row counts.

    Parameters
    ----------
    counts : array_like of shape (M,)
        Rows per cell (empty cells are ignored).
    advice : str, optional
        Settings that would give fuller cells (see :class:`CellOccupancy`).

    Returns
    -------
    CellOccupancy

    Examples
    --------
    >>> occ = cell_occupancy([1, 1, 1, 2, 20])
    >>> occ.n_cells, occ.median_rows, round(occ.sparse_share, 3), occ.sparse
    (5, 1.0, 0.2, True)
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()
    counts = counts[counts > 0]
    total = float(counts.sum())
    if total == 0:
        raise CalibrationInputError("`counts` must hold at least one non-empty cell.")
    sparse = float(counts[counts < SPARSE_CELL_ROWS].sum()) / total
    return CellOccupancy(int(round(total)), int(counts.size), float(np.median(counts)), sparse, advice)


@compact_display
@dataclass(frozen=True)
class Verdict:
    """A test's reading: ``verdict`` (one of :data:`VERDICTS`) and ``reason``, one or two sentences."""

    verdict: str
    reason: str


def _p(p_value: float) -> str:
    return f"{p_value:.3f}" if p_value >= 0.001 else f"{p_value:.1e}"


def read_test(p_value: float, alpha: float = DEFAULT_ALPHA, *, test: str, below_null: str | None = None,
              occupancy: CellOccupancy | None = None, power: float | None = None, power_against: str = "",
              note: str = "") -> Verdict:
    """The verdict of one calibration test (the single rule every page and result uses).

    Parameters
    ----------
    p_value : float
        The test's p-value (small: evidence of miscalibration).
    alpha : float, default 0.05
        Significance level.
    test : str
        Short name of the test, used in the reason ("consistency resampling
        of canonical_ce", "Hosmer-Lemeshow test", ...).
    below_null : str, optional
        Set when the observed statistic lies below the range of its null
        distribution (for consistency resampling: below the lower band
        quantile); a clause saying so, e.g. "the estimate 0.26 lies below
        its band 0.28-0.30". The test then has no power here.
    occupancy : CellOccupancy, optional
        Cell occupancy of a partitioned estimator; ``occupancy.sparse`` means
        the test has no power here.
    power : float, optional
        The test's power at this N against the miscalibration
        ``power_against`` describes; below :data:`MIN_POWER` the test has
        little power here.
    power_against : str, optional
        The reference miscalibration of ``power``, e.g. "a model whose labels
        are random on a third of the rows".
    note : str, optional
        A sentence appended to the reason (e.g. a multiple-testing note).

    Returns
    -------
    Verdict

    Notes
    -----
    The rule, in order:

    1. ``p < alpha``: ``"miscalibrated"``. (A rejection is valid whatever the
       test's power; the reason mentions sparse cells if there were any.)
    2. ``below_null``, a sparse ``occupancy`` or ``power < MIN_POWER``:
       ``"inconclusive"``, with why and, from ``occupancy.advice``, what
       setting gives the test power.
    3. Otherwise ``"consistent"``.

    An estimate below its band has ``p >= 0.95`` for a (5 %, 95 %) band, so
    rules 1 and 2 never compete for it.

    Examples
    --------
    >>> read_test(0.003, test="Spiegelhalter's Z test").verdict
    'miscalibrated'
    >>> read_test(0.4, test="Hosmer-Lemeshow test").verdict
    'consistent'
    >>> read_test(1.0, test="consistency resampling", below_null="the estimate lies below its band").verdict
    'inconclusive'
    """
    alpha = check_alpha(alpha)
    p_value = float(p_value)
    if not 0.0 <= p_value <= 1.0:
        raise CalibrationInputError(f"`p_value` must lie in [0, 1], got {p_value!r}.")
    level = f"p = {_p(p_value)}"
    tail = f" {note}" if note else ""
    if p_value < alpha:
        reason = (f"{test}: {level} < α = {alpha:g}, more miscalibration than a calibrated model with these "
                  "predictions shows by chance.")
        if occupancy is not None and occupancy.sparse:
            reason += (f" Many cells hold few rows ({occupancy.describe()}). That makes the test less sensitive, "
                       "not less trustworthy: the model was compared with labels drawn from its own predictions "
                       "in the same cells, so a gap this large is still evidence.")
        return Verdict("miscalibrated", reason + tail)
    problems = []
    if below_null:
        problems.append(f"{below_null}: lower than most perfectly calibrated models with these predictions would "
                        "score (at this sample size the estimator overstates the error by more than any "
                        "miscalibration adds), so the test cannot detect miscalibration with these settings")
    if occupancy is not None and occupancy.sparse:
        problems.append(f"{occupancy.describe()}, so their observed frequencies are mostly noise")
    low_power = power is not None and power < MIN_POWER
    if low_power:
        problems.append(f"at this sample size the test would detect {power_against or 'a clear miscalibration'} "
                        f"only with probability {power:.0%} (below {MIN_POWER:.0%})")
    if problems:
        reason = f"{test}: {level} ≥ α = {alpha:g}, but " + "; and ".join(problems) + "."
        reason += " This is not evidence of calibration."
        if occupancy is not None and occupancy.advice:
            reason += f" To let the test detect miscalibration, try {occupancy.advice}."
        elif below_null:
            reason += " To let the test detect miscalibration, use fewer, fuller cells or more rows."
        elif low_power:
            reason += " To let the test detect miscalibration, use more rows."
        return Verdict("inconclusive", reason + tail)
    reason = (f"{test}: {level} ≥ α = {alpha:g}, within what a calibrated model with these predictions gives "
              "by chance; no evidence of miscalibration at this sample size (which is not proof of calibration).")
    return Verdict("consistent", reason + tail)
