#!/usr/bin/env bash
# `peerlog put` as a user runs it: in a group whose relay is out of reach with W receipts
# waiting for a seq, against a solo group (this device sequences), interleaved, same run.
# Prints both rates and their ratio (issue 14's figure). Usage: tools/bench_cli_put.sh [W] [PUTS]
# Uses .build/release/peerlog (swift build -c release builds it and peerlog-full). Loopback only: the
# relay address 127.0.0.1:9 is never dialed (no daemon runs).
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-10000}
PUTS=${2:-100}
PL=${PEERLOG_BIN:-.build/release/peerlog}
[ -x "$PL" ] || { echo "build it first: swift build -c release (peerlog and peerlog-full)" >&2; exit 1; }
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
"$PL" init --home "$home" --name bench >/dev/null
"$PL" group create offline --home "$home" >/dev/null
"$PL" group create solo --home "$home" >/dev/null
other=$(mktemp -d -p "$home"); "$PL" init --home "$other" --name relay >/dev/null
relay_key=$("$PL" id --home "$other" | awk '/^device/{print $2; exit}')
"$PL" group sequencer offline relay 127.0.0.1:9 "$relay_key" --home "$home" >/dev/null
# The backlog: W writes in batches of 10,000 (each its own receipt, all waiting for the relay).
left=$W; i=0
while [ "$left" -gt 0 ]; do
  n=$(( left < 10000 ? left : 10000 ))
  seq "$i" $(( i + n - 1 )) | awk '{printf "{\"key\": \"k%d\", \"value\": %d}\n", $1, $1}' | "$PL" put offline --batch - --home "$home" >/dev/null
  left=$(( left - n )); i=$(( i + n ))
done
waiting=$("$PL" group list --home "$home" --json | python3 -c 'import json,sys; print(next(g["tentative"] for g in json.load(sys.stdin) if g["name"]=="offline"))')
now() { date +%s.%N; }
times=$(mktemp -p "$home")
for r in $(seq 1 "$PUTS"); do
  a=$(now); "$PL" put offline "x$r" v --home "$home" >/dev/null
  b=$(now); "$PL" put solo "x$r" v --home "$home" >/dev/null
  c=$(now); echo "$a $b $c" >> "$times"
done
python3 - "$times" "$waiting" "$PUTS" <<'PY'
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
waiting, puts = sys.argv[2], int(sys.argv[3])
off = puts / sum(b - a for a, b, c in rows)
solo = puts / sum(c - b for a, b, c in rows)
print(f"{'receipts waiting for the out-of-reach relay':52} {waiting:>10}")
print(f"{'peerlog put, relay out of reach (' + str(puts) + ' puts)':52} {off:8.1f} /s")
print(f"{'peerlog put, solo group, interleaved':52} {solo:8.1f} /s")
print(f"{'ratio waiting / solo':52} {off / solo:8.2f}   (target >= 0.9)")
PY
