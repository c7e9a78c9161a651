#!/usr/bin/env bash
# Store bytes per small committed write (issue 37): N puts of 60-byte values in a plaintext solo
# group (`peerlog put --batch`, one receipt each), then the same log exported and imported into
# a second home, which commits it as a receiver does. Prints each table's and index's pages per
# write (SQLite's dbstat) for both stores, largest first, and the totals.
# Usage: tools/bench_store_bytes.sh [N] [--what-if] [--stream] (N default 20000). --what-if: also
# what each storage change not yet made would save (tools/store_bytes_what_if.py, on a copy of the
# writer's store). --stream: the writer takes the lines through `put --batch - --stream`, each
# acknowledged before the next is written (a transaction and a single envelope a write, as a
# script writing one record at a time), instead of `put --batch` files (runs of envelopes).
# Uses .build/release/peerlog if built, else .build/debug/peerlog (the bytes do not depend on
# the build). No network.
set -euo pipefail
cd "$(dirname "$0")/.."
N=20000
WHAT_IF=
STREAM=
for arg in "$@"; do
  case "$arg" in
    --what-if) WHAT_IF=1 ;;
    --stream) STREAM=1 ;;
    *) [[ "$arg" =~ ^[1-9][0-9]*$ ]] || {
         echo "usage: tools/bench_store_bytes.sh [N] [--what-if] [--stream], N a count of writes (1 or more); got: $*" >&2
         exit 2
       }
       N=$arg ;;
  esac
done
PL=${PEERLOG_BIN:-.build/release/peerlog}
[ -x "$PL" ] || PL=.build/debug/peerlog
[ -x "$PL" ] || { echo "build it first: swift build (peerlog and peerlog-full)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$PL" init --home "$dir/writer" --name writer >/dev/null
"$PL" group create bench --plaintext --home "$dir/writer" >/dev/null
python3 -c "
import json
for i in range($N): print(json.dumps({'key': 'k%06d' % i, 'value': 'v' * 60}))" > "$dir/in.jsonl"
if [ -n "$STREAM" ]; then
  python3 - "$PL" "$dir" <<'EOF'
import subprocess, sys
pl, d = sys.argv[1], sys.argv[2]
p = subprocess.Popen([pl, "put", "bench", "--batch", "-", "--stream", "--home", d + "/writer"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in open(d + "/in.jsonl"):
    p.stdin.write(line)
    p.stdin.flush()
    if not p.stdout.readline():
        sys.exit("put --stream stopped before acknowledging every line")
p.stdin.close()
sys.exit(p.wait())
EOF
else
  # put --batch takes at most 100,000 operations a call.
  split -l 100000 "$dir/in.jsonl" "$dir/part."
  for part in "$dir"/part.*; do "$PL" put bench --batch "$part" --home "$dir/writer" >/dev/null; done
fi
"$PL" export bench "$dir/bench.export" --home "$dir/writer" >/dev/null
"$PL" init --home "$dir/reader" --name reader >/dev/null
"$PL" import "$dir/bench.export" --home "$dir/reader" >/dev/null
python3 - "$N" "$dir/writer/replica.sqlite" "$dir/reader/replica.sqlite" "$STREAM" <<'EOF'
import sqlite3, sys
n = int(sys.argv[1])
stores = {"writer": sys.argv[2], "reader (imported)": sys.argv[3]}
sizes = {}
for name, path in stores.items():
    c = sqlite3.connect(path)
    sizes[name] = dict(c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    c.close()
names = sorted(set().union(*sizes.values()), key=lambda t: -max(s.get(t, 0) for s in sizes.values()))
print(f"store bytes per write, {n:,} puts of 60-byte values (SQLite dbstat, pages)"
      + (", streamed one by one" if sys.argv[4] else ""))
print(f"{'table or index':40s}" + "".join(f"{k:>20s}" for k in stores))
for t in names:
    row = [s.get(t, 0) / n for s in sizes.values()]
    if max(row) >= 1:
        print(f"{t:40s}" + "".join(f"{v:20.1f}" for v in row))
print(f"{'total':40s}" + "".join(f"{sum(s.values()) / n:20.1f}" for s in sizes.values()))
EOF
[ -z "$WHAT_IF" ] || python3 tools/store_bytes_what_if.py "$N" "$dir/writer/replica.sqlite"
