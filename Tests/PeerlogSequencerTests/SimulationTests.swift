import Testing

@testable import PeerlogSequencer

@Suite("Seeded simulation", .serialized)
struct SimulationTests {
    static let seeds: Range<UInt64> = 0..<300
    static let chaosTicks = 300

    enum Profile: String, CaseIterable, CustomTestStringConvertible {
        /// Loss, duplication, reordering, partitions, crashes and restarts.
        case chaos3, chaos5
        /// Fewer proposals and leaders crashing between persisting a proposal and sending
        /// it: many lone entries of different terms, the setting of Raft's Figure 8.
        case figure8
        /// chaos3 with pre-vote and check-quorum off: plain Raft, which the config still offers.
        case classic3

        var testDescription: String { rawValue }

        func options(seed: UInt64) -> SimOptions {
            var options = SimOptions()
            options.voters = self == .chaos5 ? 5 : 3
            options.restoreCommitOnRestart = seed % 2 == 0
            options.base = seed % 3 == 0 ? 1000 : 0
            options.maxEntriesPerAppend = seed % 4 == 1 ? 3 : 256
            if self == .classic3 {
                options.preVote = false
                options.checkQuorum = false
            }
            if self == .figure8 {
                options.proposeRate = 0.1
                options.crashAfterProposeRate = 0.3
                options.crashRate = 0.03
                options.partitionRate = 0.1
                options.restartDelay = 1...8
            }
            return options
        }
    }

    /// Every safety property is checked after each call into a voter during `chaosTicks`
    /// of faults; then liveness once the network is healthy.
    @Test(arguments: Profile.allCases)
    func safeUnderFaultsAndLiveAfterHealing(profile: Profile) throws {
        var latencies: [Int] = []
        var commits = 0
        var elections = 0
        var truncated = 0
        for seed in Self.seeds {
            let sim = try Simulation(seed: seed, options: profile.options(seed: seed))
            for _ in 0..<Self.chaosTicks where sim.failures.isEmpty { sim.step(chaos: true) }
            commits += sim.checker.committed.count
            if sim.failures.isEmpty, let ticks = sim.checkLiveness() { latencies.append(ticks) }
            elections += sim.checker.electedTerms
            truncated += sim.checker.truncatedEntries
            #expect(sim.failures.isEmpty, "\(sim.failures.joined(separator: "\n"))")
            if !sim.failures.isEmpty { break }
        }
        print(
            "[sim] \(profile): \(Self.seeds.count) seeds x \(Self.chaosTicks) faulty ticks: \(commits) seqs committed under faults, \(elections) leaders elected, \(truncated) uncommitted entries truncated; ticks to commit everywhere after healing: \(summary(latencies))"
        )
        // The run must exercise what it claims to check.
        #expect(elections > Self.seeds.count * 2 && truncated > Self.seeds.count && commits > Self.seeds.count * 10)
    }

    @Test func sameSeedReplaysExactly() throws {
        func run() throws -> Simulation {
            let sim = try Simulation(seed: 77, options: Profile.figure8.options(seed: 77))
            for _ in 0..<200 { sim.step(chaos: true) }
            return sim
        }
        let a = try run()
        let b = try run()
        #expect(a.checker.committed == b.checker.committed && a.checker.disks == b.checker.disks)
        #expect(a.rng == b.rng && a.checker.electedTerms == b.checker.electedTerms)
        #expect(!a.checker.committed.isEmpty)
    }
}
