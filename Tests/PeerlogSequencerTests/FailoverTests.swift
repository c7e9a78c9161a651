import Testing

@testable import PeerlogSequencer

@Suite("Failover", .serialized)
struct FailoverTests {
    /// Crash a stable leader and measure ticks until a new leader commits a fresh item
    /// (its driver proposes as soon as it leads). No loss; latency `delay` ticks: 0...1 is a
    /// LAN with ticks much longer than a round trip, 1...2 a slow link.
    @Test(arguments: [3, 5], [0...1, 1...2])
    func newLeaderCommitsWithinBoundedTicks(voters: Int, delay: ClosedRange<Int>) throws {
        let measured = try failoverTicks(voters: voters, delay: delay, preVote: true)
        // Plain Raft, for comparison: pre-vote costs one round trip before the real election.
        let plain = try failoverTicks(voters: voters, delay: delay, preVote: false)
        print(
            "[failover] \(voters) voters, delay \(delay), ticks from leader crash to first new commit: \(summary(measured)); without pre-vote and check-quorum: \(summary(plain))"
        )
        // Detection takes up to 12 ticks (the timeout) after the last heartbeat; each split
        // vote adds another timeout. Splits are frequent when a round trip is a sizeable
        // part of the 6...12 timeout spread, hence the looser bound for the slow link.
        // Runs are seeded, so these bounds cannot flake.
        #expect(measured.count == 200)
        #expect((measured.max() ?? .max) <= (delay.upperBound <= 1 ? 40 : 100))
        let median = { (values: [Int]) in values.isEmpty ? Int.max / 2 : values.sorted()[values.count / 2] }
        #expect(median(measured) <= median(plain) + 2 * (delay.upperBound + 1))
    }

    func failoverTicks(voters: Int, delay: ClosedRange<Int>, preVote: Bool) throws -> [Int] {
        var measured: [Int] = []
        for seed in 0..<200 as Range<UInt64> {
            var options = SimOptions()
            options.preVote = preVote
            options.checkQuorum = preVote
            options.voters = voters
            options.lossRate = 0
            options.duplicateRate = 0
            options.minDelay = delay.lowerBound
            options.maxDelay = delay.upperBound
            options.proposeRate = 0
            let sim = try Simulation(seed: 10_000 + seed, options: options)
            guard sim.checkLiveness() != nil, let old = sim.stableLeader else {
                Issue.record("seed \(seed): \(sim.failures)")
                continue
            }
            sim.crash(old, restartAfter: nil)
            let crashedAt = sim.now
            let item = sim.freshItems(1)
            var ticks: Int?
            for _ in 0..<200 where ticks == nil {
                sim.step(chaos: false)
                for leader in sim.liveLeaders where sim.machines[leader]?.contains(item[0]) == false {
                    sim.propose(item, to: leader)
                }
                let committed = sim.liveLeaders.contains { leader in
                    guard let machine = sim.machines[leader], let seq = machine.seq(of: item[0]) else { return false }
                    return seq <= machine.commitSeq
                }
                if committed { ticks = sim.now - crashedAt }
            }
            #expect(sim.failures.isEmpty, "\(sim.failures)")
            guard let ticks else {
                Issue.record("seed \(seed): no commit within 200 ticks of the crash")
                continue
            }
            measured.append(ticks)
        }
        return measured
    }
}
