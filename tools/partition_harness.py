#!/usr/bin/env python3
"""Fault-injection harness for Peerlog's elected sequencer (docs/PROTOCOL.md §18).

Three voter daemons on loopback, each dialing the two others only through a fault-injecting
TCP proxy per ordered pair (proxy i→j forwards to j's real listen port; each direction of it
can be blocked). Seeded schedules of random actions — writes, partitions (isolate a node, cut
one pair, make a node deaf or mute, block one direction; in mode `reset` the connections are
aborted, in mode `stall` they stay open and deliver their bytes late once healed), heal,
connection drops, SIGKILL crashes and restarts, short waits — run while a checker polls every
replica's committed log (read from its store every ~300 ms and after every step) and fails at once if

  * two replicas (or one replica at two moments) show different CIDs for the same seq,
  * one CID is committed at two seqs,
  * a replica's committed log loses or changes an entry it showed before (monotonic prefix),
    or is not the contiguous prefix 1..N,
  * a write made on a node none of whose messages reach the others commits anywhere while
    that stays so,
  * two devices claim to be leader in the same term.

At the end of each schedule everything is healed and restarted, and all three replicas must
converge (no tentative receipts, identical committed logs and state hashes, every write
committed) within a time limit. The first schedule starts with an explicit minority check
(--minority). --inherited-check adds a deterministic scenario: a deaf, then isolated leader's
replicated but uncommitted write must still commit after healing, with no further write.

Each schedule uses a fresh cluster; schedule k of a run with --seed S has seed S+k, and
`--seed S+k --schedules 1 --minority none` replays its actions (timing varies). On failure
the workdir with the homes and daemon logs is kept and named.

Only 127.0.0.1 is used; no discovery (mDNS) runs. Python stdlib only.

    .venv/bin/python tools/partition_harness.py --peerlog .build/debug/peerlog --schedules 4 --seed 1
"""

import argparse
import asyncio
import atexit
import base64
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time

HOST = "127.0.0.1"
N = 3
POLL_INTERVAL = 0.3
CLI_TIMEOUT = 20.0
SETUP_TIMEOUT = 40.0
STEP_PHASE_BUDGET = 45.0  # seconds of random actions per schedule at most
CONVERGE_TIMEOUT = 60.0
MINORITY_HOLD = 2.0

# Every daemon pid this process started, killed by atexit whatever happens.
_LIVE_PIDS = set()


def cid_text(cid):
    """A CID's text form as the CLI prints it: multibase "b" (base32, lower case, no padding)."""
    return "b" + base64.b32encode(bytes(cid)).decode().lower().rstrip("=")


def read_store(node, query):
    """query(db) on the node's store opened read-only, or None if it cannot be read."""
    try:
        db = sqlite3.connect(f"file:{os.path.join(node.home, 'replica.sqlite')}?mode=ro", uri=True, timeout=2)
        try:
            return query(db)
        finally:
            db.close()
    except sqlite3.Error:
        return None


def _kill_all_pids(reap=True):
    for pid in list(_LIVE_PIDS):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        if reap:  # not from a signal handler: asyncio's child watcher reaps those
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
            _LIVE_PIDS.discard(pid)


atexit.register(_kill_all_pids)


class HarnessFailure(Exception):
    pass


class CliTimeout(HarnessFailure):
    pass


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------------------------
# Ports


def _local_port_floor():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def pick_listen_port(taken):
    """A free loopback port below the ephemeral range: a crashed daemon's port must stay free
    for its restart, and the proxies' outgoing connections take ephemeral ports."""
    rng = random.SystemRandom()
    hi = min(_local_port_floor(), 32768) - 1
    for _ in range(500):
        port = rng.randint(20000, hi)
        if port in taken:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((HOST, port))
        except OSError:
            continue
        finally:
            s.close()
        taken.add(port)
        return port
    raise HarnessFailure("no free loopback port")


# --------------------------------------------------------------------------------------------
# Fault-injecting proxy


class Conn:
    __slots__ = ("client", "upstream", "task")

    def __init__(self, client, task):
        self.client = client
        self.upstream = None
        self.task = task

    def abort(self):
        for w in (self.client, self.upstream):
            if w is not None:
                try:
                    w.transport.abort()
                except Exception:
                    pass
        if self.task is not None and not self.task.done():
            self.task.cancel()


