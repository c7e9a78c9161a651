import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// An end-to-end encrypted group through a real `peerlog relay` (docs/PROTOCOL.md §22): the
/// relay orders what it cannot read (none of the written keys and values is anywhere in its
/// files, WAL included), members that are never online together read each other, and their
/// state hashes agree.
@Suite(.serialized)
struct EncryptedGroupCLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func string(_ j: JSON?) -> String? { if case .string(let s)? = j { s } else { nil } }

    func get(_ home: String, _ group: String, _ key: String) -> String? {
        guard let r = try? TestSupport.peerlog(["get", "--home", home, group, key]), r.status == 0 else { return nil }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func tentative(_ home: String, _ group: String) -> Int {
        guard case .array(let items)? = try? peerlogJSON(["log", "--home", home, group]) else { return -1 }
        return items.count { $0["status"] == .string("tentative") }
    }

    /// Every byte of every file under `root` (the SQLite database, its WAL and shared memory).
    func allBytes(under root: String) -> [UInt8] {
        var out = [UInt8]()
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        for f in files { if let d = FileManager.default.contents(atPath: root + "/" + f) { out += Array(d) } }
        return out
    }

    func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard n.count <= haystack.count else { return false }
        return (0...(haystack.count - n.count)).contains { i in
            haystack[i] == n[0] && Array(haystack[i..<(i + n.count)]) == n
        }
    }

    @Test func theRelayOrdersWhatItCannotRead() throws {
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

        let created = try peerlogJSON(["group", "create", "--home", alice.home, "diary"])
        #expect(created["encrypted"] == .bool(true))
        let group = try #require(string(created["id"]))
        try expectPeerlog(["group", "add", "--home", alice.home, group, bob.identity])
        try expectPeerlog(["group", "sequencer", "--home", alice.home, group, "relay", "127.0.0.1:\(port)", relayKey])
        try expectPeerlog(["put", "--home", alice.home, group, "canary-key-4b1d", "\"canary-value-9e2c\""])

        // Alice alone: the relay takes the group and orders her sealed write.
        var a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) { tentative(alice.home, group) == 0 },
            "the relay did not order Alice's write: \(a.stderr)\n\(relay.stderr)")
        a.stop()

        // Bob alone: receives the group, accepts; he cannot read yet (no key sealed to him), but
        // writes at once: his device starts an epoch of its own, sealed to Alice's device too.
        var b = try DaemonProcess(home: bob.home, arguments: ["--peer", "127.0.0.1:\(port)", "--allow", relayIdentity])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["group", "accept", "--home", bob.home, group]).status) == 0
            }, "Bob got no invitation: \(b.stderr)")
        #expect(TestSupport.waitUntil(timeout: 30) { tentative(bob.home, group) == 0 }, "\(b.stderr)")
        #expect(get(bob.home, group, "canary-key-4b1d") == nil, "Bob read before he held the key")
        try expectPeerlog(["put", "--home", bob.home, group, "canary-early-5f3a", "\"canary-first-word-a7d2\""])
        #expect(TestSupport.waitUntil(timeout: 30) { tentative(bob.home, group) == 0 }, "\(b.stderr)")
        b.stop()

        // Alice again: she reads Bob's first write, and seals her key to his device (the third
        // group.key: hers at creation, Bob's first epoch, her share).
        a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                guard case .array(let items)? = try? peerlogJSON(["log", "--home", alice.home, group]) else {
                    return false
                }
                return items.count { $0["type"] == .string("group.key") && $0["status"] == .string("committed") } >= 3
            }, "Alice never shared the key with Bob: \(a.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                get(alice.home, group, "canary-early-5f3a") == "\"canary-first-word-a7d2\""
            }, "Alice cannot read Bob's first write: \(a.stderr)")
        a.stop()

        // Bob again: he reads Alice's write and answers.
        b = try DaemonProcess(home: bob.home, arguments: ["--peer", "127.0.0.1:\(port)", "--allow", relayIdentity])
        #expect(
            TestSupport.waitUntil(timeout: 30) { get(bob.home, group, "canary-key-4b1d") == "\"canary-value-9e2c\"" },
            "Bob cannot read Alice's write: \(b.stderr)")
        try expectPeerlog(["put", "--home", bob.home, group, "canary-reply-71aa", "\"canary-answer-c0de\""])
        #expect(TestSupport.waitUntil(timeout: 30) { tentative(bob.home, group) == 0 }, "\(b.stderr)")
        b.stop()
        a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                get(alice.home, group, "canary-reply-71aa") == "\"canary-answer-c0de\""
            }, "Alice cannot read Bob's write: \(a.stderr)")
        a.stop()

        let hashes = try [alice.home, bob.home].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(Set(hashes).count == 1, "members' state hashes differ: \(hashes)")
        let show = try peerlogJSON(["group", "show", "--home", bob.home, group])
        #expect(show["encryption"]?["waiting_for_key"] == .int(0), "\(show)")

        // `log` on a member's home opens the bodies; on the relay's it shows ciphertext only.
        guard case .array(let bobLog) = try peerlogJSON(["log", "--home", bob.home, group]),
            case .array(let relayLog) = try peerlogJSON(["log", "--home", relayHome, group])
        else { throw TestSupport.ProcessError(description: "log printed no array") }
        #expect(bobLog.contains { "\($0["plaintext"] ?? .null)".contains("canary-value-9e2c") }, "\(bobLog)")
        #expect(relayLog.count == bobLog.count && relayLog.allSatisfy { $0["plaintext"] == nil })
        #expect(!"\(relayLog)".contains("canary"))

        // The relay holds every receipt, ordered, and none of the plaintext.
        #expect(get(relayHome, group, "canary-key-4b1d") == nil)
        let relayBytes = allBytes(under: relayHome)
        #expect(relayBytes.count > 10_000)
        for canary in [
            "canary-key-4b1d", "canary-value-9e2c", "canary-reply-71aa", "canary-answer-c0de", "canary-early-5f3a",
            "canary-first-word-a7d2",
        ] {
            #expect(!contains(relayBytes, canary), "the relay's files hold \(canary)")
        }
        // The members' stores hold the values (the test can tell).
        #expect(contains(allBytes(under: alice.home), "canary-value-9e2c"))
    }

    /// Invited by code to an encrypted group, a person's device holds the key as soon as it
    /// joins: it writes at once, and the inviter reads it.
    @Test func aPersonInvitedByCodeReadsAndWritesAtOnce() throws {
        let alice = try makePerson("alice", in: dir)
        let carol = try makePerson("carol", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", alice.home, "team"])
        let group = try #require(string(created["id"]))
        try expectPeerlog(["put", "--home", alice.home, group, "agenda", "\"canary-agenda-5a5a\""])
        let da = try DaemonProcess(home: alice.home)
        let dc = try DaemonProcess(home: carol.home)
        let ticket = try peerlogJSON(["invite", "create", "--home", alice.home, "team"])
        let code = try #require(string(ticket["code"]))
        let address = try #require(string(ticket["address"]))
        let joined = try peerlogJSON(["invite", "join", "--home", carol.home, code, "--peer", address])
        #expect(joined["joined"] == .bool(true), "\(joined)\n\(dc.stderr)\n\(da.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 30) { get(carol.home, group, "agenda") == "\"canary-agenda-5a5a\"" },
            "carol cannot read the group: \(dc.stderr)")
        try expectPeerlog(["put", "--home", carol.home, group, "note", "\"from carol\""])
        #expect(
            TestSupport.waitUntil(timeout: 30) { get(alice.home, group, "note") == "\"from carol\"" },
            "alice never read carol's write: \(da.stderr)")
        let status = try peerlogJSON(["status", "--home", carol.home])
        guard case .array(let groups)? = status["groups"] else {
            Issue.record("no groups in status: \(status)")
            return
        }
        #expect(groups.first { $0["id"] == .string(group) }?["waitingForKey"] == .int(0), "\(status)")
    }

    /// The offline flow of the README with an encrypted group: export files carry the sealed
    /// receipts and the keys sealed to each device; Bob writes as soon as he accepts, reads once
    /// Alice's device has his acceptance, and both agree.
    @Test func anEncryptedGroupTravelsAsFiles() throws {
        let alice = try makePerson("alice", in: dir)
        let bob = try makePerson("bob", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", alice.home, "trip"])
        let group = try #require(string(created["id"]))
        try expectPeerlog(["group", "add", "--home", alice.home, group, bob.identity])
        try expectPeerlog(["put", "--home", alice.home, group, "plan", "\"beach\""])
        var n = 0
        func carry(_ from: String, _ to: String) throws {
            n += 1
            let file = dir + "/\(n).export"
            try expectPeerlog(["export", "--home", from, group, file])
            try expectPeerlog(["import", "--home", to, file])
        }
        try carry(alice.home, bob.home)
        #expect(get(bob.home, group, "plan") == nil, "Bob read before he held a key")
        try expectPeerlog(["group", "accept", "--home", bob.home, group])
        try expectPeerlog(["put", "--home", bob.home, group, "x", "1"])  // under a key of his own
        try carry(bob.home, alice.home)  // Alice commits both, reads Bob's, and seals her key to him.
        #expect(get(alice.home, group, "x") == "1")
        try carry(alice.home, bob.home)
        #expect(get(bob.home, group, "plan") == "\"beach\"")
        try expectPeerlog(["put", "--home", bob.home, group, "reply", "\"ok\""])
        try carry(bob.home, alice.home)
        try carry(alice.home, bob.home)
        #expect(get(alice.home, group, "reply") == "\"ok\"")
        // A rotation on demand: Bob's device is known to Alice's, so he reads what follows.
        #expect(try expectPeerlog(["group", "rotate", "--home", alice.home, group]).contains("new epoch"))
        try expectPeerlog(["put", "--home", alice.home, group, "after", "\"rotation\""])
        try carry(alice.home, bob.home)
        #expect(get(bob.home, group, "after") == "\"rotation\"")
        let epoch = try peerlogJSON(["group", "show", "--home", bob.home, group])["encryption"]?["epoch"]
        #expect(epoch == .int(3), "created, Bob's first write, the rotation: \(String(describing: epoch))")
        let plain = try #require(
            string(try peerlogJSON(["group", "create", "--home", alice.home, "p", "--plaintext"])["id"]))
        let refused = try TestSupport.peerlog(["group", "rotate", "--home", alice.home, plain])
        #expect(refused.status == 1 && refused.stderr.contains("not encrypted"), "\(refused.stderr)")
        let hashes = try [alice.home, bob.home].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(Set(hashes).count == 1, "\(hashes)")
        // The export files carry the group sealed: none holds the written values.
        for i in 1...n {
            let bytes = try #require(FileManager.default.contents(atPath: dir + "/\(i).export"))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(!text.contains("beach") && !text.contains(TestSupport.hex(Array("beach".utf8))))
        }
    }
}
