#!/usr/bin/env bash
# Set up and start calibration studio on the bundled demo data:
#   bash scripts/run_app.sh            (then open http://localhost:8501)
# Extra arguments go to `streamlit run`, e.g. --server.port 8600.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap_env.sh requirements.txt
echo "== starting the app: streamlit run app.py $* (it prints the address; Ctrl+C stops it)"
exec "$PY" -m streamlit run app.py --server.headless=true --browser.gatherUsageStats=false "$@"
