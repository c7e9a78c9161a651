#!/usr/bin/env bash
# tools/model-check.sh -- model-check model/sequencer.pml with spin (see docs/MODEL.md).
#
#   bash tools/model-check.sh               all checks; exit 0 only if every one is as expected
#   bash tools/model-check.sh --trail NAME  rerun one expected-counterexample check without
#                            symmetry reduction and print its trail step by step
#                            (NAME as in the table, e.g. bug-vote-twice-P1)
#
# Every pan run is exhaustive (no bitstate), one at a time, in a temp dir
# that is removed at exit (KEEP=1 keeps it).  Environment knobs:
#   MEMLIM   pan memory cap in MB (default 3072; the largest run needs ~2.1 GB)
#   RUNLIMIT seconds before a single pan run is interrupted (default 300)
#   QUICK=1  skip the extra exhaustive runs (3-in-flight, 3-items-3-seqs,
#            prevote-3-terms-1-seq); the CI-bounds run, prevote-2-terms,
#            the bug variants and the probes still run
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODEL="$HERE/../model/sequencer.pml"
MEMLIM=${MEMLIM:-3072}
RUNLIMIT=${RUNLIMIT:-300}
CFLAGS="-DSAFETY -DNOFAIR -DNOCOMP -DMEMLIM=$MEMLIM"

# ---- tools --------------------------------------------------------------
install_pkgs() {
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
	else
		echo "model-check.sh: need $* but am not root and have no sudo" >&2
		exit 2
	fi
}
need=()
command -v spin >/dev/null 2>&1 || need+=(spin)
command -v gcc  >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
	echo "installing: ${need[*]}"
	install_pkgs "${need[@]}" >/dev/null || { echo "model-check.sh: install failed" >&2; exit 2; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sequencer-check.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
	echo "keeping work dir $WORK"
else
	trap 'rm -rf "$WORK"' EXIT
fi
cd "$WORK" || exit 2
cp "$MODEL" sequencer.pml

# ---- the checks -----------------------------------------------------------
# name | expect | spin -D flags | pan flags
#   optional 5th field: gcc optimization for pan (default -O2). -O0 for the checks that stop
#   within a second: compiling pan.c takes gcc 7 s at -O2 and about 1 s at -O0.
#   expect: pass      = exhaustive search, no error
#           P1..P4    = must stop on that property's assertion
#           probe     = must reach the probed situation (non-vacuity)
# The CI bounds are the sequencer.pml defaults: N=3 MAXTERM=3 MAXSEQ=2
# NITEMS=2 MAXMSG=2.
CHECKS=(
"ci-bounds|pass|-DSYMM|-m100000 -w25"
"3-in-flight|pass|-DSYMM -DMAXTERM=2 -DMAXMSG=3|-m100000 -w24"
"3-items-3-seqs|pass|-DSYMM -DMAXTERM=2 -DMAXSEQ=3 -DNITEMS=3|-m100000 -w24"
"prevote-2-terms|pass|-DSYMM -DPREVOTE -DMAXTERM=2|-m100000 -w24"
"prevote-3-terms-1-seq|pass|-DSYMM -DPREVOTE -DMAXTERM=3 -DMAXSEQ=1 -DNITEMS=1|-m100000 -w24"
"bug-vote-twice-P1|P1|-DSYMM -DBUG_VOTE_TWICE|-m100000 -w22|-O0"
"bug-vote-twice-P2|P2|-DSYMM -DBUG_VOTE_TWICE -DNO_P1 -DNO_P3|-m100000 -w22|-O0"
"bug-commit-old-term-P2|P2|-DSYMM -DBUG_COMMIT_OLD_TERM -DNO_P3 -DMAXTERM=4 -DMAXSEQ=1|-m80 -w24"
"bug-learn-to-lastseq-P2|P2|-DSYMM -DBUG_LEARN_TO_LASTSEQ -DNO_P3 -DMAXTERM=2 -DMAXSEQ=3 -DNITEMS=3|-m100000 -w24"
"bug-stale-truncate-P3|P3|-DSYMM -DBUG_STALE_TRUNCATE|-m100000 -w24"
"bug-prevote-bumps-term-P4|P4|-DSYMM -DPREVOTE -DBUG_PREVOTE_BUMPS_TERM|-m100000 -w22|-O0"
"bug-prevote-observes-term-P4|P4|-DSYMM -DPREVOTE -DBUG_PREVOTE_OBSERVES_TERM|-m100000 -w22|-O0"
"probe1-follower-learns-last-seq|probe|-DSYMM -DPROBE=1|-m100000 -w22|-O0"
"probe2-conflict-truncated|probe|-DSYMM -DPROBE=2|-m100000 -w22|-O0"
"probe3-late-append-no-truncate|probe|-DSYMM -DPROBE=3|-m100000 -w22|-O0"
"probe4-old-term-entry-committed|probe|-DSYMM -DPROBE=4|-m100000 -w22|-O0"
"probe5-leader-maxterm-after-commit|probe|-DSYMM -DPROBE=5|-m100000 -w22|-O0"
"probe6-stale-leader-coexists|probe|-DSYMM -DPROBE=6|-m100000 -w22|-O0"
"probe7-leader-gets-prevote|probe|-DSYMM -DPREVOTE -DMAXTERM=2 -DPROBE=7|-m100000 -w22|-O0"
)

label_of() {
	case "$1" in
	P1) echo P1_one_leader_per_term ;;
	P2) echo P2_no_fork ;;
	P3) echo P3_leader_completeness ;;
	P4) echo P4_no_term_without_election ;;
	probe) echo probe_not_reached ;;
	esac
}

