import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Real `peerlog daemon` processes on loopback: they sync shared groups after being apart.
@Suite(.serialized)
struct DaemonTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @discardableResult
    func ok(_ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try expectPeerlog(args, sourceLocation: sourceLocation)
    }

    func json(_ args: String...) throws -> JSON { try peerlogJSON(args) }

    func person(_ name: String) throws -> (home: String, identity: String) { try makePerson(name, in: dir) }

    func hashes(_ home: String, _ group: String) throws -> String {
        try ok("state-hash", "--home", home, group)
    }

    func status(_ home: String) throws -> JSON { try json("status", "--home", home) }

    /// Waits until every home prints the same state hashes and none holds tentative receipts.
    func converged(_ homes: [String], _ group: String, timeout: TimeInterval = 60) throws -> Bool {
        try TestSupport.waitUntil(timeout: timeout) {
            let all = try homes.map { try TestSupport.peerlog(["state-hash", "--home", $0, group]).stdout }
            let logs = try homes.map { try TestSupport.peerlog(["log", "--home", $0, group, "--json"]).stdout }
            return Set(all).count == 1 && !all[0].isEmpty && !logs.contains { $0.contains("\"tentative\"") }
        }
    }

    /// A group owned by `owner` with the others invited; the invitees' daemons let the owner in
    /// for pairing, receive the group by sync and accept.
    func sharedGroup(
        owner: (home: String, identity: String), others: [(home: String, identity: String)]
    ) throws -> String { try makeSharedGroup(owner: owner, others: others) }

    @Test func twoDaemonsConvergeAfterWritingApart() throws {
        let a = try person("alice")
        let b = try person("bob")
        let group = try sharedGroup(owner: a, others: [b])
        // Bob's daemon lets Alice in for pairing: he holds no group with her yet.
        var da: DaemonProcess? = try DaemonProcess(home: a.home)
        var db: DaemonProcess? = try DaemonProcess(
            home: b.home, arguments: ["--peer", da!.address, "--allow", a.identity])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["group", "show", "--home", b.home, group]).status) == 0
            }, "bob never received the group: \(db!.stderr)")
        try ok("group", "accept", "--home", b.home, group)
        #expect(try converged([a.home, b.home], group), "no convergence after accept\n\(da!.stderr)\n\(db!.stderr)")

        // Apart: both write.
        da!.stop()
        db!.stop()
        da = nil
        db = nil
        for i in 0..<20 {
            try ok("put", "--home", a.home, group, "a\(i)", "\(i)")
            try ok("put", "--home", b.home, group, "b\(i)", "\(i)")
        }
        try ok("put", "--home", a.home, group, "shared", "\"from alice\"")
        try ok("put", "--home", b.home, group, "shared", "\"from bob\"")
        #expect(try hashes(a.home, group) != hashes(b.home, group))

        // Together again (Bob dials; Alice's port is new).
        da = try DaemonProcess(home: a.home)
        db = try DaemonProcess(home: b.home, arguments: ["--peer", da!.address])
        #expect(try converged([a.home, b.home], group), "no convergence after reconnect\n\(da!.stderr)\n\(db!.stderr)")
        #expect(try ok("get", "--home", b.home, group, "a19", "--committed") == "19\n")
        #expect(try ok("get", "--home", a.home, group, "b19", "--committed") == "19\n")

        // --watch without a terminal: one plain line per group and update, bounded by --count.
        let watch = try ok("status", "--home", b.home, "--watch", "--count", "2", "--interval", "0.2")
        let lines = watch.split(separator: "\n").filter { $0.contains(group) }
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("in sync") }, "\(watch)")

        let st = try status(b.home)
        guard case .array(let peers)? = st["peers"], let first = peers.first else {
            Issue.record("no peers in status: \(st)")
            return
        }
        #expect(first["state"] == .string("connected"))
        // Bob has a connected static peer: SIGTERM must still end him promptly and cleanly.
        #expect(db!.stop(grace: 5) == 0, "the dialing daemon did not exit cleanly on SIGTERM: \(db!.stderr)")
        #expect(da!.stop(grace: 5) == 0, "daemons did not exit cleanly")
    }
}

