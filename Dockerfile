# WarrenMQ: a RabbitMQ-compatible AMQP 0-9-1 broker for tests and CI, shaped like the rabbitmq image (ports,
# /var/lib/rabbitmq, RABBITMQ_* variables, /etc/rabbitmq files, rabbitmq-server / rabbitmq-diagnostics /
# rabbitmqctl), so that swapping the image name is the only change. A container completes its first AMQP
# handshake ~2 s after `podman run` on a loaded 2-core machine, much of it podman's own set-up
# (docs/benchmarks.md, "The image: build, size, first handshake").

# Layers go from the least to the most often changed, so that a change to the sources rebuilds only the wheel.
# This stage only lists what pip installs, from pyproject.toml: the build requirements ([build-system]:
# setuptools, wheel, mypy for mypyc, pamqp and structlog for mypyc's type check) and the runtime dependencies
# ([project]). The stages below copy the two lists, so their install layers stay cached while the lists are
# unchanged, whatever else pyproject.toml gains.
FROM python:3.11-slim AS requirements
COPY pyproject.toml /tmp/
RUN python -c "import tomllib; project = tomllib.load(open('/tmp/pyproject.toml', 'rb')); \
print('\n'.join(project['build-system']['requires']), file=open('/build-requires.txt', 'w')); \
print('\n'.join(project['project']['dependencies']), file=open('/requirements.txt', 'w'))"

# Build stage: the wheel, with the journal's C lane (broker/journal/_lane.c), the wire loops (protocol/_wire.c)
# and the mypyc-compiled modules (setup.py's MYPYC_MODULES) built; the runtime image has no compiler, and
# without them the journal costs about three times as much per delivery and the message path runs its slower
# pure-Python variant. The wheel is built without build isolation, which would download the build
# requirements again on every build.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
COPY --from=requirements /build-requires.txt /tmp/
RUN pip install --no-cache-dir -r /tmp/build-requires.txt
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY broker ./broker
# The extensions are optional for pip (a failed compile only warns), so the image build checks they are there:
# the lane, the wire loops, the message segments' record packer (zlib's CRC-32: zlib1g-dev above), the
# compiled group's library, one of its modules, and the manifest protocol/compiled.py checks.
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels . \
    && python -m zipfile -l /wheels/warrenmq-*.whl > /tmp/wheel.txt \
    && grep -q 'broker/journal/_lane\..*\.so' /tmp/wheel.txt \
    && grep -q 'protocol/_wire\..*\.so' /tmp/wheel.txt \
    && grep -q 'broker/storage/_segment\..*\.so' /tmp/wheel.txt \
    && grep -q 'protocol/native__mypyc\..*\.so' /tmp/wheel.txt \
    && grep -q 'broker/core/exchanges/router\..*\.so' /tmp/wheel.txt \
    && grep -q 'broker/session/channel_session\..*\.so' /tmp/wheel.txt \
    && grep -q 'protocol/_compiled\.json' /tmp/wheel.txt

FROM python:3.11-slim

# As in the rabbitmq image: data under /var/lib/rabbitmq (also the user's HOME). No WARRENMQ_PORT or other
# listener variables here: the environment would override a mounted rabbitmq.conf's listeners.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    RABBITMQ_DATA_DIR=/var/lib/rabbitmq \
    HOME=/var/lib/rabbitmq \
    WARRENMQ_DATA_DIR=/var/lib/rabbitmq

WORKDIR /opt/warrenmq
# uid/gid 999 as the rabbitmq image's rabbitmq user, so volumes written by one can be used by the other.
RUN groupadd --system --gid 999 rabbitmq \
    && useradd --system --uid 999 --gid rabbitmq --home-dir /var/lib/rabbitmq --create-home rabbitmq
# The runtime dependencies in a layer of their own, then the wheel (its dependencies are then there already).
# Byte-compiled at install: with PYTHONDONTWRITEBYTECODE set, and a root filesystem that may be read-only
# (`--read-only`), a start would otherwise compile every module it imports again.
COPY --from=requirements /requirements.txt /tmp/
RUN pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt
COPY --from=build /wheels /tmp/wheels
RUN pip install /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels
# /etc/rabbitmq/conf.d/10-defaults.conf (loopback_users.guest = false), /etc/rabbitmq/enabled_plugins
# (management and prometheus, as the -management image) and the entrypoint. Mount /etc/rabbitmq/rabbitmq.conf,
# a definitions file (load_definitions = ...) or your own enabled_plugins over them.
COPY docker/rootfs/ /
# rabbitmq-plugins enable/disable rewrites enabled_plugins, as in the rabbitmq image (/etc/rabbitmq is the
# rabbitmq user's there too).
RUN chown -R rabbitmq:rabbitmq /etc/rabbitmq

USER rabbitmq
# Durable store (SQLite, fsync on every group commit): mount a volume here to keep durable queues and
# persistent messages across container restarts; WARRENMQ_DATA_DIR=none keeps everything in memory.
VOLUME ["/var/lib/rabbitmq"]
# AMQP, AMQP over TLS (served once rabbitmq.conf names a certificate: listeners.ssl.default = 5671 and
# ssl_options.*), management HTTP API, Prometheus (rabbitmq_prometheus's /metrics, enabled by default here).
EXPOSE 5671 5672 15672 15692

HEALTHCHECK --interval=2s --timeout=3s --start-period=1s --retries=5 CMD ["rabbitmq-diagnostics", "-q", "ping"]
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["rabbitmq-server"]
