#!/usr/bin/env bash
# The whole test suite: sets up what is missing, builds (warnings in our code fail the run), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
model_log=$(mktemp)
engine_log=$(mktemp)
facade_log=$(mktemp)
model_pid=""
side_pids=()
# The throwaway PostgreSQL server started below is stopped on the way out, and a model check
# still running (a failure stopped the run early) is stopped too.
# The test processes beside the main one (below) are stopped too.
trap 'rm -f "$log" "$model_log" "$engine_log" "$facade_log"; [ -n "$model_pid" ] && { pkill -P "$model_pid" 2>/dev/null; kill "$model_pid" 2>/dev/null; }; for p in "${side_pids[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; bash tools/postgres.sh stop >/dev/null 2>&1 || true' EXIT

# Each stage's line ends with the time since the start (minutes:seconds), to see where a slow
# run went.
say() { printf 'test: %s [%d:%02d]\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

our_warnings() {
  if grep -E "^$(pwd)/(Sources|Tests|Benchmarks/Sources)/.*(warning|error):" "$1" | sort -u | grep .; then
    echo "test: $2 has warnings or errors in our code (above)" >&2
    exit 1
  fi
}

# One scratch directory (.build) serves every build but the fuzzers' (tools/fuzz.sh: they need
# -sanitize=fuzzer throughout): tools/setup.sh's build, with the PostgreSQL trait the tests need
# (so the relay's PostgreSQL store of record is tested against a real server on loopback,
# tools/postgres.sh), the documentation's and the tests' on top of it, and the benchmark
# package's (its manifest turns the same trait on, so it compiles only its own target). A build
# in a scratch directory of its own compiles every dependency again, minutes each on a 2-core
# machine. Without the trait (what tools/setup.sh builds for a user), only the `#else` branches
# of `#if PostgreSQL` differ: the CLI's one clear error for `relay run --postgres`.
# No debug information: nothing here runs a debugger, a crash's backtrace still names its
# functions, and without it the builds of this command (the fuzzers' too) take a little less CPU
# (GRDB alone: 13%) and link binaries a third smaller. (A plain `swift build` afterwards
# compiles everything again, with it.)
build_flags=(--traits PostgreSQL -debug-info-format none)
PEERLOG_SETUP_BUILD_FLAGS="${build_flags[*]}" bash tools/setup.sh 2>&1 | tee "$log"
our_warnings "$log" "the build"
say "set up and built"

# The spin model of election and assignment (docs/MODEL.md), exhaustive within its bounds: about
# 9 CPU-minutes on one core, from here on beside everything up to the tests (spin and gcc are
# installed by now); its report follows theirs. Started this early, it cannot outlast the tests
# as they get faster.
bash tools/model-check.sh >"$model_log" 2>&1 &
model_pid=$!

# The map stays true: links, docs paths and PROTOCOL.md § citations resolve (tools/check_links.sh).
bash tools/check_links.sh
# Package.swift declares every module each target imports (tools/check_imports.sh).
bash tools/check_imports.sh
# The code is formatted as .swift-format says (120 columns, 4 spaces, /// on every public
# declaration); `swift format format -i -r Sources Tests …` fixes most of what this reports.
swift format lint --strict --parallel --recursive Sources Tests Examples Benchmarks/Sources Fuzz/Sources \
  Package.swift Benchmarks/Package.swift Fuzz/Package.swift

# The Peerlog module's DocC catalog builds without warnings (broken symbol links fail it).
swift package "${build_flags[@]}" generate-documentation --target Peerlog --warnings-as-errors 2>&1 | tee "$log" | grep -E 'error|warning' || true
if ! grep -q "Generated documentation archive" "$log"; then
  echo "test: the DocC documentation of the Peerlog module did not build (above)" >&2
  exit 1
fi
say "the Peerlog documentation builds"

# The test targets, on top of tools/setup.sh's build (same trait: nothing else is compiled).
swift build "${build_flags[@]}" --build-tests 2>&1 | tee "$log" | grep -E 'error|Build complete' || true
our_warnings "$log" "the build"
say "the tests build"

# What a test run shows: failures, each suite's line and each process's summary ("Test run
# with …"), not each passing test's line.
shown() { grep -E '✘|error:|Test run with|passed after|failed after' | grep -vE '^✔ Test ([^ ]*\(|")'; }
swift_tests() {
  swift test "${build_flags[@]}" --skip-build "$@" 2>&1 | tee "$log" | shown || true
}
# One run, no retry: the tests start children with posix_spawn (PeerlogTestSupport/ChildProcess),
# not Foundation's Process, whose launch crashed now and then on 6.3.1
# (swiftlang/swift-corelibs-foundation#5472); a crash is now always a failure to look at.
# The PostgreSQL relay's tests run in a process of their own, below: they are async and time
# their deadlines, and beside the suite's blocking tests they would wait for a cooperative thread.
#
# Three test processes at once, each with the two threads of its own cooperative pool:
# - the engine's tests (replicas in memory; most of their time is three property tests, pure
#   CPU);
# - the Peerlog library's tests, which are async: beside the others they wait minutes for a
#   thread (alone they take seconds);
# - all the others, many of which hold a thread while they wait for a daemon or a child process,
#   which leaves cores idle that the other two processes use.
# Measured on 2 cores: 698 s in one process, 607 s in three (docs/BENCHMARKS.md). The two beside
# are the test binary itself, as `swift test` starts it: a second `swift test` would wait for
# the first's lock on .build.
side_tests() {
  local out=$1
  shift
  NO_COLOR=1 .build/debug/PeerlogPackageTests.xctest --testing-library swift-testing "$@" >"$out" 2>&1
}
side_tests "$engine_log" --filter PeerlogEngineTests &
side_pids+=($!)
side_tests "$facade_log" --filter 'PeerlogTests\.' &
side_pids+=($!)
swift_tests --skip PeerlogRelayPostgresTests --skip PeerlogEngineTests --skip 'PeerlogTests\.'
side_logs=("$engine_log" "$facade_log")
side_status=(0 0)
for i in "${!side_pids[@]}"; do wait "${side_pids[i]}" || side_status[i]=$?; done
side_pids=()
for f in "${side_logs[@]}"; do shown <"$f" || true; done
if ! grep -q "Test run with .* passed" "$log"; then
  cp "$log" .build/test-failure.log
  echo "test: FAILED (see the lines marked ✘ above; the whole output: .build/test-failure.log)" >&2
  exit 1
fi
for i in "${!side_logs[@]}"; do
  if [ "${side_status[i]}" -ne 0 ] || ! grep -q "Test run with .* passed" "${side_logs[i]}"; then
    cp "${side_logs[i]}" .build/test-failure.log
    echo "test: FAILED (see the lines marked ✘ above; the whole output: .build/test-failure.log)" >&2
    exit 1
  fi
done
say "all tests passed"

# The one test that needs a live avahi of its own (DiscoveryTests.registersFindsAndLoses): run
# inside host 1 of a namespace LAN (tools/lan.sh: its own avahi, allow-interfaces=eth0), never on
# this machine's interfaces. Where the LAN cannot be built (not root) it is skipped, and says so.
if bash tools/lan.sh check >/dev/null 2>&1; then
  lan_dir=$(mktemp -d)
  bash tools/lan.sh up 1 --dir "$lan_dir/lan" >/dev/null
  bash tools/lan.sh exec 1 --dir "$lan_dir/lan" -- env PEERLOG_DISCOVERY_NS=1 \
    swift test "${build_flags[@]}" --skip-build --filter 'DiscoveryTests/registersFindsAndLoses' >"$log" 2>&1 || true
  bash tools/lan.sh down --dir "$lan_dir/lan" >/dev/null 2>&1 || true
  grep -E '✘|registersFindsAndLoses' "$log" || true
  if ! grep -q "✔ Test registersFindsAndLoses() passed" "$log"; then
    echo "test: the live-avahi discovery test FAILED in the namespace LAN (above)" >&2
    exit 1
  fi
  say "the live-avahi discovery test passed in a namespace"
else
  say "skipped the live-avahi discovery test (tools/lan.sh check: the namespace LAN cannot be built here)"
fi

model_status=0
wait "$model_pid" || model_status=$?
model_pid=""
cat "$model_log"
if [ "$model_status" -ne 0 ]; then
  echo "test: the sequencer model check FAILED (above)" >&2
  exit 1
fi
say "the sequencer model holds"

bash tools/postgres.sh start
export PEERLOG_POSTGRES_URL="$(bash tools/postgres.sh url)"
swift_tests --filter PeerlogRelayPostgresTests
if ! grep -q "Test run with .* passed" "$log"; then
  cp "$log" .build/test-failure.log
  echo "test: the PostgreSQL relay tests FAILED (see the lines marked ✘ above; the whole output: .build/test-failure.log)" >&2
  exit 1
fi
say "the PostgreSQL relay tests passed"

# The benchmarks, a package of their own (Benchmarks/, like Fuzz/): built, so they cannot rot.
# It depends on this package by path with the same trait, so in .build it reuses everything
# built above and compiles only its own target.
bench_build() { swift build --package-path Benchmarks --scratch-path .build -debug-info-format none >"$log" 2>&1; }
if ! bench_build; then
  echo "test: the benchmark build failed; trying once more" >&2
  bench_build || true
fi
grep -E 'error|complete!' "$log" || true
our_warnings "$log" "the benchmark package"
if ! grep -q "complete!" "$log"; then
  echo "test: the benchmark package did not build (above)" >&2
  exit 1
fi
say "the benchmarks build"

# The fuzz targets, bounded in time; a crash fails the run and its input stays in Fuzz/Regressions.
PEERLOG_FUZZ_BUILD_FLAGS="-debug-info-format none" bash tools/fuzz.sh "${PEERLOG_FUZZ_SECONDS:-30}"
say "fuzzing found nothing"
