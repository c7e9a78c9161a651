#!/usr/bin/env python3
"""Browse one DNS-SD service type with python-zeroconf (an implementation independent of avahi)
for a bounded time and print what resolved, as JSON:

    [{"name": "test-service", "fullname": "test-service._peerlog._tcp.local.",
      "server": "plh1.local.", "port": 7300, "addresses": ["10.77.0.1"],
      "txt": {"dev": "bxyz", "v": "1"}}, ...]

TXT values are UTF-8 strings (undecodable bytes replaced); a key without "=" maps to "".

Network safety (/work/shared/DESIGN.md): it binds only to explicit IPv4 addresses of the network
namespace it runs in (non-loopback ones from `ip -4 -o addr`), and it refuses to run outside a named
network namespace (e.g. one of tools/lan.sh's plhK), so it never sends multicast on the machine's
real interfaces. Run it like:

    bash tools/lan.sh exec 3 -- .venv/bin/python tools/interop/zeroconf_browse.py --seconds 3
"""
import argparse
import json
import subprocess
import sys
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf


def namespace_name():
    """Name of the named network namespace we are in ('' if none, e.g. the machine's own)."""
    try:
        out = subprocess.run(["ip", "netns", "identify"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def namespace_addresses(include_loopback):
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                         timeout=5, check=True).stdout
    addrs, loop = [], []
    for line in out.splitlines():
        f = line.split()
        # "2: eth0    inet 10.77.0.3/24 brd 10.77.0.255 scope global eth0 ..."
        if len(f) < 4 or f[2] != "inet":
            continue
        ip = f[3].split("/")[0]
        (loop if f[1] == "lo" or ip.startswith("127.") else addrs).append(ip)
    if not addrs and include_loopback:
        addrs = loop
    return addrs


def decode_txt(props):
    txt = {}
    for k, v in (props or {}).items():
        key = k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)
        if v is None:
            val = ""
        elif isinstance(v, bytes):
            val = v.decode("utf-8", "replace")
        else:
            val = str(v)
        txt[key] = val
    return txt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("service_type", nargs="?", default="_peerlog._tcp.local.",
                    help="DNS-SD type (default _peerlog._tcp.local.)")
    ap.add_argument("--seconds", type=float, default=5.0, help="browse time (default 5)")
    ap.add_argument("--resolve-seconds", type=float, default=3.0,
                    help="extra time budget to resolve what was found (default 3)")
    ap.add_argument("--expect", type=int, default=0,
                    help="stop browsing early once this many services resolved")
    ap.add_argument("--addr", action="append", default=[],
                    help="bind to this IPv4 address (repeatable; default: the namespace's non-loopback ones)")
    ap.add_argument("--include-loopback", action="store_true",
                    help="use 127.0.0.1 when the namespace has no other IPv4 address")
    args = ap.parse_args()

    stype = args.service_type
    if not stype.endswith("."):
        stype += "."
    if not stype.endswith(".local."):
        stype += "local."

    ns = namespace_name()
    if not ns:
        print("zeroconf_browse: refusing to run outside a named network namespace "
              "(run it with: bash tools/lan.sh exec K -- ...)", file=sys.stderr)
        return 2
    addrs = args.addr or namespace_addresses(args.include_loopback)
    if not addrs:
        print(f"zeroconf_browse: no IPv4 address in namespace {ns}", file=sys.stderr)
        return 2

    zc = Zeroconf(interfaces=addrs, ip_version=IPVersion.V4Only)
    found = []  # names in discovery order
    resolved = {}

    def on_change(zeroconf, service_type, name, state_change):
        if state_change in (ServiceStateChange.Added, ServiceStateChange.Updated) and name not in found:
            found.append(name)

    def resolve(name, timeout_s):
        info = ServiceInfo(stype, name)
        if info.request(zc, max(1, int(timeout_s * 1000))) and info.port is not None:
            addresses = sorted(set(info.parsed_addresses(IPVersion.V4Only)))
            if not addresses:
                return None
            suffix = "." + stype
            return {
                "name": name[: -len(suffix)] if name.endswith(suffix) else name,
                "fullname": name,
                "server": info.server,
                "port": info.port,
                "addresses": addresses,
                "txt": decode_txt(info.properties),
            }
        return None

    try:
        browser = ServiceBrowser(zc, stype, handlers=[on_change])
        start = time.monotonic()
        browse_end = start + max(0.0, args.seconds)
        hard_end = browse_end + max(0.0, args.resolve_seconds)
        while time.monotonic() < browse_end:
            for name in list(found):
                if name not in resolved:
                    r = resolve(name, min(1.0, max(0.05, browse_end - time.monotonic())))
                    if r:
                        resolved[name] = r
            if args.expect and len(resolved) >= args.expect:
                break
            time.sleep(0.1)
        for name in list(found):
            left = hard_end - time.monotonic()
            if name in resolved or left <= 0:
                continue
            r = resolve(name, min(left, 3.0))
            if r:
                resolved[name] = r
        browser.cancel()
    finally:
        zc.close()

    print(json.dumps(sorted(resolved.values(), key=lambda r: r["fullname"]), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
