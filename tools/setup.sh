#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks (apt packages, the Python venv of interop peers),
# then builds. Idempotent: a second run only checks and builds.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(libsodium-dev libsqlite3-dev libavahi-compat-libdnssd-dev avahi-daemon avahi-utils dbus iproute2 python3-venv pkg-config tshark spin socat chromium chromium-driver fonts-dejavu-core)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Independent implementations used as interop peers by the tests (tools/requirements.txt).
if [ ! -x .venv/bin/python ] || ! cmp -s tools/requirements.txt .venv/.requirements; then
  echo "setup: creating .venv with $(tr '\n' ' ' < tools/requirements.txt | sed 's/#[^=]*pinned)//')"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements.txt
  cp tools/requirements.txt .venv/.requirements
fi

# PEERLOG_SETUP_BUILD_FLAGS (say "--traits PostgreSQL") are added to this build's flags:
# tools/test.sh builds once, with the flags all its later builds use, instead of once without
# them here and again with them.
read -r -a flags <<<"${PEERLOG_SETUP_BUILD_FLAGS:-}"
echo "setup: building${flags[*]:+ with ${flags[*]}}"
# One build; its errors, warnings and last line are shown, and its exit status is this script's.
build_log=$(mktemp)
status=0
swift build "${flags[@]}" >"$build_log" 2>&1 || status=$?
grep -E 'error|warning: |Compiling|Build complete' "$build_log" | grep -v '^\[' || true
rm -f "$build_log"
exit "$status"
