#!/usr/bin/env bash
# Daemon memory during a blob transfer (issue 34): two daemons on loopback, an encrypted group;
# A puts a 1 GB file, B fetches it; VmRSS of both is sampled every 100 ms until B holds it whole.
# Prints the resident size before and the peak during, and the growth. Build: PEERLOG_BIN
# (default .build/release/peerlog). Loopback only, discovery off; every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
PL=${PEERLOG_BIN:-.build/release/peerlog}
[ -x "$PL" ] || { echo "build it first: swift build -c release (peerlog and peerlog-full)" >&2; exit 1; }
json() { python3 -c "import json,sys;print(json.load(sys.stdin)$1)"; }
D=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$D"' EXIT
$PL init --home $D/a --name a >/dev/null; $PL init --home $D/b --name b >/dev/null
AID=$($PL id --home $D/a --json | json '["identity"]'); BID=$($PL id --home $D/b --json | json '["identity"]')
G=$($PL group create --home $D/a plain --json | json '["id"]')
$PL group add --home $D/a $G $BID >/dev/null
PA=$((20000 + RANDOM % 20000))
$PL daemon --home $D/a --listen 127.0.0.1:$PA --no-discovery >$D/a.log 2>&1 & pids+=($!)
APID=$!
$PL daemon --home $D/b --listen 127.0.0.1:$((PA+1)) --peer 127.0.0.1:$PA --allow $AID --no-discovery >$D/b.log 2>&1 & pids+=($!)
BPID=$!
for _ in $(seq 1 150); do $PL group accept --home $D/b $G >/dev/null 2>&1 && break; sleep 0.2; done
sleep 2
rss() { awk '/VmRSS/ {print $2}' /proc/$1/status; }
echo "before: A $(rss $APID) kB, B $(rss $BPID) kB"
ra=$(rss $APID); rb=$(rss $BPID)
head -c 1000000000 /dev/urandom > $D/f
$PL put --home $D/a $G big --value-file $D/f >/dev/null
for _ in $(seq 1 300); do $PL get --home $D/b $G big >/dev/null 2>&1 && break; sleep 0.05; done
$PL blob fetch --home $D/b $G big --wait 0 >/dev/null
pa=0; pb=0
for _ in $(seq 1 1200); do
  a=$(rss $APID); b=$(rss $BPID); [ $a -gt $pa ] && pa=$a; [ $b -gt $pb ] && pb=$b
  w=$($PL blob list --home $D/b --json | python3 -c 'import json,sys;print(any(x["whole"] for x in json.load(sys.stdin)))')
  [ "$w" = True ] && break; sleep 0.1
done
echo "peak during 1 GB (encrypted group): A $pa kB (+$(( (pa - ra) / 1024 )) MiB), B $pb kB (+$(( (pb - rb) / 1024 )) MiB)"
