#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/) and runs each for a bounded time (default 30 s), as many
# at a time as there are cores (PEERLOG_FUZZ_JOBS).
# A crash leaves its input in Fuzz/Regressions/<target>/ so the test suite replays it forever.
# Usage: bash tools/fuzz.sh [SECONDS]
# PEERLOG_FUZZ_BUILD_FLAGS are added to the build's flags (tools/test.sh: no debug information).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
scratch=$(pwd)/.build-fuzz
read -r -a extra <<<"${PEERLOG_FUZZ_BUILD_FLAGS:-}"
build() {
  swift build --package-path Fuzz --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer "${extra[@]}" \
    >"$scratch/fuzz-build.log" 2>&1
}
# A build that fails must stop the run: fuzzing the previous binaries would test old code. An
# incremental build can fail on a source file deleted since the last one ("missing inputs"); its
# scratch build is then started afresh, once.
mkdir -p "$scratch"
if ! build; then
  echo "fuzz: the incremental build failed; building from scratch" >&2
  rm -rf "$scratch/x86_64-unknown-linux-gnu" "$scratch/debug" "$scratch/build.db"
  if ! build; then
    grep -E 'error' "$scratch/fuzz-build.log" | head -20 >&2
    echo "fuzz: the fuzz targets did not build" >&2
    exit 1
  fi
fi
grep -E 'Build complete' "$scratch/fuzz-build.log" || true
# One run of one target; each is single-threaded, so one runs per core (on 2 cores: half the
# wall time, the same seconds of fuzzing each). Returns non-zero on a crash.
fuzz_one() {
  local name=$1 exe=$2 corpus="$scratch/corpus/$1"
  mkdir -p "$corpus" "Fuzz/Regressions/$name"
  if ! "$scratch/debug/$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=70000 \
      -artifact_prefix="Fuzz/Regressions/$name/" "$corpus" "Fuzz/Seeds/$name" 2>"$scratch/$name.log"; then
    echo "fuzz: $exe found a crash (kept in Fuzz/Regressions/$name/); last lines:" >&2
    tail -30 "$scratch/$name.log" >&2
    return 1
  fi
  echo "fuzz: $exe: $(grep -E '^Done|stat::number_of_executed_units' "$scratch/$name.log" | tail -1)"
}
parallel=${PEERLOG_FUZZ_JOBS:-$(nproc)}
status=0
pids=()
for target in frames:FuzzFrames sync:FuzzSyncMessages pairing:FuzzPairingMessages capture:FuzzCaptureFiles; do
  name=${target%%:*}; exe=${target#*:}
  echo "fuzz: $exe for ${seconds}s (seeds: Fuzz/Seeds/$name, kept crashers: Fuzz/Regressions/$name)"
  fuzz_one "$name" "$exe" &
  pids+=($!)
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
