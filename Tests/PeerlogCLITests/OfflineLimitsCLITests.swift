import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Offline limits through the real `peerlog` binary (docs/PROTOCOL.md §10.5): a member whose
/// writes wait for the owner's sequencer, at N-1, N and N+1 for the count, across the age
/// limit, with exit status 75 and one line, and `status` showing the headroom.
@Suite(.serialized)
struct OfflineLimitsCLITests {
    static let exitStatus: Int32 = 75

    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// Alice owns and sequences "trip"; Bob is a member whose acceptance (one write) waits.
    func trip() throws -> (alice: String, bob: String) {
        let (alice, _) = try makePerson("alice", in: dir)
        let (bob, bobID) = try makePerson("bob", in: dir)
        try expectPeerlog(["group", "create", "trip", "--home", alice, "--plaintext"])
        try expectPeerlog(["group", "add", "trip", bobID, "--home", alice])
        try sync(from: alice, to: bob)
        try expectPeerlog(["group", "accept", "trip", "--home", bob])
        return (alice, bob)
    }

    func sync(from: String, to: String) throws {
        let export = dir + "/" + UUID().uuidString + ".export"
        try expectPeerlog(["export", "trip", export, "--home", from])
        try expectPeerlog(["import", export, "--home", to])
    }

    func file(_ text: String) throws -> String {
        let path = dir + "/" + UUID().uuidString + ".jsonl"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func logCount(_ home: String) throws -> Int {
        guard case .array(let items) = try peerlogJSON(["log", "trip", "--home", home]) else { return -1 }
        return items.count
    }

    /// Fails with exit status 75 and one line naming `limit`; nothing is written.
    func expectOffline(
        _ args: [String], _ home: String, naming limit: String, sourceLocation: SourceLocation = #_sourceLocation
    )
        throws
    {
        let before = try logCount(home)
        let r = try TestSupport.peerlog(args + ["--home", home])
        #expect(r.status == Self.exitStatus, "\(args): \(r.status) \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(
            r.stderr.contains(limit) && r.stderr.contains("nothing was written"), "\(r.stderr)",
            sourceLocation: sourceLocation)
        #expect(try logCount(home) == before, "nothing written", sourceLocation: sourceLocation)
    }

    func headroom(_ home: String) throws -> JSON { try peerlogJSON(["group", "limits", "trip", "--home", home]) }

