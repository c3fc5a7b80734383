#!/usr/bin/env bash
# Set up and run every test (unit, property, AppTest and the headless-Chromium
# browser tests), spread over the machine's CPUs:
#   bash scripts/run_tests.sh          (extra arguments go to pytest)
# Installs Debian's chromium for the browser test and a Java runtime for the
# Spark test when they are missing and the user is root; elsewhere those tests
# are skipped with a message (CI sets CALIB_STUDIO_REQUIRE_ALL=1: no skip).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap_env.sh requirements-dev.txt

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$chromium" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "== installing Debian's chromium for the browser test"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

if ! command -v java >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "== installing a Java runtime for the Spark adapter's test"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null
fi

# On every CPU (pytest-xdist): a module whose tests share a module-scoped fixture (a browser test's
# server) stays on one worker (tests/conftest.py). CALIB_STUDIO_TEST_WORKERS=0 runs in one process;
# `-n N` among the arguments overrides it.
workers="${CALIB_STUDIO_TEST_WORKERS:-auto}"

set +e
"$PY" -m pytest -n "$workers" --dist loadgroup "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here (is tests/ missing?)" >&2
  exit 1
fi
exit "$status"
