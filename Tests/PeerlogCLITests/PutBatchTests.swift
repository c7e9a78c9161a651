import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// `peerlog put GROUP --batch FILE|-`: one transaction, one receipt a line, all or nothing.
/// Plaintext groups: seqs and payload sizes are of the operations alone.
struct PutBatchTests {
    /// Lines one `--batch` input may hold (`PutBatch.maxOperations`), written 10,000 a transaction.
    static let maxOperations = 100_000
    static let perTransaction = 10_000
    static let maxInputBytes = 16 * 1_048_576

    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// Writes `text` to a new file in the test's directory; returns its path.
    func file(_ text: String) throws -> String {
        let path = dir + "/" + UUID().uuidString + ".jsonl"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func cids(_ home: String, _ group: String) throws -> [String] {
        guard case .array(let items) = try peerlogJSON(["log", group, "--home", home]) else { return [] }
        return items.compactMap { if case .string(let c)? = $0["cid"] { c } else { nil } }
    }

    /// Fails with one line on stderr containing each of `messages`.
    func expectRefused(
        _ args: [String], input: String = "", _ messages: String..., sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let r = try TestSupport.run(TestSupport.peerlogBinary, args, input: input)
        #expect(r.status != 0, "succeeded: \(r.stdout)", sourceLocation: sourceLocation)
        #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)", sourceLocation: sourceLocation)
        for m in messages {
            #expect(r.stderr.contains(m), "\(r.stderr) does not contain \(m)", sourceLocation: sourceLocation)
        }
    }

    @Test func putsAndDeletesLandOneReceiptEachInOrderAndCheckPasses() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("b", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        let batch = try file(
            """
            {"key": "a", "value": "first"}
            {"key": "b", "value": {"n": [1, 2], "blob": {"$bytes": "0a0b"}}}

            {"key": "a", "delete": true}
            {"key": "c", "value": 42}

            """)
        let out = try peerlogJSON(["put", "g", "--batch", batch, "--home", home])
        #expect(
            out["count"] == .int(4) && out["status"] == .string("committed") && out["first_seq"] == .int(2)
                && out["last_seq"] == .int(5))
        guard case .array(let written)? = out["cids"] else {
            Issue.record("no cids: \(out)")
            return
        }
        #expect(try cids(home, "g").suffix(4) == written.compactMap { if case .string(let c) = $0 { c } else { nil } })
        let log = try expectPeerlog(["log", "g", "--home", home]).split(separator: "\n").suffix(4)
        #expect(
            log.map { $0.split(separator: " ", omittingEmptySubsequences: true)[2] } == [
                "entity.put", "entity.put", "entity.delete", "entity.put",
            ], "\(log)")
        #expect(try peerlogJSON(["get", "g", "b", "--home", home])["value"]?["blob"]?["$bytes"] == .string("0a0b"))
        #expect(try TestSupport.peerlog(["get", "g", "a", "--home", home]).status != 0, "deleted by the batch")
        #expect(try expectPeerlog(["get", "g", "c", "--home", home]) == "42\n")

        // The text summary: count, first and last receipt, committed.
        let text = try expectPeerlog([
            "put", "g", "--batch", try file(#"{"key": "d", "value": 1}"# + "\n" + #"{"key": "e", "value": 2}"#),
            "--home", home,
        ])
        let last2 = try cids(home, "g").suffix(2)
        #expect(
            text
                == "Wrote 2 operations in one transaction\nreceipts \(last2.first!) ... \(last2.last!): committed at seqs 6...7\n",
            "\(text)")

