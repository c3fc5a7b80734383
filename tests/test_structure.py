"""The package's shape (issues 13, 24): wings in floors, public seams, no import loop, no module too long to read.

calib_core is built in floors: the speed room ``_accel`` (compiled kernels,
block threads, the validated-array marks and memo; it imports nothing else
from calib_core), validation and binning at the bottom, then
io (reading files needs no metric), metrics, inference, recalibration, lab
and engines. A module may import
from its own wing or from a lower floor, never from a higher one, at module
level or inside a function (an import hidden in a function body is still a
loop). Inside a wing the module-level imports form no cycle. What one wing
uses of another is public: no module takes another wing's ``_name`` or
private ``_module`` (issue 24).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calib_core"
#: Floors, lowest first: a module may import from its own floor or a lower one.
FLOORS = ("_accel", "display", "validation", "binning", "io", "metrics", "inference", "recalibration", "lab", "engines", "plot")
#: "about 800 lines" (issue 13): a module longer than this is split by concern.
MAX_MODULE_LINES = 800
#: Test folders that test calib_core alone (they never import the app).
CORE_TEST_FOLDERS = ("metrics", "inference", "recalibration", "io", "engines", "lab", "golden", "ground", "plot")
#: The one door from calib_core to the app's code: ``calib-core report --html`` draws its charts with
#: ``studio.report`` (Plotly, the optional ``report`` extra), imported inside that command only.
APP_IMPORT_ALLOWED = {"calib_core/engines/cli.py": {"studio"}}
#: Plotly (the optional ``plot`` extra) is drawn with in the top floor only: ``calib_core.plot`` imports it in
#: its figure modules, which ``calib_core.plot.draw`` imports on first use (``import calib_core`` needs no Plotly).
PLOTLY_WING = "calib_core/plot/"
#: Ground-floor packages whose own name starts with "_" but whose names inside are public to every wing:
#: ``calib_core._accel`` holds the speed machinery (compiled kernels, thread pool, memos; issue 24).
PUBLIC_GROUND_PACKAGES = ("_accel",)


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
#: Every module of a wing: calib_core's, and the app's (``studio``, ``pages`` and ``app.py`` are wings too).
WING_MODULES = MODULES + sorted([*(ROOT / "studio").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"])
OUR_TOP_NAMES = ("calib_core", "studio", "pages", "app")


def wing_of(module: str) -> str:
    """The wing a dotted name belongs to: ``calib_core.<subpackage or ground module>``, or the app's top folder."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "calib_core" else parts[0]


def is_private_to_its_wing(name: str) -> bool:
    """Whether the dotted ``name`` passes through a ``_part`` (a private module or name; ``__x__`` is public)."""
    parts = name.split(".")[1:]
    if name.startswith("calib_core.") and parts[0] in PUBLIC_GROUND_PACKAGES:
        parts = parts[1:]
    return any(part.startswith("_") and not part.startswith("__") for part in parts)


def private_seams(path: Path) -> set[str]:
    """Dotted names of other wings' private modules and names that ``path`` imports or reaches by attribute.

    ``from calib_core.x.m import _f``, ``from calib_core.x import _m``, ``import calib_core.x._m`` and
    ``m._f`` on a module ``m`` imported from another wing all count, at module level or inside a function.
    """
    own = wing_of(module_name(path))
    used = names_used(path)
    ours = (name for name in used if name.split(".")[0] in OUR_TOP_NAMES and wing_of(name) != own)
    return {first_private_part(name) for name in ours if is_private_to_its_wing(name)}


