#!/usr/bin/env bash
# A small LAN of test hosts on this one machine, built from network namespaces.
#
#   bash tools/lan.sh check                      can the LAN be built here? (exit 0 = yes)
#   bash tools/lan.sh up N [--dir DIR]           hosts plh1..plhN (N = 1..8), tearing down any old LAN first
#   bash tools/lan.sh add K [--dir DIR]          one more host plhK on the existing LAN
#   bash tools/lan.sh remove K [--dir DIR]       stop plhK's daemons, delete its namespace
#   bash tools/lan.sh exec K -- CMD ARGS...      run CMD in plhK with its D-Bus (exit status of CMD)
#   bash tools/lan.sh down [--dir DIR]           stop everything, delete all plh*/plbr namespaces and DIR
#
# Layout: namespace plbr holds bridge br0 (multicast snooping off). Host plhK is namespace plhK with
# `lo` and `eth0` (10.77.0.K/24) up; eth0's veth peer is `vethK`, a port of br0 in plbr. Per host, in
# DIR/plhK: dbus.conf + a private system-type dbus-daemon listening on DIR/plhK/bus (dbus.pid), and
# avahi.conf + avahi-daemon (avahi.pid, avahi.log) running inside the namespace in a private mount
# namespace (tmpfs on /run/avahi-daemon and on /etc/avahi/services), with allow-interfaces=eth0.
# `up`/`add` print one line per host: `plhK 10.77.0.K DBUS_SYSTEM_BUS_ADDRESS=unix:path=DIR/plhK/bus`.
#
# Network safety (docs: /work/shared/DESIGN.md): nothing here creates, configures or listens on an
# interface of the machine's own network namespace. Every link is created inside a plh*/plbr
# namespace (`ip -n`), every daemon runs inside one (`ip netns exec`), and avahi is restricted to the
# namespace's eth0. The host's own avahi and D-Bus are never touched.
set -euo pipefail

PREFIX=plh
BRNS=plbr
SUBNET=10.77.0
MAX_HOSTS=8
READY_SECONDS=${PEERLOG_LAN_READY_SECONDS:-10}
LOCK=/tmp/peerlog-lan.lock
STATE=/tmp/peerlog-lan.dir   # DIR of the LAN that is up, so later commands need no --dir
DIR=""

