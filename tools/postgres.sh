#!/usr/bin/env bash
# A throwaway PostgreSQL server for the relay's tests and benchmarks, on loopback only:
#   bash tools/postgres.sh [start|stop|url|status]
# Installs Debian's postgresql when no server binaries are present, keeps its own cluster in
# $PEERLOG_PG_DIR (default /tmp/peerlog-postgres), listens on 127.0.0.1:$PEERLOG_PG_PORT
# (default 15432: below the kernel's ephemeral ports, 32768-60999, so no test's outgoing
# connection or port-0 listener can hold it) and nowhere else, trusts local connections, and has
# a database `peerlog`.
set -euo pipefail
dir="${PEERLOG_PG_DIR:-/tmp/peerlog-postgres}"
port="${PEERLOG_PG_PORT:-15432}"
url="postgres://postgres@127.0.0.1:${port}/peerlog"

bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

# initdb and postgres refuse to run as root: run them as the `postgres` system user then.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_server() {
  [ -n "$(bindir)" ] && return
  echo "postgres: installing Debian's postgresql (server binaries are missing)" >&2
  [ "$(id -u)" = 0 ] || { echo "postgres: run as root to install postgresql, or install it first" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  # The package may start its own cluster on 5432; this script does not use it.
  for c in /etc/postgresql/*/main; do
    [ -d "$c" ] && pg_ctlcluster "$(basename "$(dirname "$c")")" main stop >/dev/null 2>&1 || true
  done
  [ -n "$(bindir)" ] || { echo "postgres: postgresql installed but no initdb found under /usr/lib/postgresql" >&2; exit 1; }
}

running() {
  local bin; bin=$(bindir) || return 1
  [ -f "$dir/data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

answers() { psql "postgres://postgres@127.0.0.1:${port}/postgres" -XAtqc "SELECT 1" >/dev/null 2>&1; }

start() {
  install_server
  local bin; bin=$(bindir)
  if running; then
    if answers; then echo "$url"; return; fi
    # A server of this cluster on another port (an earlier default): restart it on ours.
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    # Loopback only; the Unix socket stays inside the cluster directory.
    {
      echo "listen_addresses = '127.0.0.1'"
      echo "port = $port"
      echo "unix_socket_directories = '$dir'"
      echo "fsync = on"
    } >>"$dir/data/postgresql.conf"
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$dir/data/pg_hba.conf"
  fi
  # The port and addresses are given on each start, so a cluster made by an earlier version of
  # this script follows them too. A port another process still holds for a moment (a test's
  # socket closing) is tried again for up to 20 s.
  local attempt
  for attempt in $(seq 1 10); do
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-p $port -h 127.0.0.1 -k $dir" start >/dev/null; then
      break
    fi
    if [ "$attempt" -lt 10 ] && tail -5 "$dir/server.log" | grep -q "Address already in use"; then
      echo "postgres: 127.0.0.1:$port is in use; trying again in 2 s" >&2
      sleep 2
      continue
    fi
    echo "postgres: the server did not start (see $dir/server.log):" >&2
    tail -5 "$dir/server.log" >&2
    exit 1
  done
  for _ in $(seq 1 150); do
    if answers; then break; fi
    sleep 0.2
  done
  if ! psql "postgres://postgres@127.0.0.1:${port}/postgres" -XAtqc "SELECT 1 FROM pg_database WHERE datname = 'peerlog'" | grep -q 1; then
    psql "postgres://postgres@127.0.0.1:${port}/postgres" -XAtqc "CREATE DATABASE peerlog" >/dev/null
  fi
  echo "$url"
}

stop() {
  local bin
  bin=$(bindir) || exit 0
  if running; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null; echo "postgres: stopped"; fi
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  status) if running; then echo "running: $url"; else echo "not running"; exit 1; fi ;;
  *) echo "usage: bash tools/postgres.sh [start|stop|url|status]" >&2; exit 2 ;;
esac
