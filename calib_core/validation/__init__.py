"""Input validation shared by every public function of :mod:`calib_core`.

Every public function opens with :func:`check_probs_labels` (or one of the
smaller checks below) and then does its maths without further checks. All
failures raise :class:`CalibrationInputError`, a :class:`ValueError`, with a
message that names the argument, the problem and an example row or value.

Validation once: arrays checked when a :class:`~calib_core.io.Predictions`
is made are frozen and marked (:func:`calib_core._accel.mark_validated`),
and the checks return them at once. Raw arrays are checked in cache-sized row blocks, which
a caller can also consume itself (:func:`check_probs_by_block`) to do its
per-row work in the same pass over memory.

The checks live in two modules, re-exported here (import them from
``calib_core.validation``): :mod:`~calib_core.validation.arrays` (probabilities,
labels, logits, confidences, the one softmax) and
:mod:`~calib_core.validation.options` (settings, named random streams, sample
weights).
"""
from calib_core.validation.arrays import (MAX_N_BINS, ROW_SUM_TOLERANCE, CalibrationInputError, as_probs,
                                          check_confidence_correct, check_labels, check_logits, check_probs,
                                          check_probs_by_block, check_probs_columns, check_probs_labels,
                                          check_probs_with_row_sums, correct_rows, is_validated, row_argmax,
                                          row_blocks, softmax, softmax_unchecked, transposed)
from calib_core.validation.options import (MAX_REPEATED_VALUES, check_binning, check_choice, check_count, check_flag,
                                           check_fraction, check_n_bins, check_positive, check_real, check_right,
                                           check_sample_weight, check_sizes, integer_weights, named_rng, repeat_rows,
                                           repeated_probs_labels)

__all__ = ["CalibrationInputError", "MAX_N_BINS", "MAX_REPEATED_VALUES", "ROW_SUM_TOLERANCE", "as_probs",
           "check_binning", "check_choice", "check_confidence_correct", "check_count", "check_flag", "check_fraction",
           "check_labels", "check_logits", "check_n_bins", "check_positive", "check_probs", "check_probs_by_block",
           "check_probs_columns", "check_probs_labels", "check_probs_with_row_sums", "check_real", "check_right",
           "check_sample_weight", "check_sizes", "correct_rows", "integer_weights", "named_rng", "repeat_rows",
           "repeated_probs_labels", "row_argmax", "row_blocks", "softmax", "softmax_unchecked", "transposed"]
