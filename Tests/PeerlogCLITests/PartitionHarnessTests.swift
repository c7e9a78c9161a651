import Foundation
import PeerlogTestSupport
import Testing

/// Runs tools/partition_harness.py: three voter daemons of an elected sequencer, connected only
/// through fault-injecting loopback proxies, go through seeded schedules of writes, partitions
/// (isolation, pair cuts, one-way cuts), heals, connection drops, SIGKILL crashes and restarts,
/// while a checker polls every replica: one CID per seq ever, committed logs only grow, a write
/// made where it cannot reach a majority never commits while cut off; at the end of each
/// schedule the three converge. On failure the script's output names the seed to replay and the
/// kept workdir with the daemons' logs.
@Suite(.serialized)
struct PartitionHarnessTests {
    @Test func seededPartitionAndCrashSchedules() throws {
        let script = TestSupport.repoRoot + "/tools/partition_harness.py"
        let r = try TestSupport.run(
            TestSupport.python,
            [
                script, "--peerlog", TestSupport.peerlogBinary, "--schedules", "4", "--seed", "1", "--inherited-check",
                "first",
            ], timeout: 420)
        print(r.stdout)
        #expect(r.status == 0, "partition_harness.py exited \(r.status)\n\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("partition harness: 4 schedules passed"), "\(r.stdout)")
    }
}
