# WarrenMQ: a RabbitMQ-compatible AMQP 0-9-1 broker for tests and CI. Starts in well under a second.
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
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY broker ./broker
RUN pip install --no-compile . \
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
