#!/usr/bin/env bash
# One-host mDNS fixture: a network namespace whose only interface is lo, with its own
# dbus-daemon and an avahi-daemon restricted to that lo. Nothing touches the real interfaces.
#
#   tools/avahi-ns.sh up   NAME DIR       # create namespace NAME, state (sockets, pids, logs) in DIR
#   tools/avahi-ns.sh exec NAME DIR -- CMD...  # run CMD inside it, with DBUS_SYSTEM_BUS_ADDRESS
#                                          # and PEERLOG_DISCOVERY_NS=NAME set
#   tools/avahi-ns.sh down NAME DIR       # stop both daemons (by pid), delete the namespace
#
# Needs root. DIR must be short: the bus socket path is limited to 107 bytes.
set -euo pipefail

usage() { echo "usage: $0 up|down NAME DIR | exec NAME DIR -- CMD..." >&2; exit 2; }
[ $# -ge 3 ] || usage
cmd=$1 name=$2 dir=$3
shift 3

bus="unix:path=$dir/bus"

up() {
    mkdir -p "$dir"
    ip netns add "$name"
    ip netns exec "$name" ip link set lo up
    ip netns exec "$name" ip link set lo multicast on

    cat >"$dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>$bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
CONF
    cat >"$dir/avahi.conf" <<CONF
[server]
host-name=$name
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
enable-dbus=yes
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
CONF
    ip netns exec "$name" dbus-daemon --config-file="$dir/bus.conf" --fork --print-pid >"$dir/dbus.pid"
    # ip netns exec, unshare and sh all exec in place, so $! is avahi-daemon's pid. The
    # private tmpfs gives avahi its own pid-file directory.
    DBUS_SYSTEM_BUS_ADDRESS=$bus ip netns exec "$name" unshare -m --propagation private \
        sh -c 'mount -t tmpfs tmpfs /run/avahi-daemon && exec avahi-daemon --no-chroot --no-drop-root --no-rlimits -f "$0"' \
        "$dir/avahi.conf" >"$dir/avahi.log" 2>&1 &
    echo $! >"$dir/avahi.pid"
    for _ in $(seq 100); do
        grep -q 'Server startup complete' "$dir/avahi.log" && return 0
        kill -0 "$(cat "$dir/avahi.pid")" 2>/dev/null || break
        sleep 0.1
    done
    echo "avahi-daemon did not start; log:" >&2
    cat "$dir/avahi.log" >&2
    down
    return 1
}

down() {
    for f in avahi.pid dbus.pid; do
        [ -s "$dir/$f" ] || continue
        pid=$(cat "$dir/$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/$f"
    done
    ip netns del "$name" 2>/dev/null || true
    rm -f "$dir/bus"
}

case $cmd in
    up) up ;;
    down) down ;;
    exec)
        [ "${1:-}" = "--" ] && shift
        [ $# -ge 1 ] || usage
        exec ip netns exec "$name" env DBUS_SYSTEM_BUS_ADDRESS="$bus" PEERLOG_DISCOVERY_NS="$name" "$@"
        ;;
    *) usage ;;
esac
