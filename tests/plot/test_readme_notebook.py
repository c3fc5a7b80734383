"""The README's notebook snippet runs as written (issue 25): tables in, figures out."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def notebook_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Use it in a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_the_readme_notebook_snippet_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    go = pytest.importorskip("plotly.graph_objects")
    monkeypatch.chdir(ROOT)
    code = notebook_snippet().replace("reliability.show()", "pass")  # no browser in a test
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["preds"].source_format == "pandas"
    for name in ("reliability", "per_class", "sensitivity", "simplex", "before_after"):
        assert isinstance(namespace[name], go.Figure) and namespace[name].data, name
    assert "\n" not in repr(namespace["interval"]) and namespace["interval"]._repr_html_().startswith("<table>")
