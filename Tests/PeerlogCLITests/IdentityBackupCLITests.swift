import Foundation
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `peerlog identity export` and `peerlog init --restore`, run as a user would.
struct IdentityBackupCLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func peerlog(_ args: [String], passphrase: String? = nil) throws -> TestSupport.ProcessResult {
        // env -u: whatever the test runner's environment holds, the variable is set only when asked.
        var command = ["-u", "PEERLOG_PASSPHRASE"]
        if let passphrase { command.append("PEERLOG_PASSPHRASE=\(passphrase)") }
        return try TestSupport.run("/usr/bin/env", command + [TestSupport.peerlogBinary] + args)
    }

    func json(_ r: TestSupport.ProcessResult) throws -> JSON {
        #expect(r.status == 0, "\(r.stderr)")
        return try JSON.parse(r.stdout)
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test func exportThenRestoreGivesTheSameIdentityAndANewDevice() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = dir + "/a"
        let b = dir + "/b"
        let file = dir + "/me.backup"
        #expect(try peerlog(["init", "--home", a, "--name", "desk"]).status == 0)
        let exported = try json(
            try peerlog(["identity", "export", "--home", a, "--out", file, "--json"], passphrase: "a long passphrase"))
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)

        let restored = try peerlog(
            ["init", "--home", b, "--restore", file, "--name", "travel"], passphrase: "a long passphrase")
        #expect(restored.status == 0 && restored.stderr.isEmpty, "\(restored.stderr)")
        #expect(restored.stdout.hasPrefix("Initialised \(b) from the backup \(file)\n"), "\(restored.stdout)")
        let ida = try json(try peerlog(["id", "--home", a, "--json"]))
        let idb = try json(try peerlog(["id", "--home", b, "--json"]))
        #expect(ida["identity"] == idb["identity"] && exported["identity"] == ida["identity"])
        #expect(exported["file"] == .string(file))
        #expect(ida["device"] != idb["device"] && ida["noise_key"] != idb["noise_key"])
        #expect(idb["name"] == .string("travel"))

        // Text output names the file and the identity.
        let text = try peerlog(["identity", "export", "--home", b, "--out", dir + "/2.backup"], passphrase: "p")
        guard case .string(let identity)? = ida["identity"] else {
            throw TestSupport.ProcessError(description: "no id")
        }
        #expect(text.status == 0 && text.stdout.contains("\(identity) to \(dir)/2.backup"), "\(text.stdout)")
    }

    @Test func aWrongPassphraseIsOneLineAndWritesNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/me.backup"
        _ = try peerlog(["init", "--home", dir + "/a"])
        #expect(
            try peerlog(["identity", "export", "--home", dir + "/a", "--out", file], passphrase: "right").status == 0)
        let target = dir + "/new/home"
        let wrong = try peerlog(["init", "--home", target, "--restore", file], passphrase: "wrong")
        #expect(wrong.status != 0 && wrong.stdout.isEmpty)
        #expect(wrong.stderr.split(separator: "\n").count == 1, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("wrong passphrase or damaged file"), "\(wrong.stderr)")
        #expect(!exists(dir + "/new"), "the target home was not created")
        // An empty PEERLOG_PASSPHRASE is a passphrase, refused as empty, not a reason to prompt.
        let empty = try peerlog(["init", "--home", target, "--restore", file], passphrase: "")
        #expect(empty.status != 0 && empty.stderr.contains("1...1024 bytes"), "\(empty.stderr)")
        #expect(!exists(dir + "/new"))
        // A damaged file is its own error.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[2] ^= 0xff
        #expect(FileManager.default.createFile(atPath: dir + "/bad", contents: Data(bytes)))
        let bad = try peerlog(["init", "--home", target, "--restore", dir + "/bad"], passphrase: "right")
        #expect(bad.status != 0 && bad.stderr.contains("not a usable identity backup"), "\(bad.stderr)")
        #expect(bad.stderr.split(separator: "\n").count == 1 && !exists(dir + "/new"))
        // An initialised home is refused before the passphrase matters.
        let cert = try Data(contentsOf: URL(fileURLWithPath: dir + "/a/device.cert"))
        let again = try peerlog(["init", "--home", dir + "/a", "--restore", file], passphrase: "right")
        #expect(again.status != 0 && again.stderr.contains("already initialised"), "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/a/device.cert")) == cert)
    }

    @Test func exportNeverOverwrites() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/me.backup"
        _ = try peerlog(["init", "--home", dir + "/a"])
        #expect(
            try peerlog(["identity", "export", "--home", dir + "/a", "--out", file], passphrase: "one").status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        let again = try peerlog(["identity", "export", "--home", dir + "/a", "--out", file], passphrase: "two")
        #expect(again.status != 0 && again.stderr.split(separator: "\n").count == 1)
        #expect(again.stderr.contains("already exists; refusing to overwrite it"), "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        let notInit = try peerlog(
            ["identity", "export", "--home", dir + "/none", "--out", dir + "/x"], passphrase: "p")
        #expect(notInit.status != 0 && notInit.stderr.contains("not initialised") && !exists(dir + "/x"))
    }

    @Test func withoutThePassphraseVariableOrATerminalTheErrorSaysWhatToSet() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try peerlog(["init", "--home", dir + "/a"])
        let export = try peerlog(["identity", "export", "--home", dir + "/a", "--out", dir + "/f"])
        #expect(export.status != 0 && export.stderr.split(separator: "\n").count == 1)
        #expect(export.stderr.contains("set PEERLOG_PASSPHRASE"), "\(export.stderr)")
        #expect(!exists(dir + "/f"))
        #expect(
            try peerlog(["identity", "export", "--home", dir + "/a", "--out", dir + "/f"], passphrase: "p").status == 0)
        let restore = try peerlog(["init", "--home", dir + "/b", "--restore", dir + "/f"])
        #expect(restore.status != 0 && restore.stderr.contains("set PEERLOG_PASSPHRASE") && !exists(dir + "/b"))
    }

    /// Runs the binary on a pseudo-terminal (Python's `pty`), typing `lines` at its prompts;
    /// returns everything the terminal showed and the exit status.
    func onTerminal(_ args: [String], typing lines: [String]) throws -> (output: String, status: Int) {
        let script = """
            import os, pty, select, sys, time
            lines, argv = sys.argv[1].split("|"), sys.argv[2:]
            pid, fd = pty.fork()
            if pid == 0:
                os.environ.pop("PEERLOG_PASSPHRASE", None)
                os.execv(argv[0], argv)
            out = b""
            def drain(seconds):
                global out
                end = time.time() + seconds
                while time.time() < end:
                    if select.select([fd], [], [], 0.05)[0]:
                        try:
                            b = os.read(fd, 4096)
                        except OSError:
                            return False
                        if not b:
                            return False
                        out += b
                return True
            for line in lines:
                # Typed only once the prompt shows (echo is off by then), however long that takes
                # on a busy machine; no prompt within the deadline fails instead of typing blind.
                end = time.time() + 180
                while not out.rstrip().endswith(b":") and time.time() < end and drain(0.05):
                    pass
                if not out.rstrip().endswith(b":"):
                    os.kill(pid, 9)
                    sys.stdout.write(out.decode(errors="replace") + "\\nno prompt\\nexit -1")
                    sys.exit(0)
                os.write(fd, line.encode() + b"\\n")
                out += b"<typed>"
            while drain(0.2):
                pass
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            sys.stdout.write(out.decode(errors="replace") + "\\nexit " + str(status))
            """
        let r = try TestSupport.run(
            TestSupport.python, ["-c", script, lines.joined(separator: "|"), TestSupport.peerlogBinary] + args,
            timeout: 400)
        #expect(r.status == 0, "\(r.stderr)")
        let status = Int(r.stdout.components(separatedBy: "\nexit ").last ?? "") ?? -1
        return (r.stdout, status)
    }

    @Test func onATerminalThePassphraseIsAskedForWithoutEcho() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try peerlog(["init", "--home", dir + "/a"])
        let out = dir + "/f"
        let mismatch = try onTerminal(
            ["identity", "export", "--home", dir + "/a", "--out", out], typing: ["first-secret", "second-secret"])
        #expect(mismatch.status == 1 && mismatch.output.contains("the two passphrases differ"), "\(mismatch.output)")
        #expect(!exists(out))
        let made = try onTerminal(
            ["identity", "export", "--home", dir + "/a", "--out", out], typing: ["typed-secret", "typed-secret"])
        #expect(made.status == 0 && made.output.contains("Repeat the passphrase:"), "\(made.output)")
        #expect(!made.output.contains("typed-secret"), "no echo: \(made.output)")
        let restored = try onTerminal(["init", "--home", dir + "/b", "--restore", out], typing: ["typed-secret"])
        #expect(restored.status == 0 && restored.output.contains("from the backup"), "\(restored.output)")
        #expect(!restored.output.contains("typed-secret"))
    }

    /// Files cross between `peerlog` and the independent Python reader and writer of §21
    /// (tools/interop/backup_interop.py), at the default costs.
    @Test func backupsCrossWithAnIndependentImplementation() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try peerlog(["init", "--home", dir + "/a"])
        #expect(
            try peerlog(["identity", "export", "--home", dir + "/a", "--out", dir + "/f"], passphrase: "ü p").status
                == 0)
        let opened = try JSON.parse(try TestSupport.python("backup_interop.py", ["open", dir + "/f", "ü p"]))
        let id = try json(try peerlog(["id", "--home", dir + "/a", "--json"]))
        guard case .string(let identity)? = id["identity"] else { throw TestSupport.ProcessError(description: "no id") }
        let hex = TestSupport.hex(try IdentityID(string: identity).bytes)
        #expect(opened["identity"] == .string(hex) && opened["seed_identity"] == .string(hex), "\(opened)")
        #expect(opened["ops"] == .int(3) && opened["mem"] == .int(134_217_728))

        let made = try JSON.parse(try TestSupport.python("backup_interop.py", ["make", dir + "/py", "from python"]))
        #expect(
            try peerlog(["init", "--home", dir + "/b", "--restore", dir + "/py"], passphrase: "from python").status == 0
        )
        let restored = try json(try peerlog(["id", "--home", dir + "/b", "--json"]))
        guard case .string(let restoredIdentity)? = restored["identity"] else {
            throw TestSupport.ProcessError(description: "no id")
        }
        #expect(made["identity"] == .string(TestSupport.hex(try IdentityID(string: restoredIdentity).bytes)))
    }
}
