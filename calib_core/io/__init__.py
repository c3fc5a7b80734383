"""Reading predictions: file formats, column rules, the Predictions object, the bundled demos; safe CSV export.

=================  ==============================================================
module             what lives there
=================  ==============================================================
``formats``        file formats by suffix and content, the bytes, the one CSV sniffer
``limits``         what a file may cost: bytes, decoded rows and cells, checked first
``readers``        CSV, Parquet, NPZ, NPY and in-memory tables (pandas, Arrow, polars) to a table or arrays
``columns``        which column is the label, the classes, the split, the group
``arrays``         which NPZ/NPY array is the label, the scores, the split, the group
``interpret``      labels to class indices, scores to probabilities or logits, fixes
``confidence``     confidence files (``question_id, confidence, correct``): names and values
``predictions``    the ``Predictions`` object
``loading``        ``load_predictions``: a file or a table in memory to ``Predictions``
``systems``        several systems on the same items: ``load_confidence_models``, rows matched by id
``demos``          the bundled demo files in ``data/demo``
``export``         CSV export safe against formula injection
=================  ==============================================================
"""
from calib_core.io.confidence import SeveralModelsError
from calib_core.io.loading import load_predictions
from calib_core.io.predictions import Predictions
from calib_core.io.systems import load_confidence_models
from calib_core.io.demos import demo_datasets, load_demo
from calib_core.io.export import csv_bytes, escape_csv_cell, escape_csv_frame
from calib_core.io.unlabelled import UnlabelledPredictions, load_unlabelled

__all__ = ["Predictions", "SeveralModelsError", "load_confidence_models", "demo_datasets", "load_demo", "load_predictions", "csv_bytes", "escape_csv_cell",
           "escape_csv_frame", "UnlabelledPredictions", "load_unlabelled"]
