"""Reading predictions: file formats, column rules, the Predictions object, the bundled demos; safe CSV export."""
from calib_core.io.loader import Predictions, demo_datasets, load_demo, load_predictions
from calib_core.io.export import csv_bytes, escape_csv_cell, escape_csv_frame

__all__ = ["Predictions", "demo_datasets", "load_demo", "load_predictions", "csv_bytes", "escape_csv_cell",
           "escape_csv_frame"]
