#!/bin/bash
# The ceiling: perf/sink.c, a C sink that answers just the frames amqpperf's scenarios need and stores
# nothing, run as if it were a broker. Built with cc -O2 into $PERF_STATE (never committed), rebuilt when
# sink.c is newer. It runs pub16 pubsub pubsub-lat ack1 ack50 fanout fanout-lat confirm confirm1 conns
# coldstart; topic is refused (540) and streams are not answered.
#   csink.sh fg PORT [CPUS]     exec in foreground (used by coldstart)
#   csink.sh start PORT [CPUS]  background; waits until the AMQP port answers
#   csink.sh stop PORT          SIGTERM the process group we started (its counters go to csink-PORT/log)
set -euo pipefail
cmd=$1; port=$2; cpus=${3:-}
HERE=$(cd "$(dirname "$0")/.." && pwd)
STATE=${PERF_STATE:-/tmp/perf-brokers}
dir=$STATE/csink-$port
BIN=$STATE/csink
build() {
  mkdir -p "$STATE" "$dir"
  if [ ! -x "$BIN" ] || [ "$HERE/sink.c" -nt "$BIN" ]; then
    # a private name first, then rename: two launchers building at once never run a half-written binary
    ${CC:-cc} -O2 -Wall -o "$BIN.$$" "$HERE/sink.c" && mv -f "$BIN.$$" "$BIN"
  fi
}
TS=(); [ -n "$cpus" ] && TS=(taskset -c "$cpus")
case $cmd in
  fg) build; exec "${TS[@]}" "$BIN" "$port" 127.0.0.1 ;;
  start)
    build; setsid "${TS[@]}" "$BIN" "$port" 127.0.0.1 > "$dir/log" 2>&1 < /dev/null &
    echo $! > "$STATE/csink-$port.pid"
    for i in $(seq 100); do
      if amqp-declare-queue --url="amqp://guest:guest@127.0.0.1:$port" -q perf.ping >/dev/null 2>&1; then
        amqp-delete-queue --url="amqp://guest:guest@127.0.0.1:$port" -q perf.ping >/dev/null 2>&1
        echo "csink pgid $(cat "$STATE/csink-$port.pid") port $port"; exit 0; fi
      sleep 0.1; done
    echo "csink did not start; see $dir/log" >&2; exit 1 ;;
  stop)
    pg=$(cat "$STATE/csink-$port.pid"); kill -TERM -- "-$pg" 2>/dev/null || true
    for i in $(seq 100); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pg" 2>/dev/null || true; rm -f "$STATE/csink-$port.pid" ;;
  *) echo "usage: $0 fg|start|stop PORT [CPUS]" >&2; exit 1 ;;
esac
