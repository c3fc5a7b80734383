"""The container's health check (the Dockerfile's HEALTHCHECK): ask the running Streamlit server for
``<base path>/_stcore/health`` on the port and base URL path it actually serves on.

Streamlit takes an option from the command line first, then from its ``STREAMLIT_*`` environment
variable, then its default; so does this check. The command line is the Streamlit server's own,
read from ``/proc`` (the options given after the image name, e.g. ``docker run IMAGE
--server.baseUrlPath=studio``), the environment is the container's (``-e STREAMLIT_SERVER_PORT=8600``).
A fixed ``http://localhost:8501/_stcore/health`` reported a server below ``/studio`` or on another
port as unhealthy while it served (issue 29).

Exit status 0 when the server answers ``ok``, 1 otherwise (with the URL and the reason on stderr).
Standard library only: the image has no curl.
"""
from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

DEFAULT_PORT = "8501"
TIMEOUT_SECONDS = 4
_ANY_ADDRESS = ("", "0.0.0.0", "::", "[::]")


def _option(argv: Sequence[str], name: str) -> str | None:
    """The value of ``--name=VALUE`` or ``--name VALUE`` in ``argv`` (the last one, as Streamlit's parser
    keeps), or None when it is not given."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def _setting(argv: Sequence[str], environ: Mapping[str, str], flag: str, variable: str, default: str) -> str:
    value = _option(argv, flag)
    if value is None:
        value = environ.get(variable)
    return default if value is None else value


def health_url(argv: Sequence[str], environ: Mapping[str, str]) -> str:
    """The health endpoint of a server started with command line ``argv`` in environment ``environ``."""
    port = _setting(argv, environ, "--server.port", "STREAMLIT_SERVER_PORT", DEFAULT_PORT).strip() or DEFAULT_PORT
    base = _setting(argv, environ, "--server.baseUrlPath", "STREAMLIT_SERVER_BASE_URL_PATH", "").strip().strip("/")
    address = _setting(argv, environ, "--server.address", "STREAMLIT_SERVER_ADDRESS", "").strip()
    host = "localhost" if address in _ANY_ADDRESS else (f"[{address}]" if ":" in address else address)
    return f"http://{host}:{port}/" + (f"{base}/" if base else "") + "_stcore/health"


def server_argv(proc: Path = Path("/proc")) -> list[str]:
    """The command line of the Streamlit server in this container: the lowest process id whose command
    line runs ``streamlit ... run`` (process 1, unless an init such as ``docker run --init`` runs first);
    an empty list when there is none (the settings then come from the environment alone)."""
    candidates = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = [part.decode(errors="replace") for part in (entry / "cmdline").read_bytes().split(b"\0") if part]
        except OSError:
            continue
        if "run" in argv and any(Path(part).name == "streamlit" or part == "streamlit" for part in argv):
            candidates.append((int(entry.name), argv))
    return min(candidates)[1] if candidates else []


def main() -> int:
    url = health_url(server_argv(), os.environ)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            body = response.read().strip()
    except OSError as error:
        print(f"unhealthy: {url}: {error}", file=sys.stderr)
        return 1
    if body != b"ok":
        print(f"unhealthy: {url} answered {body[:80]!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
