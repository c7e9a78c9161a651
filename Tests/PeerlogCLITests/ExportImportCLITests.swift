import Foundation
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `peerlog export` / `import` (docs/PROTOCOL.md §13) through the built binary: the exit status
/// a script can trust, and an import killed mid-way leaving a store that `check` passes.
/// The large import runs on an encrypted group (the default), so its receipts travel sealed.
struct ExportImportCLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func run(_ args: String...) throws -> TestSupport.ProcessResult { try TestSupport.peerlog(args) }

    /// A home holding a group "trip" with `puts` values written by `put --batch`.
    func homeWithGroup(_ name: String, puts: Int, plaintext: Bool) throws -> (home: String, group: String) {
        let (home, _) = try makePerson(name, in: dir)
        let created = try TestSupport.peerlog(
            ["group", "create", "--home", home, "trip", "--json"] + (plaintext ? ["--plaintext"] : []))
        guard created.status == 0, case .string(let group)? = try JSON.parse(created.stdout)["id"] else {
            throw TestSupport.ProcessError(description: "group create: \(created.stderr)")
        }
        var start = 0
        while start < puts {
            let count = min(10_000, puts - start)
            let batch = dir + "/\(name)-batch-\(start)"
            let lines = (start..<start + count).map { #"{"key": "k\#($0)", "value": \#($0)}"# }
            try lines.joined(separator: "\n").write(toFile: batch, atomically: true, encoding: .utf8)
            let put = try run("put", "--home", home, group, "--batch", batch)
            #expect(put.status == 0, "put --batch: \(put.stderr)")
            start += count
        }
        return (home, group)
    }

    func export(_ home: String, _ group: String, _ name: String) throws -> String {
        let file = dir + "/" + name
        let r = try run("export", "--home", home, group, file)
        #expect(r.status == 0 && r.stderr.isEmpty, "export: \(r.stderr)")
        return file
    }

    func stateHash(_ home: String, _ group: String) throws -> String {
        let r = try run("state-hash", "--home", home, group)
        #expect(r.status == 0 && r.stdout.count > 64, "state-hash: \(r.stderr)")
        return r.stdout
    }

    /// The same line with one bit of the receipt's signature flipped: it still parses, and
    /// fails verification.
    static func tampered(_ line: String) throws -> String {
        let json = try JSON.parse(line)
        guard case .string(let hex)? = json["data"], case .string(let cid)? = json["cid"],
            case .string(let type)? = json["type"]
        else { throw TestSupport.ProcessError(description: "not a receipt line: \(line)") }
        let r = try Receipt(encoded: TestSupport.bytes(hex: hex))
        var signature = r.signature
        signature[7] ^= 0x01
        let forged = try Receipt(payload: r.payload, signature: signature, certificate: r.certificate)
        return JSON.object([
            ("kind", .string("receipt")), ("cid", .string(cid)), ("type", .string(type)),
            ("data", .string(TestSupport.hex(forged.encoded))),
        ]).serialized()
    }

    @Test func aTamperedLineExits2AfterImportingTheRestAndACleanFileExits0() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Plaintext: Bob and Carol, not members, read the values the import carries.
        let (alice, group) = try homeWithGroup("alice", puts: 5, plaintext: true)
        let file = try export(alice, group, "trip.export")
        var lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        // Header, receipts (group.created, 5 puts), envelopes: tamper with the last put (k4).
        let receipts = lines.indices.filter { lines[$0].contains(#""kind":"receipt""#) }
        #expect(receipts.count == 6 && lines.count == 13)
        lines[receipts.last!] = try Self.tampered(lines[receipts.last!])
        let bad = dir + "/tampered.export"
        try (lines.joined(separator: "\n") + "\n").write(toFile: bad, atomically: true, encoding: .utf8)

        let (bob, _) = try makePerson("bob", in: dir)
        let partial = try run("import", "--home", bob, bad, "--json")
        #expect(partial.status == 2, "exit \(partial.status): \("\(partial.stderr)")")
        #expect(partial.stderr.contains("1 refused and 0 ignored of 12 items"), "\(partial.stderr)")
        let counts = try JSON.parse(partial.stdout)
        #expect(counts["refused"] == .int(1) && counts["invalid"] == .int(1) && counts["taken"] == .bool(false))
        #expect(counts["stored"] == .int(5) && counts["committed"] == .int(5), "\(counts)")
        guard case .array(let refusals)? = counts["refusals"], refusals.count == 1 else {
            Issue.record("refusals: \(counts)")
            return
        }
        // The rest is there: Bob reads a value the import carried, not the forged one.
        #expect(try run("get", "--home", bob, group, "k3").stdout == "3\n")
        #expect(try run("get", "--home", bob, group, "k4").status != 0)
        // Without --json too: the counts on stdout, the exit status 2.
        let (dave, _) = try makePerson("dave", in: dir)
        let text = try run("import", "--home", dave, bad)
        #expect(
            text.status == 2 && text.stdout.contains("refused") && text.stdout.contains("duplicates"), "\(text.stdout)")
        #expect(try run("check", "--home", bob).status == 0)
        // The same tampered file again: the forgery is checked and refused again (exit 2), and the
        // clean file then gives Bob the genuine k4 (its CID, the payload's hash, is the forgery's).
        #expect(try run("import", "--home", bob, bad).status == 2)
        #expect(try run("import", "--home", bob, file).status == 0)
        #expect(try run("get", "--home", bob, group, "k4").stdout == "4\n")

        // The clean file: everything is taken (exit 0); once more, nothing changes (exit 0).
        let (carol, _) = try makePerson("carol", in: dir)
        let clean = try run("import", "--home", carol, file, "--json")
        #expect(clean.status == 0 && clean.stderr.isEmpty, "exit \(clean.status): \(clean.stderr)")
        let taken = try JSON.parse(clean.stdout)
        #expect(taken["taken"] == .bool(true) && taken["refused"] == .int(0) && taken["stored"] == .int(6))
        #expect(try stateHash(carol, group) == stateHash(alice, group))
        let before = try stateHash(carol, group)
        let again = try run("import", "--home", carol, file, "--json")
        #expect(again.status == 0, "\(again.stderr)")
        let twice = try JSON.parse(again.stdout)
        #expect(twice["stored"] == .int(0) && twice["committed"] == .int(0) && twice["duplicates"] == .int(12))
        #expect(try stateHash(carol, group) == before)
    }

    @Test func aPipeIsRefusedWithOneLine() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (bob, _) = try makePerson("bob", in: dir)
        let r = try TestSupport.run(
            "/bin/sh", ["-c", "echo '{}' | \"$0\" import --home \"$1\" /dev/stdin", TestSupport.peerlogBinary, bob])
        #expect(r.status == 1, "exit \(r.status)")
        #expect(r.stderr == "Error: /dev/stdin is not a regular file (it is read twice: first checked, then applied)\n")
    }

    @Test func killedMidImportLeavesAStoreThatChecksAndAReimportCompletes() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (alice, group) = try homeWithGroup("alice", puts: 5_000, plaintext: false)
        let file = try export(alice, group, "big.export")
        // Carol takes the whole file: how long that takes (for the message), and the end state.
        let (carol, _) = try makePerson("carol", in: dir)
        let began = ContinuousClock.now
        #expect(try run("import", "--home", carol, file).status == 0)
        let whole = ContinuousClock.now - began

        let (bob, _) = try makePerson("bob", in: dir)
        let p = try ChildProcess(TestSupport.peerlogBinary, ["import", "--home", bob, file])
        // Killed as soon as the apply pass has committed its first transaction (the group is in
        // Bob's store): of the first chunk, ingest commits 2,000 receipts a transaction, so most
        // of the file (the rest of the receipts, every envelope) is still to come.
        var applying = false
        while !applying && p.isRunning {
            applying = try run("group", "list", "--home", bob, "--json").stdout.contains(group)
            if !applying { usleep(20_000) }
        }
        p.kill9()
        #expect(applying && p.endedBySignal, "the import was killed, not finished (whole: \(whole))")

        let check = try run("check", "--home", bob, "--json")
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let report = try JSON.parse(check.stdout)
        #expect(report["integrity"] == .string("ok") && report["consistent"] == .bool(true), "\(report)")
        let log = try run("log", "--home", bob, group, "--committed", "--json")
        guard case .array(let held) = try JSON.parse(log.stdout) else {
            Issue.record("log: \(log.stderr)")
            return
        }
        #expect(held.count < 5_002, "the killed import had not finished (\(held.count) committed)")
        let again = try run("import", "--home", bob, file, "--json")
        #expect(again.status == 0, "\(again.stderr)")
        // Carol took the same file whole: Bob, killed once, ends the same.
        #expect(try stateHash(bob, group) == stateHash(carol, group))
    }
}
