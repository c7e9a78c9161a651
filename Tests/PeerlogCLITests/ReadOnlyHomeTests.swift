import Foundation
import PeerlogTestSupport
import Testing

/// Issue 22: on a read-only home the reading commands work and writes are refused in one line.
/// Tests run as root, which ignores file modes, so the home is made read-only with a
/// read-only bind mount in a private mount namespace (`unshare -m`; `-rm` maps an
/// unprivileged user to root in a user namespace, where the key files still look like ours).
struct ReadOnlyHomeTests {
    static let unshareFlag = getuid() == 0 ? "-m" : "-rm"

    /// Runs `peerlog ARGS` with `home` mounted read-only over itself, for that process only.
    static func peerlogOnReadOnly(_ home: String, _ args: [String]) throws -> TestSupport.ProcessResult {
        let script = #"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#
        return try TestSupport.run(
            "/usr/bin/unshare", [unshareFlag, "sh", "-c", script, "sh", home, TestSupport.peerlogBinary] + args)
    }

    /// Whether a read-only bind mount can be made here. Root must be able to; anyone else
    /// skips the tests when user namespaces are not allowed.
    static let mountsWork: Bool = {
        guard let dir = try? TestSupport.temporaryDirectory() else { return false }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = #"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && ! touch "$1/probe" 2>/dev/null"#
        return (try? TestSupport.run("/usr/bin/unshare", [unshareFlag, "sh", "-c", script, "sh", dir]).status) == 0
    }()

    @Test(
        .enabled(
            if: getuid() == 0 || mountsWork,
            "needs a read-only bind mount (unshare -rm), which user namespaces here do not allow"))
    func readsWorkAndWritesAreRefused() throws {
        #expect(Self.mountsWork, "as root, a read-only bind mount in a private namespace must work")
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("ro", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home])
        try expectPeerlog(["put", "g", "k", "hello", "--home", home])
        let reads: [([String], String)] = [
            (["get", "g", "k"], "hello"), (["log", "g"], "entity.put"), (["check"], "integrity: ok"),
            (["group", "list"], "g"),
        ]
        func checkReadsAndWrites(_ situation: String) throws {
            for (args, expected) in reads {
                let r = try Self.peerlogOnReadOnly(home, args + ["--home", home])
                #expect(
                    r.status == 0 && r.stdout.contains(expected),
                    "\(situation): peerlog \(args.joined(separator: " ")): \(r.stderr)")
            }
            for args in [["put", "g", "k", "other"], ["group", "create", "h"]] {
                let r = try Self.peerlogOnReadOnly(home, args + ["--home", home])
                #expect(r.status != 0 && r.stderr.contains("\(home) is read-only"), "\(situation): \(r.stderr)")
                #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)")
            }
        }
        // Every writer closed: no -wal or -shm file, which SQLite cannot create here.
        #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite-wal"))
        try checkReadsAndWrites("no WAL files")
        // A daemon holds the store open (WAL files present, written by another process).
        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        #expect(FileManager.default.fileExists(atPath: home + "/replica.sqlite-wal"))
        try checkReadsAndWrites("daemon running")
        #expect(
            try TestSupport.peerlog(["get", "g", "k", "--home", home]).stdout == "hello\n", "the value was not changed")
    }

    /// Issue 18: the reading commands create no file in a home that was initialised but never
    /// used (a writable one); the first write creates the store.
    @Test func readingAnUnusedHomeCreatesNoFile() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("fresh", in: dir)
        let before = try FileManager.default.contentsOfDirectory(atPath: home).sorted()
        #expect(!before.contains("replica.sqlite"))
        for args in [
            ["group", "list"], ["invites"], ["dead-letters"], ["check"], ["device", "list"], ["group", "keys"], ["id"],
        ] {
            let r = try TestSupport.peerlog(args + ["--home", home])
            #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)")
        }
        for args in [["get", "g", "k"], ["log", "g"], ["state-hash", "g"], ["group", "show", "g"]] {
            let r = try TestSupport.peerlog(args + ["--home", home])
            #expect(
                r.status == 1 && r.stderr.contains("no group"), "peerlog \(args.joined(separator: " ")): \(r.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: home).sorted() == before)
        #expect(try TestSupport.peerlog(["device", "list", "--home", home]).stdout.contains("fresh"))
        try expectPeerlog(["group", "create", "g", "--home", home])
        #expect(FileManager.default.fileExists(atPath: home + "/replica.sqlite"))
    }

    /// A home that was initialised but never used has no replica.sqlite: it reads as empty.
    @Test(
        .enabled(
            if: getuid() == 0 || mountsWork,
            "needs a read-only bind mount (unshare -rm), which user namespaces here do not allow"))
    func unusedReadOnlyHomeReadsAsEmpty() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("ro", in: dir)
        let list = try Self.peerlogOnReadOnly(home, ["group", "list", "--home", home])
        #expect(list.status == 0, "\(list.stderr)")
        let create = try Self.peerlogOnReadOnly(home, ["group", "create", "g", "--home", home])
        #expect(create.status != 0 && create.stderr.contains("read-only"), "\(create.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite"))
    }
}
