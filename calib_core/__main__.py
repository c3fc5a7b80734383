"""``python -m calib_core report FILE``: see :mod:`calib_core.engines.cli`."""
import sys

from calib_core.engines.cli import main

sys.exit(main())
