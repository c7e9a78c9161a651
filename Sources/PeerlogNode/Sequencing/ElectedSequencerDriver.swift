import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import PeerlogSync

/// Runs this device's part in every elected authority it votes in (docs/PROTOCOL.md §18):
/// one `ElectedSequencer` per group, persisted in the replica, ticked by the node, fed the
/// voters' election messages. As leader it assigns seqs to tentative receipts and, once a
/// majority has persisted them, signs their envelopes. Not thread-safe: the node calls it from
/// its one serial queue. No I/O but the replica; no clock (time is the node's ticks) and no
/// randomness but the injected seed: what to send comes back as `Send`s.
final class ElectedSequencerDriver {
    typealias Machine = ElectedSequencer<DeviceID, CID>

    struct Send: Sendable {
        let to: DeviceID
        let group: GroupID
        let message: SequencerMessage<CID>
    }

    /// What `status` shows for a group this device votes in.
    struct GroupView: Sendable, Equatable {
        let role: SequencerRole
        let term: UInt64
        let leader: DeviceID?
        let voters: [DeviceID]
        let base: UInt64
        let commitSeq: UInt64
    }

    struct Instance {
        let authority: ElectedAuthority
        var machine: Machine
        /// The term in which this leader wrote its term marker (at most one per term).
        var markedTerm: UInt64 = 0
    }

    /// The receipt a new leader writes when it inherited uncommitted assignments and has
    /// nothing of its own to assign: Raft commits earlier-term entries only together with one
    /// of the current term, and every seq must name a receipt (PROTOCOL.md §18.4).
    static let termMarkerType = "sequencer.term"

    let replica: Replica
    let me: DeviceID
    let timing: (election: ClosedRange<Int>, heartbeat: Int)
    var instances = [GroupID: Instance]()
    /// Draws each started machine's seed (its randomized election timeouts): equal seeds, equal runs.
    var rng: SequencerRNG
    /// Groups whose envelopes this device just signed (the node pushes them at once).
    var signed = Set<GroupID>()
    /// Problems worth a log line (persist failures, peer violations), drained by the node.
    var problems = [ElectionError]()

    /// `seed`: where the election timeouts' randomness comes from (the node draws one at start;
    /// tests fix it).
    init(replica: Replica, seed: UInt64, electionTimeoutTicks: ClosedRange<Int> = 6...12, heartbeatTicks: Int = 2) {
        self.replica = replica
        me = replica.local.device
        timing = (electionTimeoutTicks, heartbeatTicks)
        rng = SequencerRNG(seed: seed)
    }

    func takeSigned() -> Set<GroupID> {
        defer { signed = [] }
        return signed
    }

    func takeProblems() -> [ElectionError] {
        defer { problems = [] }
        return problems
    }

    /// Starts, restarts or stops instances to match the committed authorities of `changed`
    /// groups (nil: all held). Call when the replica changed (an authority changes only by a
    /// committed receipt).
    func refresh(groups changed: [GroupID]? = nil) {
        let groups = changed ?? (try? replica.groupIDs()) ?? []
        for group in groups {
            let authority = try? replica.electedAuthority(of: group)
            guard let authority, authority.voters.contains(me) else {
                instances[group] = nil
                continue
            }
            if let current = instances[group], current.authority == authority { continue }
            do {
                instances[group] = try start(authority)
            } catch {
                problems.append(
                    ElectionError(
                        .cannotStart, "cannot start the elected sequencer of group \(group): \(error)"))
                instances[group] = nil
            }
        }
        // Every group read: any instance of a group no longer held stops (a named one already did).
        if changed == nil { for group in instances.keys where !groups.contains(group) { instances[group] = nil } }
    }

    func start(_ authority: ElectedAuthority) throws -> Instance {
        var stored = try replica.sequencerState(of: authority.group)
        if stored?.base != authority.base {
            // A new authority: its log starts empty after base, its terms at its floor.
            try replica.resetSequencer(
                group: authority.group, base: authority.base, term: max(stored?.term ?? 0, authority.termFloor))
            stored = try replica.sequencerState(of: authority.group)
        }
        guard let stored else {
            throw ElectionError(.noSequencerState, "no sequencer state of group \(authority.group) after reset")
        }
        let persisted = SequencerPersistentState<DeviceID, CID>(
            currentTerm: max(stored.term, authority.termFloor), votedFor: stored.votedFor,
            entries: stored.entries.map { SequencerEntry(seq: $0.seq, item: $0.cid, term: $0.term) })
        let config = try SequencerConfig(
            voters: authority.voters, base: authority.base,
            electionTimeoutTicks: timing.election, heartbeatTicks: timing.heartbeat,
            maxEntriesPerAppend: SequencerMessage<CID>.maxEntries)
        let machine = try Machine(me: me, config: config, persisted: persisted, seed: rng.next())
        return Instance(authority: authority, machine: machine)
    }

    /// One timer tick for every instance; leaders also assign seqs to what waits.
    func tick() -> [Send] {
        var out = [Send]()
        for group in instances.keys.sorted() {
            // Ticked in place (a copy would make the whole log copied on write, every tick).
            guard let effects = instances[group]?.machine.tick() else { continue }
            out += perform(effects, group: group)
            out += proposeIfLeader(group)
        }
        return out
    }

    /// A message from a connected peer's device (the transport authenticated it).
    func receive(group: GroupID, from device: DeviceID, _ message: SequencerMessage<CID>) -> [Send] {
        // In place, as `tick`: the log is not copied per message.
        guard let effects = instances[group]?.machine.receive(message, from: device) else { return [] }
        var out = perform(effects, group: group)
        // A round the voters acknowledged (committed, nothing left in flight): the next is
        // proposed now, not at the next tick, so a backlog moves at the voters' round trip
        // (one round in flight; the tentative set is read once per round). Other replies wait
        // for the tick: they arrive in bursts and reading the tentative set is the costly part.
        let acknowledged = effects.contains { if case .committed(_, true) = $0 { true } else { false } }
        if acknowledged, let machine = instances[group]?.machine, machine.isLeader, machine.commitSeq == machine.lastSeq
        {
            out += proposeIfLeader(group)
        }
        return out
    }

    func view(of group: GroupID) -> GroupView? {
        guard let i = instances[group] else { return nil }
        return GroupView(
            role: i.machine.role, term: i.machine.term, leader: i.machine.leader,
            voters: i.authority.voters, base: i.authority.base, commitSeq: i.machine.commitSeq)
    }
}
