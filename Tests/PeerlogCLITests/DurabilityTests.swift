import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Invariant 6: a write acknowledged to the caller survives kill -9, and the store stays consistent.
struct DurabilityTests {
    @Test func appendsSurviveSIGKILL() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/h"
        #expect(try TestSupport.peerlog(["init", "--home", home]).status == 0)
        #expect(try TestSupport.peerlog(["group", "create", "durable", "--home", home]).status == 0)
        var rng = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["PEERLOG_SEED"] ?? "") ?? 6)
        var acknowledged = [String]()
        let rounds = 8
        for round in 0..<rounds {
            // Killed after a number of acknowledged writes, never after a time: a busy machine
            // only makes the round longer.
            let target = Int.random(in: 5...30, using: &rng)
            let run = try TestSupport.peerlogKilled(["debug", "append-loop", "durable", "--home", home]) {
                TestSupport.acknowledgedLines($0) >= target
            }
            #expect(run.killed, "round \(round): the child was killed, not finished")
            let lines = run.stdout.split(separator: "\n")
            acknowledged += lines.filter { $0.hasPrefix("ok ") }.map { String($0.dropFirst(3)) }

            let check = try TestSupport.peerlog(["check", "--home", home, "--json"])
            #expect(check.status == 0, "round \(round): \(check.stdout) \(check.stderr)")
            let report = try JSON.parse(check.stdout)
            #expect(report["integrity"] == .string("ok"))
            #expect(report["consistent"] == .bool(true), "materialized state equals a replay of the stored log")
            let log = try TestSupport.peerlog(["log", "durable", "--home", home, "--committed", "--json"])
            #expect(log.status == 0)
            let present = Set(try Self.cids(in: JSON.parse(log.stdout)))
            let missing = acknowledged.filter { !present.contains($0) }
            #expect(missing.isEmpty, "round \(round): \(missing.count) acknowledged appends lost")
        }
        #expect(
            acknowledged.count > rounds * 5, "the child made progress before each kill (\(acknowledged.count) appends)")
    }

    static func cids(in log: JSON) -> [String] {
        guard case .array(let items) = log else { return [] }
        return items.compactMap { if case .string(let c)? = $0["cid"] { c } else { nil } }
    }
}
