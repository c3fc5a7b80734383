"""The figures and the HTML report import no streamlit (issue 24): the CLI's ``report --html`` draws with them.

``calib-core report --html`` runs without the app's dependencies; an import of
streamlit anywhere they reach (directly, through another ``studio`` module, or
inside a function body that only the report calls) breaks it. The check
follows every import of a module of this repository, at module level or not,
and reports the chain that reaches streamlit.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The modules the report needs: every figure module (calib_core.plot, and any the app keeps) and the report itself.
NO_STREAMLIT = sorted([*(ROOT / "calib_core" / "plot").glob("*.py"), *(ROOT / "studio").glob("figures*.py"),
                       ROOT / "studio" / "report.py"])


def _file_of(module: str, root: Path) -> Path | None:
    """The file of a module of this repository (``None`` for a third-party or standard module)."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported(path: Path, module: str) -> set[str]:
    """Every module ``path`` imports anywhere in its body (``from a import b`` counts a and a.b)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
    return {".".join(name.split(".")[:i]) for name in found if name for i in range(1, name.count(".") + 2)}


def streamlit_chain(start: Path, root: Path = ROOT) -> list[str] | None:
    """The chain of imports from ``start`` to streamlit, or ``None`` when there is none."""
    first = ".".join(start.relative_to(root).with_suffix("").parts)
    parents = {first: None}
    queue = [first]
    while queue:
        module = queue.pop(0)
        path = _file_of(module, root)
        if path is None:
            continue
        for name in sorted(_imported(path, module)):
            if name in parents:
                continue
            parents[name] = module
            if name.split(".")[0] == "streamlit":
                chain = [name]
                while parents[chain[-1]] is not None:
                    chain.append(parents[chain[-1]])
                return chain[::-1]
            queue.append(name)
    return None


@pytest.mark.parametrize("path", NO_STREAMLIT, ids=lambda p: p.name)
def test_figures_and_report_reach_no_streamlit(path):
    chain = streamlit_chain(path)
    assert chain is None, " -> ".join(chain)


def test_the_check_finds_streamlit_imported_in_a_function_of_a_module_they_import(tmp_path):
    # A copy of studio/ and calib_core/plot/ where plot/text.py (imported by every figure module) imports
    # streamlit in a function body.
    for folder in ("studio", "calib_core/plot"):
        (tmp_path / folder).mkdir(parents=True)
        for path in (ROOT / folder).glob("*.py"):
            (tmp_path / folder / path.name).write_text(path.read_text())
    text = tmp_path / "calib_core" / "plot" / "text.py"
    text.write_text(text.read_text() + "\n\ndef _toast():\n    import streamlit as st\n    return st\n")
    chain = streamlit_chain(tmp_path / "calib_core" / "plot" / "figures.py", tmp_path)
    assert chain == ["calib_core.plot.figures", "calib_core.plot.text", "streamlit"]
    assert streamlit_chain(tmp_path / "studio" / "report.py", tmp_path)[-1] == "streamlit"


def test_the_report_and_figures_import_without_streamlit():
    # The same at run time: with streamlit made unimportable, the modules still import.
    names = ", ".join(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in NO_STREAMLIT)
    code = ("import sys; sys.modules['streamlit'] = None\n"
            f"import importlib\nfor name in {names!r}.split(', '):\n    importlib.import_module(name)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