        let check = try peerlogJSON(["check", "--home", home])
        #expect(check["integrity"] == .string("ok") && check["consistent"] == .bool(true), "\(check)")
        #expect(
            check["parent_links"] == .string("matches") && check["row_references"] == .string("matches"), "\(check)")
    }

    @Test func aBadLineRefusesTheWholeBatchNamingItsLine() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("b", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        let before = try cids(home, "g")
        let good = #"{"key": "ok", "value": 1}"#
        let huge = #"{"key": "big", "value": ""# + String(repeating: "x", count: 70_000) + #""}"#
        // The bad line is line 4 (line 2 is blank): line numbers are the file's.
        for (bad, message) in [
            (#"{"key": "k", "value": "#, "malformed JSON"), (#"{"key": "k", "value": 1.5}"#, "floating-point"),
            (#"{"value": 1}"#, #"missing "key""#), (#"{"key": "k", "value": 1, "ttl": 5}"#, #"unknown field "ttl""#),
            (#"{"key": "k"}"#, #"missing "value""#), (#"{"key": "k", "delete": false}"#, #""delete" must be true"#),
            (#"{"key": 7, "value": 1}"#, #""key" must be a string"#), ("[1]", "not a JSON object"),
            (huge, "over the limit of 65536 bytes"),
        ] {
            let batch = try file([good, "", good, bad, good].joined(separator: "\n"))
            try expectRefused(["put", "g", "--batch", batch, "--home", home], "line 4: ", message)
            #expect(try cids(home, "g") == before, "nothing written for \(message)")
        }
        // Misuse.
        try expectRefused(["put", "g", "k", "--batch", "-", "--home", home], "give no KEY")
        try expectRefused(["put", "g", "--home", home], "give the entity key")
        try expectRefused(["put", "g", "--batch", try file("\n\n"), "--home", home], "holds no operations")
        try expectRefused(["put", "g", "--batch", dir + "/absent", "--home", home], "No such file")
        #expect(try cids(home, "g") == before)
    }

    @Test func limitsAtTheirBoundary() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("b", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        let line = { (i: Int) in #"{"key": "k\#(i % 100)", "value": \#(i)}"# }
        let over = (0...Self.maxOperations).map(line).joined(separator: "\n")
        try expectRefused(
            ["put", "g", "--batch", try file(over), "--home", home], "more than \(Self.maxOperations) operations",
            "split it")
        #expect(try cids(home, "g").count == 1)
        // Over one transaction's worth: every line is checked first, so a bad line near the end
        // refuses the whole input, nothing written…
        let many = 2 * Self.perTransaction + 5_000
        var lines = (0..<many).map(line)
        lines[many - 10] = #"{"key": "k", "value": 1.5}"#
        try expectRefused(
            ["put", "g", "--batch", try file(lines.joined(separator: "\n")), "--home", home], "line \(many - 9): ",
            "nothing was written")
        #expect(try cids(home, "g").count == 1)
        let badKey = String(repeating: "x", count: 300)
        lines[many - 10] = #"{"key": "\#(badKey)", "value": 1}"#
        try expectRefused(
            ["put", "g", "--batch", try file(lines.joined(separator: "\n")), "--home", home], "line \(many - 9): ",
            "nothing was written")
        #expect(try cids(home, "g").count == 1)
        // …and good input is written in three transactions, in order.
        lines[many - 10] = line(many - 10)
        let out = try peerlogJSON(["put", "g", "--batch", try file(lines.joined(separator: "\n")), "--home", home])
        #expect(out["count"] == .int(Int64(many)) && out["last_seq"] == .int(Int64(many + 1)), "\(out)")

        // Input bytes: a line padded with spaces to exactly the limit is read; one byte more is not.
        let padded = { (n: Int) in line(0) + String(repeating: " ", count: n - line(0).utf8.count - 1) + "\n" }
        let atLimit = try file(padded(Self.maxInputBytes))
        #expect(try FileManager.default.attributesOfItem(atPath: atLimit)[.size] as? Int == Self.maxInputBytes)
        #expect(try peerlogJSON(["put", "g", "--batch", atLimit, "--home", home])["count"] == .int(1))
        try expectRefused(
            ["put", "g", "--batch", try file(padded(Self.maxInputBytes + 1)), "--home", home],
            "over \(Self.maxInputBytes) bytes", "split it")
        #expect(try cids(home, "g").count == many + 2)
        let check = try peerlogJSON(["check", "--home", home])
        #expect(check["consistent"] == .bool(true), "\(check)")
    }

    @Test func batchFromStandardInput() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("b", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        let input = (0..<50).map { #"{"key": "s\#($0)", "value": "v\#($0)"}"# }.joined(separator: "\n") + "\n"
        let r = try TestSupport.run(
            TestSupport.peerlogBinary, ["put", "g", "--batch", "-", "--home", home, "--json"], input: input)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try JSON.parse(r.stdout)["count"] == .int(50))
        #expect(try expectPeerlog(["get", "g", "s49", "--home", home]) == "v49\n")
        try expectRefused(
            ["put", "g", "--batch", "-", "--home", home], input: input + "{\n", "--batch -: line 51: malformed JSON")
        #expect(try cids(home, "g").count == 51)
    }

    @Test func batchOfAMemberWhoIsNotTheSequencerStaysTentative() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (alice, _) = try makePerson("alice", in: dir)
        let (bob, bobID) = try makePerson("bob", in: dir)
        try expectPeerlog(["group", "create", "trip", "--home", alice, "--plaintext"])
        try expectPeerlog(["group", "add", "trip", bobID, "--home", alice])
        func sync(from: String, to: String) throws {
            let export = dir + "/" + UUID().uuidString + ".export"
            try expectPeerlog(["export", "trip", export, "--home", from])
            try expectPeerlog(["import", export, "--home", to])
        }
        try sync(from: alice, to: bob)
        // Bob's acceptance is still tentative: the batch is checked against that view.
        try expectPeerlog(["group", "accept", "trip", "--home", bob])
        let batch = try file(#"{"key": "city", "value": "Porto"}"# + "\n" + #"{"key": "days", "value": 3}"#)
        let text = try expectPeerlog(["put", "trip", "--batch", batch, "--home", bob])
        #expect(
            text.hasPrefix("Wrote 2 operations") && text.contains(": tentative (waiting for the group's sequencer)"),
            "\(text)")
        let json = try peerlogJSON(["put", "trip", "--batch", batch, "--home", bob])
        #expect(json["status"] == .string("tentative") && json["first_seq"] == .null)
        try sync(from: bob, to: alice)
        let committed = try peerlogJSON(["log", "trip", "--home", alice, "--committed"])
        guard case .array(let items) = committed else {
            Issue.record("\(committed)")
            return
        }
        #expect(
            items.count == 7 && items.suffix(4).allSatisfy { $0["rejected"] == .null || $0["rejected"] == nil },
            "\(committed)")
    }

    @Test func killedDuringABatchLeavesAllOrNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("b", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        let size = 5_000
        let batch = try file((0..<size).map { #"{"key": "k\#($0)", "value": \#($0)}"# }.joined(separator: "\n"))
        var rng = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["PEERLOG_SEED"] ?? "") ?? 14)
        var count = try cids(home, "g").count
        for round in 0..<4 {
            // A debug build writes the batch in about 2 s: some kills land inside it, some after.
            let run = try TestSupport.peerlogKilled(
                ["put", "g", "--batch", batch, "--home", home],
                after: UInt32.random(in: 100_000...2_500_000, using: &rng))
            let now = try cids(home, "g").count
            #expect(now == count || now == count + size, "round \(round): \(now - count) of \(size) receipts visible")
            if !run.killed {
                #expect(run.status == 0 && now == count + size, "round \(round): finished before the kill")
            }
            count = now
            let check = try peerlogJSON(["check", "--home", home])
            #expect(
                check["integrity"] == .string("ok") && check["consistent"] == .bool(true), "round \(round): \(check)")
        }
    }
}
