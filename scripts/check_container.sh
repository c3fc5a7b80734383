#!/usr/bin/env bash
# Build the Dockerfile's image and prove it works (issue 29):
#   bash scripts/check_container.sh [--port N] [--image NAME] [--keep]
#
# 1. Docker if its daemon answers, else Podman; host-specific flags only where this host needs them
#    (detected and printed below).
# 2. The base image (the Dockerfile's BASE_IMAGE): pulled; where no registry can be reached, an
#    equivalent base is built from Debian bookworm's packages with debootstrap (needs root), once.
# 3. The image is built; then, in it: the app user is not root, /app is read-only, the numba kernels
#    are compiled in, no tests/, bench/ or bytecode from the build context were copied.
# 4. A container at the defaults: the health endpoint answers, headless Chromium (Debian's, through
#    Playwright, as the browser tests) opens the Data, Metrics and Reliability pages on the demo; the
#    server process runs as non-root; first-use time of the kernels with and without the built cache.
# 5. Two containers on another port and below a base path (given as STREAMLIT_SERVER_* variables, and as
#    flags after the image name), the first with a read-only root file system: each container's own
#    HEALTHCHECK must report healthy.
# Every step prints what it does and its time; the first failure stops the check with exit status 1.
# Ports: the host ports N, N+1 and N+2 on 127.0.0.1 (default 8516).
set -euo pipefail
cd "$(dirname "$0")/.."
repo_root="$(pwd)"

port=8516
image="calibration-studio:check"
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port="$2"; shift 2 ;;
    --image) image="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

official_base="$(sed -n 's/^ARG BASE_IMAGE=//p' Dockerfile)"
local_base="localhost/calib-studio-base:bookworm"
out_dir="$repo_root/test-artifacts/container"
mkdir -p "$out_dir"
started=$SECONDS
containers=()

