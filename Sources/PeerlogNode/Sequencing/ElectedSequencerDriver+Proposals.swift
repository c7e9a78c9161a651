import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import PeerlogSync

/// The leader's proposal policy (what to assign next) and how effects are carried out.
extension ElectedSequencerDriver {
    /// Assigns the next tentative receipts whose parents are committed or already assigned.
    func proposeIfLeader(_ group: GroupID) -> [Send] {
        guard let items = proposal(group) else { return [] }
        guard !items.isEmpty else { return markTermIfNeeded(group) }
        // Proposed in place: a copy of the machine held across the call would make its log
        // (every seq since the base) copied on write, once per round.
        guard let effects = instances[group]?.machine.propose(items) else { return [] }
        return perform(effects, group: group)
    }

    /// What the leader assigns next (empty: nothing new); nil when this device does not lead
    /// `group` or its tentative receipts cannot be read. Reads a copy of the machine, released
    /// on return, before anything mutates it.
    private func proposal(_ group: GroupID) -> [CID]? {
        guard let machine = instances[group]?.machine, machine.isLeader else { return nil }
        let candidates: [Receipt]
        do { candidates = try replica.assignableReceipts(of: group) } catch {
            problems.append(
                ElectionError(
                    .cannotReadTentative, "cannot read tentative receipts of \(group): \(error)"))
            return nil
        }
        let fresh = candidates.filter { !machine.contains($0.cid) }
        guard !fresh.isEmpty else { return [] }
        let outside = Set(fresh.flatMap(\.parents)).subtracting(fresh.map(\.cid)).filter { !machine.contains($0) }
        let committedParents = (try? replica.committedAmong(outside)) ?? []
        var items = [CID]()
        var placed = Set<CID>()
        for r in fresh {
            guard items.count < SequencerMessage<CID>.maxEntries else { break }
            let ready = r.parents.allSatisfy { p in
                placed.contains(p) || machine.contains(p) || committedParents.contains(p)
            }
            guard ready else { continue }
            items.append(r.cid)
            placed.insert(r.cid)
        }
        return items
    }

    /// A leader whose log holds uncommitted entries of earlier terms and nothing new to assign
    /// writes one term marker; it is assigned on the next tick and commits them with it.
    func markTermIfNeeded(_ group: GroupID) -> [Send] {
        guard let instance = instances[group], instance.machine.isLeader, instance.markedTerm < instance.machine.term,
            instance.machine.uncommittedEntries.contains(where: { $0.term < instance.machine.term })
        else { return [] }
        instances[group]?.markedTerm = instance.machine.term
        do {
            try replica.append(
                .application(type: Self.termMarkerType, body: .textMap(["term": .unsigned(instance.machine.term)])),
                to: group)
        } catch {
            problems.append(
                ElectionError(
                    .cannotWriteTermMarker, "cannot write the term marker of \(group): \(error)"))
        }
        return []
    }

    /// Effects in order: persist first (nothing after it happens if it fails), then sends,
    /// commits (signed and applied as leader) and role changes.
    func perform(_ effects: [Machine.Effect], group: GroupID) -> [Send] {
        var out = [Send]()
        for effect in effects {
            switch effect {
            case .persist(let change):
                do {
                    try replica.saveSequencer(
                        group: group, term: change.currentTerm, votedFor: change.votedFor,
                        truncatedAfter: change.truncatedAfter,
                        appended: change.appended.map { (seq: $0.seq, cid: $0.item, term: $0.term) })
                } catch {
                    problems.append(
                        ElectionError(
                            .cannotPersist,
                            "cannot persist the sequencer state of \(group): \(error); dropping this step"))
                    // Not durable, so not said: restart from what the store holds.
                    if let authority = instances[group]?.authority { instances[group] = try? start(authority) }
                    return out
                }
            case .send(let to, let message):
                out.append(Send(to: to, group: group, message: message))
            case .committed(let entries, let asLeader):
                guard asLeader, let term = instances[group]?.machine.term else { continue }
                let committed = (try? replica.committedSeq(of: group)) ?? 0
                let fresh = entries.filter { $0.seq > committed }.map { (seq: $0.seq, cid: $0.item) }
                guard !fresh.isEmpty else { continue }
                do {
                    try replica.commitElected(group: group, assignments: fresh, term: term)
                    signed.insert(group)
                } catch {
                    problems.append(
                        ElectionError(.cannotSign, "cannot sign envelopes for \(group): \(error)"))
                }
            case .roleChanged:
                break
            case .violation(let error):
                problems.append(ElectionError(.peerViolation, "election in group \(group): \(error)"))
            }
        }
        return out
    }
}
