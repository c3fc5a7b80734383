"""The package's shape (issue 13): wings in floors, no import loop, no module too long to read.

calib_core is built in floors: the speed room ``_accel`` (compiled kernels,
block threads, the validated-array marks and memo; it imports nothing else
from calib_core), validation and binning at the bottom, then
io (reading files needs no metric), metrics, inference, recalibration, lab
and engines. A module may import
from its own wing or from a lower floor, never from a higher one, at module
level or inside a function (an import hidden in a function body is still a
loop). Inside a wing the module-level imports form no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calib_core"
#: Floors, lowest first: a module may import from its own floor or a lower one.
FLOORS = ("_accel", "validation", "binning", "io", "metrics", "inference", "recalibration", "lab", "engines")
#: "about 800 lines" (issue 13): a module longer than this is split by concern.
MAX_MODULE_LINES = 850
#: Test folders that test calib_core alone (they never import the app).
CORE_TEST_FOLDERS = ("metrics", "inference", "recalibration", "io", "engines", "lab", "golden", "ground")
#: The one door from calib_core to the app's code: ``calib-core report --html`` draws its charts with
#: ``studio.report`` (Plotly, the optional ``report`` extra), imported inside that command only.
APP_IMPORT_ALLOWED = {"calib_core/engines/cli.py": {"studio"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "calib_core" or len(parts) < 2:
        return None
    return FLOORS.index(parts[1]) if parts[1] in FLOORS else None


def imports_of(path: Path, *, module_level_only: bool = False) -> set[str]:
    """Every ``calib_core`` module ``path`` imports (``from calib_core.x import y`` counts x and x.y)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("calib_core")}


MODULES = sorted(path for path in PACKAGE.rglob("*.py"))


def test_the_floors_name_every_wing():
    wings = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    ground = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert wings | ground == set(FLOORS)


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_imports_from_a_higher_floor(path):
    own = floor_of(module_name(path))
    if own is None:  # the root __init__ and __main__ sit above every floor
        return
    higher = sorted(name for name in imports_of(path) if (floor_of(name) or 0) > own)
    assert not higher, f"{module_name(path)} (floor {FLOORS[own]}) imports from higher floors: {higher}"


def test_no_import_cycle_between_modules():
    known = {module_name(path): path for path in MODULES}
    graph = {name: {other for other in imports_of(path, module_level_only=True) if other in known and other != name
                    and not name.startswith(other + ".")}  # a submodule importing its own wing's package
             for name, path in known.items()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(name: str, trail: list[str]) -> bool:
        state[name] = 1
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                cycle.extend(trail[trail.index(other):] + [name, other] if other in trail else [name, other])
                return True
            if other not in state and visit(other, trail + [name]):
                return True
        state[name] = 2
        return False

    assert not any(visit(name, []) for name in sorted(graph) if name not in state), f"import cycle: {cycle}"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_is_too_long_to_read(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines (split it by concern)"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_calib_core_never_imports_the_app(path):
    tree = ast.parse(path.read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    allowed = APP_IMPORT_ALLOWED.get(str(path.relative_to(ROOT)), set())
    assert not names & ({"studio", "streamlit", "plotly", "pages"} - allowed), path


def test_tests_of_calib_core_never_import_the_app():
    offenders = []
    for folder in CORE_TEST_FOLDERS:
        for path in (ROOT / "tests" / folder).glob("*.py"):
            text = path.read_text()
            if any(word in text for word in ("import studio", "from studio", "import streamlit", "AppTest")):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders
