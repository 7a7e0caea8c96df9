#!/bin/sh
# The image's entrypoint, shaped like the rabbitmq image's: `docker run warrenmq` runs rabbitmq-server;
# arguments starting with "-" are the server's (`docker run warrenmq --heartbeat 10`); any other command
# (rabbitmq-diagnostics, rabbitmqctl, warrenmq config show, sh) runs in the broker's environment.
set -e
case "${1:-}" in
    -*) set -- rabbitmq-server "$@" ;;
    "") set -- rabbitmq-server ;;
esac
exec "$@"