log() { echo "lan: $*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------
# helpers

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^(${PREFIX}[0-9]+|${BRNS})\$" || true; }

# kill_pid PID NAME: kill PID only if it is still the process NAME we started (pids get reused).
kill_pid() {
  local pid=$1 name=$2 comm
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [ "$comm" = "$name" ] || return 1
  kill -TERM "$pid" 2>/dev/null
}

# alive PID: the process exists and is not a zombie (pid 1 of a container may reap slowly).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }

# wait_gone PID...: bounded wait (3 s) for processes to exit, then SIGKILL leftovers.
wait_gone() {
  local i p any
  for i in $(seq 1 30); do
    any=0
    for p in "$@"; do if alive "$p"; then any=1; fi; done
    [ $any = 0 ] && return 0
    sleep 0.1
  done
  for p in "$@"; do if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi; done
  return 0
}

# signal_host K: SIGTERM plhK's daemons (recorded pids, then anything else in the namespace);
# their pids are appended to KILLED.
KILLED=()
signal_host() {
  local ns=${PREFIX}$1 hdir="$DIR/${PREFIX}$1" p f
  for f in avahi:avahi-daemon dbus:dbus-daemon; do
    if [ -f "$hdir/${f%%:*}.pid" ]; then
      p=$(cat "$hdir/${f%%:*}.pid" 2>/dev/null || true)
      if kill_pid "$p" "${f#*:}"; then KILLED+=("$p"); fi
    fi
  done
  if ns_exists "$ns"; then
    for p in $(ip netns pids "$ns" 2>/dev/null || true); do
      kill -TERM "$p" 2>/dev/null || true
      KILLED+=("$p")
    done
  fi
  return 0
}

# delete_host K: delete plhK's namespace, its bridge port and its directory.
delete_host() {
  local k=$1 ns=${PREFIX}$1
  if ns_exists "$ns"; then
    ip netns del "$ns" 2>/dev/null || log "warning: could not delete namespace $ns"
  fi
  # the bridge-side veth end disappears with its peer; remove it explicitly in case it lingers
  if ns_exists "$BRNS"; then ip -n "$BRNS" link del "veth$k" 2>/dev/null || true; fi
  rm -rf "${DIR:?}/${PREFIX}$k"
  return 0
}

# stop_host K: stop plhK's daemons, delete it.
stop_host() {
  KILLED=()
  signal_host "$1"
  if ((${#KILLED[@]})); then wait_gone "${KILLED[@]}"; fi
  delete_host "$1"
}

# all host numbers that have a namespace or a state directory
known_hosts() {
  local ns d
  {
    for ns in $(our_namespaces); do [ "$ns" = "$BRNS" ] || echo "${ns#"$PREFIX"}"; done
    for d in "$DIR"/${PREFIX}*; do [ -d "$d" ] && echo "${d##*/"$PREFIX"}"; done
  } | grep -E '^[0-9]+$' | sort -un || true
}

teardown_all() {
  local k p hosts
  hosts=$(known_hosts)
  KILLED=()
  # signal everything first, then wait once: avahi needs ~1.5 s to say goodbye and exit
  for k in $hosts; do signal_host "$k"; done
  if ns_exists "$BRNS"; then
    for p in $(ip netns pids "$BRNS" 2>/dev/null || true); do kill -TERM "$p" 2>/dev/null || true; KILLED+=("$p"); done
  fi
  if ((${#KILLED[@]})); then wait_gone "${KILLED[@]}"; fi
  for k in $hosts; do delete_host "$k"; done
  if ns_exists "$BRNS"; then
    ip netns del "$BRNS" 2>/dev/null || log "warning: could not delete namespace $BRNS"
  fi
  case "$DIR" in
    /|"") ;;
    *) rm -rf "$DIR" ;;
  esac
  if [ "$(cat "$STATE" 2>/dev/null)" = "$DIR" ]; then rm -f "$STATE"; fi
  return 0
}

# step NAME CMD...: run CMD; on failure name the step and fail.
STEP=""
step() {
  STEP=$1; shift
  if ! "$@" >"$DIR/.step.out" 2>&1; then
    log "step '$STEP' failed: $*"
    sed 's/^/lan:   /' "$DIR/.step.out" >&2 || true
    return 1
  fi
}

write_configs() {
  local k=$1 hdir="$DIR/${PREFIX}$1"
  cat >"$hdir/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$hdir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow send_type="method_call"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
EOF
  cat >"$hdir/avahi.conf" <<EOF
# avahi for test host ${PREFIX}$k (network namespace ${PREFIX}$k only; written by tools/lan.sh)
[server]
host-name=${PREFIX}$k
domain-name=local
use-ipv4=yes
use-ipv6=no
allow-interfaces=eth0
enable-dbus=yes
disallow-other-stacks=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes
publish-domain=yes
publish-aaaa-on-ipv4=no
publish-a-on-ipv6=no

[reflector]
enable-reflector=no

[rlimits]
EOF
}

start_dbus() {
  local k=$1 ns=${PREFIX}$1 hdir="$DIR/${PREFIX}$1" pid
  # --fork: the daemon detaches; --print-pid=3 writes its pid to a file (not to our stdout, so
  # callers reading our output never wait on a pipe the daemon holds).
  ip netns exec "$ns" dbus-daemon --config-file="$hdir/dbus.conf" --fork --print-pid=3 \
    3>"$hdir/dbus.pid" </dev/null >"$hdir/dbus.log" 2>&1 9>&-
  pid=$(tr -dc 0-9 <"$hdir/dbus.pid")
  [ -n "$pid" ] && [ -e "/proc/$pid" ] || { cat "$hdir/dbus.log" >&2; return 1; }
  echo "$pid" >"$hdir/dbus.pid"
  [ -S "$hdir/bus" ] || { log "no socket $hdir/bus"; return 1; }
}

start_avahi() {
  local k=$1 ns=${PREFIX}$1 hdir="$DIR/${PREFIX}$1"
  # Private mount namespace: avahi's pid/socket directory and the static-services directory are
  # per-host tmpfs mounts, invisible to the machine. (If /run/avahi-daemon does not exist on the
  # machine, an empty directory is created there to serve as the mount point.)
  # ip netns exec, env, setsid (not a group leader here), unshare and sh all exec, so $! is avahi's pid.
  ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$hdir/bus" \
    setsid unshare -m --propagation private sh -c '
      set -e
      mkdir -p /run/avahi-daemon
      mount -t tmpfs -o size=1m,mode=0755 tmpfs /run/avahi-daemon
      if [ -d /etc/avahi/services ]; then mount -t tmpfs -o size=1m,mode=0755 tmpfs /etc/avahi/services; fi
      exec avahi-daemon --no-chroot --no-drop-root --no-rlimits -f "$1"
    ' sh "$hdir/avahi.conf" </dev/null >"$hdir/avahi.log" 2>&1 9>&- &
  echo $! >"$hdir/avahi.pid"
}

setup_host() {
  local k=$1 ns=${PREFIX}$1 hdir="$DIR/${PREFIX}$1"
  mkdir -p "$hdir"
  step "create namespace $ns"         ip netns add "$ns"
  step "$ns: lo up"                   ip -n "$ns" link set lo up
  step "$ns: create veth eth0<->veth$k" ip -n "$ns" link add eth0 type veth peer name "veth$k" netns "$BRNS"
  step "$BRNS: attach veth$k to br0"  ip -n "$BRNS" link set "veth$k" master br0
  step "$BRNS: veth$k up"             ip -n "$BRNS" link set "veth$k" up
  step "$ns: address $SUBNET.$k/24"   ip -n "$ns" addr add "$SUBNET.$k/24" dev eth0
  step "$ns: eth0 multicast on, up"   ip -n "$ns" link set eth0 multicast on up
  step "$ns: write configs"           write_configs "$k"
  step "$ns: start dbus-daemon"       start_dbus "$k"
  step "$ns: start avahi-daemon"      start_avahi "$k"
}

# avahi_ready K: the avahi of plhK answers on its bus and has finished probing (state 2 = running).
avahi_ready() {
  local k=$1 ns=${PREFIX}$1 hdir="$DIR/${PREFIX}$1" out
  if command -v dbus-send >/dev/null; then
    out=$(ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$hdir/bus" \
      timeout 2 dbus-send --system --print-reply=literal --reply-timeout=1000 --dest=org.freedesktop.Avahi \
      / org.freedesktop.Avahi.Server.GetState 2>/dev/null 9>&-) || return 1
    [[ "$out" =~ int32\ 2 ]]
  else
    out=$(ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$hdir/bus" \
      timeout 2 avahi-browse -a -t -p 2>&1 9>&-) || true
    ! grep -qiE "daemon not running|failed to create client" <<<"$out"
  fi
}

# wait_ready K...: bounded (READY_SECONDS) wait until all listed hosts' avahi are running.
wait_ready() {
  local deadline=$((SECONDS + READY_SECONDS)) pending=("$@") left k
  STEP="wait for avahi-daemon"
  while ((${#pending[@]})); do
    left=()
    for k in "${pending[@]}"; do
      local p
      p=$(cat "$DIR/${PREFIX}$k/avahi.pid" 2>/dev/null || true)
      if [ -z "$p" ] || [ ! -e "/proc/$p" ]; then
        log "step 'start avahi-daemon' failed: avahi-daemon of ${PREFIX}$k exited; its log:"
        sed 's/^/lan:   /' "$DIR/${PREFIX}$k/avahi.log" >&2 || true
        return 1
      fi
      avahi_ready "$k" || left+=("$k")
    done
    ((${#left[@]})) || break
    if ((SECONDS >= deadline)); then
      log "step '$STEP' failed: avahi of ${left[*]/#/$PREFIX} not running after ${READY_SECONDS}s"
      for k in "${left[@]}"; do sed "s/^/lan:   ${PREFIX}$k: /" "$DIR/${PREFIX}$k/avahi.log" >&2 || true; done
      return 1
    fi
    pending=("${left[@]}")
    sleep 0.2
  done
}

print_host() { echo "${PREFIX}$1 $SUBNET.$1 DBUS_SYSTEM_BUS_ADDRESS=unix:path=$DIR/${PREFIX}$1/bus"; }

check_k() {
  [[ "$1" =~ ^[0-9]+$ ]] && (( $1 >= 1 && $1 <= MAX_HOSTS )) || die "host number must be 1..$MAX_HOSTS, got '$1'"
}

lock() {
  exec 9>>"$LOCK"
  flock -w 60 9 || die "another tools/lan.sh holds $LOCK for more than 60 s"
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces); see: bash tools/lan.sh check"; }

# ---------------------------------------------------------------------------------------------
# commands

cmd_check() {
  local ok=0 t
  if [ "$(id -u)" -eq 0 ]; then echo "root: yes"; else echo "root: no (uid $(id -u))"; ok=1; fi
  for t in ip unshare avahi-daemon dbus-daemon flock setsid timeout; do
    if command -v "$t" >/dev/null; then echo "$t: $(command -v "$t")"; else echo "$t: missing"; ok=1; fi
  done
  for t in avahi-browse avahi-publish dbus-send; do
    if command -v "$t" >/dev/null; then echo "$t: $(command -v "$t")"; else echo "$t: missing (optional)"; fi
  done
  if [ $ok = 0 ]; then
    if ip netns list >/dev/null 2>&1; then echo "ip netns: yes"; else echo "ip netns: no"; ok=1; fi
    if unshare -n true 2>/dev/null; then echo "new network namespace: yes"; else echo "new network namespace: no (missing CAP_SYS_ADMIN?)"; ok=1; fi
    if unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /mnt' 2>/dev/null; then
      echo "private mount namespace + tmpfs: yes"
    else
      echo "private mount namespace + tmpfs: no"; ok=1
    fi
  fi
  if [ $ok = 0 ]; then echo "lan: can be built"; else echo "lan: cannot be built here"; fi
  return $ok
}

cmd_up() {
  local n=$1 k
  [[ "$n" =~ ^[0-9]+$ ]] && (( n >= 1 && n <= MAX_HOSTS )) || die "up: N must be 1..$MAX_HOSTS, got '$n'"
  need_root
  lock
  local prev
  prev=$(cat "$STATE" 2>/dev/null || true)
  if [ -n "$prev" ] && [ "$prev" != "$DIR" ] && [ -d "$prev" ]; then
    log "tearing down the existing LAN in $prev first"
    (DIR=$prev; teardown_all)
  fi
  if [ -n "$(our_namespaces)" ] || [ -d "$DIR" ]; then
    log "tearing down the existing LAN first"
    teardown_all
  fi
  mkdir -p "$DIR"
  echo "$DIR" >"$STATE"
  DONE=0
  trap 'rc=$?; if [ "$DONE" = 0 ]; then log "up failed at step: ${STEP:-?}; tearing down"; teardown_all; exit $((rc ? rc : 1)); fi' EXIT
  trap 'exit 130' INT TERM
  step "create namespace $BRNS"             ip netns add "$BRNS"
  step "$BRNS: lo up"                       ip -n "$BRNS" link set lo up
  step "$BRNS: create bridge br0"           ip -n "$BRNS" link add br0 type bridge
  step "$BRNS: br0 multicast snooping off"  ip -n "$BRNS" link set br0 type bridge mcast_snooping 0
  step "$BRNS: br0 up"                      ip -n "$BRNS" link set br0 up
  for k in $(seq 1 "$n"); do setup_host "$k"; done
  wait_ready $(seq 1 "$n")
  DONE=1
  rm -f "$DIR/.step.out"
  for k in $(seq 1 "$n"); do print_host "$k"; done
}

cmd_add() {
  local k=$1
  check_k "$k"
  need_root
  lock
  ns_exists "$BRNS" || die "add: no LAN (namespace $BRNS missing); run: bash tools/lan.sh up N"
  [ -d "$DIR" ] || die "add: no LAN state directory $DIR (wrong --dir?)"
  if ns_exists "${PREFIX}$k"; then
    log "${PREFIX}$k exists; replacing it"
    stop_host "$k"
  fi
  DONE=0
  trap 'rc=$?; if [ "$DONE" = 0 ]; then log "add failed at step: ${STEP:-?}; removing ${PREFIX}'"$k"'"; stop_host '"$k"' || true; exit $((rc ? rc : 1)); fi' EXIT
  trap 'exit 130' INT TERM
  setup_host "$k"
  wait_ready "$k"
  DONE=1
  rm -f "$DIR/.step.out"
  print_host "$k"
}

cmd_remove() {
  local k=$1
  check_k "$k"
  need_root
  lock
  stop_host "$k"
}

cmd_down() {
  need_root
  lock
  teardown_all || true
  return 0
}

cmd_exec() {
  local k=$1; shift
  check_k "$k"
  [ "${1:-}" = "--" ] && shift
  (($#)) || die "exec: no command"
  ns_exists "${PREFIX}$k" || die "exec: no host ${PREFIX}$k"
  exec ip netns exec "${PREFIX}$k" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$DIR/${PREFIX}$k/bus" "$@"
}

# ---------------------------------------------------------------------------------------------
# argument parsing: COMMAND [ARG] [--dir DIR] [-- CMD...]

(($#)) || usage
cmd=$1; shift
arg=""
rest=()
while (($#)); do
  case "$1" in
    --dir) [ $# -ge 2 ] || die "--dir needs a value"; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    --) rest=("$@"); break ;;
    -h|--help) usage ;;
    *) if [ -z "$arg" ]; then arg=$1; shift; else die "unexpected argument '$1'"; fi ;;
  esac
done
if [ -z "$DIR" ]; then
  # default: /tmp/peerlog-lan for `up`; for the other commands the DIR of the LAN that is up
  # (recorded by `up`), else /tmp/peerlog-lan
  [ "$cmd" = up ] || DIR=$(cat "$STATE" 2>/dev/null || true)
  [ -n "$DIR" ] || DIR=/tmp/peerlog-lan
fi
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
DIR=${DIR%/}
[ -n "$DIR" ] || die "--dir must not be /"

case "$cmd" in
  check)  cmd_check ;;
  up)     [ -n "$arg" ] || usage; cmd_up "$arg" ;;
  add)    [ -n "$arg" ] || usage; cmd_add "$arg" ;;
  remove) [ -n "$arg" ] || usage; cmd_remove "$arg" ;;
  down)   cmd_down ;;
  exec)   [ -n "$arg" ] || usage; cmd_exec "$arg" "${rest[@]}" ;;
  *) usage ;;
esac
