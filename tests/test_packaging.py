"""Checks of the set-up files that CI cannot exercise directly (no Docker engine here)."""
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_dockerfile_follows_streamlits_pattern():
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", text, re.M)
    assert "HEALTHCHECK" in text and "/_stcore/health" in text
    assert re.search(r"^USER (?!root)\w+", text, re.M)
    assert "EXPOSE 8501" in text
    entry = re.search(r'ENTRYPOINT \[(.*)\]', text).group(1)
    script = re.search(r'"run", "([^"]+)"', entry).group(1)
    assert (REPO / script).is_file()


def test_readme_starts_with_the_two_setup_commands():
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["bash scripts/run_app.sh", "bash scripts/run_tests.sh"]
    for command in commands:
        assert (REPO / command.split()[1]).is_file()
    assert "scripts/run_tests.sh" in (REPO / ".ci" / "run").read_text()


def test_console_script_points_at_the_cli():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["calib-core"] == "calib_core.cli:main"


def test_calib_core_never_imports_streamlit():
    for path in (REPO / "calib_core").rglob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+streamlit", path.read_text(), re.M), path


def test_runtime_requirements_are_pinned_for_apptest_uploads():
    text = (REPO / "requirements.txt").read_text()
    assert re.search(r"^streamlit>=1\.5[6-9]|^streamlit>=1\.[6-9]\d", text, re.M)
