@testable import PeerlogSequencer

/// Knobs for one simulated run.
struct SimOptions {
    var voters = 3
    var base: UInt64 = 0
    var maxEntriesPerAppend = 256
    var lossRate = 0.1
    var duplicateRate = 0.05
    var minDelay = 1
    var maxDelay = 4
    /// Per tick: chance to split the network into 2–3 sides, and to heal it.
    var partitionRate = 0.02
    var healRate = 0.05
    /// Per tick: chance to crash one live voter; it restarts this many ticks later.
    var crashRate = 0.01
    var restartDelay = 5...40
    /// Per tick: chance to propose fresh items to a current leader, and within that to
    /// re-propose an earlier item as a driver would after losing track of it.
    var proposeRate = 0.3
    var reproposeRate = 0.2
    /// Chance that a leader crashes right after persisting a proposal, before its appends
    /// go out: leaves lone entries of many terms behind (the raw material of Raft's Figure 8).
    var crashAfterProposeRate = 0.0
    /// Restart with `committedThrough` restored (true) or re-learn commits (false).
    var restoreCommitOnRestart = true
    /// Compare each durable store with the voter's state every this many ticks.
    var fullCheckEvery = 25
    /// ``SequencerConfig/preVote`` and ``SequencerConfig/checkQuorum`` (on, as deployed).
    var preVote = true
    var checkQuorum = true
}

/// A seeded cluster of voters (ids 1...n, index = id - 1) on a ``SimNetwork``.
final class Simulation {
    let options: SimOptions
    let config: SequencerConfig<Int>
    private(set) var rng: SequencerRNG
    private(set) var now = 0
    private(set) var machines: [Seq?]
    private var restartAt: [Int?]
    var network: SimNetwork
    var checker: SafetyChecker
    private(set) var proposed: [String] = []
    /// Whether ``step(chaos:)`` makes random proposals.
    var proposing = true
    private let seed: UInt64

    init(seed: UInt64, options: SimOptions) throws {
        self.seed = seed
        self.options = options
        config = try SequencerConfig(
            voters: Array(1...options.voters), base: options.base, maxEntriesPerAppend: options.maxEntriesPerAppend,
            preVote: options.preVote, checkQuorum: options.checkQuorum)
        rng = SequencerRNG(seed: seed)
        network = SimNetwork(nodes: options.voters)
        network.lossRate = options.lossRate
        network.duplicateRate = options.duplicateRate
        network.minDelay = options.minDelay
        network.maxDelay = options.maxDelay
        checker = SafetyChecker(nodes: options.voters, base: options.base)
        restartAt = Array(repeating: nil, count: options.voters)
        machines = []
        for id in config.voters {
            machines.append(try Seq(me: id, config: config, seed: seed &* 31 &+ UInt64(id)))
        }
    }

    var failures: [String] { checker.failures }

    /// One tick: chaos (optional), restarts, every live voter ticks, maybe a proposal,
    /// then delivery of the due messages in random order. Invariants are checked after
    /// every call into a voter.
    func step(chaos: Bool) {
        now += 1
        checker.context = "seed \(seed) tick \(now)"
        if chaos { injectFaults() }
        for node in machines.indices where restartAt[node].map({ $0 <= now }) ?? false { restart(node) }
        var order = Array(machines.indices)
        order.shuffle(using: &rng)
        for node in order where machines[node] != nil {
            handle(machines[node]!.tick(), from: node)
        }
        if proposing, rng.chance(options.proposeRate) { proposeRandomly() }
        for packet in network.takeDue(now: now, rng: &rng) where machines[packet.to] != nil {
            handle(machines[packet.to]!.receive(packet.message, from: packet.from + 1), from: packet.to)
        }
        checker.checkLeaders(machines)
        if now % options.fullCheckEvery == 0 { checkDisks() }
    }

    func checkDisks() {
        for case (let node, let machine?) in machines.enumerated() { checker.checkDisk(machine, node: node) }
    }

    /// Proposes `items` to voter `node` as its driver would.
    func propose(_ items: [String], to node: Int) {
        guard machines[node] != nil else { return }
        handle(machines[node]!.propose(items), from: node)
    }

    /// Items never proposed before.
    func freshItems(_ count: Int) -> [String] {
        let items = (0..<count).map { "i\(proposed.count + $0)" }
        proposed.append(contentsOf: items)
        return items
    }

    func crash(_ node: Int, restartAfter ticks: Int?) {
        machines[node] = nil
        restartAt[node] = ticks.map { now + $0 }
    }

    func restart(_ node: Int) {
        restartAt[node] = nil
        let committedThrough = options.restoreCommitOnRestart ? options.base + UInt64(checker.reported[node].count) : 0
        do {
            machines[node] = try Seq(
                me: node + 1, config: config, persisted: checker.disks[node],
                committedThrough: committedThrough, seed: rng.next())
        } catch {
            checker.fail("node \(node) cannot restart: \(error)")
        }
    }

    /// The leader every live voter follows in one shared term, if there is one.
    var stableLeader: Int? {
        guard let leader = machines.firstIndex(where: { $0?.role == .leader }), let term = machines[leader]?.term else {
            return nil
        }
        let agreed = machines.allSatisfy { $0?.term == term && $0?.leader == leader + 1 }
        return agreed ? leader : nil
    }

    var liveLeaders: [Int] { machines.indices.filter { machines[$0]?.role == .leader } }

    private func handle(_ effects: [Eff], from node: Int, crashBeforeSending: Bool = false) {
        checker.observe(effects, node: node, machines: machines)
        if crashBeforeSending { return crash(node, restartAfter: rng.int(in: options.restartDelay)) }
        for case .send(let to, let message) in effects {
            network.send(message, from: node, to: to - 1, now: now, rng: &rng)
        }
    }

    private func injectFaults() {
        if rng.chance(options.healRate) { network.heal() }
        if rng.chance(options.partitionRate) { network.partition(sides: rng.int(in: 2...3), rng: &rng) }
        if rng.chance(options.crashRate), let node = rng.pick(machines.indices.filter { machines[$0] != nil }) {
            crash(node, restartAfter: rng.int(in: options.restartDelay))
        }
    }

    private func proposeRandomly() {
        guard let node = rng.pick(liveLeaders) else { return }
        var items = freshItems(rng.int(in: 1...3))
        if rng.chance(options.reproposeRate), let old = rng.pick(proposed) { items.append(old) }
        handle(
            machines[node]!.propose(items), from: node, crashBeforeSending: rng.chance(options.crashAfterProposeRate))
    }
}