    @Test func theCountLimitAtItsBoundaryThenWritesPassOnceCommitted() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (alice, bob) = try trip()
        let set = try peerlogJSON(["group", "limits", "trip", "--max-waiting", "3", "--home", bob])
        #expect(
            set["waiting"] == .int(1) && set["max_waiting"] == .int(3) && set["max_waiting_overridden"] == .bool(true)
                && set["max_age_ms"] == .int(30 * 86_400_000), "\(set)")
        try expectPeerlog(["put", "trip", "k1", "v", "--home", bob])  // N-1 = 2 waiting
        // A batch that would make 4 is refused whole, naming the limit.
        let two = try file(#"{"key": "b1", "value": 1}"# + "\n" + #"{"key": "b2", "value": 2}"#)
        try expectOffline(["put", "trip", "--batch", two], bob, naming: "maxWaitingLocalWrites")
        try expectPeerlog(["put", "trip", "k2", "v", "--home", bob])  // N = 3 waiting
        #expect(try headroom(bob)["waiting"] == .int(3))
        // N+1: a put, a delete and a batch of one are refused.
        try expectOffline(["put", "trip", "k3", "v"], bob, naming: "maxWaitingLocalWrites")
        try expectOffline(["delete", "trip", "k1"], bob, naming: "maxWaitingLocalWrites")
        try expectOffline(
            ["put", "trip", "--batch", try file(#"{"key": "b", "value": 1}"#)], bob, naming: "offline limit of 3")
        let text = try expectPeerlog(["group", "limits", "trip", "--home", bob])
        #expect(text.contains("3 of 3 own writes waiting (0 left)"), "\(text)")

        // The owner's sequencer commits them; Bob learns of it and writes again.
        try sync(from: bob, to: alice)
        try sync(from: alice, to: bob)
        #expect(try headroom(bob)["waiting"] == .int(0))
        #expect(try headroom(bob)["oldest_age_ms"] == .null)
        try expectPeerlog(["put", "trip", "k3", "v", "--home", bob])
        #expect(try headroom(bob)["waiting"] == .int(1))
        let check = try peerlogJSON(["check", "--home", bob])
        guard case .array(let groups)? = check["groups"] else {
            Issue.record("\(check)")
            return
        }
        #expect(
            check["consistent"] == .bool(true) && groups.first?["waiting_counts"] == .string("matches"), "\(check)")

        // Settings that cannot be used are one line and exit 1.
        for bad in [
            ["--max-waiting", "1.5"], ["--max-waiting", "x"], ["--max-waiting-age", "5x"], ["--max-waiting-age", "d"],
        ] {
            let r = try TestSupport.peerlog(["group", "limits", "trip", "--home", bob] + bad)
            #expect(r.status == 1 && r.stderr.split(separator: "\n").count == 1, "\(bad): \(r.stderr)")
        }
    }

    @Test func theAgeLimitRefusesOnceTheOldestWaitingWriteIsTooOld() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (_, bob) = try trip()
        // Bob's acceptance waits already: the age counts from it. 20 s leaves room for two
        // process starts on a busy machine before the early write, which must pass.
        let set = try peerlogJSON(["group", "limits", "trip", "--max-waiting-age", "20s", "--home", bob])
        #expect(set["max_age_ms"] == .int(20_000) && set["max_age_overridden"] == .bool(true), "\(set)")
        try expectPeerlog(["put", "trip", "early", "v", "--home", bob])
        #expect(
            TestSupport.waitUntil(timeout: 80) {
                guard case .number(let text)? = try? headroom(bob)["oldest_age_ms"], let age = Int(text) else {
                    return false
                }
                return age > 20_000
            })
        try expectOffline(["put", "trip", "late", "v"], bob, naming: "maxWaitingLocalAgeMillis")
        // Back to the default (30 days), the same write passes.
        let reset = try peerlogJSON(["group", "limits", "trip", "--max-waiting-age", "default", "--home", bob])
        #expect(reset["max_age_overridden"] == .bool(false) && reset["max_age_ms"] == .int(30 * 86_400_000))
        try expectPeerlog(["put", "trip", "late", "v", "--home", bob])
    }

    /// Bob's tentative receipts in his own log, counted one by one: what the kept count must say.
    func ownTentative(_ home: String) throws -> Int {
        guard case .string(let device)? = try peerlogJSON(["id", "--home", home])["device"],
            case .array(let items) = try peerlogJSON(["log", "trip", "--home", home])
        else { return -1 }
        return items.count { $0["status"] == .string("tentative") && $0["author"] == .string(device) }
    }

    @Test func aBatchKilledMidwayLeavesTheKeptCountEqualToTheLog() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (_, bob) = try trip()
        let size = 3_000
        let batch = try file((0..<size).map { #"{"key": "k\#($0)", "value": \#($0)}"# }.joined(separator: "\n"))
        var rng = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["PEERLOG_SEED"] ?? "") ?? 18)
        var before = try ownTentative(bob)
        #expect(before == 1, "the acceptance waits")
        for round in 0..<3 {
            // Some kills land inside the batch's transaction, some after it.
            _ = try TestSupport.peerlogKilled(
                ["put", "trip", "--batch", batch, "--home", bob],
                after: UInt32.random(in: 100_000...2_000_000, using: &rng))
            let counted = try ownTentative(bob)
            #expect(counted == before || counted == before + size, "round \(round): \(counted - before) of \(size)")
            #expect(try headroom(bob)["waiting"] == .int(counted), "round \(round): the kept count is the log's")
            before = counted
        }
    }

    @Test func statusShowsTheHeadroomPerGroup() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (_, bob) = try trip()
        try expectPeerlog(["group", "limits", "trip", "--max-waiting", "10", "--home", bob])
        try expectPeerlog(["put", "trip", "k", "v", "--home", bob])
        let daemon = try DaemonProcess(home: bob)
        defer { daemon.stop() }
        let status = try peerlogJSON(["status", "--home", bob])
        guard case .array(let groups)? = status["groups"], let offline = groups.first?["offline"] else {
            Issue.record("no offline headroom in \(status)")
            return
        }
        #expect(offline["waiting"] == .int(2) && offline["maxWaiting"] == .int(10), "\(offline)")
        #expect(offline["maxAgeMs"] == .int(30 * 86_400_000), "\(offline)")
        guard case .number(let ageText)? = offline["oldestAgeMs"], let age = Int(ageText) else {
            Issue.record("no age in \(offline)")
            return
        }
        #expect(age >= 0 && age < 600_000, "\(offline)")
        let text = try expectPeerlog(["status", "--home", bob])
        #expect(text.contains("offline limits: 2 of 10 own writes waiting (8 left); oldest "), "\(text)")
    }
}
