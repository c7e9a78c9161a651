import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// The capture tools on a real two-daemon sync: capture, tshark with our dissector, capture
/// show, offline replay (same state hashes as the live receiver, every time), live replay to a
/// third daemon, and the raw path (tshark on loopback + key log → the same messages).
@Suite(.serialized)
struct CaptureToolsTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @discardableResult
    func ok(
        _ args: [String], environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let r = try TestSupport.peerlog(args, environment: environment)
        #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
        return r.stdout
    }

    func person(_ name: String) throws -> (home: String, identity: String) { try makePerson(name, in: dir) }

    func committed(_ home: String, _ group: String) -> String? {
        guard let out = try? TestSupport.peerlog(["state-hash", "--home", home, group, "--json"]), out.status == 0,
            case .string(let h)? = try? JSON.parse(out.stdout)["committed"]
        else { return nil }
        return h
    }

    /// Alice owns a group with 40 entities and has invited Bob; Bob's daemon dials hers and
    /// receives it all as a pending invitee, recording what it hears. A plaintext group unless
    /// `encrypted` (then Bob, who holds no key, is followed by his committed seq, not his hash).
    func recordedSync(
        captureArgs: [String], environment: [String: String] = [:], aliceListen: Int = 0, encrypted: Bool = false
    ) throws -> (
        alice: (home: String, identity: String), bob: (home: String, identity: String), group: String, capture: String
    ) {
        let a = try person("alice")
        let b = try person("bob")
        guard
            case .string(let group)? = try JSON.parse(
                try ok(["group", "create", "--home", a.home, "team", "--json"] + (encrypted ? [] : ["--plaintext"])))[
                    "id"]
        else { throw TestSupport.ProcessError(description: "no group") }
        let committed: (String, String) -> String? =
            encrypted ? { self.committedSeq($0, $1) } : { self.committed($0, $1) }
        try ok(["group", "add", "--home", a.home, group, b.identity])
        for i in 0..<40 { try ok(["put", "--home", a.home, group, "k\(i)", "\(i)"]) }
        let capture = dir + "/bob.pcapng"
        let da = try DaemonProcess(home: a.home, listenPort: aliceListen, environment: environment)
        let db = try DaemonProcess(
            home: b.home, arguments: ["--peer", da.address, "--allow", a.identity, "--capture", capture] + captureArgs,
            environment: environment)
        let target = committed(a.home, group)
        #expect(
            TestSupport.waitUntil(timeout: 30) { committed(b.home, group) == target },
            "bob never caught up: \(db.stderr)")
        #expect(db.stderr.contains("decrypted traffic"), "the capture warning is printed: \(db.stderr)")
        // A live write while connected: pushed as receipts and envelopes, not a catch-up.
        try ok(["put", "--home", a.home, group, "late", "\"pushed\""])
        let target2 = committed(a.home, group)
        #expect(TestSupport.waitUntil(timeout: 30) { committed(b.home, group) == target2 })
        #expect(db.stop() == 0)
        da.stop()
        return (a, b, group, capture)
    }

    func committedSeq(_ home: String, _ group: String) -> String? {
        guard let out = try? TestSupport.peerlog(["group", "show", "--home", home, group, "--json"]), out.status == 0
        else { return nil }
        return (try? JSON.parse(out.stdout)["committed_seq"]).map { "\($0)" }
    }

    /// An encrypted group's capture shows ciphertext; given the keys (`group keys`), `capture
    /// show` opens the bodies and `capture annotate` puts them where tshark shows them.
    @Test func sealedBodiesOpenOnlyWithTheKeys() throws {
        let (a, _, group, capture) = try recordedSync(captureArgs: [], encrypted: true)
        let raw = try #require(FileManager.default.contents(atPath: capture))
        #expect(!String(decoding: raw, as: UTF8.self).contains("pushed"), "the capture holds a written value")
        func items(_ records: [JSON]) -> [JSON] {
            records.flatMap { r -> [JSON] in if case .array(let i)? = r["items"] { i } else { [] } }
        }
        let sealed = items(try showJSON(capture))
        #expect(sealed.count { $0["sealed"] != nil } >= 41, "40 puts and the late one are sealed")
        #expect(sealed.allSatisfy { $0["plaintext"] == nil })

        let keylog = dir + "/keys.log"
        let none = try TestSupport.peerlog(["capture", "show", capture, "--keylog", keylog])
        #expect(none.status == 1 && none.stderr.split(separator: "\n").count == 1, "\(none.stderr)")
        try ok(["group", "keys", "--home", a.home, group, "--append", keylog])
        let keyBytes = try #require(FileManager.default.contents(atPath: keylog))
        let lines = String(decoding: keyBytes, as: UTF8.self)
        #expect(lines.hasPrefix("PEERLOG_EPOCH_KEY \(group) "), "\(lines)")
        let opened = items(try showJSON(capture, ["--keylog", keylog]))
        #expect(opened.count { $0["plaintext"] != nil } >= 41 && opened.allSatisfy { $0["sealed"] == nil })
        #expect(opened.contains { "\($0["plaintext"] ?? .null)".contains("pushed") })

        // Wireshark: ciphertext and the key id in the dissector's fields; the annotated copy
        // carries the opened bodies as packet comments.
        let annotated = dir + "/annotated.pcapng"
        #expect(try ok(["capture", "annotate", capture, "--keylog", keylog, "-o", annotated]).contains("opened"))
        func tshark(_ file: String, _ field: String) throws -> String {
            let r = try TestSupport.run(
                "/usr/bin/tshark",
                [
                    "-X", "lua_script:" + TestSupport.repoRoot + "/tools/wireshark/peerlog.lua", "-r", file, "-T",
                    "fields",
                    "-e", field,
                ])
            #expect(r.status == 0, "tshark: \(r.stderr)")
            return r.stdout
        }
        #expect(try tshark(capture, "peerlog.receipt.sealed").contains(where: \.isHexDigit))
        #expect(!(try tshark(capture, "frame.comment")).contains("pushed"))
        let comments = try tshark(annotated, "frame.comment")
        #expect(comments.contains("plaintext ") && comments.contains("pushed"), "\(comments)")
    }

    func showJSON(_ file: String, _ extra: [String] = []) throws -> [JSON] {
        try ok(["capture", "show", file, "--json"] + extra).split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    @Test func captureShowDissectReplay() throws {
        let (a, b, group, capture) = try recordedSync(captureArgs: [])
        let records = try showJSON(capture)
        let types = records.compactMap { if case .string(let t)? = $0["type"] { t } else { nil } }
        for expected in ["opened", "hello", "credit", "vector", "commits", "caught_up", "closed"] {
            #expect(types.contains(expected), "\(expected) in \(types)")
        }
        let receiptCIDs = records.flatMap { r -> [String] in
            guard case .array(let items)? = r["items"] else { return [] }
            return items.compactMap { i in
                guard case .string("receipt")? = i["kind"], case .string(let c)? = i["cid"] else { return nil }
                return c
            }
        }
        #expect(receiptCIDs.count >= 43, "group.created, member_added, 40 puts and the late put")

        // Filters.
        let onlyCommits = try showJSON(capture, ["--type", "commits"])
        #expect(!onlyCommits.isEmpty && onlyCommits.allSatisfy { $0["type"] == .string("commits") })
        #expect(
            try showJSON(capture, ["--group", String(group.prefix(10))]).allSatisfy { $0["group"] == .string(group) })
        let text = try ok(["capture", "show", capture])
        #expect(text.split(separator: "\n").count == records.count, "one line per record")
        #expect(text.contains("commits") && text.contains("entity.put×"))
        let verbose = try ok(["capture", "show", capture, "--type", "commits", "--verbose"])
        #expect(
            verbose.contains("\"entity.put\"") && verbose.contains("\"max_members\""), "payloads in diagnostic notation"
        )

        // tshark with our dissector names the same messages and computes the same receipt CIDs.
        let tshark = try TestSupport.run(
            "/usr/bin/tshark",
            [
                "-X", "lua_script:" + TestSupport.repoRoot + "/tools/wireshark/peerlog.lua", "-r", capture,
                "-T", "fields", "-e", "peerlog.type", "-e", "peerlog.receipt.cid", "-e", "peerlog.receipt.type", "-e",
                "peerlog.envelope.seq",
                "-E", "occurrence=a", "-E", "aggregator=,",
            ])
        #expect(tshark.status == 0, "tshark: \(tshark.stderr)")
        let rows = tshark.stdout.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }.map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(rows.map { $0[0] } == types, "tshark types: \(rows.map { $0[0] })")
        let dissectedCIDs = rows.flatMap { $0.count > 1 ? $0[1].split(separator: ",").map(String.init) : [] }
        #expect(dissectedCIDs == receiptCIDs)
        #expect(rows.contains { $0.count > 2 && $0[2].contains("group.created") })
        #expect(rows.contains { $0.count > 3 && $0[3].split(separator: ",").contains("1") }, "envelope seq 1 dissected")

        // Offline replay: same hashes as Bob, and the same twice.
        let live = try JSON.parse(try ok(["state-hash", "--home", b.home, group, "--json"]))
        var replays = [JSON]()
        for n in 0..<2 {
            let out = try JSON.parse(try ok(["replay", capture, "--into", dir + "/replay\(n)", "--json"]))
            guard case .array(let groups)? = out["groups"], let g = groups.first else {
                Issue.record("no groups: \(out)")
                return
            }
            #expect(g["group"] == .string(group))
            #expect(g["committed"] == live["committed"])
            #expect(g["tentative"] == live["tentative"])
            #expect(out["session_errors"] == .array([]))
            replays.append(g)
        }
        #expect(replays[0] == replays[1])
        let again = try TestSupport.peerlog(["replay", capture, "--into", dir + "/replay0"])
        #expect(again.status != 0 && again.stderr.contains("fresh home"))

        // Live replay to Carol, who has never seen the group: she converges to Bob's state.
        let c = try person("carol")
        let dc = try DaemonProcess(home: c.home, arguments: ["--allow", b.identity])
        let sent = try ok(["replay", capture, "--home", b.home, "--to", dc.address, "--speed", "0"])
        #expect(sent.contains("all acknowledged"), "\(sent)")
        #expect(
            TestSupport.waitUntil(timeout: 20) {
                committed(c.home, group)
                    == (live["committed"].flatMap { if case .string(let s) = $0 { s } else { nil } })
            }, "carol: \(dc.stderr)")
        dc.stop()
        _ = a
    }

    @Test func captureStartStopOnARunningDaemonAndOmittedBodies() throws {
        let a = try person("alice")
        let secret = "secret-value-\(UUID().uuidString)"
        guard
            case .string(let group)? = try JSON.parse(
                try ok(["group", "create", "--home", a.home, "team", "--json", "--plaintext"]))["id"]
        else { return }
        let b = try person("bob")
        try ok(["group", "add", "--home", a.home, group, b.identity])
        try ok(["put", "--home", a.home, group, "k", "\"\(secret)\""])
        // A blob of the secret: its chunks are omitted too.
        let doc = dir + "/doc.txt"
        try Data(String(repeating: secret + "\n", count: 1_000).utf8).write(to: URL(fileURLWithPath: doc))
        try ok(["put", "--home", a.home, group, "doc", "--value-file", doc])
        let da = try DaemonProcess(home: a.home)
        let file = dir + "/running.pcapng"
        let start = try TestSupport.peerlog(["capture", "start", "--home", a.home, "--omit-bodies", file])
        #expect(start.status == 0 && start.stderr.contains("decrypted traffic"), "\(start.stderr)")
        let status = try JSON.parse(try ok(["status", "--home", a.home, "--json"]))
        #expect(status["capture"]?["path"] == .string(file))
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                committed(b.home, group) != nil && committed(b.home, group) == committed(a.home, group)
            })
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["blob", "list", "--home", b.home]).stdout.contains("whole")) == true
            }, "bob did not fetch the blob")
        let stopped = try ok(["capture", "stop", "--home", a.home])
        #expect(stopped.contains("records in \(file)"), "\(stopped)")
        let again = try TestSupport.peerlog(["capture", "stop", "--home", a.home])
        #expect(again.status != 0 && again.stderr.contains("no capture is running"))
        db.stop()
        da.stop()
        let bytes = try #require(FileManager.default.contents(atPath: file))
        #expect(!String(decoding: bytes, as: UTF8.self).contains(secret), "bodies omitted")
        let records = try showJSON(file)
        #expect(records.contains { $0["bodies_omitted"] == .bool(true) && $0["type"] == .string("commits") })
        #expect(
            records.contains {
                $0["bodies_omitted"] == .bool(true) && $0["type"] == .string("blob_chunk")
                    && "\($0["detail"] ?? .null)".contains("bytes omitted")
            }, "\(records.compactMap { $0["detail"] })")
        // The dissector names the blob messages and says the chunk's bytes were left out.
        let tshark = try TestSupport.run(
            "/usr/bin/tshark",
            [
                "-X", "lua_script:" + TestSupport.repoRoot + "/tools/wireshark/peerlog.lua", "-r", file, "-T", "fields",
                "-e", "_ws.col.Info",
            ])
        #expect(tshark.status == 0, "tshark: \(tshark.stderr)")
        #expect(tshark.stdout.contains("blob_get") && tshark.stdout.contains("blob_hashes"), "\(tshark.stdout)")
        #expect(tshark.stdout.contains("blob_chunk") && tshark.stdout.contains("bytes, omitted"), "\(tshark.stdout)")
        let replay = try TestSupport.peerlog(["replay", file, "--into", dir + "/r"])
        #expect(replay.status != 0 && replay.stderr.contains("bodies omitted"), "\(replay.stderr)")
    }

    @Test func malformedCapturesGetOneErrorWithTheOffset() throws {
        let bad = dir + "/bad.pcapng"
        try Data("not a capture at all".utf8).write(to: URL(fileURLWithPath: bad))
        for command in [["capture", "show", bad], ["replay", bad, "--into", dir + "/x"]] {
            let r = try TestSupport.peerlog(command)
            #expect(r.status != 0)
            #expect(r.stderr.contains("bad.pcapng: offset 0: not a pcapng or pcap file"), "\(r.stderr)")
            #expect(!r.stderr.contains("Fatal error"))
        }
        // A real capture cut in the middle of a block.
        let (_, _, _, capture) = try recordedSync(captureArgs: [])
        let bytes = try #require(FileManager.default.contents(atPath: capture))
        let cut = dir + "/cut.pcapng"
        try bytes.prefix(bytes.count - 37).write(to: URL(fileURLWithPath: cut))
        let r = try TestSupport.peerlog(["capture", "show", cut])
        #expect(r.status != 0 && r.stderr.contains("offset ") && r.stderr.contains("truncated"), "\(r.stderr)")
    }

    /// Processes whose parent is `pid` (from /proc).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { child in
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == pid
        }
    }

    /// tshark records the loopback TCP of a real session; the daemons log keys; decrypting gives
    /// exactly the messages Bob's tap recorded. Capturing needs root (dumpcap on `lo`).
    @Test(.enabled(if: getuid() == 0, "capturing on lo needs root")) func rawCaptureDecryptsToWhatTheTapRecorded()
        throws
    {
        let keyLog = dir + "/keys.log"
        let raw = dir + "/raw.pcapng"
        let port = try TestSupport.freePort()
        // A ChildProcess starts with a clean signal mask, so SIGTERM stops tshark and its dumpcap.
        let tshark = try ChildProcess(
            "/usr/bin/tshark", ["-i", "lo", "-f", "tcp port \(port)", "-w", raw, "-q"], lifetime: 300)
        #expect(TestSupport.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: raw) }, "tshark started")
        // The file appears before the capture filter is live; on a loaded machine that takes a while.
        usleep(1_500_000)
        let (_, _, _, capture) = try recordedSync(
            captureArgs: [], environment: ["PEERLOG_KEYLOGFILE": keyLog], aliceListen: port)
        // dumpcap drops what it has not read from the kernel when it stops: on a loaded machine
        // it can lag the session, so wait until the file has stopped growing (for at most 10 s).
        usleep(1_000_000)
        var sizes: [Int] = []
        _ = TestSupport.waitUntil(timeout: 10) {
            sizes.append((try? FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int) ?? -1)
            usleep(250_000)
            return sizes.count >= 4 && Set(sizes.suffix(4)).count == 1
        }
        // SIGTERM ends tshark and its dumpcap child cleanly (they flush the file); never wait
        // on them unbounded.
        let children = Self.children(of: tshark.pid)
        tshark.signal(SIGTERM)
        if !TestSupport.waitUntil(timeout: 10, { children.allSatisfy { kill($0, 0) != 0 } }) {
            for pid in children { kill(pid, SIGKILL) }
            Issue.record("dumpcap did not stop on SIGTERM")
        }
        tshark.wait(timeout: 10)
        usleep(200_000)
        let keys = try String(contentsOfFile: keyLog, encoding: .utf8)
        #expect(keys.split(separator: "\n").count == 2, "both ends log the connection")
        let mode = try FileManager.default.attributesOfItem(atPath: keyLog)[.posixPermissions] as! Int
        #expect(mode == 0o600)
        let decrypted = dir + "/decrypted.pcapng"
        let out = try ok(["capture", "decrypt", raw, "--keylog", keyLog, "--output", decrypted])
        #expect(out.contains("connection 1:"), "\(out)")
        func messages(_ file: String) throws -> [String] {
            try showJSON(file).filter { $0["kind"] == .string("message") }.map {
                "\($0["direction"]!) \($0["message"]!)"
            }
        }
        let tapped = try messages(capture)
        #expect(tapped.count > 8)
        let got = try messages(decrypted)
        // Each direction in its own order: the tap stamps a message when Bob's node handles it,
        // the raw capture when its packet crossed `lo`, so an incoming and an outgoing message
        // close together can swap places between the two without anything being lost or altered.
        for direction in ["\"in\" ", "\"out\" "] {
            let g = got.filter { $0.hasPrefix(direction) }
            let t = tapped.filter { $0.hasPrefix(direction) }
            let first = zip(g, t).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(g.count, t.count)
            #expect(
                g == t,
                "\(direction)decrypted \(g.count) messages, tapped \(t.count); first difference at \(first): \(g.dropFirst(first).prefix(3)) vs \(t.dropFirst(first).prefix(3))"
            )
        }
    }
}