: >"$out_dir/engine.log"  # the engine's messages of the short runs (Podman without systemd complains)
step() { printf '\n[%s  +%ss] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - started))" "$*"; }
note() { printf '  %s\n' "$*"; }
fail() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }
cleanup() {
  if [ "$keep" = 0 ] && [ ${#containers[@]} -gt 0 ]; then
    "${engine[@]}" rm -f "${containers[@]}" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# --------------------------------------------------------------------------------------------- engine
step "container engine"
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  engine=(docker)
elif command -v podman >/dev/null; then
  engine=(podman)
else
  fail "neither a Docker daemon nor podman (Debian: apt-get install podman runc)"
fi
build_flags=()
run_flags=()
if [ "${engine[0]}" = podman ]; then
  # Podman writes OCI images by default, and the OCI format has no HEALTHCHECK: keep Docker's format.
  build_flags+=(--format docker --pull=never)
  if [ ! -d /run/systemd/system ]; then
    note "no systemd here: --cgroup-manager cgroupfs --events-backend file"
    engine+=(--cgroup-manager cgroupfs --events-backend file)
  fi
  if ! command -v crun >/dev/null && command -v runc >/dev/null; then
    note "no crun (Podman's default runtime) here, runc is: --runtime runc"
    engine+=(--runtime runc)
  fi
  # Without CAP_SYS_RESOURCE (bit 24 of CapEff) a container cannot raise its limits above the host's hard
  # ones, and Podman asks for more by default: give the host's limits explicitly.
  cap_eff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
  if [ $(( 0x$cap_eff >> 24 & 1 )) = 0 ]; then
    nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    note "no CAP_SYS_RESOURCE here: --ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"
    build_flags+=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
    run_flags+=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
  fi
fi
note "engine: ${engine[*]} ($("${engine[@]}" --version))"

# ----------------------------------------------------------------------------------------- base image
step "base image"
base="$official_base"
if "${engine[@]}" image inspect "$official_base" >/dev/null 2>&1; then
  note "$official_base is here"
elif note "pulling $official_base" && timeout 300 "${engine[@]}" pull "$official_base" >"$out_dir/pull.log" 2>&1; then
  note "pulled $official_base"
else
  note "cannot pull $official_base: $(tail -1 "$out_dir/pull.log")"
  base="$local_base"
  if "${engine[@]}" image inspect "$local_base" >/dev/null 2>&1; then
    note "using $local_base, built from Debian packages earlier (remove it to rebuild)"
  else
    [ "$(id -u)" = 0 ] || fail "building a base from Debian packages needs root (debootstrap)"
    command -v debootstrap >/dev/null || fail "no debootstrap (apt-get install debootstrap)"
    rootfs="$(mktemp -d /var/tmp/calib-base.XXXXXX)"
    note "debootstrap bookworm (python3, python3-pip, ca-certificates) into $rootfs; log: $out_dir/debootstrap.log"
    t0=$SECONDS
    debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates bookworm "$rootfs" \
      "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$out_dir/debootstrap.log" 2>&1 \
      || { tail -20 "$out_dir/debootstrap.log"; rm -rf "$rootfs"; fail "debootstrap failed"; }
    # As in python:*-slim: `python` and `pip` on the PATH, pip may install into /usr/local (the image is
    # the environment, PEP 668's marker is for a shared system), no package caches.
    ln -sf python3 "$rootfs/usr/bin/python"
    ln -sf pip3 "$rootfs/usr/bin/pip"
    rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "${engine[@]}" import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$local_base" >"$out_dir/import.log" 2>&1 \
      || { tail -5 "$out_dir/import.log"; rm -rf "$rootfs"; fail "could not import the base image"; }
    rm -rf "$rootfs"
    note "built $local_base in $((SECONDS - t0)) s"
  fi
  note "its Python: $("${engine[@]}" run --rm "${run_flags[@]}" "$base" python --version 2>>"$out_dir/engine.log")"
fi

# A host that reaches the package index through an intercepting proxy trusts the proxy's CA in its own
# bundle only: lend the build that bundle (read-only, not copied into the image). Podman only; with
# Docker, add the CA to the base image instead.
host_ca=/etc/ssl/certs/ca-certificates.crt
if [ "${engine[0]}" = podman ] && [ -f "$host_ca" ] && ! "${engine[@]}" run --rm "${run_flags[@]}" "$base" \
     cat "$host_ca" 2>>"$out_dir/engine.log" | cmp -s - "$host_ca"; then
  note "the host trusts CAs the base image does not: mounting $host_ca read-only during the build"
  build_flags+=(-v "$host_ca:$host_ca:ro")
fi

# ---------------------------------------------------------------------------------------------- build
step "build $image (log: $out_dir/build.log)"
t0=$SECONDS
set +e
"${engine[@]}" build "${build_flags[@]}" --build-arg "BASE_IMAGE=$base" -t "$image" . 2>&1 \
  | tee "$out_dir/build.log" | grep --line-buffered -E '^(STEP [0-9]+|#[0-9]+ \[|warm_kernels)' | sed -u 's/^/  /'
status=${PIPESTATUS[0]}
set -e
[ "$status" = 0 ] || { tail -30 "$out_dir/build.log"; fail "the build failed (exit $status)"; }
build_seconds=$((SECONDS - t0))
size=$("${engine[@]}" image inspect --format '{{.Size}}' "$image")
note "built in ${build_seconds} s; image size $((size / 1000000)) MB"
health=$("${engine[@]}" image inspect --format '{{json .Config.Healthcheck}}' "$image")
case "$health" in *healthcheck.py*) note "HEALTHCHECK kept: $health" ;; *) fail "the image has no HEALTHCHECK ($health)" ;; esac

# ----------------------------------------------------------------------------------- image contents
step "image contents"
contents=$("${engine[@]}" run --rm "${run_flags[@]}" --entrypoint python "$image" 2>>"$out_dir/engine.log" -c '
import os, pathlib
print("uid", os.getuid())
print("app_writable", os.access("/app", os.W_OK) or any(os.access(p, os.W_OK) for p in pathlib.Path("/app").rglob("*")))
copied = [n for n in ("tests", "bench", ".git", ".venv", "test-artifacts", "build", "dist") if os.path.exists("/app/" + n)]
print("copied", ",".join(copied + [p.name for p in pathlib.Path("/app").rglob("*.egg-info")]) or "-")
cache = pathlib.Path(os.environ["NUMBA_CACHE_DIR"])
print("kernels", len(list(cache.rglob("*.nbi"))) if cache.is_dir() else 0)
')
echo "$contents" | sed -u 's/^/  /'
get() { echo "$contents" | awk -v k="$1" '$1 == k {print $2}'; }
[ "$(get uid)" != 0 ] || fail "the image runs as root"
[ "$(get app_writable)" = False ] || fail "/app (or a file in it) is writable by the runtime user"
[ "$(get copied)" = - ] || fail "the build context's $(get copied) went into the image (.dockerignore)"
[ "$(get kernels)" -gt 0 ] || fail "no compiled numba kernels in the image"
# numba needs a writable cache folder or calib_core does not import: also as another user (--user).
"${engine[@]}" run --rm "${run_flags[@]}" --user 4321:0 --entrypoint python "$image" -c \
  'import calib_core._accel.compiled as c; assert c.row_max is not None' 2>>"$out_dir/engine.log" \
  || { tail -3 "$out_dir/engine.log"; fail "calib_core does not import as another user (--user 4321:0)"; }
note "calib_core and its kernels import as another user too (--user 4321:0)"

# ---------------------------------------------------------------------------------- default container
wait_health() {  # URL SECONDS: poll the health endpoint from the host until it answers ok
  local url="$1" deadline=$((SECONDS + $2))
  until [ "$(python3 -c 'import sys, urllib.request
try: print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode().strip())
except OSError: print("-")' "$url")" = ok ]; do
    [ $SECONDS -lt "$deadline" ] || return 1
    sleep 1
  done
}
start_container() {  # NAME ARGS...: run detached, remember it for the clean-up
  local name="$1"; shift
  "${engine[@]}" rm -f "$name" >/dev/null 2>&1 || true
  # (Podman without systemd logs that it cannot schedule the health check: kept in the log, run by hand below.)
  "${engine[@]}" run -d --name "$name" --memory 2g "${run_flags[@]}" "$@" >"$out_dir/run-$name.log" 2>&1 \
    || { cat "$out_dir/run-$name.log"; fail "$name did not start"; }
  containers+=("$name")
}

step "container at the defaults: 127.0.0.1:$port -> 8501"
t0=$SECONDS
start_container calib-check-default -p "127.0.0.1:$port:8501" "$image"
wait_health "http://127.0.0.1:$port/_stcore/health" 180 \
  || { "${engine[@]}" logs calib-check-default 2>&1 | tail -30; fail "no answer from /_stcore/health within 180 s"; }
note "/_stcore/health: ok after $((SECONDS - t0)) s"
server_uid=$("${engine[@]}" exec calib-check-default python -c 'import os; print(os.stat("/proc/1").st_uid)')
[ "$server_uid" != 0 ] || fail "the Streamlit server runs as root"
"${engine[@]}" exec calib-check-default sh -c 'touch /app/probe' 2>/dev/null && fail "the server can write /app"
note "the server runs as uid $server_uid; it cannot write /app"

step "headless Chromium: Data, Metrics and Reliability pages"
if [ -x "${CALIB_STUDIO_VENV:-$repo_root/.venv}/bin/python" ] && "${CALIB_STUDIO_VENV:-$repo_root/.venv}/bin/python" -c 'import playwright' 2>/dev/null; then
  PY="${CALIB_STUDIO_VENV:-$repo_root/.venv}/bin/python"
else
  note "installing the test requirements (playwright) into the project's venv"
  source scripts/bootstrap_env.sh requirements-dev.txt
fi
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || fail "no Chromium at ${CHROMIUM_PATH:-/usr/bin/chromium} (apt-get install chromium)"
"$PY" scripts/container_pages.py "http://127.0.0.1:$port" "$out_dir" || fail "a page did not work in the container"

step "numba kernels at first use: the built cache against an empty one"
first_use='import time; t = time.perf_counter()
from calib_core.engines import cli
import contextlib, io
from glob import glob
with contextlib.redirect_stdout(io.StringIO()): cli.main(["report", "--json", "--n-boot", "50", sorted(glob("data/demo/*.csv"))[0]])
print(f"{time.perf_counter() - t:.1f}")'
warm=$("${engine[@]}" exec calib-check-default python -c "$first_use")
cold=$("${engine[@]}" exec -e NUMBA_CACHE_DIR=/tmp/numba-cold calib-check-default python -c "$first_use")
note "a first report (--n-boot 50) in a new process: ${warm} s with the image's kernels, ${cold} s compiling them"

# ------------------------------------------------------------------------- another port and base path
hc_status() {  # NAME: the container's health status, after one run of its HEALTHCHECK where the engine
  # does not schedule it (Podman without systemd has no timers)
  if [ "${engine[0]}" = podman ]; then "${engine[@]}" healthcheck run "$1" >/dev/null 2>&1 || true; fi
  "${engine[@]}" inspect --format '{{.State.Health.Status}}' "$1" 2>/dev/null || echo unknown
}
wait_healthy() {  # NAME SECONDS
  local deadline=$((SECONDS + $2)) status
  while status=$(hc_status "$1"); [ "$status" != healthy ]; do
    [ $SECONDS -lt "$deadline" ] || { note "health status: $status"; return 1; }
    sleep 5
  done
}

step "port 8600 and base path /studio from STREAMLIT_SERVER_* variables, read-only root: 127.0.0.1:$((port + 1))"
t0=$SECONDS
read_only=(--read-only)  # Podman mounts a tmpfs on /tmp by itself; Docker needs one for NUMBA_CACHE_DIR
[ "${engine[0]}" = podman ] || read_only+=(--tmpfs /tmp)
start_container calib-check-env -p "127.0.0.1:$((port + 1)):8600" "${read_only[@]}" \
  -e STREAMLIT_SERVER_PORT=8600 -e STREAMLIT_SERVER_BASE_URL_PATH=studio "$image"
wait_health "http://127.0.0.1:$((port + 1))/studio/_stcore/health" 180 \
  || { "${engine[@]}" logs calib-check-env 2>&1 | tail -30; fail "no answer from /studio/_stcore/health on 8600"; }
wait_healthy calib-check-env 120 || fail "the HEALTHCHECK does not follow STREAMLIT_SERVER_PORT / STREAMLIT_SERVER_BASE_URL_PATH"
note "health status: healthy after $((SECONDS - t0)) s"

step "port 8601 and base path /studio/demo as flags after the image name: 127.0.0.1:$((port + 2))"
t0=$SECONDS
start_container calib-check-flags -p "127.0.0.1:$((port + 2)):8601" "$image" \
  --server.port=8601 --server.baseUrlPath=studio/demo
wait_health "http://127.0.0.1:$((port + 2))/studio/demo/_stcore/health" 180 \
  || { "${engine[@]}" logs calib-check-flags 2>&1 | tail -30; fail "no answer from /studio/demo/_stcore/health on 8601"; }
wait_healthy calib-check-flags 120 || fail "the HEALTHCHECK does not follow --server.port / --server.baseUrlPath"
note "health status: healthy after $((SECONDS - t0)) s"

step "passed: image $image, $((size / 1000000)) MB, built in ${build_seconds} s; check in $((SECONDS - started)) s"
