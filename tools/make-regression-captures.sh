#!/usr/bin/env bash
# Records the replay regression captures in Tests/Captures (real sessions between real daemons
# on loopback) and prints their expected state hashes for Tests/Captures/expected.json.
# Keys are fresh on every run, so new captures have new hashes: update both together.
set -euo pipefail
cd "$(dirname "$0")/.."
P=$(swift build --show-bin-path)/peerlog
out=${1:-Tests/Captures}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
mkdir -p "$out"
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
daemon() {  # home port [args…]: starts a daemon on loopback, waits for it to listen
  local home=$1 port=$2; shift 2
  "$P" daemon --home "$home" --listen "127.0.0.1:$port" --no-discovery "$@" >"$home.out" 2>"$home.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$home.out" 2>/dev/null && return; sleep 0.1; done
  echo "daemon $home did not start" >&2; exit 1
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
synced() {  # waits until both homes print the same committed state hash
  for _ in $(seq 100); do
    [ "$("$P" state-hash --home "$1" "$3" --json | field committed)" = "$("$P" state-hash --home "$2" "$3" --json 2>/dev/null | field committed 2>/dev/null || true)" ] && return
    sleep 0.2
  done
  echo "no sync" >&2; exit 1
}

"$P" init --home "$work/a" --name alice >/dev/null
"$P" init --home "$work/b" --name bob >/dev/null
A=$("$P" id --home "$work/a" --json | field identity)
B=$("$P" id --home "$work/b" --json | field identity)
G=$("$P" group create --home "$work/a" team --json | field id)
"$P" group add --home "$work/a" "$G" "$B" >/dev/null
for i in $(seq 1 25); do "$P" put --home "$work/a" "$G" "k$i" "$i" >/dev/null; done

# 1. catchup: a pending invitee catches up (commits batches), then a live push.
daemon "$work/a" 17911
daemon "$work/b" 17912 --peer 127.0.0.1:17911 --allow "$A" --capture "$out/catchup.pcapng"
synced "$work/a" "$work/b" "$G"
"$P" put --home "$work/a" "$G" late '"pushed live"' >/dev/null
synced "$work/a" "$work/b" "$G"
stop_all

# 2. relayed: Bob accepts and both write while apart; they sync (Alice sequences Bob's
# receipts). Then Carol, a new invitee, dials Alice and records: a catch-up with two authors,
# then Bob's later writes relayed live through Alice (tentative receipts, then envelopes).
"$P" init --home "$work/c" --name carol >/dev/null
C=$("$P" id --home "$work/c" --json | field identity)
"$P" group accept --home "$work/b" "$G" >/dev/null
for i in $(seq 1 10); do
  "$P" put --home "$work/a" "$G" "a$i" "$i" >/dev/null
  "$P" put --home "$work/b" "$G" "b$i" "$i" >/dev/null
done
"$P" group add --home "$work/a" "$G" "$C" >/dev/null
daemon "$work/a" 17911
daemon "$work/b" 17912 --peer 127.0.0.1:17911
synced "$work/a" "$work/b" "$G"
daemon "$work/c" 17913 --peer 127.0.0.1:17911 --allow "$A" --capture "$out/relayed.pcapng"
synced "$work/a" "$work/c" "$G"
for i in $(seq 1 5); do "$P" put --home "$work/b" "$G" "live$i" "$i" >/dev/null; done
synced "$work/b" "$work/c" "$G"
sleep 1
stop_all

for f in catchup relayed; do
  echo "$f:"
  "$P" replay "$out/$f.pcapng" --into "$work/replay-$f" --json
done
