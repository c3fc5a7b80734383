# calibration studio: the Streamlit app on port 8501 (Streamlit's documented pattern).
#
# Reproducible: the base image is pinned to an exact Python patch release and Debian release (the
# interpreter constraints.txt was resolved and tested with), and every Python package is installed at
# the version pinned in constraints.txt. To pin the image bytes as well, append its digest when you
# publish: FROM python:3.11.7-slim-bookworm@sha256:<digest of `docker buildx imagetools inspect`>.
# Bump the tag and regenerate constraints.txt together.
# BASE_IMAGE replaces it where no registry can be reached: scripts/check_container.sh then builds an
# equivalent base from Debian bookworm's packages (debootstrap: python3 3.11, pip) and passes its tag.
ARG BASE_IMAGE=python:3.11.7-slim-bookworm
FROM ${BASE_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NUMBA_CACHE_DIR=/tmp/numba-cache \
    STREAMLIT_SERVER_PORT=8501

WORKDIR /app

# Dependencies first: this layer is rebuilt only when one of these two files changes.
COPY requirements.txt constraints.txt ./
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt

# The app's code belongs to root and is read-only for the runtime user: a compromised or buggy app
# process cannot rewrite the code every later visitor runs. Bytecode is compiled here, since the
# runtime user cannot write __pycache__ folders; group/world write bits from the build context are removed.
COPY . .
RUN python -m compileall -q /app \
    && chown -R root:root /app \
    && chmod -R a+rX,go-w /app \
    && useradd --create-home --uid 1000 --shell /usr/sbin/nologin studio

USER studio

# The numba kernels are compiled now, into NUMBA_CACHE_DIR: a new container's first visitor does not wait
# for them. numba uses a cache folder only if it can write there (a kernel called with a new signature or
# on another CPU model is added at run time), and without one calib_core does not import: the folder is
# writable for any user, as /tmp is, so `docker run --user <uid>` (arbitrary-uid platforms) works too.
RUN python scripts/warm_kernels.py && chmod -R a+rwX "$NUMBA_CACHE_DIR"

# The port is a setting (STREAMLIT_SERVER_PORT above; `-e STREAMLIT_SERVER_PORT=8600` changes it), not an
# entry-point flag: a command-line flag would win over the variable.
EXPOSE 8501
# The health check asks the server for <base path>/_stcore/health on the port and base path it serves on (its command line, then
# the STREAMLIT_SERVER_* variables; scripts/healthcheck.py). Python, no curl: no unpinned apt packages.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "/app/scripts/healthcheck.py"]
ENTRYPOINT ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.headless=true", "--browser.gatherUsageStats=false"]
