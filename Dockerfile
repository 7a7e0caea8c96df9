# WarrenMQ: a RabbitMQ-compatible AMQP 0-9-1 broker for tests and CI. Starts in well under a second.

# Build stage: the wheel, with the journal's C lane (broker/journal/_lane.c) compiled; the runtime image
# has no compiler, and without the lane the journal costs about three times as much per delivery.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY broker ./broker
# The extension is optional for pip (a failed compile only warns), so the image build checks it is there.
RUN pip wheel --no-deps --wheel-dir /wheels . \
    && python -m zipfile -l /wheels/warrenmq-*.whl | grep -q 'broker/journal/_lane\..*\.so'

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    WARRENMQ_HOST=0.0.0.0 \
    WARRENMQ_PORT=5672 \
    WARRENMQ_MANAGEMENT_PORT=15672 \
    WARRENMQ_LOG_FORMAT=json \
    WARRENMQ_DATA_DIR=/var/lib/warrenmq

WORKDIR /opt/warrenmq
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-compile /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels \
    && useradd --system --uid 10001 --home-dir /var/lib/warrenmq --create-home warrenmq

USER warrenmq
# Data directory: the durable store (SQLite, fsync on every group commit). Mount a volume here to keep durable
# queues and persistent messages across container restarts; WARRENMQ_DATA_DIR=none keeps everything in memory.
# Definitions files can be mounted anywhere, e.g. /etc/warrenmq/definitions.json
# with WARRENMQ_DEFINITIONS=/etc/warrenmq/definitions.json.
VOLUME ["/var/lib/warrenmq"]
EXPOSE 5672 15672

HEALTHCHECK --interval=2s --timeout=3s --start-period=1s --retries=5 CMD ["warrenmq", "healthcheck"]
ENTRYPOINT ["warrenmq"]
CMD ["serve"]
