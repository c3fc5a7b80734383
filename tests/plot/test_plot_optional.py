"""``calib_core.plot`` keeps Plotly optional (issue 25, item 7): calib_core imports without it, a figure asked for
without it says how to install it, and the ``plot`` extra names it."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_without_plotly(code: str) -> subprocess.CompletedProcess:
    prelude = "import sys; sys.modules['plotly'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_calib_core_and_its_plot_namespace_import_without_plotly():
    done = run_without_plotly("import calib_core as cc\nprint(sorted(cc.plot.__all__))\n"
                              "print(cc.ece([[0.9, 0.1], [0.2, 0.8]], [0, 1]))")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'reliability'" in done.stdout and "'simplex'" in done.stdout


def test_a_figure_without_plotly_is_an_import_error_that_says_how_to_install_it():
    done = run_without_plotly(
        "import calib_core as cc\n"
        "for draw in (cc.plot.reliability, cc.plot.per_class, cc.plot.bin_sensitivity, cc.plot.simplex):\n"
        "    try:\n"
        "        draw([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], [0, 2])\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4 and all("pip install 'calib-core[plot]'" in line for line in lines)


def test_the_plot_extra_installs_plotly():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith("plotly") for requirement in extras["plot"])
