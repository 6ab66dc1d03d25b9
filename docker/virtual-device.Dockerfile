# Virtual-device worker: the sandbox phone served over the adb wire protocol on port 5555, so that
# a farm can be stood up and tested with no Android image (`phoneenv farm up` starts N of these).
#
# Build from the repository root with BuildKit (DOCKER_BUILDKIT=1 on Docker < 23):
#
#   docker build -f docker/virtual-device.Dockerfile -t phoneenv-virtual-device .
#
# Build arguments:
#   BASE_IMAGE   a Debian/Ubuntu image with python3 (>= 3.10) and its venv module
#                (default python:3.11-slim; where no registry serves images, an imported
#                debootstrap of bookworm: docker/base-image.sh, docs/guides/run-a-farm.md)
#   PIP_INDEX_URL, PIP_EXTRA_INDEX_URL   package index (default PyPI)
# Secret (optional): `--secret id=ca,src=/etc/ssl/certs/ca-certificates.crt` gives pip a CA bundle
# (a proxy's) for the build only; it never enters a layer.
#
# Run:  docker run -d -p 127.0.0.1:5555:5555 phoneenv-virtual-device
#       adb connect 127.0.0.1:5555

ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
RUN python3 -m venv /opt/venv

# Dependencies first, from pyproject.toml alone (empty packages and README stand in), so that a
# code change rebuilds only the last layers. This layer is the same in the root Dockerfile.
WORKDIR /opt/phoneenv
COPY pyproject.toml ./
ARG PHONEENV_EXTRAS=device
RUN --mount=type=secret,id=ca \
    if [ -f /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && mkdir -p phoneenv apps agents rl \
    && touch README.md phoneenv/__init__.py apps/__init__.py agents/__init__.py rl/__init__.py \
    && pip install ".[${PHONEENV_EXTRAS}]" \
    && pip uninstall -y phoneenv \
    && rm -rf README.md phoneenv apps agents rl build *.egg-info

COPY README.md ./
COPY phoneenv ./phoneenv
COPY apps ./apps
COPY agents ./agents
COPY rl ./rl
RUN --mount=type=secret,id=ca \
    if [ -f /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && pip install --no-deps . \
    && rm -rf build *.egg-info \
    && useradd --create-home --uid 1000 --shell /usr/sbin/nologin device

USER device
EXPOSE 5555
# Healthy = the endpoint answers adb's connection handshake (CNXN) as a device. The check is
# phoneenv/farm/handshake.py run as a script with the standard library alone (-I): ~0.15 s of
# CPU where `phoneenv device ping` (importing phoneenv) takes ~1-2.5 s idle and outlived the
# timeout at load 15, marking healthy workers unhealthy. `farm up` waits through "starting"
# and "unhealthy" until its --timeout.
HEALTHCHECK --interval=3s --timeout=8s --start-period=30s --retries=3 \
    CMD ["python3", "-I", "/opt/phoneenv/phoneenv/farm/handshake.py", "127.0.0.1:5555", "--timeout", "4"]
ENTRYPOINT ["phoneenv"]
CMD ["device", "serve", "--host", "0.0.0.0", "--port", "5555"]