def names_used(path: Path) -> set[str]:
    """Every dotted name ``path`` imports or reaches by attribute on an imported name (see :func:`private_seams`)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return names_used_in(ast.parse(path.read_text()), package)


def names_used_in(tree: ast.AST, package: str) -> set[str]:
    bound: dict[str, str] = {}  # local name -> the dotted name it was imported as
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:  # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``
                used.add(alias.name)
                top = alias.name.split(".")[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node, package)
            for alias in node.names:
                used.add(f"{base}.{alias.name}")
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, root = [node.attr], node.value
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                used.add(".".join([bound[root.id], *reversed(chain)]))
    return used


def absolute_module(node: ast.ImportFrom, package: str) -> str:
    """The module of ``from M import ...`` written in ``package``: ``from ..x import y`` in ``a.b`` is ``a.x``."""
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")
    return ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])


def first_private_part(name: str) -> str:
    """``name`` up to its first private part: ``m._compiled.slot_sums`` is a use of ``m._compiled``."""
    parts = name.split(".")
    prefixes = (".".join(parts[:end]) for end in range(1, len(parts) + 1))
    return next(prefix for prefix in prefixes if is_private_to_its_wing(prefix))


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
    if str(path.relative_to(ROOT)).startswith(PLOTLY_WING):
        allowed = allowed | {"plotly"}
    assert not names & ({"studio", "streamlit", "plotly", "pages"} - allowed), path


def test_tests_of_calib_core_never_import_the_app():
    offenders = []
    for folder in CORE_TEST_FOLDERS:
        for path in (ROOT / "tests" / folder).glob("*.py"):
            text = path.read_text()
            if any(word in text for word in ("import studio", "from studio", "import streamlit", "AppTest")):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


@pytest.mark.parametrize("path", WING_MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_takes_a_private_name_of_another_wing(path):
    """What one wing uses of another is public (issue 24): renamed without the ``_`` and in its module's ``__all__``,
    or moved to the wing that uses it. ``calib_core._accel`` is a ground-floor package: its public names are open
    to every wing."""
    module = module_name(path)
    taken = sorted(private_seams(path))
    assert not taken, f"{module} ({wing_of(module)}) takes private names of other wings: {taken}"


#: The optional numba kernels: read only inside ``calib_core/_accel``, where each has its numpy twin beside it and
#: one public function runs the one or the other (issue 24, a room for speed); every other module calls that
#: function, so it does not know which path ran and writes no fallback of its own.
KERNELS = "calib_core._accel.compiled"


def reads_the_kernels(used: set[str]) -> bool:
    return any(name == KERNELS or name.startswith(KERNELS + ".") for name in used)


@pytest.mark.parametrize("path", [path for path in WING_MODULES if not str(path.relative_to(ROOT)).startswith(
    "calib_core/_accel/")], ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_outside_the_speed_room_reads_a_compiled_kernel(path):
    """A formula or engine module calls the one ``_accel`` function of a kernel (kernel and numpy twin), and the
    choice of the faster algorithm for the path that runs is a named ``_accel`` function too (``entry_sums_pay``)."""
    assert not reads_the_kernels(names_used(path)), (
        f"{module_name(path)} reads {KERNELS}: call the _accel function that runs the kernel or its numpy twin")


@pytest.mark.parametrize("source, reads", [
    ("from calib_core._accel import compiled", True), ("from calib_core._accel.compiled import slot_sums", True),
    ("import calib_core._accel.compiled as k", True), ("from calib_core import _accel\n_accel.compiled.slot_sums", True),
    ("from .._accel import compiled", True), ("from calib_core._accel import slot_sums", False),
    ("from calib_core import _accel\n_accel.slot_sums", False),
])
def test_the_kernel_rule_finds_each_way_of_reading_them(source, reads):
    assert reads_the_kernels(names_used_in(ast.parse(source), "calib_core.engines")) is reads


@pytest.mark.parametrize("name, private", [
    ("calib_core.metrics.canonical._lens", True), ("calib_core.metrics._compiled", True),
    ("calib_core.metrics._compiled.slot_sums", True), ("calib_core._memo", True), ("studio.text._escape", True),
    ("calib_core.metrics.canonical.lens_view", False), ("calib_core._accel", False),
    ("calib_core._accel.kernels.slot_sums", False), ("calib_core._accel.kernels._helper", True),
    ("calib_core.metrics.__all__", False),
])
def test_the_seam_rule_reads_names_as_meant(name, private):
    assert is_private_to_its_wing(name) is private


@pytest.mark.parametrize("source, package, module", [
    ("from calib_core.metrics import kernel", "calib_core.inference", "calib_core.metrics"),
    ("from . import kernel", "calib_core.metrics", "calib_core.metrics"),
    ("from .canonical import x", "calib_core.metrics", "calib_core.metrics.canonical"),
    ("from ..metrics.canonical import x", "calib_core.inference", "calib_core.metrics.canonical"),
])
def test_the_seam_rule_resolves_relative_imports(source, package, module):
    assert absolute_module(ast.parse(source).body[0], package) == module
