#!/usr/bin/env bash
# Two figures of a daemon at work (issue 33 item 4), for one build or two compared in one run:
#  1. `peerlog put` from 4 concurrent writers on a home whose daemon syncs a peer, against
#     sequential puts: ms per put, and p50/p90/max of the concurrent ones;
#  2. `peerlog group show` while the daemon takes in a log of N receipts from its peer: ms each.
# Usage: tools/bench_busy_daemon.sh [N] [PUTS]      (defaults 40000, 15)
# Builds: PEERLOG_BIN (default .build/release/peerlog); BEFORE_BIN, if set, is measured first
# in the same run. Loopback only, discovery off; every loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-40000}
PUTS=${2:-15}
PL=${PEERLOG_BIN:-.build/release/peerlog}
[ -x "$PL" ] || { echo "build it first: swift build -c release (peerlog and peerlog-full)" >&2; exit 1; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
stats() { sort -n "$1" | awk '{a[NR]=$1} END {printf "p50 %d, p90 %d, max %d ms", a[int((NR+1)/2)], a[int(NR*0.9)], a[NR]}'; }

measure() {
  local BIN=$1 D; D=$(mktemp -d)
  local pids=()
  trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$D"' RETURN
  "$BIN" init --home "$D/a" --name a >/dev/null
  "$BIN" init --home "$D/b" --name b >/dev/null
  local G AID BID
  G=$("$BIN" group create --home "$D/a" g --plaintext --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
  AID=$("$BIN" id --home "$D/a" --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["identity"])')
  BID=$("$BIN" id --home "$D/b" --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["identity"])')
  "$BIN" group add --home "$D/a" "$G" "$BID" >/dev/null
  local PA=$((20000 + RANDOM % 20000)); local PB=$((PA + 1))
  "$BIN" daemon --home "$D/a" --listen 127.0.0.1:$PA --no-discovery >"$D/a.log" 2>&1 & pids+=($!)
  "$BIN" daemon --home "$D/b" --listen 127.0.0.1:$PB --peer 127.0.0.1:$PA --allow "$AID" --no-discovery >"$D/b.log" 2>&1 & pids+=($!)
  for _ in $(seq 1 100); do "$BIN" group accept --home "$D/b" "$G" >/dev/null 2>&1 && break; sleep 0.2; done

  local s e
  s=$(date +%s%N)
  for i in $(seq 1 "$PUTS"); do "$BIN" put --home "$D/a" "$G" "seq$i" 1 >/dev/null; done
  e=$(date +%s%N); echo "  sequential puts: $(( $(ms "$s" "$e") / PUTS )) ms a put"
  s=$(date +%s%N)
  local writers=()
  for w in 1 2 3 4; do
    ( for i in $(seq 1 "$PUTS"); do
        a=$(date +%s%N); "$BIN" put --home "$D/a" "$G" "w$w-$i" 1 >/dev/null; b=$(date +%s%N)
        ms "$a" "$b" >> "$D/lat"
      done ) &
    writers+=($!)
  done
  wait "${writers[@]}"
  e=$(date +%s%N)
  echo "  4 concurrent writers: $(( $(ms "$s" "$e") / PUTS )) ms a put per writer ($(stats "$D/lat"))"

  # B stops; A takes N more writes; B starts again and catches up by the log.
  kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true
  python3 -c "import json,sys
for i in range(int(sys.argv[1])): print(json.dumps({'key': 'k%d' % (i % 1000), 'value': i}))" "$N" > "$D/batch"
  "$BIN" put --home "$D/a" "$G" --batch "$D/batch" >/dev/null
  "$BIN" daemon --home "$D/b" --listen 127.0.0.1:$PB --peer 127.0.0.1:$PA --allow "$AID" --no-discovery >"$D/b.log" 2>&1 & pids[1]=$!
  local want=$(( N + PUTS * 5 ))
  : > "$D/show"
  for _ in $(seq 1 60); do
    a=$(date +%s%N); "$BIN" group show --home "$D/b" "$G" >/dev/null; b=$(date +%s%N)
    c=$("$BIN" group list --home "$D/b" --json | python3 -c 'import json,sys;print(json.load(sys.stdin)[0]["committed_seq"])')
    [ "$c" -ge "$want" ] && break
    [ "$c" -gt 3 ] && ms "$a" "$b" >> "$D/show"
    sleep 0.2
  done
  echo "  group show during the catch-up of $N: $(wc -l < "$D/show") reads, $(stats "$D/show")"
  a=$(date +%s%N); "$BIN" group show --home "$D/b" "$G" >/dev/null; b=$(date +%s%N)
  echo "  group show once caught up: $(ms "$a" "$b") ms"
}

if [ -n "${BEFORE_BIN:-}" ]; then echo "before ($BEFORE_BIN):"; measure "$BEFORE_BIN"; fi
echo "after ($PL):"; measure "$PL"