class Link:
    """The proxy for one ordered pair: daemon `src` dials it, it forwards to daemon `dst`.

    Each direction has a gate: `fwd` passes src→dst bytes, `back` dst→src bytes. A closed gate
    passes nothing (neither data nor EOF) until it opens again: the bytes wait in the proxy and
    are delivered late, like a silent network partition. New connections are accepted but held
    (the upstream is not even dialed) until both gates are open. `drop()` aborts every current
    connection (a cut in mode `reset` does that too, so the dialers see the connection end)."""

    def __init__(self, src, dst, target_port):
        self.src, self.dst, self.target_port = src, dst, target_port
        self.fwd = asyncio.Event()
        self.back = asyncio.Event()
        self.fwd.set()
        self.back.set()
        self.conns = set()
        self.server = None
        self.port = 0
        self.accepted = 0

    async def start(self):
        self.server = await asyncio.start_server(self._serve, HOST, 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close(self):
        if self.server is not None:
            self.server.close()
        self.drop()
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.wait_closed(), 2)
            except (asyncio.TimeoutError, Exception):
                pass

    def drop(self):
        for c in list(self.conns):
            c.abort()
            self.conns.discard(c)

    @staticmethod
    async def _pipe(reader, writer, gate):
        while True:
            await gate.wait()
            data = await reader.read(65536)
            if not data:
                return
            await gate.wait()  # closed after the read: the bytes wait until it opens
            writer.write(data)
            await writer.drain()

    async def _serve(self, reader, writer):
        conn = Conn(writer, asyncio.current_task())
        self.conns.add(conn)
        self.accepted += 1
        try:
            while not (self.fwd.is_set() and self.back.is_set()):
                await self.fwd.wait()
                await self.back.wait()
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(HOST, self.target_port), 5)
            except (OSError, asyncio.TimeoutError):
                return  # target down: the dialer sees the connection closed
            conn.upstream = up_writer
            tasks = [asyncio.ensure_future(self._pipe(reader, up_writer, self.fwd)),
                     asyncio.ensure_future(self._pipe(up_reader, writer, self.back))]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            self.conns.discard(conn)
            for w in (conn.client, conn.upstream):
                if w is not None:
                    try:
                        w.transport.abort()
                    except Exception:
                        pass


# --------------------------------------------------------------------------------------------
# Processes


