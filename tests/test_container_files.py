"""The container's files, checked without a container engine (issue 29): the health check follows the port
and base URL path the server serves on, and .dockerignore keeps nested bytecode and build output out of
the image. scripts/check_container.sh builds and runs the image itself (not part of this suite: it needs
Docker or Podman and several minutes)."""
from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def healthcheck():
    return _load_script("healthcheck")


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    rows = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(row.split(None, 1)[0].upper(), row.split(None, 1)[1] if " " in row else "") for row in rows]


# ------------------------------------------------------------------------------------------ health check

SERVER_ARGV = ["/usr/local/bin/python", "/usr/local/bin/streamlit", "run", "app.py", "--server.address=0.0.0.0",
               "--server.headless=true"]


@pytest.mark.parametrize("argv, environ, url", [
    (SERVER_ARGV, {"STREAMLIT_SERVER_PORT": "8501"}, "http://localhost:8501/_stcore/health"),
    (SERVER_ARGV, {}, "http://localhost:8501/_stcore/health"),
    (SERVER_ARGV, {"STREAMLIT_SERVER_PORT": "8600", "STREAMLIT_SERVER_BASE_URL_PATH": "/studio/"},
     "http://localhost:8600/studio/_stcore/health"),
    # Flags after the image name (docs/deploy.md's reverse proxy), in both spellings; a flag wins over the variable.
    (SERVER_ARGV + ["--server.baseUrlPath=studio"], {"STREAMLIT_SERVER_PORT": "8501"},
     "http://localhost:8501/studio/_stcore/health"),
    (SERVER_ARGV + ["--server.port", "8601", "--server.baseUrlPath", "a/b"], {"STREAMLIT_SERVER_PORT": "8600"},
     "http://localhost:8601/a/b/_stcore/health"),
    (SERVER_ARGV + ["--server.address=127.0.0.1"], {}, "http://127.0.0.1:8501/_stcore/health"),
    ([], {"STREAMLIT_SERVER_ADDRESS": "::1"}, "http://[::1]:8501/_stcore/health"),
])
def test_health_url_follows_the_servers_port_and_base_path(healthcheck, argv, environ, url):
    assert healthcheck.health_url(argv, environ) == url


