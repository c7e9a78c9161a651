import Foundation
import PeerlogTestSupport
import Testing

/// Conditional, atomic, counter, set and field writes (docs/PROTOCOL.md §9.7) under seeded
/// random schedules (`EntityWriteSchedule`): replicas agree on every outcome after every step,
/// and a claim is granted to exactly one writer. `peerlog-bench writes` runs 10,000 schedules.
@Suite struct EntityWritePropertyTests {
    /// `PEERLOG_WRITE_SCHEDULES` schedules (default 40); `PEERLOG_SEED` reruns one.
    @Test func everyReplicaReachesTheSameOutcomes() throws {
        let env = ProcessInfo.processInfo.environment
        let count = UInt64(env["PEERLOG_WRITE_SCHEDULES"].flatMap(Int.init) ?? 40)
        let seeds = env["PEERLOG_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...count)
        var writes = 0
        var rejected = 0
        for seed in seeds {
            var schedule = try EntityWriteSchedule(seed: seed)
            do { try schedule.run(steps: 40) } catch {
                Issue.record("write schedule seed \(seed) failed — rerun with PEERLOG_SEED=\(seed): \(error)")
                return
            }
            writes += schedule.writeCount
            rejected += schedule.rejectedCount
        }
        // The schedules exercise both verdicts.
        #expect(writes > 0 && rejected > 0 && rejected < writes, "\(writes) writes, \(rejected) rejected")
    }
}
