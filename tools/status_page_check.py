#!/usr/bin/env python3
"""Checks a running `peerlog daemon --http` from outside, as its users would: a real headless
browser (Debian's chromium and chromedriver, driven by Selenium), Prometheus' own text parser,
and raw sockets for bad clients. Used by Tests/PeerlogCLITests/StatusPageTests.swift; every
check prints one JSON line and exits non-zero with a one-line reason when it fails.

  page URL --group G --peer DEVICE... --write CMD [--screenshot PNG] [--converged URL...]
  metrics URL
  auth URL --token T
  abuse URL
  fetch URL           (prints the body of a 200 answer)
  watch URL --seconds N [--screenshot PNG]   (one JSON line per second: what the page shows)

Traffic goes only to the URL given (loopback in the tests); every wait is bounded.
"""
import argparse
import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit


def fail(message):
    print("status_page_check: " + message, file=sys.stderr)
    sys.exit(1)


def wait_for(what, condition, timeout=30.0, interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = condition()
            if last:
                return last
        except Exception as error:  # the page may be mid-redraw
            last = error
        time.sleep(interval)
    fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def get(url, headers=None, timeout=5.0):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1400,820", "--no-first-run", "--disable-extensions",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(flag)
    # An explicit driver: Selenium Manager would otherwise try to download one.
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


def committed_on_page(driver, group):
    from selenium.webdriver.common.by import By

    return int(driver.find_element(By.CSS_SELECTOR, f'[data-group="{group}"] .committed').text)


def check_page(args):
    from selenium.webdriver.common.by import By

    driver = browser()
    try:
        driver.set_page_load_timeout(20)
        driver.get(args.url)
        wait_for("the page to go live (its event stream)",
                 lambda: driver.find_element(By.ID, "live").text == "live")
        for device in args.peer:
            wait_for(f"peer {device[:12]} listed as connected", lambda: driver.find_element(
                By.CSS_SELECTOR, f'#peers tr[data-device="{device}"]').get_attribute("data-state") == "connected")
        wait_for(f"group {args.group} on the page",
                 lambda: driver.find_elements(By.CSS_SELECTOR, f'[data-group="{args.group}"]'))
        before = committed_on_page(driver, args.group)
        updates_before = int(driver.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0)
        # A reload would lose this; it must survive until the new mark shows.
        driver.execute_script("window.peerlogSamePage = 'yes';")
        write = subprocess.run(shlex.split(args.write), capture_output=True, text=True, timeout=60)
        if write.returncode != 0:
            fail(f"the write failed ({write.returncode}): {write.stderr.strip()}")
        after = wait_for("the committed mark to change on the page",
                         lambda: (lambda c: c if c > before else None)(committed_on_page(driver, args.group)))
        same = driver.execute_script("return window.peerlogSamePage || null;")
        if same != "yes":
            fail("the page was reloaded to show the change")
        updates_after = int(driver.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0)
        for _ in range(args.then_times if args.then else 0):
            # More writes, a little apart, so the chart has a shape.
            subprocess.run(shlex.split(args.then), capture_output=True, timeout=60, check=True)
            time.sleep(0.6)
        converged = None
        if args.converged:
            # Every node's /api/status shows the same committed mark, and the page agrees.
            def marks():
                values = set()
                for url in [args.url] + args.converged:
                    status, body = get(url.rstrip("/") + "/api/status")
                    group = [g for g in json.loads(body)["groups"] if g["id"] == args.group]
                    values.add(group[0]["committed"] if status == 200 and group else -1)
                values.add(committed_on_page(driver, args.group))
                lagging = driver.find_elements(By.CSS_SELECTOR, f'[data-group="{args.group}"] .bar:not(.done)')
                return values.pop() if len(values) == 1 and not lagging else None
            converged = wait_for("all nodes converged on the page", marks)
            time.sleep(2.5)  # a few more samples, so the chart has a line
        blob_held = None
        if args.blob_write:
            # A blob put on another node: this node fetches it, and the page shows the bytes held.
            def held():
                return int(driver.find_element(By.ID, "blobs-summary").get_attribute("data-held") or 0)
            held_before = held()
            write = subprocess.run(shlex.split(args.blob_write), capture_output=True, text=True, timeout=60)
            if write.returncode != 0:
                fail(f"the blob write failed ({write.returncode}): {write.stderr.strip()}")
            held_after = wait_for("the bytes held to grow on the page",
                                  lambda: (lambda h: h if h > held_before else None)(held()), timeout=60)
            if "held" not in driver.find_element(By.ID, "blobs-summary").text:
                fail("the blobs summary does not say what is held")
            blob_held = [held_before, held_after]
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
        print(json.dumps({"before": before, "after": after, "updates": [updates_before, updates_after],
                          "converged": converged, "blobHeld": blob_held}))
    finally:
        driver.quit()


def check_metrics(args):
    from prometheus_client.parser import text_string_to_metric_families

    status, body = get(args.url.rstrip("/") + "/metrics")
    if status != 200:
        fail(f"/metrics answered {status}")
    families = {}
    for family in text_string_to_metric_families(body.decode("utf-8")):
        families[family.name] = {
            sample.name + json.dumps(sample.labels, sort_keys=True): sample.value for sample in family.samples}
    print(json.dumps(families, sort_keys=True))


def check_auth(args):
    base = args.url.rstrip("/")
    results = {}
    for path in ["/", "/api/status", "/metrics", "/events", "/nope"]:
        results["none " + path] = get(base + path)[0]
        results["wrong " + path] = get(base + path, {"Authorization": "Bearer " + "x" * len(args.token)})[0]
    for path in ["/", "/api/status", "/metrics", "/nope"]:
        results["header " + path] = get(base + path, {"Authorization": "Bearer " + args.token})[0]
        results["query " + path] = get(base + path + "?token=" + args.token)[0]
    print(json.dumps(results, sort_keys=True))


def raw(url):
    parts = urlsplit(url)
    s = socket.create_connection((parts.hostname, parts.port), timeout=5)
    return s


def check_abuse(args):
    base = args.url.rstrip("/")
    results = {}
    # 1. Clients that send half a request head and stall (slowloris).
    stalled = []
    for _ in range(40):
        s = raw(base)
        s.sendall(b"GET /api/status HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        stalled.append(s)
    # 2. Event streams that are never read, past the limit of live pages.
    unread = []
    codes = []
    for _ in range(20):
        s = raw(base)
        s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        head = s.recv(64)
        codes.append(head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "?")
        unread.append(s)
    results["events"] = {code: codes.count(code) for code in set(codes)}
    # 3. A head larger than the server reads, and bytes that are no HTTP at all.
    s = raw(base)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
        reply = s.recv(64)
        results["oversized"] = reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/1.1 ") else "closed"
    except OSError:
        results["oversized"] = "closed"
    s.close()
    s = raw(base)
    s.sendall(bytes(range(256)) * 4 + b"\r\n\r\n")
    try:
        reply = s.recv(64)
        results["garbage"] = reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/1.1 ") else "closed"
    except OSError:
        results["garbage"] = "closed"
    s.close()
    # 4. Meanwhile a well-behaved client is answered promptly.
    started = time.monotonic()
    status, body = get(base + "/api/status", timeout=10)
    results["during"] = {"status": status, "seconds": round(time.monotonic() - started, 2),
                         "json": bool(status == 200 and json.loads(body).get("device"))}
    # 5. The stalled heads are cut off by the idle timeout (the server's, not ours).
    started = time.monotonic()
    closed = 0
    for s in stalled:
        s.settimeout(max(0.1, 30 - (time.monotonic() - started)))
        try:
            closed += 1 if s.recv(1) == b"" else 0
        except (socket.timeout, OSError) as error:
            closed += 1 if isinstance(error, ConnectionResetError) else 0
        s.close()
    results["stalled_closed"] = closed
    results["stalled_closed_within"] = round(time.monotonic() - started, 1)
    for s in unread:
        s.close()
    time.sleep(1.5)
    # 6. And after all that, the server still answers, and a new page can stream again.
    results["after"] = get(base + "/api/status", timeout=10)[0]
    s = raw(base)
    s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(5)
    head = s.recv(64)
    s.close()
    results["events_after"] = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "?"
    print(json.dumps(results, sort_keys=True))


def watch(args):
    """Follows the page as a person would, printing what it shows; for the demo (tools/demo.sh)."""
    from selenium.webdriver.common.by import By

    driver = browser()
    try:
        driver.set_page_load_timeout(20)
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            try:
                driver.get(args.url)
                break
            except Exception:
                time.sleep(1)  # the demo's node may not be up yet
        driver.execute_script("window.peerlogSamePage = 'yes';")
        while time.monotonic() < deadline:
            groups = {g.get_attribute("data-group")[:8]: g.find_element(By.CSS_SELECTOR, ".committed").text
                      for g in driver.find_elements(By.CSS_SELECTOR, "[data-group]")}
            peers = [r.get_attribute("data-state") for r in driver.find_elements(By.CSS_SELECTOR, "#peers tr[data-state]")]
            print(json.dumps({"t": round(args.seconds - (deadline - time.monotonic()), 1),
                              "live": driver.find_element(By.ID, "live").text, "groups": groups, "peers": peers,
                              "same_page": driver.execute_script("return window.peerlogSamePage || null;")}),
                  flush=True)
            if args.screenshot:
                driver.save_screenshot(args.screenshot)
            time.sleep(1)
    finally:
        driver.quit()


def fetch(args):
    status, body = get(args.url)
    if status != 200:
        fail(f"{args.url} answered {status}")
    sys.stdout.write(body.decode("utf-8"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    page = commands.add_parser("page")
    page.add_argument("url")
    page.add_argument("--group", required=True)
    page.add_argument("--peer", action="append", default=[])
    page.add_argument("--write", required=True, help="a command that writes on another node")
    page.add_argument("--then", help="a command to run --then-times more, after the live check")
    page.add_argument("--then-times", type=int, default=5)
    page.add_argument("--blob-write", help="a command that puts a blob on another node, after the rest")
    page.add_argument("--screenshot")
    page.add_argument("--converged", nargs="*", default=[])
    for name in ("metrics", "abuse", "fetch"):
        commands.add_parser(name).add_argument("url")
    watcher = commands.add_parser("watch")
    watcher.add_argument("url")
    watcher.add_argument("--seconds", type=float, default=60)
    watcher.add_argument("--screenshot")
    auth = commands.add_parser("auth")
    auth.add_argument("url")
    auth.add_argument("--token", required=True)
    args = parser.parse_args()
    {"page": check_page, "metrics": check_metrics, "auth": check_auth, "abuse": check_abuse,
     "fetch": fetch, "watch": watch}[args.command](args)


if __name__ == "__main__":
    main()
