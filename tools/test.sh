#!/usr/bin/env bash
# The whole test suite: sets up what is missing, builds (warnings in our code fail the run), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh

log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log" | grep -E 'error|Build complete' || true
if grep -E "^$(pwd)/(Sources|Tests)/.*(warning|error):" "$log" | sort -u | grep .; then
  echo "test: the build has warnings or errors in our code (above)" >&2
  exit 1
fi

swift test 2>&1 | tee "$log" | grep -E '✘|error:|Test run with|passed after|failed after' | grep -vE '^✔ Test [a-zA-Z"]' || true
if ! grep -q "Test run with .* passed" "$log"; then
  echo "test: FAILED (see the lines marked ✘ above)" >&2
  exit 1
fi
echo "test: all tests passed"

# The spin model of election and assignment (docs/MODEL.md): exhaustive within its bounds.
bash tools/model-check.sh
echo "test: the sequencer model holds"

# The fuzz targets, bounded in time; a crash fails the run and its input stays in Fuzz/Regressions.
bash tools/fuzz.sh "${PEERLOG_FUZZ_SECONDS:-30}"
echo "test: fuzzing found nothing"
