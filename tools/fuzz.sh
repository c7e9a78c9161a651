#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/) and runs each for a bounded time (default 30 s).
# A crash leaves its input in Fuzz/Regressions/<target>/ so the test suite replays it forever.
# Usage: bash tools/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
scratch=$(pwd)/.build-fuzz
swift build --package-path Fuzz --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer 2>&1 | grep -E 'error|Compiling Fuzz|Build complete' || true
status=0
for target in frames:FuzzFrames sync:FuzzSyncMessages capture:FuzzCaptureFiles; do
  name=${target%%:*}; exe=${target#*:}
  corpus="$scratch/corpus/$name"
  mkdir -p "$corpus" "Fuzz/Regressions/$name"
  echo "fuzz: $exe for ${seconds}s (seeds: Fuzz/Seeds/$name, kept crashers: Fuzz/Regressions/$name)"
  if ! "$scratch/debug/$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=70000 \
      -artifact_prefix="Fuzz/Regressions/$name/" "$corpus" "Fuzz/Seeds/$name" 2>"$scratch/$name.log"; then
    echo "fuzz: $exe found a crash (kept in Fuzz/Regressions/$name/); last lines:" >&2
    tail -30 "$scratch/$name.log" >&2
    status=1
  else
    grep -E '^Done|stat::number_of_executed_units' "$scratch/$name.log" | tail -1 || true
  fi
done
exit $status
