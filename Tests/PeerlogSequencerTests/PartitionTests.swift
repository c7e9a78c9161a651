import Testing

@testable import PeerlogSequencer

/// Partitions in the seeded simulator without loss: what pre-vote and check-quorum are for.
@Suite("Partitions: pre-vote and check-quorum", .serialized)
struct PartitionTests {
    static let seeds: Range<UInt64> = 0..<20

    /// A healthy cluster with a stable leader (loss and duplication off, delays 1...2).
    func stableCluster(voters: Int, seed: UInt64, preVote: Bool, checkQuorum: Bool = true) throws -> (Simulation, Int) {
        var options = SimOptions()
        options.voters = voters
        options.lossRate = 0
        options.duplicateRate = 0
        options.minDelay = 1
        options.maxDelay = 2
        options.preVote = preVote
        options.checkQuorum = checkQuorum
        let sim = try Simulation(seed: 20_000 + seed, options: options)
        guard sim.checkLiveness() != nil, let leader = sim.stableLeader else {
            throw SimFailure(failures: sim.failures)
        }
        return (sim, leader)
    }

    struct SimFailure: Error { let failures: [String] }

    /// Steps `ticks` ticks, proposing a fresh item to whoever leads every 3rd tick.
    func run(_ sim: Simulation, ticks: Int) {
        for tick in 0..<ticks {
            if tick % 3 == 0, let leader = sim.liveLeaders.first { sim.propose(sim.freshItems(1), to: leader) }
            sim.step(chaos: false)
        }
    }

    /// One follower cut off for ten longest election timeouts, then healed. Returns the
    /// leader's term before and after, whether the same voter still leads, and the leader's
    /// commitSeq before and after the healing.
    func isolateAndHealAFollower(
        voters: Int, seed: UInt64, preVote: Bool
    ) throws
        -> (
            termBefore: UInt64, termAfter: UInt64, sameLeader: Bool, isolatedTerm: UInt64, commitGrew: Bool,
            caughtUp: Bool
        )
    {
        let (sim, leader) = try stableCluster(voters: voters, seed: seed, preVote: preVote)
        let termBefore = sim.machines[leader]!.term
        let isolated = (leader + 1) % voters
        sim.network.side = sim.network.side.indices.map { $0 == isolated ? 1 : 0 }
        run(sim, ticks: 10 * sim.config.electionTimeoutTicks.upperBound)
        let isolatedTerm = sim.machines[isolated]!.term
        let commitAtHeal = sim.machines[leader]!.commitSeq
        sim.network.heal()
        run(sim, ticks: 60)
        #expect(sim.failures.isEmpty, "\(sim.failures)")
        let now = sim.machines[leader]!
        let current = sim.liveLeaders.first.flatMap { sim.machines[$0] }
        return (
            termBefore, current?.term ?? now.term, now.role == .leader, isolatedTerm, now.commitSeq > commitAtHeal,
            sim.machines[isolated]!.commitSeq >= commitAtHeal
        )
    }

    @Test(arguments: [3, 5])
    func aRejoiningVoterDoesNotDeposeAHealthyLeader(voters: Int) throws {
        for seed in Self.seeds {
            let outcome = try isolateAndHealAFollower(voters: voters, seed: seed, preVote: true)
            #expect(outcome.isolatedTerm == outcome.termBefore, "seed \(seed): the isolated voter raised its term")
            #expect(outcome.sameLeader && outcome.termAfter == outcome.termBefore, "seed \(seed): leader deposed")
            #expect(
                outcome.commitGrew && outcome.caughtUp,
                "seed \(seed): leader stopped committing or voter never caught up")
        }
    }

    /// The same partition without pre-vote: the rejoining voter's raised term deposes the
    /// leader every time, which is what the test above rules out.
    @Test(arguments: [3, 5])
    func withoutPreVoteTheRejoiningVoterDeposesTheLeader(voters: Int) throws {
        for seed in Self.seeds {
            let outcome = try isolateAndHealAFollower(voters: voters, seed: seed, preVote: false)
            #expect(outcome.isolatedTerm >= outcome.termBefore + 5, "seed \(seed)")
            #expect(outcome.termAfter > outcome.termBefore, "seed \(seed): leader not deposed")
        }
    }

    /// The leader and, with 5 voters, one follower cut off from the majority. Returns ticks
    /// until the old leader stepped down (nil: never within `limit`), whether it committed
    /// anything after the cut, and ticks until the majority side committed a fresh item.
    func cutOffTheLeader(
        voters: Int, seed: UInt64, checkQuorum: Bool, limit: Int = 100
    ) throws
        -> (stepDown: Int?, committedAfterCut: Bool, majorityCommit: Int?)
    {
        let (sim, leader) = try stableCluster(voters: voters, seed: seed, preVote: true, checkQuorum: checkQuorum)
        let term = sim.machines[leader]!.term
        let minority = voters == 5 ? [leader, (leader + 1) % voters] : [leader]
        sim.network.side = sim.network.side.indices.map { minority.contains($0) ? 1 : 0 }
        let cutAt = sim.now
        let commitAtCut = sim.machines[leader]!.commitSeq
        var stepDown: Int?
        var majorityCommit: Int?
        let item = sim.freshItems(1)[0]
        for _ in 0..<limit where stepDown == nil || majorityCommit == nil {
            // The old leader's driver keeps proposing while it believes it leads.
            if sim.machines[leader]!.isLeader { sim.propose(sim.freshItems(1), to: leader) }
            for other in sim.liveLeaders where !minority.contains(other) && !sim.machines[other]!.contains(item) {
                sim.propose([item], to: other)
            }
            sim.step(chaos: false)
            if stepDown == nil, !sim.machines[leader]!.isLeader { stepDown = sim.now - cutAt }
            let majorityLeader = sim.liveLeaders.first { !minority.contains($0) }
            if majorityCommit == nil, let new = majorityLeader.flatMap({ sim.machines[$0] }),
                let seq = new.seq(of: item), seq <= new.commitSeq
            {
                #expect(new.term > term)
                majorityCommit = sim.now - cutAt
            }
        }
        #expect(sim.failures.isEmpty, "\(sim.failures)")
        return (stepDown, sim.machines[leader]!.commitSeq > commitAtCut, majorityCommit)
    }

    @Test(arguments: [3, 5])
    func aLeaderCutOffFromItsMajorityStepsDownWithinAnElectionTimeout(voters: Int) throws {
        var measured: [Int] = []
        for seed in Self.seeds {
            let outcome = try cutOffTheLeader(voters: voters, seed: seed, checkQuorum: true)
            // The last replies from the majority arrived by the cut; 12 ticks later it is out.
            #expect(
                (outcome.stepDown ?? .max) <= 12,
                "seed \(seed): stepped down after \(String(describing: outcome.stepDown))")
            #expect(!outcome.committedAfterCut, "seed \(seed): committed without a majority")
            #expect(outcome.majorityCommit != nil, "seed \(seed): the majority side never committed")
            if let ticks = outcome.stepDown { measured.append(ticks) }
        }
        print("[partition] \(voters) voters, ticks from cut to the old leader stepping down: \(summary(measured))")
    }

    @Test(arguments: [3, 5])
    func withoutCheckQuorumTheCutOffLeaderStaysLeader(voters: Int) throws {
        for seed in Self.seeds {
            let outcome = try cutOffTheLeader(voters: voters, seed: seed, checkQuorum: false)
            #expect(outcome.stepDown == nil, "seed \(seed)")
            #expect(!outcome.committedAfterCut && outcome.majorityCommit != nil, "seed \(seed)")
        }
    }
}
