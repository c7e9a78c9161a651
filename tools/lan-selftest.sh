#!/usr/bin/env bash
# Self-test of tools/lan.sh and tools/interop/zeroconf_browse.py (root only; about 15 s):
# up 3; plh1 publishes _peerlog._tcp with avahi-publish; plh2 resolves it with avahi-browse; plh3 with
# python-zeroconf; add 4 and plh4 sees it; remove 4; down; nothing of ours left behind.
# Exits 0 if every check passed, 1 otherwise (2 if the LAN cannot be built here). Always tears down.
set -euo pipefail
cd "$(dirname "$0")/.."

LAN="bash tools/lan.sh"
PY=.venv/bin/python
DIR=/tmp/peerlog-lan-selftest
LOGDIR=$(mktemp -d /tmp/peerlog-lan-selftest-logs.XXXXXX)
fails=0
PUB_PID=""

say() { echo "selftest: $*"; }
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; fails=$((fails + 1)); }

cleanup() {
  if [ -n "$PUB_PID" ]; then kill "$PUB_PID" 2>/dev/null || true; fi
  timeout 30 $LAN down --dir "$DIR" >/dev/null 2>&1 || true
  rm -rf "$LOGDIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! out=$($LAN check 2>&1); then
  echo "$out" | sed 's/^/  /'
  say "SKIP: the LAN cannot be built here (see above)"
  exit 2
fi
[ -x "$PY" ] || { say "FAIL: $PY missing (run tools/setup.sh)"; exit 1; }

OUR_PIDS=""
record_pids() { local k; for k in "$@"; do OUR_PIDS="$OUR_PIDS $(cat "$DIR/plh$k/avahi.pid" "$DIR/plh$k/dbus.pid" 2>/dev/null | tr '\n' ' ')"; done; }

# browse_avahi K: bounded (3 tries x 4 s) avahi-browse from plhK until test-service resolves.
browse_avahi() {
  local k=$1 i out
  for i in 1 2 3; do
    out=$(timeout 8 $LAN exec "$k" -- timeout 4 avahi-browse -r -t -p _peerlog._tcp 2>&1 || true)
    if grep -q '^=;eth0;IPv4;test-service;_peerlog._tcp;local;plh1.local;10.77.0.1;7300;.*"dev=bxyz"' <<<"$out" &&
       grep -q '^=.*test-service.*"v=1"' <<<"$out"; then
      echo "$out" | sed 's/^/    /'
      return 0
    fi
  done
  echo "$out" | sed 's/^/    /'
  return 1
}

# --- up 3 -----------------------------------------------------------------------------------
t0=$(date +%s.%N)
if out=$(timeout 30 $LAN up 3 --dir "$DIR" 2>"$LOGDIR/up.err"); then
  t1=$(date +%s.%N)
  echo "$out" | sed 's/^/    /'
  record_pids 1 2 3
  if [ "$(wc -l <<<"$out")" = 3 ] && grep -qx "plh3 10.77.0.3 DBUS_SYSTEM_BUS_ADDRESS=unix:path=$DIR/plh3/bus" <<<"$out"; then
    pass "up 3 ($(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s)"
  else
    fail "up 3 printed unexpected lines"
  fi
else
  sed 's/^/    /' "$LOGDIR/up.err"
  fail "up 3"
  exit 1
fi

# network safety: every avahi we run is confined to eth0 of its own namespace
host_net=$(readlink /proc/self/ns/net)
for k in 1 2 3; do
  p=$(cat "$DIR/plh$k/avahi.pid")
  ns=$(ip netns identify "$p" 2>/dev/null || true)
  if [ "$ns" = "plh$k" ] && [ "$(readlink "/proc/$p/ns/net")" != "$host_net" ] &&
     grep -qx 'allow-interfaces=eth0' "$DIR/plh$k/avahi.conf"; then
    pass "avahi of plh$k (pid $p) runs in namespace $ns with allow-interfaces=eth0"
  else
    fail "avahi of plh$k (pid $p) is in namespace '${ns:-<machine>}'"
  fi
done

# --- publish on plh1 ------------------------------------------------------------------------
$LAN exec 1 -- timeout 40 avahi-publish -s test-service _peerlog._tcp 7300 v=1 dev=bxyz \
  >"$LOGDIR/publish.log" 2>&1 </dev/null &
PUB_PID=$!
for i in $(seq 1 50); do grep -q Established "$LOGDIR/publish.log" && break; sleep 0.1; done
if grep -q Established "$LOGDIR/publish.log"; then pass "plh1 publishes test-service ($(cat "$LOGDIR/publish.log"))"
else fail "plh1 avahi-publish: $(cat "$LOGDIR/publish.log")"; fi

# --- plh2: avahi-browse ---------------------------------------------------------------------
if browse_avahi 2; then pass "plh2 avahi-browse resolves test-service at 10.77.0.1:7300 with TXT v=1 dev=bxyz"
else fail "plh2 avahi-browse"; fi

# --- plh3: python-zeroconf ------------------------------------------------------------------
t0=$(date +%s.%N)
zout=$(timeout 20 $LAN exec 3 -- "$PY" tools/interop/zeroconf_browse.py --seconds 5 --expect 1 2>"$LOGDIR/zc.err" || true)
t1=$(date +%s.%N)
echo "$zout" | sed 's/^/    /'
if "$PY" - "$zout" <<'EOF'
import json, sys
svcs = json.loads(sys.argv[1])
ok = any(s["name"] == "test-service" and s["port"] == 7300 and "10.77.0.1" in s["addresses"]
         and s["txt"] == {"v": "1", "dev": "bxyz"} for s in svcs)
sys.exit(0 if ok else 1)
EOF
then pass "plh3 zeroconf_browse.py resolves test-service with TXT ($(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s)"
else sed 's/^/    /' "$LOGDIR/zc.err"; fail "plh3 zeroconf_browse.py"; fi

# --- add 4 ----------------------------------------------------------------------------------
t0=$(date +%s.%N)
if out=$(timeout 30 $LAN add 4 --dir "$DIR" 2>"$LOGDIR/add.err"); then
  t1=$(date +%s.%N)
  echo "$out" | sed 's/^/    /'
  record_pids 4
  pass "add 4 ($(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s)"
  if browse_avahi 4; then pass "plh4 avahi-browse resolves test-service"; else fail "plh4 avahi-browse"; fi
else
  sed 's/^/    /' "$LOGDIR/add.err"; fail "add 4"
fi

# --- remove 4 -------------------------------------------------------------------------------
p4=$(cat "$DIR/plh4/avahi.pid" 2>/dev/null || true)
if timeout 30 $LAN remove 4 --dir "$DIR" && ! ip netns list | grep -qw plh4 &&
   { [ -z "$p4" ] || ! grep -qv Z <(awk '{print $3}' "/proc/$p4/stat" 2>/dev/null); } &&
   ip netns list | grep -qw plh1; then
  pass "remove 4 (plh4 gone, its avahi stopped, plh1..3 still there)"
else
  fail "remove 4"
fi

# --- down -----------------------------------------------------------------------------------
kill "$PUB_PID" 2>/dev/null || true; PUB_PID=""
t0=$(date +%s.%N)
if timeout 30 $LAN down --dir "$DIR"; then
  t1=$(date +%s.%N)
  pass "down ($(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s)"
else fail "down"; fi
left=$(ip netns list | awk '{print $1}' | grep -E '^(plh[0-9]+|plbr)$' || true)
if [ -z "$left" ]; then pass "no plh*/plbr namespaces left"; else fail "namespaces left: $left"; fi
# daemons of ours still alive: the recorded pids, and any avahi titled plhK or dbus using $DIR
# (zombies waiting for the container's pid 1 to reap them do not count; other projects' daemons,
# e.g. in their own namespaces, are not ours)
living() { local p st; for p in "$@"; do st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || true); if [ -n "$st" ] && [ "$st" != Z ]; then echo "$p"; fi; done; }
ours=$(living $OUR_PIDS $(pgrep -f '^avahi-daemon: .*\[plh[0-9]+\.local\]' || true) $(pgrep -f "dbus-daemon --config-file=$DIR/" || true) | sort -u)
if [ -z "$ours" ]; then pass "no avahi-daemon/dbus-daemon of ours left (recorded pids: $OUR_PIDS)"
else fail "left running: $(for p in $ours; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"; fi
if [ ! -e "$DIR" ]; then pass "$DIR removed"; else fail "$DIR still exists"; fi
if bash tools/lan.sh down --dir "$DIR" >/dev/null 2>&1; then pass "second down succeeds"; else fail "second down"; fi

if [ $fails = 0 ]; then say "all checks passed"; exit 0; fi
say "$fails check(s) failed"; exit 1
