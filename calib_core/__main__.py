"""``python -m calib_core report FILE``: see :mod:`calib_core.cli`."""
import sys

from calib_core.cli import main

sys.exit(main())