# The -DSYMM builds' trails cannot be replayed by spin (the symmetry code is
# C), so --trail rebuilds without SYMM and replays with -DTRACE.
if [ "${1:-}" = "--trail" ]; then
	want=${2:?usage: model-check.sh --trail NAME}
	for c in "${CHECKS[@]}"; do
		IFS='|' read -r name expect defs panargs opt <<<"$c"
		[ "$name" = "$want" ] || continue
		defs="${defs//-DSYMM/} -DTRACE"
		spin $defs -a sequencer.pml >/dev/null || exit 2
		gcc ${opt:--O2} $CFLAGS -o pan pan.c || exit 2
		timeout -s INT "$RUNLIMIT" ./pan $panargs | grep -E "assertion violated|errors:"
		[ -f sequencer.pml.trail ] || { echo "no trail"; exit 1; }
		spin $defs -t sequencer.pml | grep -vE '^\s*$' | grep -E '^\s*(==|v[0-9]|msg|committed\[1\]=|spin:)' | sed 's/^ *//'
		exit 0
	done
	echo "no check named $want" >&2; exit 2
fi

field() { # $1 = regex with one (group); prints group from pan output file $2
	sed -nE "s/$1/\\1/p" "$2" | head -1
}

echo "spin: $(spin -V 2>&1 | head -1)"
echo "model: $MODEL  (sha256 $(sha256sum "$MODEL" | cut -c1-12))"
echo "pan: gcc -O2 (-O0 where the table says) $CFLAGS; run limit ${RUNLIMIT}s; one run at a time"
echo
printf '%-34s %-6s %-44s %12s %6s %8s %8s\n' check expect result states depth time memMB
fails=0 ran=0
T0=$(date +%s)
for c in "${CHECKS[@]}"; do
	IFS='|' read -r name expect defs panargs opt <<<"$c"
	if [ "${QUICK:-0}" = 1 ] && [ "$expect" = pass ] && [ "$name" != ci-bounds ] && [ "$name" != prevote-2-terms ]; then
		printf '%-34s %-6s %s\n' "$name" "$expect" "skipped (QUICK=1)"
		continue
	fi
	ran=$((ran+1))
	rm -f pan pan.* ./*.trail
	if ! spin $defs -a sequencer.pml >spin.out 2>&1; then
		result="FAIL (spin -a)"; cat spin.out
	elif ! gcc ${opt:--O2} $CFLAGS -o pan pan.c >gcc.out 2>&1; then
		result="FAIL (gcc)"; cat gcc.out
	else
		timeout -s INT "$RUNLIMIT" ./pan $panargs >pan.out 2>&1
		rc=$?
		states=$(field '^ *([0-9.e+]+) states, stored.*' pan.out)
		depth=$(field '.*depth reached ([0-9]+).*' pan.out)
		secs=$(field '^pan: elapsed time ([0-9.e+]+) seconds.*' pan.out)
		# pan's last memory line: "total actual memory usage" (compressed states) or, with
		# -DNOCOMP, "memory usage (Mbyte)".
		mem=$(field '^ *([0-9.]+)[[:space:]]+(total actual )?memory usage( \(Mbyte\))?$' pan.out)
		errors=$(field '.*errors: ([0-9]+).*' pan.out)
		violated=$(grep -m1 'assertion violated' pan.out || true)
		if [ $rc -eq 124 ] || grep -q 'Interrupted' pan.out; then
			result="FAIL (run limit ${RUNLIMIT}s hit)"
		elif grep -q 'reached -DMEMLIM bound\|out of memory' pan.out; then
			result="FAIL (memory limit ${MEMLIM} MB)"
		elif [ "$expect" = pass ]; then
			if [ "$errors" = 0 ] && ! grep -q 'Search not completed\|max search depth too small' pan.out; then
				result="ok: exhaustive, no violation"
			else
				result="FAIL: ${violated:-errors=$errors, search incomplete}"
			fi
		else
			lab=$(label_of "$expect")
			if [ -n "$violated" ] && grep -q "$lab" <<<"$violated"; then
				if [ "$expect" = probe ]; then
					result="ok: reached"
				else
					result="ok: counterexample ($lab)"
				fi
			elif [ -n "$violated" ]; then
				result="FAIL: wrong assertion: $violated"
			else
				result="FAIL: expected a counterexample, none found"
			fi
		fi
	fi
	case "$result" in ok*) ;; *) fails=$((fails+1)); tail -25 pan.out 2>/dev/null ;; esac
	printf '%-34s %-6s %-44s %12s %6s %7ss %8s\n' "$name" "$expect" "$result" \
		"${states:--}" "${depth:--}" "${secs:--}" "${mem:--}"
	states= depth= secs= mem=
done
rm -f pan pan.* ./*.trail
T1=$(date +%s)
echo
if [ $fails -eq 0 ]; then
	echo "ALL OK: $ran checks in $((T1-T0)) s"
	exit 0
else
	echo "FAILED: $fails of $ran checks (total $((T1-T0)) s)"
	exit 1
fi