def test_the_server_is_found_behind_an_init_process(healthcheck, tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "cmdline").write_bytes(b"/sbin/docker-init\0--\0/usr/local/bin/streamlit\0")
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cmdline").write_bytes(b"\0".join(s.encode() for s in SERVER_ARGV + ["--server.port=9"]) + b"\0")
    (tmp_path / "self").mkdir()
    assert healthcheck.server_argv(tmp_path) == SERVER_ARGV + ["--server.port=9"]
    assert healthcheck.server_argv(tmp_path / "self") == []


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = b"ok" if self.path == self.server.health_path else b"not found"
        self.send_response(200 if body == b"ok" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def health_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    server.health_path = "/studio/_stcore/health"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_healthcheck_passes_on_the_configured_port_and_path_and_fails_elsewhere(healthcheck, health_server,
                                                                                monkeypatch):
    monkeypatch.setattr(healthcheck, "server_argv", lambda: SERVER_ARGV)
    monkeypatch.setenv("STREAMLIT_SERVER_PORT", str(health_server))
    monkeypatch.setenv("STREAMLIT_SERVER_BASE_URL_PATH", "studio")
    assert healthcheck.main() == 0
    monkeypatch.delenv("STREAMLIT_SERVER_BASE_URL_PATH")
    assert healthcheck.main() == 1


def test_dockerfile_healthcheck_runs_the_script_and_the_port_is_a_setting():
    instructions = _instructions()
    (health,) = [args for name, args in instructions if name == "HEALTHCHECK"]
    assert "8501" not in health, "a fixed port fails when the server serves on another"
    assert re.search(r'"python", "/app/scripts/healthcheck\.py"', health), health
    (entry,) = [args for name, args in instructions if name == "ENTRYPOINT"]
    assert "--server.port" not in entry, "an entry-point flag would override STREAMLIT_SERVER_PORT"
    env = " ".join(args for name, args in instructions if name == "ENV")
    assert re.search(r"\bSTREAMLIT_SERVER_PORT=8501\b", env)


def test_dockerfile_compiles_the_kernels_into_a_cache_any_user_can_use():
    instructions = _instructions()
    users = [i for i, (name, _) in enumerate(instructions) if name == "USER"]
    (warm,) = [i for i, (name, args) in enumerate(instructions) if name == "RUN" and "warm_kernels.py" in args]
    assert warm > users[-1], "compiled as the runtime user, after the code is in place"
    env = " ".join(args for name, args in instructions if name == "ENV")
    assert re.search(r"\bNUMBA_CACHE_DIR=/tmp/", env)
    # numba refuses a cache folder it cannot write to, and calib_core then does not import (`--user`).
    assert re.search(r'chmod -R a\+rwX "\$NUMBA_CACHE_DIR"', instructions[warm][1])


# ------------------------------------------------------------------------------------------- .dockerignore

def _docker_pattern(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as Docker's matcher reads it: from the context root, ``*`` and ``?`` within
    one path element, ``**`` any number of elements (zero included)."""
    parts = []
    for element in pattern.strip("/").split("/"):
        if element == "**":
            parts.append("(?:[^/]+/)*")
            continue
        regex = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in element)
        parts.append(regex + "/")
    return re.compile("".join(parts)[:-1] if parts[-1].endswith("/") else "".join(parts))


@functools.cache
def _ignore_patterns() -> list[re.Pattern]:
    lines = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    assert not any(line.startswith("!") for line in lines), "exceptions are not modelled here"
    return [_docker_pattern(line) for line in lines]


def _ignored(path: str) -> bool:
    """Whether Docker leaves ``path`` out of the context: it, or a folder above it, matches a pattern."""
    elements = path.split("/")
    prefixes = ["/".join(elements[:i]) for i in range(1, len(elements) + 1)]
    return any(p.fullmatch(prefix) for p in _ignore_patterns() for prefix in prefixes)


def test_docker_pattern_model_matches_dockers_rules():
    assert _docker_pattern("__pycache__").fullmatch("__pycache__")
    assert not _docker_pattern("__pycache__").fullmatch("calib_core/__pycache__")
    assert _docker_pattern("**/__pycache__").fullmatch("calib_core/metrics/__pycache__")
    assert _docker_pattern("**/__pycache__").fullmatch("__pycache__")
    assert not _docker_pattern("*.pyc").fullmatch("studio/x.pyc")


@pytest.mark.parametrize("path", [
    "calib_core/__pycache__/api.cpython-311.pyc", "calib_core/metrics/__pycache__/ece.cpython-311.pyc",
    "studio/text.pyc", "__pycache__/app.cpython-311.pyc", "build/lib/calib_core/api.py", "dist/calib_core-1.0.tar.gz",
    "calib_core.egg-info/PKG-INFO", ".venv/bin/python", ".git/HEAD", "tests/test_packaging.py", "bench/bench_app.py",
    "test-artifacts/e2e.log", "studio/.pytest_cache/v/cache", ".hypothesis/examples/x", "tmp/scratch.csv",
])
def test_dockerignore_leaves_out_nested_bytecode_build_output_and_test_files(path):
    assert _ignored(path), path


def test_dockerignore_keeps_everything_the_image_runs():
    needed = ["app.py", "requirements.txt", "constraints.txt", ".streamlit/config.toml", "scripts/healthcheck.py",
              "scripts/warm_kernels.py", "calib_core/_accel/compiled.py", "studio/text.py"]
    needed += [str(p.relative_to(REPO)) for folder in ("pages", "data/demo") for p in (REPO / folder).iterdir()]
    for name, args in _instructions():
        if name in ("COPY", "ADD"):
            needed += [source for source in args.split()[:-1] if not source.startswith("--") and source != "."]
    assert not [path for path in needed if _ignored(path)]
