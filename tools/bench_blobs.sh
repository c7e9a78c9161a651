#!/usr/bin/env bash
# Blob transfers between two daemons on loopback (issue 34): for each size, the time from
# `peerlog put --value-file` on A until B's daemon holds and has checked the whole blob (B
# connected throughout; blobs up to 64 MiB are fetched as soon as their receipt arrives, larger
# ones on `blob fetch`), in a plaintext and an encrypted group; then the bytes B reads back are
# compared. Then small writes during a transfer: for WRITES puts on A, the time until B holds
# each, first with the connection idle, then while B fetches a BIG_MB blob from A over it. Last,
# B is killed with SIGKILL halfway through a RESUME_MB fetch and restarted: the bytes A sends twice.
# Usage: tools/bench_blobs.sh [SIZES_MB...]   (default: 5 50 1024; WRITES=20 BIG_MB=1024 RESUME_MB=BIG_MB)
# Build: PEERLOG_BIN (default .build/release/peerlog). Loopback only, discovery off; every wait
# is bounded (300 s).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@"); [ ${#SIZES[@]} -gt 0 ] || SIZES=(5 50 1024)
PL=${PEERLOG_BIN:-.build/release/peerlog}
[ -x "$PL" ] || { echo "build it first: swift build -c release (peerlog and peerlog-full)" >&2; exit 1; }
now() { date +%s%N; }
json() { python3 -c "import json,sys;print(json.load(sys.stdin)$1)"; }

D=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$D"' EXIT
"$PL" init --home "$D/a" --name a >/dev/null
"$PL" init --home "$D/b" --name b >/dev/null
AID=$("$PL" id --home "$D/a" --json | json '["identity"]')
BID=$("$PL" id --home "$D/b" --json | json '["identity"]')
GP=$("$PL" group create --home "$D/a" plain --plaintext --json | json '["id"]')
GE=$("$PL" group create --home "$D/a" sealed --json | json '["id"]')
for g in "$GP" "$GE"; do "$PL" group add --home "$D/a" "$g" "$BID" >/dev/null; done
PA=$((20000 + RANDOM % 20000))
"$PL" daemon --home "$D/a" --listen 127.0.0.1:$PA --no-discovery >"$D/a.log" 2>&1 & pids+=($!)
"$PL" daemon --home "$D/b" --listen 127.0.0.1:$((PA + 1)) --peer 127.0.0.1:$PA --allow "$AID" --no-discovery >"$D/b.log" 2>&1 & pids+=($!)
for g in "$GP" "$GE"; do
  for _ in $(seq 1 150); do "$PL" group accept --home "$D/b" "$g" >/dev/null 2>&1 && break; sleep 0.2; done
done
sleep 1
echo "blobs between two daemons on loopback ($("$PL" --version 2>/dev/null || echo peerlog))"
for mb in "${SIZES[@]}"; do
  head -c $((mb * 1000000)) /dev/urandom > "$D/f"
  for kind in plaintext encrypted; do
    g=$GP; [ $kind = encrypted ] && g=$GE
    key="f$mb-$kind"
    s=$(now)
    "$PL" put --home "$D/a" "$g" "$key" --value-file "$D/f" >/dev/null
    p=$(now)
    # Wait for the receipt, then (large ones) ask, then for the whole blob.
    for _ in $(seq 1 3000); do "$PL" get --home "$D/b" "$g" "$key" >/dev/null 2>&1 && break; sleep 0.01; done
    if [ "$mb" -gt 64 ]; then "$PL" blob fetch --home "$D/b" "$g" "$key" --wait 0 >/dev/null; fi
    "$PL" blob fetch --home "$D/b" "$g" "$key" --wait 300 >/dev/null
    e=$(now)
    "$PL" get --home "$D/b" "$g" "$key" --out "$D/out" >/dev/null
    cmp -s "$D/f" "$D/out" || { echo "  $mb MB $kind: bytes differ" >&2; exit 1; }
    total=$(( (e - s) / 1000000 )); put=$(( (p - s) / 1000000 ))
    rate=$(python3 -c "print(f'{$mb / max(($e - $p) / 1e9, 1e-9):.0f}')")
    echo "  $mb MB $kind: put on A until B holds it $total ms (the put itself $put ms; then $rate MB/s)"
  done
