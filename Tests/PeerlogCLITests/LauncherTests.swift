import Foundation
import PeerlogTestSupport
import Testing

/// `peerlog` is a launcher: `--version` and a plain `put` handed to the home's running daemon
/// it answers itself; everything else runs `peerlog-full` beside it, with the same arguments.
struct LauncherTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    var full: String {
        URL(fileURLWithPath: TestSupport.peerlogBinary).deletingLastPathComponent().path + "/peerlog-full"
    }

    /// The launcher copied alone into a folder: whatever it cannot answer itself fails there,
    /// so a put that succeeds was written by the daemon.
    func loneLauncher() throws -> String {
        let lone = dir + "/lone"
        try FileManager.default.createDirectory(atPath: lone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestSupport.peerlogBinary, toPath: lone + "/peerlog")
        return lone + "/peerlog"
    }

    /// An output with its CIDs and seqs blanked, to compare two.
    func shape(_ output: String) -> String {
        output.replacingOccurrences(of: #"b[a-z2-7]{58}"#, with: "CID", options: .regularExpression)
            .replacingOccurrences(of: #"seq [0-9]+"#, with: "seq N", options: .regularExpression)
            .replacingOccurrences(of: #""seq": [0-9]+"#, with: #""seq": N"#, options: .regularExpression)
    }

    @Test func aPlainPutIsWrittenByTheRunningDaemonAndPrintsWhatTheFullCommandPrints() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("a", in: dir)
        let group = try createGroup(home, "notes", plaintext: true)
        let lone = try loneLauncher()

        // No daemon: the launcher alone cannot write, and says what it needs.
        let without = try TestSupport.run(lone, ["put", "--home", home, "notes", "k", "v"])
        #expect(without.status == 127, "\(without)")
        #expect(
            without.stderr.contains("cannot run \(dir)/lone/peerlog-full") && without.stderr.contains("side by side"))
        #expect(peerlogValue(home, group, "k") == nil)

        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let value = "two words\nand a second line, ünïcødé"
        let quick = try TestSupport.run(lone, ["put", "notes", "a key", value, "--home=\(home)"])
        #expect(quick.status == 0, "\(quick)")
        #expect(peerlogValue(home, group, "a key") == value)
        // What `peerlog-full put` prints, itself writing to the store.
        let direct = try TestSupport.run(full, ["put", "--home", home, "notes", "other", "v"])
        #expect(direct.status == 0, "\(direct)")
        #expect(shape(quick.stdout) == shape(direct.stdout).replacingOccurrences(of: "other", with: "a key"))
        #expect(shape(quick.stdout) == "Set \"a key\"\nreceipt CID: committed at seq N\n", "\(quick.stdout)")
        #expect(quick.stderr.isEmpty)

        // `--json` too prints what the full command prints.
        let quickJSON = try TestSupport.run(lone, ["put", "--json", "--home", home, "notes", "k", "v"])
        let directJSON = try TestSupport.run(full, ["put", "--json", "--home", home, "notes", "k", "v"])
        #expect(quickJSON.status == 0 && directJSON.status == 0, "\(quickJSON) \(directJSON)")
        #expect(shape(quickJSON.stdout) == shape(directJSON.stdout), "\(quickJSON.stdout)")
        #expect(shape(quickJSON.stdout).contains(#""status": "committed""#))

        // Any other form needs the full command, even with the daemon up.
        for args in [
            ["put", "--home", home, "notes", "k", "v", "--wait"], ["put", "--home", home, "notes", "k", ""],
            ["put", "--home", home, "notes", "k", "v", "--json", "--json"],
        ] {
            let other = try TestSupport.run(lone, args)
            #expect(other.status == 127, "\(args): \(other)")
        }
        // `--version` needs nothing beside it, and says what the full command says.
        let version = try TestSupport.run(lone, ["--version"])
        let fullVersion = try TestSupport.run(full, ["--version"])
        #expect(version.status == 0 && version.stdout == fullVersion.stdout && !version.stdout.isEmpty)
    }

    @Test func aPutTheDaemonRefusesRunsTheFullCommandForItsMessageAndStatus() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("a", in: dir)
        let group = try createGroup(home, "notes", plaintext: true)
        let before = try TestSupport.run(TestSupport.peerlogBinary, ["put", "--home", home, "nosuch", "k", "v"])
        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let refused = try TestSupport.run(TestSupport.peerlogBinary, ["put", "--home", home, "nosuch", "k", "v"])
        #expect(refused.status == 1 && refused.status == before.status, "\(refused)")
        #expect(refused.stderr == before.stderr && refused.stderr.contains("nosuch"), "\(refused.stderr)")
        // A key the daemon refuses (too long) is refused once, with the full command's words.
        let long = String(repeating: "k", count: 300)
        let tooLong = try TestSupport.run(TestSupport.peerlogBinary, ["put", "--home", home, "notes", long, "v"])
        #expect(tooLong.status == 1 && tooLong.stderr.contains("\"key\" must be 1 to 256 bytes"), "\(tooLong)")
        #expect(peerlogValue(home, group, long) == nil)
        // And through the launcher every other command still works.
        let ok = try TestSupport.run(TestSupport.peerlogBinary, ["put", "--home", home, "notes", "k", "v"])
        #expect(ok.status == 0 && peerlogValue(home, group, "k") == "v", "\(ok)")
    }

    /// What the launcher does with each kind of reply, against a stand-in for the daemon (a
    /// Python process on the home's socket that reads one request and answers `reply` once).
    @Test(arguments: [
        (#"{"error":"no group named \"g\""}"#, Int32(127)),  // refused: the full command runs (absent here)
        ("", Int32(1)),  // closed without an answer: it may have written, so no second write
        ("garbled", Int32(1)),
    ])
    func theReplyDecidesBetweenDoneRetryAndFail(_ reply: String, _ status: Int32) throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: home + "/replica.sqlite", contents: Data()))
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
            open(sys.argv[1] + ".ready", "w").close()
            c, _ = s.accept(); c.settimeout(30)
            request = b""
            while not request.endswith(b"\\n"): request += c.recv(4096)
            open(sys.argv[1] + ".request", "wb").write(request)
            c.sendall(sys.argv[2].encode()); c.close()
            """
        let stand = try ChildProcess(TestSupport.python, ["-c", script, home + "/peerlog.sock", reply], lifetime: 60)
        defer { stand.kill9() }
        #expect(
            TestSupport.waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: home + "/peerlog.sock.ready") })
        let r = try TestSupport.run(try loneLauncher(), ["put", "--home", home, "g", "k", "v w"])
        #expect(r.status == status, "\(r)")
        let request = try String(contentsOfFile: home + "/peerlog.sock.request", encoding: .utf8)
        #expect(request == "put 67 6b 762077\n")
        if status == 1 {
            #expect(
                r.stderr.contains("took the write but gave no usable answer") && r.stderr.contains("peerlog get g k"))
        }
    }
}
