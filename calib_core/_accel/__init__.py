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
``twins``       one function per kernel whose numpy twin sits beside it here
                (:func:`arg_max_by_blocks`, :func:`spread`, :func:`label_search`,
                :func:`window_moments`, :func:`top_label_bin_sums`);
                the other kernels' numpy paths are still in the module they serve
``sweep``       the bin-count sweep's numpy path (sorted columns and prefix sums),
                twin of ``compiled.sweep_reductions``
``threads``     :func:`map_blocks` / :func:`parallel_map` on two threads, BLAS on one
``memo``        :func:`mark_validated` (the weak registry of checked, frozen arrays),
                :func:`is_validated`, :func:`marked_copy`, :func:`freeze_and_mark`
                (how ``Predictions`` seals its arrays, also when Streamlit's cache
                unpickles it) and the last-value memo :func:`remembered`
==============  ================================================================
"""
from calib_core._accel import compiled
from calib_core._accel.memo import KeptValues, freeze_and_mark, is_validated, mark_validated, marked_copy, remembered
from calib_core._accel.sweep import SortedColumns, column_bin_sums, sort_columns, uniform_sweep_plan
from calib_core._accel.threads import blas_single_threaded, map_blocks, parallel_map
from calib_core._accel.twins import arg_max_by_blocks, label_search, spread, window_moments
from calib_core._accel.twins import top_label_bin_sums

__all__ = ["KeptValues", "SortedColumns", "arg_max_by_blocks", "blas_single_threaded", "column_bin_sums", "compiled", "freeze_and_mark", "is_validated",
           "label_search", "map_blocks", "mark_validated", "marked_copy", "parallel_map", "remembered", "sort_columns",
           "spread", "uniform_sweep_plan", "window_moments"]
__all__ += ["top_label_bin_sums"]
