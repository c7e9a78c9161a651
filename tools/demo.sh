#!/usr/bin/env bash
# The main job: three nodes sync a group, one is cut off while everyone writes, they find each
# other again and converge. As root: three network namespaces with mDNS discovery (tools/lan.sh;
# multicast never leaves them). Otherwise: three processes on loopback with static peers.
# Finishes by itself in well under a minute and leaves nothing running. Ann's daemon serves its
# status page on http://127.0.0.1:7301/ (PEERLOG_DEMO_HTTP=HOST:PORT to move it, =off for none);
# PEERLOG_DEMO_HOLD=SECONDS keeps the nodes up that long at the end, to look around.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
peerlog=$(swift build --show-bin-path)/peerlog
work=$(mktemp -d)
declare -A pid=()
forwarder=""
http=${PEERLOG_DEMO_HTTP:-127.0.0.1:7301}
# PEERLOG_DEMO_MODE=loopback forces the loopback variant.
mode=loopback
[ "${PEERLOG_DEMO_MODE:-auto}" = auto ] && bash tools/lan.sh check >/dev/null 2>&1 && mode=namespaces

cleanup() {
  [ -n "$forwarder" ] && kill "$forwarder" 2>/dev/null
  for k in "${!pid[@]}"; do kill -TERM "${pid[$k]}" 2>/dev/null || true; done
  for k in "${!pid[@]}"; do wait "${pid[$k]}" 2>/dev/null || true; done
  [ "$mode" = namespaces ] && bash tools/lan.sh down --dir "$work/lan" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
names=(_ ann ben cat)
home() { echo "$work/${names[$1]}"; }
addr() { if [ "$mode" = namespaces ]; then echo "10.77.0.$1:7300"; else echo "127.0.0.1:$((7400 + $1))"; fi; }
pl() { "$peerlog" "$@"; }

# start K [extra daemon options]: host K's daemon, logging to $work/K.log.
start() {
  local k=$1; shift
  if [ "$mode" = namespaces ]; then
    bash tools/lan.sh exec "$k" -- "$peerlog" daemon --home "$(home "$k")" --listen "$(addr "$k")" "$@" >"$work/$k.out" 2>>"$work/$k.log" &
  else
    local peers=()
    for j in 1 2 3; do [ "$j" -lt "$k" ] && peers+=(--peer "$(addr "$j")"); done
    "$peerlog" daemon --home "$(home "$k")" --listen "$(addr "$k")" --no-discovery "${peers[@]}" "$@" >"$work/$k.out" 2>>"$work/$k.log" &
  fi
  pid[$k]=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/$k.out" 2>/dev/null && return; sleep 0.1; done
  echo "demo: ${names[$k]}'s daemon did not start:" >&2; cat "$work/$k.log" >&2; exit 1
}
stop() { kill -TERM "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null || true; unset "pid[$1]"; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls every 0.25 s.
wait_for() {
  local limit=$1 what=$2; shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - start > limit)); then
      echo "demo: gave up waiting for $what after ${limit}s; the daemons' last log lines:" >&2
      for k in 1 2 3; do tail -3 "$work/$k.log" 2>/dev/null | sed "s/^/  ${names[$k]}: /" >&2; done
      exit 1
    fi
    sleep 0.25
  done
  echo "   ($what: $((SECONDS - start)) s)"
}
hashes() { pl state-hash --home "$(home "$1")" "$group" | tr '\n' ' '; }
converged() {
  local h1 h2 h3; h1=$(hashes 1); h2=$(hashes 2); h3=$(hashes 3)
  [ "$h1" = "$h2" ] && [ "$h2" = "$h3" ] && ! pl log --home "$(home 1)" "$group" --json | grep -q '"tentative"'
}

if [ "$mode" = namespaces ]; then
  step "Mode: three network namespaces on one bridge, each with its own avahi; daemons get no addresses"
  bash tools/lan.sh up 3 --dir "$work/lan"
else
  step "Mode: three processes on loopback with static peers (run as root for namespaces with mDNS discovery)"
fi

step "Ann, Ben and Cat create identities; Ann creates a group"
for k in 1 2 3; do pl init --home "$(home "$k")" --name "${names[$k]}-laptop" >/dev/null; done
group=$(pl group create --home "$(home 1)" demo --json | sed -n 's/.*"id" *: *"\(b[a-z2-7]*\)".*/\1/p' | head -1)

step "Daemons start; Ann invites Ben and Cat by short code (no identities typed, no --allow)"
page=()
if [ "$http" != off ]; then
  if (exec 3<>"/dev/tcp/${http%:*}/${http##*:}") 2>/dev/null; then
    echo "   (something already listens on $http: no status page this time; PEERLOG_DEMO_HTTP=HOST:PORT moves it)"
  else
    page=(--http "$http")
  fi
