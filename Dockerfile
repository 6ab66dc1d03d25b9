# Farm worker image: phoneenv on the sandbox backend today; adb and emulator tooling join it when
# the device backends land.
FROM python:3.11-slim
WORKDIR /opt/phoneenv
COPY pyproject.toml README.md ./
COPY phoneenv ./phoneenv
COPY apps ./apps
COPY agents ./agents
COPY rl ./rl
RUN pip install --no-cache-dir .
ENTRYPOINT ["phoneenv"]
CMD ["demo"]
