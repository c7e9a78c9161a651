import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Blobs against the independent Python peer (tools/interop/sync_client.py, written from
/// docs/PROTOCOL.md §24): it fetches and checks a blob from a live daemon, and as a hostile member
/// it answers with wrong hashes and chunks, which the daemon catches, logs and fetches elsewhere.
@Suite(.serialized)
struct BlobInteropTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }
    static let script = TestSupport.repoRoot + "/tools/interop/sync_client.py"

    func identity(seed: String) throws -> String {
        let python = try JSON.parse(try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))
        guard case .string(let identity)? = python["identity"] else {
            throw TestSupport.ProcessError(description: "sync_client.py identity printed \(python)")
        }
        return identity
    }

    func randomFile(_ name: String, count: Int) throws -> String {
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<(count / 8 + 1)).flatMap { _ in withUnsafeBytes(of: g.next() as UInt64) { Array($0) } }
        let path = dir + "/" + name
        try Data(bytes.prefix(count)).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func thePythonPeerFetchesAndChecksABlob() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let group = try createGroup(a.home, "docs", plaintext: true)
        try expectPeerlog(["group", "add", "--home", a.home, group, try identity(seed: "21")])
        let file = try randomFile("report.pdf", count: 5_000_000)
        try expectPeerlog(["put", "--home", a.home, group, "report", "--value-file", file])
        let daemon = try DaemonProcess(home: a.home)
        defer { daemon.stop() }
        let out = dir + "/report.out"
        let printed = try TestSupport.python(
            "sync_client.py",
            [
                "blobfetch", "127.0.0.1", String(daemon.port), "--seed", "21", "--group", group, "--key", "report",
                "--out", out,
            ])
        let summary = try JSON.parse(printed)
        #expect(summary["verified"] == .bool(true), "\(printed)")
        #expect(summary["size"] == .int(5_000_000) && summary["chunks"] == .int(5), "\(printed)")
        // The first request after the session opened was answered (no race with the hub's tick).
        #expect(summary["retries"] == .int(0), "\(printed)")
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: file))
    }

    /// Bob's daemon listens; the hostile member connects first, then Alice's daemon dials Bob and
    /// puts a blob. Bob asks both; the hostile one answers with random hashes or chunks, is logged
    /// as evidence and not asked again, and Bob gets the blob whole from Alice.
    @Test func aHostileMembersWrongChunksAreCaughtAndTheBlobComesFromAnother() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let group = try createGroup(a.home, "docs", plaintext: true)
        let mallory = try identity(seed: "22")
        for member in [b.identity, mallory] { try expectPeerlog(["group", "add", "--home", a.home, group, member]) }
        let db = try DaemonProcess(home: b.home, arguments: ["--allow", a.identity])
        defer { db.stop() }
        var da = try DaemonProcess(home: a.home, arguments: ["--peer", db.address])
        #expect(acceptWhenInvited(b.home, group), "bob never got the invitation: \(db.stderr)")
        da.stop()
        // Mallory connects to Bob (a member in Bob's view, so he lets her in and syncs the group).
        let report = dir + "/mallory.out"
        let hostile = try ChildProcess(
            TestSupport.python,
            [
                Self.script, "blobserve-corrupt", "127.0.0.1", String(db.port), "--seed", "22", "--group", group,
                "--seconds", "45",
            ], stdout: report, stderr: dir + "/mallory.err", lifetime: 120)
        defer { hostile.stop(grace: 5) }
        #expect(
            TestSupport.waitUntil(timeout: 30) { db.stderr.components(separatedBy: "connected to device").count > 2 },
            "mallory did not connect: \(db.stderr.suffix(2_000))")
        let file = try randomFile("photo.jpg", count: 8_000_000)
        try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", file])
        da = try DaemonProcess(home: a.home, arguments: ["--peer", db.address])
        defer { da.stop() }
        let out = dir + "/photo.out"
        try expectPeerlog(["get", "--home", b.home, group, "photo", "--out", out, "--wait", "60"])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: file))
        #expect(db.stderr.contains("evidence: peer"), "bob logged no evidence: \(db.stderr.suffix(3_000))")
        // She stops by herself after 45 s and prints what she was asked.
        #expect(
            hostile.wait(timeout: 60) == 0,
            "mallory: \((try? String(contentsOfFile: dir + "/mallory.err", encoding: .utf8)) ?? "")")
        let printed = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        #expect(printed.contains("\"gets\""), "mallory printed \(printed)")
        #expect(!printed.contains("\"gets\": 0"), "bob never asked mallory, so the test proves nothing: \(printed)")
    }

    /// Requests at the edges (`from + count` that overflows, past the last chunk, an unknown blob,
    /// a group not synced) get `blob_missing` and the session goes on: the Python peer checks each
    /// answer, then fetches a chunk to prove the daemon is still there. An older daemon died on
    /// the overflowing one.
    @Test func requestsAtTheEdgesGetBlobMissingAndTheDaemonStaysUp() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let group = try createGroup(a.home, "docs", plaintext: true)
        try expectPeerlog(["group", "add", "--home", a.home, group, try identity(seed: "23")])
        try expectPeerlog([
            "put", "--home", a.home, group, "photo", "--value-file", try randomFile("p", count: 3_000_000),
        ])
        let daemon = try DaemonProcess(home: a.home)
        defer { daemon.stop() }
        let run = try TestSupport.spawnAndWait(
            [
                TestSupport.python, Self.script, "blobprobe", "127.0.0.1", String(daemon.port), "--seed", "23",
                "--group",
                group, "--key", "photo",
            ], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)\n\(daemon.stderr.suffix(2_000))")
        let summary = try JSON.parse(run.stdout)
        #expect(summary["alive"] == .bool(true), "\(run.stdout)")
        guard case .array(let answers)? = summary["answers"] else {
            Issue.record("no answers: \(run.stdout)")
            return
        }
        #expect(answers.count == 7 && answers.allSatisfy { $0["ok"] == .bool(true) }, "\(run.stdout)")
    }
}