fi
start 1 "${page[@]}"
if ((${#page[@]})); then
  if [ "$mode" = namespaces ]; then
    # Ann's page listens on her namespace's loopback; this carries the host's $http there.
    socat "TCP-LISTEN:${http##*:},bind=${http%:*},fork,reuseaddr" \
      "EXEC:ip netns exec plh1 socat STDIO TCP\:127.0.0.1\:${http##*:}" 2>/dev/null &
    forwarder=$!
  fi
  echo "   Ann's status page: http://$http/  (open it now: it follows the demo live; /metrics for Prometheus)"
fi
start 2
start 3
# join K CODE ADDRESS: K types the code Ann read out; in namespaces the session is found over DNS-SD.
join() {
  if [ "$mode" = namespaces ]; then
    bash tools/lan.sh exec "$1" -- "$peerlog" invite join --home "$(home "$1")" "$2"
  else
    pl invite join --home "$(home "$1")" "$2" --peer "$3"
  fi
}
for k in 2 3; do
  ticket=$(pl invite create --home "$(home 1)" "$group" --json)
  code=$(echo "$ticket" | sed -n 's/.*"code" *: *"\([0-9-]*\)".*/\1/p')
  address=$(echo "$ticket" | sed -n 's/.*"address" *: *"\([^"]*\)".*/\1/p')
  echo "   Ann reads out $code; ${names[$k]} types it:"
  join "$k" "$code" "$address" | sed 's/^/     /'
done
wait_for 30 "all three converge" converged

step "Cat is cut off; everyone writes (Cat's writes stay tentative: Ann's device orders the group)"
stop 3
[ "$mode" = namespaces ] && bash tools/lan.sh remove 3 >/dev/null
for i in 1 2 3; do
  pl put --home "$(home 1)" "$group" "ann-$i" "written by Ann while Cat was away" >/dev/null
  pl put --home "$(home 2)" "$group" "ben-$i" "written by Ben while Cat was away" >/dev/null
  pl put --home "$(home 3)" "$group" "cat-$i" "written by Cat offline" >/dev/null
done
pl put --home "$(home 2)" "$group" topic "Ben's topic" >/dev/null
pl put --home "$(home 3)" "$group" topic "Cat's topic" >/dev/null
pl log --home "$(home 3)" "$group" | tail -4

step "Cat comes back; the daemons find each other again and converge"
[ "$mode" = namespaces ] && bash tools/lan.sh add 3 >/dev/null
start 3
wait_for 45 "convergence after the cut" converged

step "Ann shares a 3 MB photo; Ben and Cat read it (a blob: the receipt syncs at once, the bytes follow)"
head -c 3000000 /dev/urandom > "$work/photo.jpg"
pl put --home "$(home 1)" "$group" photo.jpg --value-file "$work/photo.jpg" | sed 's/^/   /'
for k in 2 3; do
  pl get --home "$(home "$k")" "$group" photo.jpg --out "$work/photo-$k.jpg" --wait 60
  if cmp -s "$work/photo.jpg" "$work/photo-$k.jpg"; then
    echo "   ${names[$k]} has it: the same 3,000,000 bytes, each 1 MiB chunk checked against the blob id"
  else
    echo "demo: ${names[$k]}'s copy of the photo differs" >&2; exit 1
  fi
done

step "State hashes, side by side (committed and tentative views)"
printf '%-5s %-66s %s\n' node committed tentative
for k in 1 2 3; do
  read -r _ c _ t <<< "$(hashes "$k")"
  printf '%-5s %-66s %s\n' "${names[$k]}" "$c" "$t"
done
echo
echo "topic = $(pl get --home "$(home 3)" "$group" topic)   (last writer in the committed order wins everywhere)"
pl status --home "$(home 2)" | sed -n '/^groups/,$p'

step "Where to look next"
cat <<TEXT
  peerlog status / peers / log / state-hash   (docs/CLI.md)
  peerlog put G K --value-file F / get --out   files of any size (docs/CLI.md: Files and photos)
  docs/PROTOCOL.md §14-§15                     the secure channel and the sync protocol
  bash tools/walkthrough.sh                    identities, signed receipts, groups carried as files
  swift run peerlog-notes --help               Examples/Notes: a shared to-do list on \`import Peerlog\`
  README.md: Embed Peerlog in your app         the library in 20 lines, with live change events
  bash tools/test.sh                           everything, including the namespace LAN test
  peerlog daemon --http 127.0.0.1:7301         the status page and /metrics (docs/TOOLS.md: Status page)
TEXT
hold=${PEERLOG_DEMO_HOLD:-0}
if ((hold > 0)); then
  echo
  echo "Holding the three nodes for $hold s (Ctrl-C ends the demo)."
  sleep "$hold"
fi