extension DaemonTests {
    /// Three daemons, two of which dial each other at once (one connection must survive),
    /// converge; one is cut off, everyone writes, it comes back and all three converge.
    @Test func threeDaemonsConvergeAndKeepOneConnectionPerPair() throws {
        let a = try person("ann")
        let b = try person("ben")
        let c = try person("cat")
        let group = try sharedGroup(owner: a, others: [b, c])
        let (pa, pb, pc) = (try TestSupport.freePort(), try TestSupport.freePort(), try TestSupport.freePort())
        let da = try DaemonProcess(home: a.home, listenPort: pa)
        defer { da.stop() }
        let db = try DaemonProcess(
            home: b.home, listenPort: pb,
            arguments: ["--peer", "127.0.0.1:\(pa)", "--peer", "127.0.0.1:\(pc)", "--allow", a.identity])
        defer { db.stop() }
        var dc: DaemonProcess? = try DaemonProcess(
            home: c.home, listenPort: pc,
            arguments: ["--peer", "127.0.0.1:\(pa)", "--peer", "127.0.0.1:\(pb)", "--allow", a.identity])
        defer { dc?.stop() }
        for p in [b, c] {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "show", "--home", p.home, group]).status) == 0
                }, "the group never reached \(p.home)")
            try ok("group", "accept", "--home", p.home, group)
        }
        #expect(
            try converged([a.home, b.home, c.home], group), "no convergence\n\(da.stderr)\n\(db.stderr)\n\(dc!.stderr)")

        // Cat is cut off; everyone writes.
        dc!.stop()
        dc = nil
        for i in 0..<10 {
            try ok("put", "--home", a.home, group, "ann\(i)", "\(i)")
            try ok("put", "--home", b.home, group, "ben\(i)", "\(i)")
            try ok("put", "--home", c.home, group, "cat\(i)", "\(i)")
        }
        dc = try DaemonProcess(
            home: c.home, listenPort: pc, arguments: ["--peer", "127.0.0.1:\(pa)", "--peer", "127.0.0.1:\(pb)"])
        #expect(
            try converged([a.home, b.home, c.home], group),
            "no convergence after the cut\n\(da.stderr)\n\(db.stderr)\n\(dc!.stderr)")

        // Ben and Cat dialed each other: exactly one live connection between them, on both sides.
        let catDevice = try json("id", "--home", c.home)["device"]
        let benDevice = try json("id", "--home", b.home)["device"]
        func connections(_ home: String, to device: JSON?) throws -> Int {
            guard case .array(let peers)? = try status(home)["peers"] else { return -1 }
            return peers.filter { $0["device"] == device && $0["state"] == .string("connected") }.count
        }
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? connections(b.home, to: catDevice)) == 1 && (try? connections(c.home, to: benDevice)) == 1
            },
            "ben sees \((try? connections(b.home, to: catDevice)) ?? -1), cat sees \((try? connections(c.home, to: benDevice)) ?? -1) connections\n\(db.stderr)\n\(dc!.stderr)"
        )
    }
}

extension DaemonTests {
    /// Issue 22, bug 2, and issue 33: a member removed while its connection is up is sent its
    /// removal and nothing written after it, knows it (its writes are refused at once), and is
    /// told why; a group the two still share keeps syncing over the same connection.
    @Test func aMemberRemovedWhileConnectedGetsNothingMoreAndIsToldWhy() throws {
        let a = try person("alice")
        let b = try person("bob")
        let team = try sharedGroup(owner: a, others: [b])
        let other =
            try JSON.parse(try ok("group", "create", "--home", a.home, "other", "--json"))["id"].flatMap {
                if case .string(let s) = $0 { s } else { nil }
            } ?? ""
        try ok("group", "add", "--home", a.home, other, b.identity)
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { db.stop() }
        for g in [team, other] {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "show", "--home", b.home, g]).status) == 0
                }, "bob never received \(g)")
            try ok("group", "accept", "--home", b.home, g)
        }
        #expect(
            try converged([a.home, b.home], team) && converged([a.home, b.home], other),
            "no convergence\n\(da.stderr)\n\(db.stderr)")

        try ok("group", "remove", "--home", a.home, team, b.identity)
        #expect(
            TestSupport.waitUntil(timeout: 60) { db.stderr.contains("stopped syncing group \(team) with us") },
            "bob was not told\n\(db.stderr)")
        #expect(db.stderr.contains("not a member of group \(team)"), "bob is told why\n\(db.stderr)")
        try ok("put", "--home", a.home, team, "after", "1")
        // Bob received the signed removal before the "unshared" (issue 33): his own view says he
        // was removed, so his write is refused at once instead of waiting for a seq forever.
        let bobWrite = try TestSupport.peerlog(["put", "--home", b.home, team, "bob-after", "2"])
        #expect(
            bobWrite.status != 0 && bobWrite.stderr.contains("member")
                && bobWrite.stderr.split(separator: "\n").count == 1, "\(bobWrite.stderr)")
        Thread.sleep(forTimeInterval: 2)
        try ok("put", "--home", a.home, team, "later", "3")
        try ok("put", "--home", a.home, other, "still", "4")
        // The other group still syncs over the same connection...
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["get", "--home", b.home, other, "still"]).status) == 0
            }, "the shared group stopped syncing\n\(db.stderr)")
        // ...and by then nothing of the team written after the removal reached Bob, nor his write Alice.
        for key in ["after", "later"] {
            #expect(try TestSupport.peerlog(["get", "--home", b.home, team, key]).status == 1, "\(key) reached bob")
        }
        #expect(
            try TestSupport.peerlog(["get", "--home", a.home, team, "bob-after"]).status == 1,
            "bob's refused write reached alice")
        #expect(da.stderr.contains("stopped syncing group \(team) with "), "alice logs the withdrawal\n\(da.stderr)")
    }
}
