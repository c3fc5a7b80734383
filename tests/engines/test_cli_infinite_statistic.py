"""The CLI's JSON report stays JSON when a test statistic is infinite (issue 23 item 8: Hosmer-Lemeshow printed
as the non-JSON token ``Infinity``); the reason says why."""
from __future__ import annotations

import json
from pathlib import Path

from calib_core.engines.cli import main

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "digits_gaussian_nb.csv"


def refuse(token: str):
    raise ValueError(f"not JSON: {token}")


def test_json_report_has_no_infinity_and_says_why(capsys):
    assert main(["report", str(DEMO), "--json"]) == 0
    result = json.loads(capsys.readouterr().out, parse_constant=refuse)
    test = result["tests"]["hosmer_lemeshow"]
    assert test["statistic"] is None
    assert "The statistic is infinite" in test["reason"]
