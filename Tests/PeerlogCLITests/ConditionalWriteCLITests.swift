import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Conditional and merging writes through the CLI (docs/PROTOCOL.md §9.7): exit statuses a
/// script can trust, and two laptops that book the same slot offline in an encrypted group
/// ordered by a relay that cannot read it.
@Suite(.serialized)
struct ConditionalWriteCLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func string(_ j: JSON?) -> String? { if case .string(let s)? = j { s } else { nil } }

    /// A solo home sequences its own writes: every outcome is known at once.
    @Test func exitStatusesTellRejectedAtCommitFromErrors() throws {
        let home = dir + "/solo"
        try expectPeerlog(["init", "--home", home, "--name", "solo"])
        let group = try #require(string(try peerlogJSON(["group", "create", "--home", home, "team"])["id"]))
        func run(_ args: [String]) throws -> TestSupport.ProcessResult {
            try TestSupport.peerlog(Array(args.prefix(1)) + ["--home", home] + Array(args.dropFirst()))
        }
        // A claim, then a second claim of the same key: 0, then 3 with the reason.
        let first = try run(["put", group, "name/ann", "laptop-1", "--if-absent", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let firstCID = try #require(string(try JSON.parse(first.stdout)["cid"]))
        let second = try run(["put", group, "name/ann", "laptop-2", "--if-absent"])
        #expect(second.status == 3, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("condition 1 failed: \"name/ann\" holds a value"), "\(second.stdout)")
        #expect(try run(["get", group, "name/ann"]).stdout == "laptop-1\n")
        // A version condition: passes with the version read, fails once it moved.
        #expect(try run(["put", group, "name/ann", "laptop-3", "--if-version", firstCID]).status == 0)
        #expect(try run(["delete", group, "name/ann", "--if-version", firstCID]).status == 3)
        #expect(try run(["delete", group, "name/ann", "--if-value", "laptop-3"]).status == 0)
        #expect(try run(["get", group, "name/ann"]).status != 0)
        // Counters, sets and records.
        #expect(try run(["incr", group, "visits"]).status == 0)
        #expect(try run(["incr", group, "visits", "--by", "-5"]).status == 0)
        #expect(try run(["get", group, "visits"]).stdout == "-4\n")
        #expect(try run(["set-add", group, "tags", "b", "a", "b"]).status == 0)
        #expect(try run(["set-remove", group, "tags", "b"]).status == 0)
        #expect(try run(["set-add", group, "tags", "--json-value", "7"]).status == 0)
        #expect(try run(["get", group, "tags"]).stdout == "[7,\"a\"]\n")
        #expect(try run(["merge", group, "card", "title=x", "--json-value", "done=true"]).status != 0)  // not JSON
        #expect(try run(["merge", group, "card", "title=\"x\"", "done=true", "--json-value"]).status == 0)
        #expect(try run(["merge", group, "card", "--remove", "done"]).status == 0)
        #expect(try run(["get", group, "card"]).stdout == "{\"title\":\"x\"}\n")
        // A counter on a set is rejected at commit, and nothing changes.
        let wrongKind = try run(["incr", group, "tags", "--json"])
        #expect(wrongKind.status == 3)
        #expect(try JSON.parse(wrongKind.stdout)["outcome"] == .string("rejected"))
        #expect(try run(["get", group, "tags"]).stdout == "[7,\"a\"]\n")
        // write-status reads it back later: 0 committed, 3 rejected, 1 unknown.
        #expect(try run(["write-status", firstCID]).status == 0)
        let rejectedCID = try #require(string(try JSON.parse(wrongKind.stdout)["cid"]))
        let status = try run(["write-status", rejectedCID, "--json"])
        #expect(status.status == 3)
        #expect(string(try JSON.parse(status.stdout)["reason"])?.contains("not an integer") == true)
        let unknown = try run(["write-status", "bafyreiei2wwqk2ycejyjbjh5tlmp3kewfpxyfvzu2tte63kahbayx2ajqy"])
        #expect(unknown.status == 1 && unknown.stderr.contains("holds no receipt"), "\(unknown.stderr)")
        // Bad input: one error line, exit 1, nothing written.
        let before = try run(["state-hash", group]).stdout
        for bad in [
            ["put", group, "k", "v", "--if-absent", "--if-value", "v"],
            ["put", group, "k", "v", "--if-version", "xyz"],
            ["incr", group, "n", "--by", "x"], ["merge", group, "card", "novalue"], ["set-add", group, "tags"],
            ["put", group, "k", "v", "--timeout", "5"],
        ] {
            let r = try run(bad)
            #expect(r.status != 0 && r.status != 3, "\(bad): \(r.status)")
            #expect(r.stderr.contains("Error"), "\(bad): \(r.stderr)")
        }
        #expect(try run(["state-hash", group]).stdout == before)
    }

    /// `put --batch`: a line's "if" makes it a conditional write of its own; `--atomic` makes
    /// the whole file one write, all or none.
    @Test func batchLinesCarryConditionsAndAtomicIsAllOrNone() throws {
        let home = dir + "/batch"
        try expectPeerlog(["init", "--home", home, "--name", "batch"])
        let group = try #require(string(try peerlogJSON(["group", "create", "--home", home, "team"])["id"]))
        func run(_ args: [String]) throws -> TestSupport.ProcessResult {
            try TestSupport.peerlog(Array(args.prefix(1)) + ["--home", home] + Array(args.dropFirst()))
        }
        let file = dir + "/claims.jsonl"
        try """
        {"key": "seat/1", "value": "ann", "if": "absent"}
        {"key": "seat/2", "value": "ann", "if": "absent"}
        {"key": "note", "value": "plain put"}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try run(["put", group, "--batch", file]).status == 0)
        // Again: both claims are rejected at commit, the plain put applies; exit 3 names the lines.
        let again = try run(["put", group, "--batch", file, "--json"])
        #expect(again.status == 3)
        let summary = try JSON.parse(again.stdout)
        #expect(summary["rejected"] == .int(2) && summary["committed"] == .int(1), "\(again.stdout)")
        // --atomic: seat/3 is free but seat/1 is not, so nothing of it applies.
        try """
        {"key": "seat/3", "value": "bob", "if": "absent"}
        {"key": "seat/1", "value": "bob", "if": "absent"}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let atomic = try run(["put", group, "--batch", file, "--atomic"])
        #expect(atomic.status == 3 && atomic.stdout.contains("condition 2 failed"), "\(atomic.stdout)")
        #expect(try run(["get", group, "seat/3"]).status != 0)
        // A malformed condition refuses the whole input.
        try #"{"key": "seat/4", "value": "x", "if": "present"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try run(["put", group, "--batch", file])
        #expect(bad.status == 1 && bad.stderr.contains("line 1"), "\(bad.stderr)")
        #expect(try run(["get", group, "seat/4"]).status != 0)
    }

    /// Two laptops offline book the same slot in an encrypted group sequenced by a relay; once
    /// they reach it, exactly one booking stands on both, the other is told why; both counter
    /// increments and both set additions count; the relay's files hold none of the keys.
    @Test func twoLaptopsBookTheSameSlotOfflineAndOneStands() throws {
        let relayHome = dir + "/relay"
        try expectPeerlog(["relay", "init", "--home", relayHome, "--name", "blind-relay"])
        let relayKey = try expectPeerlog(["relay", "key", "--home", relayHome]).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let relayIdentity = string(try peerlogJSON(["id", "--home", relayHome])["identity"]) ?? ""
        let port = try TestSupport.freePort()
        let alice = try makePerson("alice", in: dir)
        let bob = try makePerson("bob", in: dir)
        let relay = try DaemonProcess(
            home: relayHome, listenPort: port, arguments: ["--allow", alice.identity], command: ["relay", "run"])
        defer { relay.stop() }
        let group = try #require(string(try peerlogJSON(["group", "create", "--home", alice.home, "rooms"])["id"]))
        try expectPeerlog(["group", "add", "--home", alice.home, group, bob.identity])
        try expectPeerlog(["group", "sequencer", "--home", alice.home, group, "relay", "127.0.0.1:\(port)", relayKey])
        let peer = ["--peer", "127.0.0.1:\(port)", "--allow", relayIdentity]
        func tentative(_ home: String) -> Int {
            guard case .array(let items)? = try? peerlogJSON(["log", "--home", home, group]) else { return -1 }
            return items.count { $0["status"] == .string("tentative") }
        }
        func get(_ home: String, _ key: String) -> String? {
            guard let r = try? TestSupport.peerlog(["get", "--home", home, group, key]), r.status == 0 else {
                return nil
            }
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        // Together once: Bob joins, and both hold the group's key (each reads the other).
        var a: DaemonProcess? = try DaemonProcess(home: alice.home, arguments: peer)
        var b: DaemonProcess? = try DaemonProcess(home: bob.home, arguments: peer)
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["group", "accept", "--home", bob.home, group]).status) == 0
            }, "Bob got no invitation: \(b!.stderr)")
        try expectPeerlog(["put", "--home", alice.home, group, "hello", "from-alice"])
        try expectPeerlog(["put", "--home", bob.home, group, "hi", "from-bob"])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                get(bob.home, "hello") == "from-alice" && get(alice.home, "hi") == "from-bob"
            }, "the members never read each other\n\(a!.stderr)\n\(b!.stderr)")
        a!.stop()
        b!.stop()
        (a, b) = (nil, nil)

        // Apart: both book slot-canary-9 (and count it, atomically), count a visit, tag.
        var receipts = [String: String]()
        for (name, home) in [("alice", alice.home), ("bob", bob.home)] {
            let file = dir + "/\(name).jsonl"
            try """
            {"key": "slot-canary-9", "value": "\(name)", "if": "absent"}
            """.write(toFile: file, atomically: true, encoding: .utf8)
            let booking = try TestSupport.peerlog(["put", "--home", home, group, "--batch", file, "--atomic", "--json"])
            #expect(booking.status == 0, "\(booking.stderr)")
            let json = try JSON.parse(booking.stdout)
            #expect(json["outcome"] == .string("pending"), "\(booking.stdout)")
            receipts[name] = string(json["cid"])
            try expectPeerlog(["incr", "--home", home, group, "visits-canary"])
            try expectPeerlog(["set-add", "--home", home, group, "tags-canary", name])
            #expect(get(home, "slot-canary-9") == "\"\(name)\"" || get(home, "slot-canary-9") == name)
        }
        // Offline, the outcome is pending: exit 4.
        let pending = try TestSupport.peerlog(["write-status", "--home", bob.home, receipts["bob"]!])
        #expect(pending.status == 4 && pending.stdout.contains("pending"), "\(pending.stdout)")

        // Together again through the relay.
        a = try DaemonProcess(home: alice.home, arguments: peer)
        b = try DaemonProcess(home: bob.home, arguments: peer)
        defer {
            a?.stop()
            b?.stop()
        }
        var statuses = [String: Int32]()
        for (name, home) in [("alice", alice.home), ("bob", bob.home)] {
            let r = try TestSupport.peerlog([
                "write-status", "--home", home, receipts[name]!, "--wait", "--timeout", "90", "--json",
            ])
            statuses[name] = r.status
            if r.status == 3 {
                #expect(
                    string(try JSON.parse(r.stdout)["reason"]) == "condition 1 failed: \"slot-canary-9\" holds a value",
                    "\(r.stdout)")
            }
        }
        #expect(statuses.values.sorted() == [0, 3], "not exactly one booking stands: \(statuses)")
        let winner = statuses["alice"] == 0 ? "alice" : "bob"
        #expect(
            TestSupport.waitUntil(timeout: 90) {
                tentative(alice.home) == 0 && tentative(bob.home) == 0
                    && get(alice.home, "visits-canary") == "2" && get(bob.home, "visits-canary") == "2"
            }, "the members did not settle\n\(a!.stderr)\n\(b!.stderr)")
        for home in [alice.home, bob.home] {
            #expect(get(home, "slot-canary-9") == winner)
            // Sorted by deterministic encoding: the shorter text first ("bob" is 63 62 6f 62).
            #expect(get(home, "tags-canary") == "[\"bob\",\"alice\"]")
            // Each side sees the other's outcome the same way.
            let other = try TestSupport.peerlog([
                "write-status", "--home", home, receipts[winner == "alice" ? "bob" : "alice"]!,
            ])
            #expect(other.status == 3, "\(other.stdout)")
        }
        let hashes = try [alice.home, bob.home].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(Set(hashes).count == 1, "state hashes differ: \(hashes)")
        // The relay ordered all of it without reading it.
        var relayBytes = [UInt8]()
        for f in FileManager.default.enumerator(atPath: relayHome)?.compactMap({ $0 as? String }) ?? [] {
            if let d = FileManager.default.contents(atPath: relayHome + "/" + f) { relayBytes += Array(d) }
        }
        for canary in ["slot-canary-9", "visits-canary", "tags-canary"] {
            let n = Array(canary.utf8)
            let found =
                relayBytes.count >= n.count
                && (0...(relayBytes.count - n.count)).contains {
                    relayBytes[$0] == n[0] && Array(relayBytes[$0..<($0 + n.count)]) == n
                }
            #expect(!found, "the relay's files hold \(canary)")
        }
    }
}
