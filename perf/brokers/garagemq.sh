#!/bin/bash
# Private garagemq node (Debian's garagemq, the Go broker), the fastest peer that runs here: its packaged
# config (/etc/garagemq/config.yaml) with our own port, a free admin port and a fresh data dir.
#   garagemq.sh fg PORT [CPUS]     exec in foreground (used by coldstart)
#   garagemq.sh start PORT [CPUS]  background; waits until the AMQP port answers
#   garagemq.sh stop PORT          SIGTERM the process group we started
set -euo pipefail
cmd=$1; port=$2; cpus=${3:-}
STATE=${PERF_STATE:-/tmp/perf-brokers}
dir=$STATE/garagemq-$port
setup() {
  rm -rf "$dir"; mkdir -p "$dir/db"
  # The admin (HTTP) listener cannot be turned off; it goes to PORT+10000 on loopback, never 15672.
  sed -e "/^tcp:/,/^[a-z]/ s/^  port: .*/  port: $port/" \
      -e "/^admin:/,/^[a-z]/ s/^  port: .*/  port: $((port + 10000))/" \
      -e "s#^  defaultPath: /var/lib/garagemq/db#  defaultPath: $dir/db#" \
      /etc/garagemq/config.yaml > "$dir/config.yaml"
}
TS=(); [ -n "$cpus" ] && TS=(taskset -c "$cpus")
case $cmd in
  fg) setup; exec "${TS[@]}" garagemq --config "$dir/config.yaml" --log-level error --log-file "$dir/log" ;;
  start)
    setup; setsid "${TS[@]}" garagemq --config "$dir/config.yaml" --log-level error --log-file "$dir/log" \
      > "$dir/stdout" 2>&1 < /dev/null &
    echo $! > "$STATE/garagemq-$port.pid"
    for i in $(seq 300); do
      if amqp-declare-queue --url="amqp://guest:guest@127.0.0.1:$port" -q perf.ping >/dev/null 2>&1; then
        amqp-delete-queue --url="amqp://guest:guest@127.0.0.1:$port" -q perf.ping >/dev/null 2>&1
        echo "garagemq pgid $(cat "$STATE/garagemq-$port.pid") port $port"; exit 0; fi
      sleep 0.1; done
    echo "garagemq did not start; see $dir" >&2; exit 1 ;;
  stop)
    pg=$(cat "$STATE/garagemq-$port.pid"); kill -TERM -- "-$pg" 2>/dev/null || true
    for i in $(seq 300); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pg" 2>/dev/null || true; rm -f "$STATE/garagemq-$port.pid" ;;
  *) echo "usage: $0 fg|start|stop PORT [CPUS]" >&2; exit 1 ;;
esac
