"""The room for speed: compiled kernels, the block threads, the validated-array marks and the last-value memo.

Nothing here computes a formula of its own: each piece makes a formula
module faster without changing its numbers, and each is reached through one
public name listed in ``__all__`` (the package is private to calib_core, its
names are public to every wing). It sits on the ground floor, below
:mod:`calib_core.validation`, and imports nothing else from calib_core.

==============  ================================================================
module          what it holds
==============  ================================================================
``compiled``    the optional numba kernels (``pip install calib-core[fast]``),
                each ``None`` without numba, and a test per kernel runs both paths
``twins``       one function per kernel with its numpy twin beside it
                (:func:`arg_max_by_blocks`, :func:`spread`, :func:`label_search`,
                :func:`window_moments`, :func:`loess_fit_points`, :func:`laplace_form`,
                :func:`top_label_bin_sums`)
``sweep``       the bin-count sweep: sorted columns, their bins' sums, and
                :func:`sweep_reductions` (kernel and twin)
``sums``        the bootstrap's and the streaming passes' sums, kernel and twin:
                :func:`key_sums`, :func:`entry_sums`, :func:`adaptive_bin_sums`,
                :func:`sorted_draws`, :func:`slot_sums` (:func:`lookup_slots`; which path pays:
                :func:`entry_sums_pay`, :func:`adaptive_walk_pays`), :func:`laplace_draw_totals`,
                :func:`draw_counts`
``threads``     :func:`map_blocks` / :func:`parallel_map` on two threads, BLAS on one,
                and how many threads the loess fits pay for (:func:`loess_workers`)
``memo``        :func:`mark_validated` (the weak registry of checked, frozen arrays),
                :func:`is_validated`, :func:`marked_copy`, :func:`freeze_and_mark`
                (how ``Predictions`` seals its arrays, also when Streamlit's cache
                unpickles it) and the last-value memo :func:`remembered`
==============  ================================================================
"""
from calib_core._accel import compiled
from calib_core._accel.memo import KeptValues, freeze_and_mark, is_validated, mark_validated, marked_copy, remembered
from calib_core._accel.sums import (adaptive_bin_sums, adaptive_walk_pays, draw_counts, entry_sums, entry_sums_pay,
                                    key_sums, laplace_draw_totals, lookup_slots, slot_sums, sorted_draws)
from calib_core._accel.sweep import (SortedColumns, column_bin_sums, count_chunks, sort_columns, sweep_reductions,
                                     uniform_sweep_plan)
from calib_core._accel.threads import (blas_single_threaded, blas_single_threaded_for_good, loess_workers, map_blocks,
                                      parallel_map)
from calib_core._accel.twins import (arg_max_by_blocks, label_search, laplace_form, loess_fit_points, spread,
                                     top_label_bin_sums, window_moments)

__all__ = ["KeptValues", "SortedColumns", "adaptive_bin_sums", "adaptive_walk_pays", "arg_max_by_blocks",
           "blas_single_threaded", "blas_single_threaded_for_good", "column_bin_sums", "compiled", "count_chunks",
           "draw_counts", "entry_sums", "entry_sums_pay", "freeze_and_mark", "is_validated", "key_sums",
           "label_search", "laplace_draw_totals", "laplace_form", "loess_fit_points", "loess_workers", "lookup_slots",
           "map_blocks", "mark_validated", "marked_copy", "parallel_map", "remembered", "slot_sums", "sort_columns",
           "sorted_draws", "spread", "sweep_reductions", "top_label_bin_sums", "uniform_sweep_plan", "window_moments"]
