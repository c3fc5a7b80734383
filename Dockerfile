# calibration studio: the Streamlit app on port 8501 (Streamlit's documented pattern).
#
# Reproducible: the base image is pinned to an exact Python patch release and Debian release (the
# interpreter constraints.txt was resolved and tested with), and every Python package is installed at
# the version pinned in constraints.txt. To pin the image bytes as well, append its digest when you
# publish: FROM python:3.11.7-slim-bookworm@sha256:<digest of `docker buildx imagetools inspect`>.
# Bump the tag and regenerate constraints.txt together.
FROM python:3.11.7-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NUMBA_CACHE_DIR=/tmp/numba-cache

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

EXPOSE 8501
# The health check uses Python (no curl, so no unpinned apt packages in the image).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4)"]
ENTRYPOINT ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0", "--server.headless=true", "--browser.gatherUsageStats=false"]