done

# Small writes on a quiet connection, then during a large transfer.
WRITES=${WRITES:-20}; BIG_MB=${BIG_MB:-1024}
latency() {  # $1: label; prints p50/p90/max of put-on-A until B holds it
  : > "$D/lat"
  for i in $(seq 1 "$WRITES"); do
    local k="w$1-$i" s e
    s=$(now)
    "$PL" put --home "$D/a" "$GP" "$k" "$i" >/dev/null
    for _ in $(seq 1 2000); do "$PL" get --home "$D/b" "$GP" "$k" >/dev/null 2>&1 && break; sleep 0.005; done
    e=$(now); echo $(( (e - s) / 1000000 )) >> "$D/lat"
  done
  sort -n "$D/lat" | awk -v l="$1" '{a[NR]=$1} END {printf "  a small write, put on A until B holds it, %s: p50 %d ms, p90 %d ms, max %d ms\n", l, a[int((NR+1)/2)], a[int(NR*0.9)], a[NR]}'
}
latency "connection idle"
head -c $((BIG_MB * 1000000)) /dev/urandom > "$D/big"
"$PL" put --home "$D/a" "$GP" big --value-file "$D/big" >/dev/null
for _ in $(seq 1 3000); do "$PL" get --home "$D/b" "$GP" big >/dev/null 2>&1 && break; sleep 0.01; done
"$PL" blob fetch --home "$D/b" "$GP" big --wait 0 >/dev/null
sleep 0.5
latency "during a $BIG_MB MB transfer"
held=$("$PL" blob list --home "$D/b" --json | python3 -c 'import json,sys;print([b for b in json.load(sys.stdin) if b["size"]=='"$((BIG_MB * 1000000))"'][0]["whole"])')
echo "  (the transfer was whole by the end of those writes: $held)"


# Resume after kill -9: B fetches a RESUME_MB blob from A; at half, B is killed with SIGKILL and
# started again; once whole, A's served bytes less the blob's size are the bytes sent twice.
RESUME_MB=${RESUME_MB:-$BIG_MB}
status_json() { "$PL" status --home "$1" --json 2>/dev/null; }
served() { status_json "$D/a" | python3 -c 'import json,sys;print(json.load(sys.stdin)["blobs"]["servedBytes"])'; }
head -c $((RESUME_MB * 1000000)) /dev/urandom > "$D/resume"
"$PL" put --home "$D/a" "$GP" resume --value-file "$D/resume" >/dev/null
for _ in $(seq 1 3000); do "$PL" get --home "$D/b" "$GP" resume >/dev/null 2>&1 && break; sleep 0.01; done
before=$(served)
"$PL" blob fetch --home "$D/b" "$GP" resume --wait 0 >/dev/null
half=$((RESUME_MB * 500000))
for _ in $(seq 1 30000); do
  h=$(status_json "$D/b" | python3 -c 'import json,sys;f=json.load(sys.stdin)["blobs"]["fetching"];print(f[0]["heldBytes"] if f else 0)' 2>/dev/null || echo 0)
  [ "${h:-0}" -ge "$half" ] && break
  sleep 0.01
done
kill -9 "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true
held_at_kill=$("$PL" blob list --home "$D/b" --json | python3 -c 'import json,sys;print([b for b in json.load(sys.stdin) if b["size"]=='"$((RESUME_MB * 1000000))"'][0]["held"])')
"$PL" daemon --home "$D/b" --listen 127.0.0.1:$((PA + 1)) --peer 127.0.0.1:$PA --allow "$AID" --no-discovery >>"$D/b.log" 2>&1 & pids[1]=$!
"$PL" blob fetch --home "$D/b" "$GP" resume --wait 300 >/dev/null
sent=$(( $(served) - before ))
python3 -c "
size=$RESUME_MB*1000000; sent=$sent; held=$held_at_kill
print(f'  resume after kill -9 of the receiver at {held/size:.0%}: {sent - size} bytes sent twice ({(sent - size) / 1048576:.1f} MiB; target <= 8 MiB)')"
"$PL" get --home "$D/b" "$GP" resume --out "$D/out" >/dev/null
cmp -s "$D/resume" "$D/out" || { echo "  resume: bytes differ" >&2; exit 1; }
