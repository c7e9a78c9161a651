import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Snapshots and compaction through the CLI, on real homes (docs/PROTOCOL.md §23).
struct SnapshotCLITests {
    func peerlog(_ args: [String]) throws -> TestSupport.ProcessResult {
        try TestSupport.peerlog(args)
    }

    func showJSON(_ group: String, _ home: String) throws -> JSON {
        let show = try peerlog(["group", "show", group, "--home", home, "--json"])
        #expect(show.status == 0, "\(show.stderr)")
        return try JSON.parse(show.stdout)
    }

    @Test func snapshotCompactAndCheckOnAHome() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/h"
        #expect(try peerlog(["init", "--home", home]).status == 0)
        #expect(try peerlog(["group", "create", "notes", "--home", home]).status == 0)
        // Nothing to prune before there is a snapshot above the floor: said, exit 0.
        let nothing = try peerlog(["group", "compact", "notes", "--home", home])
        #expect(nothing.status == 0 && nothing.stdout.contains("Nothing to prune"), "\(nothing)")
        let batch = dir + "/b.jsonl"
        let lines = (0..<3_000).map { #"{"key": "k\#($0 % 20)", "value": \#($0)}"# }
        try lines.joined(separator: "\n").write(toFile: batch, atomically: true, encoding: .utf8)
        #expect(try peerlog(["put", "notes", "--batch", batch, "--home", home]).status == 0)
        let made = try peerlog(["group", "snapshot", "notes", "--home", home, "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let snapshot = try JSON.parse(made.stdout)
        guard case .number(let seqText)? = snapshot["seq"], let seq = Int(seqText) else {
            Issue.record("no seq in \(made.stdout)")
            return
        }
        #expect(seq >= 3_001)
        let hashBefore = try peerlog(["state-hash", "notes", "--home", home]).stdout
        #expect(hashBefore.count > 64, "state-hash printed \(hashBefore)")
        let compact = try peerlog(["group", "compact", "notes", "--home", home, "--json"])
        #expect(compact.status == 0, "\(compact.stderr)")
        let result = try JSON.parse(compact.stdout)
        #expect(result["floor"] == .number(String(seq)))
        guard case .number(let prunedText)? = result["pruned"], let pruned = Int(prunedText) else {
            Issue.record("no pruned count in \(compact.stdout)")
            return
        }
        #expect(pruned > 2_900, "pruned \(pruned)")
        #expect(try peerlog(["state-hash", "notes", "--home", home]).stdout == hashBefore)
        let check = try peerlog(["check", "--home", home])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(try showJSON("notes", home)["floor"] == .number(String(seq)))
        // Every current value survives, and the group goes on: a write after the floor.
        let get = try peerlog(["get", "notes", "k7", "--home", home])
        #expect(get.stdout.contains("2987"), "\(get.stdout)")
        #expect(try peerlog(["put", "notes", "after", "1", "--home", home]).status == 0)
        // An export needs the whole log: refused in one line, and no file is left behind.
        let export = try peerlog(["export", "notes", dir + "/notes.export", "--home", home])
        #expect(export.status == 1 && export.stderr.contains("holds no log below seq"), "\(export)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/notes.export"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).allSatisfy { !$0.contains("notes.export") })
        #expect(try peerlog(["check", "--home", home]).status == 0)
        // A bad interval and a group that does not exist: one line, usage or not-found status.
        #expect(try peerlog(["group", "snapshot", "nope", "--home", home]).status != 0)
        let bad = try peerlog(["group", "retention", "notes", "--on", "--off", "--home", home])
        #expect(bad.status == 64, "\(bad)")
    }

    /// kill -9 while snapshots and compactions run (one every 100 commits, retention on):
    /// every store left behind passes `peerlog check`, and no acknowledged write is lost.
    @Test func snapshotsAndCompactionSurviveSIGKILL() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/h"
        #expect(try peerlog(["init", "--home", home]).status == 0)
        #expect(try peerlog(["group", "create", "busy", "--plaintext", "--home", home]).status == 0)
        #expect(try peerlog(["group", "snapshot", "busy", "--every", "100", "--home", home]).status == 0)
        #expect(try peerlog(["group", "retention", "busy", "--on", "--min-age", "0", "--home", home]).status == 0)
        var rng = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["PEERLOG_SEED"] ?? "") ?? 18)
        var acknowledged = 0
        for round in 0..<6 {
            // After a number of acknowledged writes, not a time (a busy machine is only slower).
            let target = Int.random(in: 40...120, using: &rng)
            let run = try TestSupport.peerlogKilled(["debug", "append-loop", "busy", "--home", home]) {
                TestSupport.acknowledgedLines($0) >= target
            }
            #expect(run.killed, "round \(round): the child was killed, not finished")
            acknowledged += run.stdout.split(separator: "\n").count { $0.hasPrefix("ok ") }
            let check = try peerlog(["check", "--home", home])
            #expect(check.status == 0, "round \(round): \(check.stdout) \(check.stderr)")
            // Each acknowledged put is committed at its own seq (the group's first two are created and…).
            let show = try showJSON("busy", home)
            guard case .number(let committedText)? = show["committed_seq"], let committed = Int(committedText) else {
                Issue.record("no committed_seq")
                return
            }
            #expect(
                committed >= acknowledged + 1, "round \(round): \(acknowledged) acknowledged, \(committed) committed")
        }
        let show = try showJSON("busy", home)
        guard case .number(let floorText)? = show["floor"], let floor = Int(floorText) else {
            Issue.record("no floor")
            return
        }
        #expect(acknowledged > 200, "the child made progress (\(acknowledged) appends)")
        #expect(floor >= 100, "compactions ran (floor \(floor))")
    }
}
