import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// The replica commands (group, put/get/delete, log, state-hash, export/import), run through
/// the built binary with one home directory per person.
/// Plaintext groups, so seqs and counts are of the operations alone (an encrypted group adds
/// a `group.key` receipt after its creation: EncryptedGroupCLITests).
struct ReplicaCLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    // MARK: Helpers

    func peerlog(_ args: [String]) throws -> TestSupport.ProcessResult { try TestSupport.peerlog(args) }

    /// Runs a command that must succeed; returns its stdout.
    @discardableResult
    func ok(_ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let r = try peerlog(args)
        #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
        return r.stdout
    }

    /// Runs a command that must fail with one line on stderr containing `message`.
    func refused(_ message: String, _ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try peerlog(args)
        #expect(
            r.status != 0, "peerlog \(args.joined(separator: " ")) succeeded: \(r.stdout)",
            sourceLocation: sourceLocation)
        #expect(r.stderr.split(separator: "\n").count == 1, "not one line: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(message), "\(r.stderr) does not contain \(message)", sourceLocation: sourceLocation)
    }

    func json(_ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        let r = try peerlog(args + ["--json"])
        #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
        return try JSON.parse(r.stdout)
    }

    /// A new home with `peerlog init`; returns (home, identity text).
    func person(_ name: String) throws -> (home: String, identity: String) { try makePerson(name, in: dir) }

    /// `group create`; returns the new group's id.
    func createGroup(_ home: String, _ name: String, _ extra: String...) throws -> String {
        let r = try peerlog(["group", "create", "--home", home, name, "--json", "--plaintext"] + extra)
        guard r.status == 0, case .string(let id)? = try JSON.parse(r.stdout)["id"] else {
            throw TestSupport.ProcessError(description: "group create failed: \(r.stderr)")
        }
        return id
    }

    /// Carries everything `from` holds of `group` to `to` through an export file.
    @discardableResult
    func sync(
        _ group: String, from: String, to: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let file = dir + "/" + UUID().uuidString + ".export"
        try ok("export", "--home", from, group, file, sourceLocation: sourceLocation)
        return try ok("import", "--home", to, file, sourceLocation: sourceLocation)
    }

    /// The `state-hash` output (both views).
    func stateHash(_ home: String, _ group: String) throws -> String { try ok("state-hash", "--home", home, group) }

    /// `log` lines.
    func log(_ home: String, _ group: String) throws -> [Substring] {
        try ok("log", "--home", home, group).split(separator: "\n")
    }

    /// The members of `group show --json`, by identity.
    func members(_ home: String, _ group: String, committedView: Bool = false) throws -> [String: JSON] {
        let args = ["group", "show", "--home", home, group, "--json"] + (committedView ? ["--committed"] : [])
        guard case .array(let items)? = try JSON.parse(try peerlog(args).stdout)["members"] else { return [:] }
        var out = [String: JSON]()
        for m in items { if case .string(let id)? = m["identity"] { out[id] = m } }
        return out
    }

    // MARK: Tests

    @Test func soloGroupPutGetDeleteLogAndStateHash() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try person("alice").home
        let created = try ok("group", "create", "--home", alice, "trip", "--plaintext")
        #expect(created.contains("trip") && created.contains("b"))
        // The owner is the sequencer: every write commits at once.
        #expect(try ok("put", "--home", alice, "trip", "city", "Lisbon").contains("committed at seq 2"))
        #expect(
            try ok("put", "--home", alice, "trip", "days", "[1, 2, {\"x\": true}]", "--json-value").contains(
                "committed at seq 3"))
        #expect(try ok("get", "--home", alice, "trip", "city") == "Lisbon\n")
        #expect(try ok("get", "--home", alice, "trip", "days", "--committed") == "[1,2,{\"x\":true}]\n")
        try refused("floating-point", "put", "--home", alice, "trip", "f", "1.5", "--json-value")
        #expect(try ok("delete", "--home", alice, "trip", "city").contains("committed at seq 4"))
        let missing = try peerlog(["get", "--home", alice, "trip", "city"])
        #expect(missing.status == 1 && missing.stdout.isEmpty && missing.stderr.split(separator: "\n").count == 1)

        let lines = try log(alice, "trip")
        #expect(lines.count == 4)
        for (i, line) in lines.enumerated() {
            let cols = line.split(separator: " ", omittingEmptySubsequences: true)
            #expect(cols[0] == "\(i + 1)" && cols[1] == "C", "\(line)")
        }
        #expect(
            lines.map { $0.split(separator: " ", omittingEmptySubsequences: true)[2] } == [
                "group.created", "entity.put", "entity.put", "entity.delete",
            ])
        #expect(!lines.contains { $0.contains("REJECTED") })

        let hashes = try stateHash(alice, "trip").split(separator: "\n").map { $0.split(separator: " ") }
        #expect(hashes.count == 2 && hashes[0][0] == "committed" && hashes[1][0] == "tentative")
        #expect(hashes[0][1] == hashes[1][1] && hashes[0][1].count == 64)
    }

    @Test func offlineInviteFlowThroughExportAndImport() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (alice, aliceID) = try person("alice")
        let (bob, bobID) = try person("bob")
        let group = try createGroup(alice, "trip")
        try ok("put", "--home", alice, group, "city", "Lisbon")
        try ok("group", "add", "--home", alice, group, bobID)

        // Bob sees the invitation, committed by Alice's device.
        let received = try sync(group, from: alice, to: bob)
        #expect(
            received.split(separator: "\n").contains { $0.hasPrefix("committed:") && $0.hasSuffix(" 3") }, "\(received)"
        )
        #expect(try members(bob, group)[bobID]?["status"] == .string("pending"))
        #expect(try members(bob, group)[aliceID]?["role"] == .string("owner"))
        #expect(try ok("group", "show", "--home", bob, "trip").contains("pending"))

        // Bob accepts: tentative on his side, since Alice's device is the sequencer.
        #expect(try ok("group", "accept", "--home", bob, "trip").contains("tentative"))
        #expect(try members(bob, group)[bobID]?["status"] == .string("active"))
        #expect(try members(bob, group)[bobID]?["standing"] == .string("tentative"))
        #expect(try members(bob, group, committedView: true)[bobID]?["status"] == .string("pending"))
        #expect(try log(bob, group).last?.hasPrefix("~  T  group.invite_accepted") == true)

        // Alice imports it and commits the acceptance.
        try sync(group, from: bob, to: alice)
        let accepted = try log(alice, group).last!
        #expect(accepted.hasPrefix("4  C  group.invite_accepted") && !accepted.contains("REJECTED"), "\(accepted)")

        // Back to Bob: both replicas agree, and Bob's membership is committed.
        try sync(group, from: alice, to: bob)
        #expect(try stateHash(alice, group) == stateHash(bob, group))
        let me = try members(bob, group)[bobID]
        #expect(
            me?["status"] == .string("active") && me?["standing"] == .string("committed") && me?["since_seq"] == .int(4)
        )

        // Bob writes; after another round trip Alice reads his value.
        #expect(try ok("put", "--home", bob, group, "note", "from bob").contains("tentative"))
        try sync(group, from: bob, to: alice)
        #expect(try ok("get", "--home", alice, group, "note", "--committed") == "from bob\n")
        try sync(group, from: alice, to: bob)
        #expect(try ok("get", "--home", bob, group, "note", "--committed") == "from bob\n")
        #expect(try stateHash(alice, group) == stateHash(bob, group))
    }

    @Test func refusedWritesAreOneLineAndChangeNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try person("alice").home
        let (bob, bobID) = try person("bob")
        let (carol, carolID) = try person("carol")
        let daveID = try person("dave").identity
        let group = try createGroup(alice, "trip", "--max-members", "3")
        try ok("put", "--home", alice, group, "city", "Lisbon")

        // Bob holds nothing of the group yet, then holds it but is not a member.
        try refused("holds no group", "state-hash", "--home", bob, group)
        try sync(group, from: alice, to: bob)
        let before = try stateHash(bob, group)
        try refused("not an active member", "group", "add", "--home", bob, group, carolID)
        try refused("not an active member", "put", "--home", bob, group, "city", "Porto")
        #expect(try stateHash(bob, group) == before)
        #expect(try log(bob, group).count == 2)
        try refused("not an identity", "group", "add", "--home", alice, group, "bnot-an-identity")
        try refused("not a role", "group", "add", "--home", alice, group, bobID, "--role", "boss")

        // Seats: Alice plus two invitations fill a group of three; a third invitation is refused.
        try ok("group", "add", "--home", alice, group, bobID)
        try ok("group", "add", "--home", alice, group, carolID)
        let full = try stateHash(alice, group)
        try refused("group is full", "group", "add", "--home", alice, group, daveID)
        #expect(try stateHash(alice, group) == full)

        // Members may not rename or delete.
        try sync(group, from: alice, to: carol)
        try ok("group", "accept", "--home", carol, group)
        try sync(group, from: carol, to: alice)
        try sync(group, from: alice, to: carol)
        #expect(try members(carol, group)[carolID]?["standing"] == .string("committed"))
        let member = try stateHash(carol, group)
        try refused("only an owner or admin may rename", "group", "rename", "--home", carol, group, "mine")
        try refused("only an owner may delete", "group", "delete", "--home", carol, group)
        try refused("only an owner or admin may remove", "group", "remove", "--home", carol, group, bobID)
        #expect(try stateHash(carol, group) == member)
        #expect(try ok("group", "show", "--home", carol, group).contains("name:          trip"))
    }

    @Test func malformedImportsAreRefusedWholeAndReimportsAreDuplicates() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try person("alice").home
        let bob = try person("bob").home
        let group = try createGroup(alice, "trip")
        try sync(group, from: alice, to: bob)
        try ok("put", "--home", alice, group, "a", "1")
        try ok("put", "--home", alice, group, "b", "2")
        let file = dir + "/good.export"
        #expect(try ok("export", "--home", alice, group, file).contains("3 receipts and 3 envelopes"))
        // An existing file is not overwritten.
        try refused("already exists", "export", "--home", alice, group, file)
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 7)

        let before = try stateHash(bob, group)
        func variant(_ name: String, _ change: (inout [String]) -> Void) throws -> String {
            var copy = lines
            change(&copy)
            let path = dir + "/" + name
            try (copy.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let badJSON = try variant("bad-json") { $0[2] = "{\"kind\": \"receipt\", " }
        try refused("line 3", "import", "--home", bob, badJSON)
        let badHeader = try variant("bad-header") {
            $0[0] = $0[0].replacingOccurrences(of: "peerlog-export", with: "other-export")
        }
        try refused("line 1", "import", "--home", bob, badHeader)
        let truncated = try variant("truncated") {
            $0[6] = $0[6].replacingOccurrences(of: "\"}", with: "").dropLast(2) + "\"}"
        }
        try refused("line 7", "import", "--home", bob, truncated)
        try refused("cannot open", "import", "--home", bob, dir + "/absent")
        #expect(try stateHash(bob, group) == before)
        #expect(try log(bob, group).count == 1)

        let first = try json("import", "--home", bob, file)
        #expect(first["stored"] == .int(2) && first["committed"] == .int(2) && first["duplicates"] == .int(2))
        #expect(try ok("get", "--home", bob, group, "b") == "2\n")
        let again = try json("import", "--home", bob, file)
        #expect(again["stored"] == .int(0) && again["committed"] == .int(0) && again["duplicates"] == .int(6))
        #expect(again["refused"] == .int(0) && again["queued"] == .int(0) && again["taken"] == .bool(true))
        #expect(try stateHash(bob, group) == stateHash(alice, group))
    }

    @Test func deletedGroupRefusesWrites() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try person("alice").home
        let bob = try person("bob").home
        let group = try createGroup(alice, "trip")
        try ok("put", "--home", alice, group, "city", "Lisbon")
        let deleted = try ok("group", "delete", "--home", alice, "trip")
        #expect(deleted.contains("Deleted group") && deleted.contains("committed at seq 3"))
        try refused("deleted", "put", "--home", alice, group, "city", "Porto")
        try refused("deleted", "group", "rename", "--home", alice, group, "again")
        #expect(try ok("group", "show", "--home", alice, group).contains("status:        deleted"))
        #expect(try json("group", "show", "--home", alice, group)["status"] == .string("deleted"))
        #expect(try peerlog(["get", "--home", alice, group, "city"]).status == 1)
        // The deletion travels like any receipt.
        try sync(group, from: alice, to: bob)
        #expect(try json("group", "show", "--home", bob, group)["status"] == .string("deleted"))
        try refused("deleted", "put", "--home", bob, group, "city", "Porto")
    }

    @Test func jsonOutputsCarryTheirFields() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (alice, aliceID) = try person("alice")
        let created = try json("group", "create", "--home", alice, "trip", "--max-members", "5", "--plaintext")
        #expect(created["name"] == .string("trip") && created["max_members"] == .int(5))
        guard case .string(let group)? = created["id"] else {
            Issue.record("no id")
            return
        }

        let put = try json(
            "put", "--home", alice, group, "plan", "{\"days\": 3, \"bytes\": {\"$bytes\": \"00ff\"}}", "--json-value")
        #expect(put["status"] == .string("committed") && put["seq"] == .int(2) && put["type"] == .string("entity.put"))
        let got = try json("get", "--home", alice, group, "plan")
        #expect(
            got["key"] == .string("plan") && got["cid"] == put["cid"] && got["status"] == .string("committed")
                && got["seq"] == .int(2))
        #expect(got["value"] == (try JSON.parse("{\"days\": 3, \"bytes\": {\"$bytes\": \"00ff\"}}")))

        guard case .array(let groups)? = Optional(try json("group", "list", "--home", alice)), groups.count == 1 else {
            Issue.record("list")
            return
        }
        #expect(
            groups[0]["id"] == .string(group) && groups[0]["name"] == .string("trip")
                && groups[0]["status"] == .string("active"))
        #expect(
            groups[0]["members"] == .int(1) && groups[0]["committed_seq"] == .int(2)
                && groups[0]["tentative"] == .int(0))

        let show = try json("group", "show", "--home", alice, group, "--committed")
        #expect(
            show["view"] == .string("committed") && show["max_members"] == .int(5) && show["committed_seq"] == .int(2))
        #expect(show["sequencer"]?["kind"] == .string("solo") && show["created_by"] == .string(aliceID))
        #expect(try members(alice, group)[aliceID]?["since_seq"] == .int(1))

        guard case .array(let log)? = Optional(try json("log", "--home", alice, group)), log.count == 2 else {
            Issue.record("log")
            return
        }
        #expect(
            log[0]["seq"] == .int(1) && log[0]["status"] == .string("committed")
                && log[0]["type"] == .string("group.created"))
        #expect(log[1]["cid"] == put["cid"] && log[1]["counter"] == .int(2) && log[1]["rejected"] == .null)

        let hashes = try json("state-hash", "--home", alice, group)
        #expect(hashes["group"] == .string(group) && hashes["committed"] == hashes["tentative"])
        #expect(try json("dead-letters", "--home", alice) == .array([]))
    }
}