async def run_cli(peerlog, args, timeout=CLI_TIMEOUT):
    proc = await asyncio.create_subprocess_exec(
        peerlog, *args, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        timed_out = True
    finally:
        if proc.returncode is None:  # timed out or cancelled: never leave it running
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            await proc.wait()
    if timed_out:
        raise CliTimeout(f"peerlog {' '.join(args)} did not finish within {timeout:.0f} s")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


class Node:
    def __init__(self, index, home, port):
        self.index = index
        self.name = f"n{index}"
        self.home = home
        self.port = port
        self.identity = ""
        self.device = ""
        self.proc = None
        self.starts = 0

    @property
    def alive(self):
        return self.proc is not None and self.proc.returncode is None

    @property
    def stdout_path(self):
        return os.path.join(self.home, "daemon.stdout")

    @property
    def stderr_path(self):
        return os.path.join(self.home, "daemon.stderr")

    def stderr_tail(self, lines=15):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


# --------------------------------------------------------------------------------------------
# The cluster and its checker


class Cluster:
    def __init__(self, peerlog, workdir, seed, rng):
        self.peerlog = peerlog
        self.workdir = workdir
        self.seed = seed
        self.rng = rng
        self.nodes = []
        self.links = {}  # (i, j) -> Link
        self.group = ""
        self.blocked = set()  # directed flows (a, b): nothing a sends reaches b
        # checker state
        self.check_lock = asyncio.Lock()
        self.failure = None
        self.failed = asyncio.Event()
        self.seq_cid = {}  # seq -> (cid, node name)
        self.cid_seq = {}  # cid -> (seq, node name)
        self.seen = {}  # node index -> list of committed CIDs (index = seq - 1)
        self.leaders = {}  # term -> (device, node name)
        self.guard = {}  # cid -> node index: written while that node was cut off from both others
        self.polls = 0
        self.read_errors = 0
        self.poller = None

    # ---- helpers

    async def cli(self, node, *args, timeout=CLI_TIMEOUT):
        return await run_cli(self.peerlog, [*args, "--home", node.home], timeout)

    async def cli_json(self, node, *args, timeout=CLI_TIMEOUT):
        rc, out, err = await self.cli(node, *args, "--json", timeout=timeout)
        if rc != 0:
            raise HarnessFailure(f"peerlog {' '.join(args)} on {node.name} exited {rc}: {err.strip()}")
        return json.loads(out)

    def fail(self, message):
        if self.failure is None:
            self.failure = f"seed {self.seed}: {message}"
            self.failed.set()
        raise HarnessFailure(self.failure)

    def raise_if_failed(self):
        if self.failure is not None:
            raise HarnessFailure(self.failure)

    async def sleep(self, seconds):
        """Sleeps, returning early (with the failure raised) if the checker failed."""
        try:
            await asyncio.wait_for(self.failed.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        self.raise_if_failed()

    def cut_off(self, i):
        """Nothing node i sends reaches anyone (isolated, or mute)."""
        return all((i, j) in self.blocked for j in range(N) if j != i)

    # ---- setup

    async def setup(self):
        taken = set()
        for i in range(N):
            home = os.path.join(self.workdir, f"n{i}")
            self.nodes.append(Node(i, home, pick_listen_port(taken)))
        for node in self.nodes:
            rc, _, err = await self.cli(node, "init", "--name", node.name)
            if rc != 0:
                raise HarnessFailure(f"init {node.name}: {err}")
            ident = await self.cli_json(node, "id")
            node.identity, node.device = ident["identity"], ident["device"]
        owner = self.nodes[0]
        self.group = (await self.cli_json(owner, "group", "create", "team"))["id"]
        for node in self.nodes[1:]:
            rc, _, err = await self.cli(owner, "group", "add", self.group, node.identity)
            if rc != 0:
                raise HarnessFailure(f"group add {node.name}: {err}")
        for i in range(N):
            for j in range(N):
                if i != j:
                    link = Link(i, j, self.nodes[j].port)
                    await link.start()
                    self.links[(i, j)] = link
        for node in self.nodes:
            await self.start_daemon(node)
        deadline = time.monotonic() + SETUP_TIMEOUT
        for node in self.nodes[1:]:
            while True:
                rc, _, err = await self.cli(node, "group", "accept", self.group)
                if rc == 0:
                    break
                if time.monotonic() > deadline:
                    raise HarnessFailure(f"group accept on {node.name} never worked: {err.strip()}")
                await asyncio.sleep(0.3)
        rc, _, err = await self.cli(owner, "group", "sequencer", self.group, "elected",
                                    *[n.device for n in self.nodes])
        if rc != 0:
            raise HarnessFailure(f"group sequencer elected: {err}")
        leader = await self.wait_leader(deadline - time.monotonic())
        if leader is None:
            raise HarnessFailure("no elected leader within the setup time limit")
        return leader

    async def sequencer_views(self):
        async def one(node):
            if not node.alive:
                return None
            try:
                st = await self.cli_json(node, "status", timeout=8)
            except (HarnessFailure, ValueError):
                return None
            for g in st.get("groups", []):
                if g.get("id") == self.group or len(st.get("groups", [])) == 1:
                    return g.get("sequencer")
            return None
        return await asyncio.gather(*(one(n) for n in self.nodes))

    async def wait_leader(self, timeout):
        """Index of the node all live voters agree is leader of the elected authority."""
        deadline = time.monotonic() + max(timeout, 1)
        while time.monotonic() < deadline:
            views = await self.sequencer_views()
            live = [v for n, v in zip(self.nodes, views) if n.alive]
            leaders = [i for i, v in enumerate(views) if v and v.get("role") == "leader"]
            if (len(leaders) == 1 and live and all(v and v.get("authority") == "elected"
                                                   and v.get("leader") == self.nodes[leaders[0]].device
                                                   for v in live)):
                return leaders[0]
            await asyncio.sleep(0.3)
        return None

    async def start_daemon(self, node):
        args = ["daemon", "--home", node.home, "--listen", f"{HOST}:{node.port}", "--no-discovery"]
        for j in range(N):
            if j != node.index:
                args += ["--peer", f"{HOST}:{self.links[(node.index, j)].port}",
                         "--allow", self.nodes[j].identity]
        for attempt in range(3):
            with open(node.stdout_path, "w") as out, open(node.stderr_path, "a") as err:
                err.write(f"==== harness: start #{node.starts + 1} at {time.strftime('%H:%M:%S')} ====\n")
                err.flush()
                node.proc = await asyncio.create_subprocess_exec(
                    self.peerlog, *args, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True)
            _LIVE_PIDS.add(node.proc.pid)
            node.starts += 1
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    with open(node.stdout_path, errors="replace") as f:
                        if f"listening on {HOST}:" in f.read():
                            return
                except OSError:
                    pass
                if node.proc.returncode is not None:
                    break
                await asyncio.sleep(0.05)
            await self.kill_daemon(node)
            await asyncio.sleep(0.5 * (attempt + 1))
        raise HarnessFailure(f"daemon {node.name} did not start listening on {node.port}:\n{node.stderr_tail()}")

    async def kill_daemon(self, node, sig=signal.SIGKILL):
        if node.proc is None:
            return
        if node.proc.returncode is None:
            try:
                node.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(node.proc.wait(), 10)
            except asyncio.TimeoutError:
                node.proc.kill()
                await node.proc.wait()
        _LIVE_PIDS.discard(node.proc.pid)

    async def teardown(self):
        if self.poller is not None:
            self.poller.cancel()
            await asyncio.gather(self.poller, return_exceptions=True)
        for node in self.nodes:
            await self.kill_daemon(node, signal.SIGTERM)
        for link in self.links.values():
            await link.close()

    # ---- faults

    def set_blocked(self, flows, mode="stall"):
        """Makes exactly `flows` (directed (a, b) pairs) the blocked ones. Mode `reset` also
        aborts the connections between two nodes whose both directions become blocked."""
        flows = set(flows)
        for a, b in self.blocked - flows:
            self.links[(a, b)].fwd.set()
            self.links[(b, a)].back.set()
        added = flows - self.blocked
        for a, b in added:
            self.links[(a, b)].fwd.clear()
            self.links[(b, a)].back.clear()
        self.blocked = flows
        if mode == "reset":
            for a, b in added:
                if (b, a) in flows:
                    self.links[(a, b)].drop()
                    self.links[(b, a)].drop()
        # A write made while its node was cut off may commit once that node can send again.
        for cid, i in list(self.guard.items()):
            if not self.cut_off(i):
                del self.guard[cid]

    def heal_all(self):
        self.set_blocked(set())

    @staticmethod
    def both_ways(pairs):
        pairs = list(pairs)
        return {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}

    def describe_blocked(self):
        return " ".join(f"{a}>{b}" for a, b in sorted(self.blocked)) or "none"

    # ---- diagnostics

    def sequencer_tables(self, node):
        """The node's persisted election state (docs/PROTOCOL.md §18.5), read-only: (term, base,
        [(seq, cid text, term), …]) or None."""
        read = read_store(node, lambda db: (db.execute("SELECT term, base FROM sequencer_state").fetchone(),
                                            db.execute("SELECT seq, cid, term FROM sequencer_log ORDER BY seq").fetchall()))
        if read is None or read[0] is None:
            return None
        state, rows = read

        return state[0], state[1], [(seq, cid_text(cid), term) for seq, cid, term in rows]

    async def diagnose(self, writes):
        """Why the replicas did not converge: the election state of each, and whether one new
        write gets everything committed (an uncommitted tail inherited from an earlier term
        commits only with an entry of the leader's own term)."""
        lines = []
        views = await self.sequencer_views()
        logs = await asyncio.gather(*(self.read_log(n) for n in self.nodes))
        for node, view, entries in zip(self.nodes, views, logs):
            committed = sum(1 for e in entries or [] if e.get("status") == "committed")
            tentative = [e.get("cid") for e in entries or [] if e.get("status") != "committed"]
            tables = self.sequencer_tables(node)
            tail = ""
            if tables:
                term, base, rows = tables
                tail = (f"; persisted term {term}, sequencer_log past the committed seq: "
                        + (", ".join(f"seq {q} {cid[-10:]} term {t}{' (older term)' if t < term else ''}"
                                     for q, cid, t in rows if q > committed) or "none"))
            view = view or {}
            lines.append(f"{node.name}: role {view.get('role')} term {view.get('term')} leader "
                         f"{(view.get('leader') or '-')[:12]} commitLag {view.get('commitLag')}; committed {committed}, "
                         f"tentative {[c[-10:] for c in tentative]}{tail}")
        live = [n for n in self.nodes if n.alive]
        if live:
            try:
                cid = await self.put(live[0], "diagnostic-kick", "1")
                started = time.monotonic()
                while time.monotonic() - started < 15:
                    logs = await asyncio.gather(*(self.read_log(n) for n in self.nodes))
                    if all(e is not None and all(r.get("status") == "committed" for r in e) for e in logs) and \
                            await self.committed_everywhere(writes + [cid]):
                        lines.append(f"one more write (on {live[0].name}) got everything committed everywhere within "
                                     f"{time.monotonic() - started:.1f} s")
                        break
                    await asyncio.sleep(0.3)
                else:
                    lines.append("one more write did not get everything committed within 15 s either")
            except HarnessFailure as e:
                lines.append(f"the diagnostic write failed: {e}")
        return "\n    ".join(lines)

    # ---- checking

    async def read_log(self, node):
        try:
            rc, out, err = await self.cli(node, "log", self.group, "--json", timeout=10)
        except CliTimeout:
            return None
        if rc != 0:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return None

    def read_committed(self, node):
        """The node's committed log read straight from its store, as `peerlog log` lists it
        (docs/PROTOCOL.md §10: the envelopes joined with the receipts held, in seq order), or None.
        The checker polls this: a `peerlog log` call per replica several times a second cost the
        run most of its CPU (a debug build), and reading the file is what that call does."""
        rows = read_store(node, lambda db: db.execute(
            "SELECT e.seq, r.cid FROM envelopes e JOIN receipts r ON r.id = e.receipt_id "
            "WHERE e.group_id = ? ORDER BY e.seq", (self.group_bytes(),)).fetchall())
        if rows is None:
            return None
        return [{"seq": seq, "cid": cid_text(cid), "status": "committed"} for seq, cid in rows]

    def group_bytes(self):
        body = self.group[1:].upper()  # multibase "b": base32, lower case, no padding
        return base64.b32decode(body + "=" * (-len(body) % 8))

    def check_log(self, node, entries, where):
        committed = [(e.get("seq"), e.get("cid")) for e in entries if e.get("status") == "committed"]
        for k, (seq, cid) in enumerate(committed):
            if seq != k + 1 or not isinstance(cid, str):
                self.fail(f"[{where}] {node.name}'s committed log is not the prefix 1..N: entry {k} has seq {seq} "
                          f"cid {cid} (seqs: {[s for s, _ in committed][:40]})")
        cids = [cid for _, cid in committed]
        prev = self.seen.get(node.index, [])
        if cids[:len(prev)] != prev:
            k = next((k for k in range(len(prev)) if k >= len(cids) or cids[k] != prev[k]), len(prev))
            now = cids[k] if k < len(cids) else "(missing)"
            self.fail(f"[{where}] {node.name}'s committed log lost or changed seq {k + 1}: it showed {prev[k]}, "
                      f"now {now} (length {len(prev)} -> {len(cids)})")
        self.seen[node.index] = cids
        for k, cid in enumerate(cids):
            seq = k + 1
            known = self.seq_cid.get(seq)
            if known is None:
                self.seq_cid[seq] = (cid, node.name)
            elif known[0] != cid:
                self.fail(f"[{where}] CONFLICT at seq {seq}: {known[1]} showed {known[0]} committed, "
                          f"{node.name} shows {cid}")
            other = self.cid_seq.get(cid)
            if other is None:
                self.cid_seq[cid] = (seq, node.name)
            elif other[0] != seq:
                self.fail(f"[{where}] receipt {cid} committed twice: seq {other[0]} on {other[1]}, "
                          f"seq {seq} on {node.name}")
            guarded = self.guard.get(cid)
            if guarded is not None and self.cut_off(guarded):
                self.fail(f"[{where}] MINORITY COMMIT: {cid} written on {self.nodes[guarded].name} while nothing it "
                          f"sends reaches the others is committed at seq {seq} on {node.name} (still cut off; "
                          f"blocked flows {self.describe_blocked()})")

    async def check_all(self, where, leaders=False):
        """Reads every replica's log (the store on disk, also of a crashed node) and checks it."""
        self.raise_if_failed()
        async with self.check_lock:
            # The cut state at the moment of reading; a guarded write must not be committed
            # before its node is no longer cut off.
            # In threads: a read that waits on a lock must not stall the proxies on this loop.
            results = await asyncio.gather(*(asyncio.to_thread(self.read_committed, n) for n in self.nodes))
            self.polls += 1
            for node, entries in zip(self.nodes, results):
                if entries is None:
                    self.read_errors += 1
                    continue
                self.check_log(node, entries, where)
            if leaders:
                views = await self.sequencer_views()
                for node, v in zip(self.nodes, views):
                    if not v or v.get("role") != "leader" or v.get("term") is None:
                        continue
                    term, dev = v["term"], node.device
                    known = self.leaders.get(term)
                    if known is None:
                        self.leaders[term] = (dev, node.name)
                    elif known[0] != dev:
                        self.fail(f"[{where}] TWO LEADERS in term {term}: {known[1]} and {node.name}")

    async def poll_forever(self):
        k = 0
        try:
            while self.failure is None:
                k += 1
                try:
                    await self.check_all("poll", leaders=(k % 3 == 0))
                except HarnessFailure:
                    return
                except Exception as e:  # a harness bug must not silently stop the checking
                    self.failure = self.failure or f"seed {self.seed}: the checker crashed: {e!r}"
                    self.failed.set()
                    return
                await asyncio.sleep(POLL_INTERVAL)
        except asyncio.CancelledError:
            pass

    def start_poller(self):
        self.poller = asyncio.ensure_future(self.poll_forever())

    # ---- actions

    async def put(self, node, key, value):
        rc, out, err = await self.cli(node, "put", self.group, key, value, "--json")
        if rc != 0:
            raise HarnessFailure(f"put on {node.name} exited {rc}: {err.strip()}")
        cid = json.loads(out)["cid"]
        if self.cut_off(node.index):
            self.guard[cid] = node.index
        return cid

    async def committed_everywhere(self, cids):
        logs = await asyncio.gather(*(self.read_log(n) for n in self.nodes))
        for entries in logs:
            if entries is None:
                return False
            done = {e.get("cid") for e in entries if e.get("status") == "committed"}
            if not set(cids) <= done:
                return False
        return True

    async def converge(self, writes, timeout):
        """Waits until all three replicas hold no tentative receipt, the same committed log and
        the same state hashes, with every write committed. Returns the seconds it took."""
        started = time.monotonic()
        deadline = started + timeout
        last = ""
        while True:
            self.raise_if_failed()
            await self.check_all("converge")
            logs = await asyncio.gather(*(self.read_log(n) for n in self.nodes))
            hashes = await asyncio.gather(*(self.cli(n, "state-hash", self.group, "--json", timeout=10)
                                            for n in self.nodes))
            ok = all(entries is not None for entries in logs) and all(h[0] == 0 for h in hashes)
            if ok:
                committed = [[(e["seq"], e["cid"]) for e in entries if e.get("status") == "committed"]
                             for entries in logs]
                tentative = [[e.get("cid") for e in entries if e.get("status") != "committed"] for entries in logs]
                hs = [json.loads(h[1]) for h in hashes]
                hs = [(h.get("committed"), h.get("tentative")) for h in hs]
                done = {cid for _, cid in committed[0]}
                missing = [c for c in writes if c not in done]
                last = (f"committed lengths {[len(c) for c in committed]}, tentative {[len(t) for t in tentative]}, "
                        f"hashes equal {len(set(hs)) == 1}, writes not committed {len(missing)}")
                if (not any(tentative) and all(c == committed[0] for c in committed) and len(set(hs)) == 1
                        and not missing):
                    # The poller's direct reads must show what `peerlog log` shows, or they checked nothing.
                    for node, cli_view in zip(self.nodes, committed):
                        direct = [(e["seq"], e["cid"]) for e in self.read_committed(node) or []]
                        if direct != cli_view:
                            self.fail(f"the checker's store read of {node.name} ({len(direct)} entries) differs "
                                      f"from `peerlog log` ({len(cli_view)})")
                    return time.monotonic() - started, len(committed[0])
            else:
                last = "cannot read every replica: " + "; ".join(h[2].strip() for h in hashes if h[0] != 0)
            if time.monotonic() > deadline:
                diagnosis = await self.diagnose(writes)
                self.fail(f"NO CONVERGENCE within {timeout:.0f} s after healing everything: {last}\n    {diagnosis}")
            await self.sleep(0.5)


# --------------------------------------------------------------------------------------------
# Scenarios


async def minority_scenario(c, leader, actions):
    """Cut the leader off from both others (silently: its connections stall), write on it and
    on the majority; the isolated write must stay tentative there (never committed anywhere)
    while the majority elects a leader and commits; after healing it commits everywhere."""
    x = c.nodes[leader]
    c.set_blocked(c.both_ways((leader, j) for j in range(N) if j != leader), "stall")
    actions.append(f"minority[iso{leader}]")
    iso_cid = await c.put(x, "minority", f"isolated-{c.seed}")
    maj = c.nodes[(leader + 1) % N]
    maj_cid = await c.put(maj, "majority", f"majority-{c.seed}")
    end = time.monotonic() + MINORITY_HOLD
    while time.monotonic() < end:
        await c.check_all("minority")
        entries = await c.read_log(x)
        if entries is not None:
            mine = [e for e in entries if e.get("cid") == iso_cid]
            if not mine or mine[0].get("status") == "committed":
                c.fail(f"MINORITY: the write {iso_cid} on isolated {x.name} is "
                       f"{'missing' if not mine else 'committed at seq ' + str(mine[0].get('seq'))} while isolated")
        await c.sleep(0.25)
    # The majority elects a leader of its own and commits its write (bounded).
    others = [n for n in c.nodes if n is not x]
    deadline = time.monotonic() + 20
    while True:
        logs = await asyncio.gather(*(c.read_log(n) for n in others))
        if all(e is not None and any(r.get("cid") == maj_cid and r.get("status") == "committed" for r in e)
               for e in logs):
            break
        if time.monotonic() > deadline:
            c.fail(f"MINORITY: the majority {[n.name for n in others]} did not commit {maj_cid} within 20 s")
        await c.check_all("minority")
        await c.sleep(0.3)
    entries = await c.read_log(x)
    mine = [e for e in entries or [] if e.get("cid") == iso_cid]
    if not mine or mine[0].get("status") == "committed":
        c.fail(f"MINORITY: the write on isolated {x.name} is not tentative there after the majority committed")
    c.heal_all()
    actions.append("heal")
    started = time.monotonic()
    while not await c.committed_everywhere([iso_cid, maj_cid]):
        if time.monotonic() - started > 30:
            c.fail(f"MINORITY: after healing, {iso_cid} (written on {x.name}) did not commit everywhere within 30 s")
        await c.check_all("minority-heal")
        await c.sleep(0.3)
    return [iso_cid, maj_cid], time.monotonic() - started


async def inherited_scenario(c, leader, actions):
    """Deterministic: a leader's assignment reaches both followers but their acknowledgements do
    not reach it (it is deaf); then it is cut off entirely, the followers elect a leader that
    inherits the uncommitted assignment, and everything heals. With no further write, the
    receipt must still commit everywhere (Raft commits inherited entries only together with an
    entry of the new leader's own term, so a new leader needs something of its own to commit)."""
    lnode = c.nodes[leader]
    followers = [n for n in c.nodes if n is not lnode]
    old_term = (await c.sequencer_views())[leader].get("term") or 0
    c.set_blocked({(f.index, leader) for f in followers}, "stall")
    actions.append(f"inherited[deaf{leader}]")
    cid = await c.put(lnode, "inherited", f"inherited-{c.seed}")
    started = time.monotonic()
    while True:  # both followers persist the assignment (§18.5), which the leader cannot learn
        tables = [c.sequencer_tables(f) for f in followers]
        if all(t and any(row[1] == cid for row in t[2]) for t in tables):
            break
        if time.monotonic() - started > 15:
            c.fail(f"INHERITED: the followers did not store the deaf leader's assignment of {cid} within 15 s: "
                   f"{[t[2][-3:] if t else None for t in tables]}")
        await c.check_all("inherited")
        await c.sleep(0.2)
    seq = next(row[0] for row in c.sequencer_tables(followers[0])[2] if row[1] == cid)
    # Cut off entirely, its connections reset: the acknowledgements waiting in the proxy are
    # lost (as when a long partition times the TCP connections out) and it never commits.
    c.set_blocked(c.both_ways((leader, f.index) for f in followers), "reset")
    actions.append(f"iso{leader}/r")
    started = time.monotonic()
    new_leader = None
    while new_leader is None:
        views = await c.sequencer_views()
        new_leader = next((f for f in followers if views[f.index] and views[f.index].get("role") == "leader"
                           and (views[f.index].get("term") or 0) > old_term), None)
        if time.monotonic() - started > 15:
            c.fail(f"INHERITED: the followers elected no leader within 15 s: {json.dumps(views)}")
        await c.check_all("inherited")
        await c.sleep(0.2)
    await c.sleep(1.0)
    c.heal_all()
    actions.append("heal")
    started = time.monotonic()
    while not await c.committed_everywhere([cid]):
        if time.monotonic() - started > 20:
            diagnosis = await c.diagnose([cid])
            c.fail(f"INHERITED ENTRY NEVER COMMITS: receipt {cid}, assigned seq {seq} by leader {lnode.name} "
                   f"(term {old_term}) and stored by both followers, is still not committed everywhere 20 s after "
                   f"healing; {new_leader.name} became leader of a later term and holds it uncommitted.\n    {diagnosis}")
        await c.check_all("inherited-heal")
        await c.sleep(0.3)
    return [cid], time.monotonic() - started


async def run_schedule(peerlog, workdir, index, seed, steps, minority, inherited=False):
    rng = random.Random(seed)
    c = Cluster(peerlog, workdir, seed, rng)
    actions = []
    writes = []
    t0 = time.monotonic()
    try:
        leader = await c.setup()
        setup_s = time.monotonic() - t0
        await c.check_all("setup")
        base_commits = len(c.seq_cid)
        c.start_poller()
        minority_note = ""
        if minority:
            cids, heal_s = await minority_scenario(c, leader, actions)
            writes += cids
            minority_note = f" minority-check ok (isolated write committed {heal_s:.1f} s after heal);"
        if inherited:
            leader = await c.wait_leader(20)
            if leader is None:
                c.fail("no leader before the inherited-entry check")
            cids, heal_s = await inherited_scenario(c, leader, actions)
            writes += cids
            minority_note += f" inherited-entry check ok ({heal_s:.1f} s after heal);"
        crashed = None
        key_count = rng.randint(2, 4)
        phase_end = time.monotonic() + STEP_PHASE_BUDGET
        for step in range(steps):
            if time.monotonic() > phase_end:
                actions.append("(step budget reached)")
                break
            live = [n for n in c.nodes if n.alive]
            choices = [("put", 32), ("wait", 20), ("partition", 14), ("heal", 10), ("drop", 6)]
            if crashed is None:
                choices.append(("crash", 8))
            else:
                choices.append(("restart", 14))
            kinds, weights = zip(*choices)
            kind = rng.choices(kinds, weights)[0]
            if kind == "put":
                node = rng.choice(live)
                key = f"k{rng.randrange(key_count)}"
                writes.append(await c.put(node, key, f"s{seed}-{step}"))
                actions.append(f"put{node.index}{'*' if c.cut_off(node.index) else ''}")
            elif kind == "wait":
                t = round(rng.uniform(0.2, 1.5), 1)
                actions.append(f"w{t}")
                await c.sleep(t)
            elif kind == "partition":
                # A new partition replaces the current one.
                mode = rng.choice(["reset", "stall"])
                shape = rng.choices(["iso", "cut", "deaf", "mute", "oneway"], [45, 20, 12, 12, 11])[0]
                if shape == "iso":
                    i = rng.randrange(N)
                    flows = c.both_ways((i, j) for j in range(N) if j != i)
                    actions.append(f"iso{i}/{mode[0]}")
                elif shape == "cut":
                    i, j = sorted(rng.sample(range(N), 2))
                    flows = c.both_ways([(i, j)])
                    actions.append(f"cut{i}{j}/{mode[0]}")
                elif shape == "deaf":  # i sends, hears nothing
                    i = rng.randrange(N)
                    flows, mode = {(j, i) for j in range(N) if j != i}, "stall"
                    actions.append(f"deaf{i}")
                elif shape == "mute":  # i hears, nothing it sends arrives
                    i = rng.randrange(N)
                    flows, mode = {(i, j) for j in range(N) if j != i}, "stall"
                    actions.append(f"mute{i}")
                else:
                    i, j = rng.sample(range(N), 2)
                    flows, mode = {(i, j)}, "stall"
                    actions.append(f"ow{i}>{j}")
                c.set_blocked(flows, mode)
            elif kind == "heal":
                c.heal_all()
                actions.append("heal")
            elif kind == "drop":
                # Reset the connections of one link both of whose directions pass.
                i, j = rng.sample(range(N), 2)
                if (i, j) not in c.blocked and (j, i) not in c.blocked:
                    c.links[(i, j)].drop()
                    actions.append(f"drop{i}{j}")
                else:
                    actions.append(f"(drop{i}{j}: cut)")
            elif kind == "crash":
                node = rng.choice(c.nodes)
                await c.kill_daemon(node)
                crashed = node
                actions.append(f"crash{node.index}")
            elif kind == "restart":
                await c.start_daemon(crashed)
                actions.append(f"up{crashed.index}")
                crashed = None
            await c.check_all(f"step {step} ({actions[-1]})")
        # Heal everything, restart what is down, and converge.
        c.heal_all()
        for node in c.nodes:
            if not node.alive:
                await c.start_daemon(node)
        converge_s, length = await c.converge(writes, CONVERGE_TIMEOUT)
        c.raise_if_failed()
        commits = len(c.seq_cid) - base_commits
        committed_writes = sum(1 for w in writes if w in {cid for cid, _ in c.seq_cid.values()})
        if writes and committed_writes == 0:
            c.fail("LIVENESS: no write of the schedule committed")
        if not writes:
            # A schedule without a write still must show the group can commit one.
            cid = await c.put(c.nodes[0], "liveness", f"s{seed}")
            await c.converge([cid], CONVERGE_TIMEOUT)
            committed_writes = 1
            commits = len(c.seq_cid) - base_commits
        total = time.monotonic() - t0
        log(f"schedule {index} seed {seed}: ok in {total:.1f} s (setup {setup_s:.1f} s, converged {converge_s:.1f} s "
            f"after heal);{minority_note} writes {len(writes)}, committed {committed_writes}, new seqs {commits} "
            f"(log length {length}), leader terms seen {len(c.leaders)}, polls {c.polls}, "
            f"proxied connections {sum(link.accepted for link in c.links.values())}, unreadable logs {c.read_errors}")
        log(f"  actions: {' '.join(actions)}")
        return {"seconds": total, "commits": commits, "converge": converge_s}
    except HarnessFailure as e:
        c.failure = c.failure or str(e)
        log(f"schedule {index} seed {seed}: FAILED after {time.monotonic() - t0:.1f} s")
        log(f"  {c.failure}")
        log(f"  actions: {' '.join(actions)}")
        log(f"  blocked flows at failure: {c.describe_blocked()}; "
            f"alive: {[n.name for n in c.nodes if n.alive]}")
        for node in c.nodes:
            log(f"  --- {node.name} ({node.device[:12]}…, port {node.port}) daemon stderr tail "
                f"({node.stderr_path}):")
            for line in node.stderr_tail().splitlines():
                log(f"    {line}")
        raise
    finally:
        await c.teardown()


async def main_async(args):
    peerlog = os.path.abspath(args.peerlog)
    if not os.access(peerlog, os.X_OK):
        log(f"partition harness: {peerlog} is not executable (swift build first)")
        return 2
    own_workdir = args.workdir is None
    root = tempfile.mkdtemp(prefix="peerlog-partition-") if own_workdir else os.path.abspath(args.workdir)
    os.makedirs(root, exist_ok=True)
    log(f"partition harness: {args.schedules} schedules from seed {args.seed}, {args.steps} steps each, "
        f"workdir {root}")
    results = []
    failed = False
    try:
        for k in range(args.schedules):
            seed = args.seed + k
            workdir = os.path.join(root, f"schedule-{seed}")
            if os.path.exists(workdir):
                shutil.rmtree(workdir)
            os.makedirs(workdir)
            minority = args.minority == "all" or (args.minority == "first" and k == 0)
            try:
                inherited = args.inherited_check == "all" or (args.inherited_check == "first" and k == 0)
                results.append(await run_schedule(peerlog, workdir, k, seed, args.steps, minority, inherited))
            except HarnessFailure:
                failed = True
                log(f"partition harness: FAILED (schedule {k}, seed {seed}); rerun with "
                    f"--seed {seed} --schedules 1; daemon logs kept in {workdir}")
                return 1
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        total = sum(r["seconds"] for r in results)
        log(f"partition harness: {len(results)} schedules passed (seeds {args.seed}..{args.seed + args.schedules - 1}, "
            f"{sum(r['commits'] for r in results)} commits, max convergence {max(r['converge'] for r in results):.1f} s, "
            f"{total:.0f} s total)")
        return 0
    finally:
        _kill_all_pids()
        if own_workdir and not failed and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description="Partition/crash fault-injection harness for Peerlog's elected sequencer.")
    p.add_argument("--peerlog", required=True, help="path to the peerlog binary")
    p.add_argument("--schedules", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--workdir", help="directory for the homes (default: a new temporary one, removed on success)")
    p.add_argument("--keep", action="store_true", help="keep the homes and daemon logs of passing schedules")
    p.add_argument("--minority", choices=["first", "all", "none"], default="first",
                   help="run the explicit minority check before the first schedule (default), all, or none")
    p.add_argument("--inherited-check", choices=["first", "all", "none"], default="none",
                   help="also run the deterministic inherited-entry scenario (a deaf, then isolated leader's "
                        "replicated but uncommitted write must commit after healing with no further write)")
    args = p.parse_args()

    def terminate(signum, frame):
        _kill_all_pids(reap=False)
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, terminate)
    try:
        rc = asyncio.run(main_async(args))
    except KeyboardInterrupt as e:
        _kill_all_pids()
        log(f"partition harness: interrupted ({e})")
        rc = 130
    sys.exit(rc)


if __name__ == "__main__":
    main()
