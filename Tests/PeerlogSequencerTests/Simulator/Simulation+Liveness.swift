@testable import PeerlogSequencer

extension Simulation {
    /// Heals the network, stops loss, duplication and random proposals, and restarts every
    /// crashed voter; then requires a stable leader within `electWithin` ticks, and that
    /// fresh items proposed to it commit on every voter within a bound without a change of
    /// leadership. The bound is `settleTicks` plus one round trip per `maxEntriesPerAppend`
    /// entries a voter may lag behind.
    ///
    /// - Returns: ticks from proposal until every voter reported the commit, nil on failure
    ///   (recorded in ``failures``).
    func checkLiveness(electWithin: Int = 150, settleTicks: Int = 30) -> Int? {
        network.heal()
        network.lossRate = 0
        network.duplicateRate = 0
        // Heartbeat gaps (2 + maxDelay - minDelay) stay below the 6-tick minimum timeout.
        network.maxDelay = min(network.maxDelay, network.minDelay + 2)
        proposing = false
        for node in machines.indices where machines[node] == nil { restart(node) }

        // Stable: the same leader and term everywhere for a whole election timeout, so no
        // follower is still counting down from before the healing.
        var elected: Int?
        var stableFor = 0
        for _ in 0..<electWithin where stableFor <= config.electionTimeoutTicks.upperBound {
            step(chaos: false)
            let now = stableLeader
            stableFor = now != nil && now == elected ? stableFor + 1 : 0
            elected = now
        }
        if stableFor <= config.electionTimeoutTicks.upperBound { elected = nil }
        guard let leader = elected, let term = machines[leader]?.term else {
            checker.fail("liveness: no stable leader within \(electWithin) ticks of healing")
            return nil
        }
        let items = freshItems(5)
        propose(items, to: leader)
        guard let lastSeq = machines[leader]?.seq(of: items[items.count - 1]) else {
            checker.fail("liveness: stable leader \(leader) refused fresh items")
            return nil
        }
        let target = Int(lastSeq - options.base)
        let lagging = lastSeq - (machines.compactMap { $0?.commitSeq }.min() ?? options.base)
        let batches = (Int(lagging) + options.maxEntriesPerAppend - 1) / options.maxEntriesPerAppend
        let commitWithin = settleTicks + batches * 2 * (network.maxDelay + 1)
        for elapsed in 1...commitWithin {
            step(chaos: false)
            guard machines.allSatisfy({ $0?.term == term }) else {
                let states = machines.map {
                    $0.map {
                        "\($0.role) term \($0.term) leader \(String(describing: $0.leader)) elapsed \($0.electionElapsed)/\($0.electionTimeout)"
                    } ?? "down"
                }
                checker.fail("liveness: leadership changed although the network is healthy: \(states)")
                return nil
            }
            if checker.reported.allSatisfy({ $0.count >= target }) {
                checkDisks()
                return elapsed
            }
        }
        let progress = machines.map {
            "\($0.map { "commit \($0.commitSeq) last \($0.lastSeq) term \($0.term)" } ?? "down")"
        }
        checker.fail(
            "liveness: proposals to stable leader \(leader) not committed everywhere within \(commitWithin) ticks; target seq \(lastSeq); voters: \(progress); leader nextSeq \(machines[leader]?.nextSeq ?? []) matchSeq \(machines[leader]?.matchSeq ?? [])"
        )
        return nil
    }
}
