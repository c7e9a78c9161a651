import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// `count` groups owned and sequenced by A with B and C members (invited, accepted), each of
/// `perGroup` receipts (the three membership steps, two acceptances, the rest entity puts).
struct ManyGroupsFixture {
    let a: LocalDevice
    let b: LocalDevice
    let c: LocalDevice
    let groups: [GroupID]
    let receipts: [Receipt]
    let envelopes: [Envelope]

    init(count: Int, perGroup: Int) throws {
        a = try LocalDevice.generate(name: "a", createdAt: 1)
        b = try LocalDevice.generate(name: "b", createdAt: 1)
        c = try LocalDevice.generate(name: "c", createdAt: 1)
        var groups = [GroupID]()
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        for g in 0..<count {
            let group = GroupID.random()
            groups.append(group)
            var hlc: UInt64 = 1
            func sign(_ device: LocalDevice, _ counter: UInt64, _ op: GroupOperation, _ parent: CID?) throws -> Receipt
            {
                hlc += 1
                return try device.sign(op, in: group, counter: counter, after: parent, hlc: hlc)
            }
            let created = try sign(a, 1, .created(name: "list-\(g)", maxMembers: 12), nil)
            let addB = try sign(a, 2, .memberAdded(identity: b.identity, role: .member), created.cid)
            let addC = try sign(a, 3, .memberAdded(identity: c.identity, role: .member), addB.cid)
            var mine = [created, addB, addC]
            mine.append(try sign(b, 1, .inviteAccepted, addC.cid))
            mine.append(try sign(c, 1, .inviteAccepted, addC.cid))
            var last = addC.cid
            for i in 0..<max(0, perGroup - mine.count) {
                let r = try sign(a, UInt64(4 + i), .entityPut(key: "item-\(i)", value: .text("value \(i)")), last)
                last = r.cid
                mine.append(r)
            }
            receipts += mine
            envelopes += try EnvelopeRun.signRuns(
                group: group, firstSeq: 1, receipts: mine.map(\.cid), term: 0, receivedAt: 1, key: a.signingKey)
        }
        self.groups = groups
        self.receipts = receipts
        self.envelopes = envelopes
    }
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func cpuSeconds(_ pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Bytes a process has passed to write calls so far (`wchar` of /proc/PID/io): what it wrote to
/// files and sockets, whether or not the page cache ever sent it to a disk.
func bytesWritten(_ pid: Int32) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("wchar:") {
        return Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

/// Three daemons on loopback sharing `count` groups (issue 37, item 5): the time from starting B
/// and C until both hold every group A holds, their idle CPU and RSS once caught up, and the
/// time one write in one group on A takes to reach both (A's store written by this process, its
/// daemon told through the control socket as the CLI does). Run for 1 group and for `count`.
/// `samples` writes each: the p99 of 50 was their maximum, one slow write deciding the ratio of
/// the two p99s; of 500 it is the fifth slowest.
func groupsBench(count: Int, perGroup: Int = 10, samples: Int = 500) throws {
    _ = try BenchDaemon.binary
    print("3 daemons on loopback share G groups of \(perGroup) receipts (A sequences; B and C dial A, C dials B)")
    var p99ByCount = [Int: Double]()
    for g in Array(Set([1, count])).sorted() {
        let dir = NSTemporaryDirectory() + "peerlog-groups-\(getpid())-\(g)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let f = try ManyGroupsFixture(count: g, perGroup: perGroup)
        for (name, device) in [("a", f.a), ("b", f.b), ("c", f.c)] {
            try FileManager.default.createDirectory(atPath: dir + "/" + name, withIntermediateDirectories: true)
            try device.save(home: dir + "/" + name)
        }
        let a = try Replica(path: dir + "/a/replica.sqlite", device: f.a)
        _ = try a.ingest(receipts: f.receipts, envelopes: f.envelopes)
        let expected = try f.groups.map { try a.committedSeq(of: $0) }

        let clock = ContinuousClock()
        print("  (G = \(g): A holds every group; starting the daemons)")
        fflush(nil)
        let da = try BenchDaemon(home: dir + "/a", ["--allow", f.b.identity.string, "--allow", f.c.identity.string])
        defer { da.stop() }
        let began = clock.now
        let db = try BenchDaemon(
            home: dir + "/b",
            ["--peer", da.address, "--allow", f.a.identity.string, "--allow", f.c.identity.string])
        defer { db.stop() }
        let dc = try BenchDaemon(
            home: dir + "/c",
            [
                "--peer", da.address, "--peer", db.address, "--allow", f.a.identity.string, "--allow",
                f.b.identity.string,
            ])
        defer { dc.stop() }
        let b = try Replica(path: dir + "/b/replica.sqlite", device: f.b)
        let c = try Replica(path: dir + "/c/replica.sqlite", device: f.c)
        // What each receiver still lacks; a group caught up stays so, so each poll reads only
        // from the first group still behind (polling costs O(G) in all, not per poll).
        var behind = [(b, Array(zip(f.groups, expected))), (c, Array(zip(f.groups, expected)))]
        func caughtUp() -> Bool {
            for i in behind.indices {
                let r = behind[i].0
                let done = behind[i].1.prefix { group, seq in ((try? r.committedSeq(of: group)) ?? 0) >= seq }
                behind[i].1.removeFirst(done.count)
            }
            return behind.allSatisfy { $0.1.isEmpty }
        }
        while !caughtUp() {
            guard clock.now - began < .seconds(300) else { throw BenchError("B and C did not catch up within 300 s") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let catchUp = seconds(clock.now - began)
        let catchUpCPU = [da, db, dc].map { cpuSeconds($0.process.processIdentifier) }

        // Idle: every group caught up, nothing written, for 10 s.
        print("  (G = \(g): caught up after \(String(format: "%.2f", catchUp)) s; idle for 12 s)")
        fflush(nil)
        Thread.sleep(forTimeInterval: 2)
        let pids = [da, db, dc].map { $0.process.processIdentifier }
        let before = pids.map(cpuSeconds)
        let idleStart = clock.now
        Thread.sleep(forTimeInterval: 10)
        let idleSeconds = seconds(clock.now - idleStart)
        let idle = zip(pids, before).map { (cpuSeconds($0) - $1) / idleSeconds * 100 }
        let rss = pids.map { ProcessMemory.status($0)["VmRSS"] ?? 0 }

        // One write in one group (a different one each time) until B and C both hold it.
        var latencies = [Double]()
        var rng = SystemRandomNumberGenerator()
        for i in 0..<samples {
            let group = f.groups[Int.random(in: 0..<f.groups.count, using: &rng)]
            let start = clock.now
            let seq = try a.append(.entityPut(key: "live-\(i)", value: .int(Int64(i))), to: group).seq ?? 0
            ControlClient.tellWrote(socketPath: dir + "/a/peerlog.sock")
            while try b.committedSeq(of: group) < seq || c.committedSeq(of: group) < seq {
                guard clock.now - start < .seconds(60) else { throw BenchError("a write never reached B and C") }
                Thread.sleep(forTimeInterval: 0.0005)
            }
            latencies.append(seconds(clock.now - start) * 1000)
            Thread.sleep(forTimeInterval: 0.02)
        }
        latencies.sort()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(p * Double(latencies.count)))] }
        p99ByCount[g] = pct(0.99)

        print("G = \(format(Double(g))) groups (\(format(Double(f.receipts.count))) receipts)")
        figure("  start B and C until both hold every group", String(format: "%.2f s", catchUp))
        figure(
            "  CPU used by then (A, B, C)", catchUpCPU.map { String(format: "%.2f s", $0) }.joined(separator: " "))
        figure(
            "  idle CPU per daemon (A, B, C), 10 s",
            idle.map { String(format: "%.2f%%", $0) }.joined(separator: " "))
        figure("  RSS per daemon (A, B, C)", rss.map { mebibytes($0) }.joined(separator: " "))
        figure(
            "  one write on A until B and C hold it",
            String(format: "p50 %.1f, p99 %.1f, max %.1f ms", pct(0.5), pct(0.99), latencies.last!))
    }
    if let one = p99ByCount[1], let many = p99ByCount[count], count > 1 {
        ratio("write p99, \(format(Double(count))) groups / 1 group", many / one)
    }
}
