# phoneenv: the environments, the planners and the CLI. By default it evaluates the reference
# planner on the test split of the task suite (sandbox backend) and writes the run to /runs:
#
#   docker build -t phoneenv .                      # BuildKit (DOCKER_BUILDKIT=1 on Docker < 23)
#   docker run --rm -v "$PWD/runs:/runs" phoneenv   # runs/reference-test/{run.json,results.jsonl,traces/,scoreboard.json}
#   docker run --rm phoneenv eval --agent random --tasks app:messages --out /runs/random
#
# Any `phoneenv` command runs in it (the entrypoint). The virtual-device worker image is
# docker/virtual-device.Dockerfile; the emulator image is emulator_images/Dockerfile.
#
# Build arguments (as in docker/virtual-device.Dockerfile, whose dependency layer this one shares):
#   BASE_IMAGE       a Debian/Ubuntu image with python3 (>= 3.10) and venv (default python:3.11-slim)
#   PHONEENV_EXTRAS  pip extras (default device: adb and the virtual device, so `eval --farm` works)
#   PIP_INDEX_URL, PIP_EXTRA_INDEX_URL; secret `ca`: a CA bundle for pip during the build only.

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
    && mkdir -p /runs

# Results reach the host only through a folder mounted here (docker run -v "$PWD/runs:/runs"); eval says so.
ENV PHONEENV_RUNS_VOLUME=/runs
VOLUME /runs
# Healthy = the installation can play an episode end to end: the reference plan of one small
# task on the sandbox, through the same env and scorer as the eval (~10 s: loading the suite).
HEALTHCHECK --interval=300s --timeout=120s --start-period=60s --retries=2 \
    CMD ["phoneenv", "eval", "--agent", "reference", "--tasks", "budget.fix_expense/0", "--out", "/tmp/phoneenv-health", "--overwrite"]
ENTRYPOINT ["phoneenv"]
CMD ["eval", "--agent", "reference", "--tasks", "all", "--split", "test", "--out", "/runs/reference-test"]
