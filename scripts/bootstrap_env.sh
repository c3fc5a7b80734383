#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install a
# requirements file into it. Sourced by run_app.sh and run_tests.sh.
# Works on a fresh Debian machine with Python 3.11: if the venv module is
# missing (Debian's python3 without python3-venv) and we are root, it is
# installed with apt-get; otherwise packages go into the current interpreter.
# Each step prints one line with the time since the start, and pip shows what it collects and installs
# (a first install downloads several hundred MB: minutes, not a silent wait).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="${1:?usage: bootstrap_env.sh REQUIREMENTS_FILE}"
python_bin="${PYTHON:-python3}"
venv_dir="${CALIB_STUDIO_VENV:-$repo_root/.venv}"

if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "calibration studio needs Python >= 3.11; $python_bin is $("$python_bin" --version 2>&1)" >&2
  exit 1
fi

_bootstrap_start=$SECONDS
_step() { echo "== [+$((SECONDS - _bootstrap_start))s] $*"; }

if [ ! -x "$venv_dir/bin/python" ]; then
  _step "creating the virtual environment $venv_dir"
  if ! "$python_bin" -m venv "$venv_dir" 2>/dev/null; then
    rm -rf "$venv_dir"
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
      _step "installing python3-venv with apt-get"
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$python_bin" -m venv "$venv_dir"
    fi
  fi
fi

if [ -x "$venv_dir/bin/python" ]; then
  PY="$venv_dir/bin/python"
else
  echo "== no virtual environment available; installing into $python_bin" >&2
  PY="$python_bin"
fi
export PY

stamp="$venv_dir/.installed-$(basename "$requirements")"
if [ ! -f "$stamp" ] || [ "$requirements" -nt "$stamp" ] || [ "$repo_root/requirements.txt" -nt "$stamp" ]; then
  _step "upgrading pip"
  "$PY" -m pip install --disable-pip-version-check -q --upgrade pip
  _step "installing $(basename "$requirements") into $("$PY" -c 'import sys; print(sys.prefix)') (pip's output follows)"
  "$PY" -m pip install --disable-pip-version-check -r "$requirements"
  if [ -d "$venv_dir" ]; then touch "$stamp"; fi
  _step "installed $(basename "$requirements")"
else
  _step "$(basename "$requirements") already installed in $venv_dir (delete $stamp to reinstall)"
fi
