#!/usr/bin/env bash
# A scripted walk-through of the peerlog CLI with two people, Alice and Bob, carrying a group
# between them as files (no network).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
peerlog=$(swift build --show-bin-path)/peerlog
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*" | sed "s|$peerlog|peerlog|; s|$work|\$WORK|g"; "$@"; }

step "Alice and Bob each create an identity and a device (keys stay in their home directories)"
run "$peerlog" init --home "$work/alice" --name alice-laptop
run "$peerlog" init --home "$work/bob" --name bob-desktop
alice=$("$peerlog" id --home "$work/alice" --json | sed -n 's/.*"identity": "\(b[a-z2-7]*\)".*/\1/p')
bob=$("$peerlog" id --home "$work/bob" --json | sed -n 's/.*"identity": "\(b[a-z2-7]*\)".*/\1/p')

step "Alice's id and device certificate"
run "$peerlog" id --home "$work/alice"
run ls -l "$work/alice"

step "They compare safety numbers in person: both sides print the same digits"
run "$peerlog" safety-number --home "$work/alice" "$bob"
run "$peerlog" safety-number --home "$work/bob" "$alice"

step "Alice signs a receipt; its id is the CID of the exact signed bytes"
run "$peerlog" receipt create --home "$work/alice" --type app.note --body '{"text": "hello from Alice", "tags": ["demo"]}' --out "$work/note.receipt"
run "$peerlog" inspect "$work/note.receipt" --diag

step "Flip one bit of the signature: inspect says INVALID and exits with status 2"
cp "$work/note.receipt" "$work/tampered.receipt"
# The container starts a3 63 "sig" 58 40: the receipt signature begins at byte 7.
offset=17
byte=$(od -An -tu1 -j $offset -N1 "$work/tampered.receipt" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 1)))" | dd of="$work/tampered.receipt" bs=1 seek=$offset conv=notrunc status=none
set +e; run "$peerlog" inspect "$work/tampered.receipt"; status=$?; set -e
echo "exit status: $status"

step "Garbage gets one clear line, never a crash"
printf '\xa1\x61' > "$work/garbage"
set +e; run "$peerlog" inspect "$work/garbage"; set -e

step "Alice creates a group; her device is its sequencer, so her writes commit at once, offline"
run "$peerlog" group create trip --home "$work/alice"
run "$peerlog" put trip destination Lisbon --home "$work/alice"
run "$peerlog" group add trip "$bob" --home "$work/alice"

step "No network yet: the group travels as a file. Bob imports it and sees his invitation"
run "$peerlog" export trip "$work/trip-1.export" --home "$work/alice"
run "$peerlog" import "$work/trip-1.export" --home "$work/bob"
run "$peerlog" group show trip --home "$work/bob"

step "Bob accepts and writes: tentative on his device until Alice's sequencer orders them"
run "$peerlog" group accept trip --home "$work/bob"
run "$peerlog" put trip hotel "Casa Azul" --home "$work/bob"
run "$peerlog" log trip --home "$work/bob"

step "Bob's receipts reach Alice, who commits them; her envelopes go back to Bob"
run "$peerlog" export trip "$work/trip-2.export" --home "$work/bob"
run "$peerlog" import "$work/trip-2.export" --home "$work/alice"
run "$peerlog" export trip "$work/trip-3.export" --home "$work/alice"
run "$peerlog" import "$work/trip-3.export" --home "$work/bob"
run "$peerlog" log trip --committed --home "$work/bob"

step "Both devices now hold the same state: equal hashes, committed and tentative"
echo "alice:"; "$peerlog" state-hash trip --home "$work/alice"
echo "bob:";   "$peerlog" state-hash trip --home "$work/bob"
run "$peerlog" check --home "$work/bob"

printf '\nDone. Next: docs/PROTOCOL.md (formats and rules, byte by byte), docs/ARCHITECTURE.md, peerlog --help.\n'
