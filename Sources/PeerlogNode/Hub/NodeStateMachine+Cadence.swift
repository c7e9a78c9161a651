import PeerlogModel

extension NodeStateMachine {
    /// Time passed. Elected sequencers tick every `cadence.election`; every `cadence.poll` the
    /// pending queue may be retried (at most every `cadence.retry`), the change stamp is read
    /// and the live sessions learn the time (their requests in flight time out).
    /// A clock that jumps back moves the deadlines back with it instead of stalling them.
    mutating func tick(now: UInt64) -> [NodeAction] {
        var actions: [NodeAction] = []
        if Self.due(&nextElectionTick, every: cadence.election, now: now) { actions.append(.tickElection) }
        if Self.due(&nextPoll, every: cadence.poll, now: now) {
            if lastRetry.map({ now >= $0 + cadence.retry || now < $0 }) ?? true {
                lastRetry = now
                actions.append(.retryQueued(backfillVia: liveConnectionIDs.first))
            }
            actions.append(.pollChangeStamp)
            let live = liveConnectionIDs
            if !live.isEmpty { actions.append(.tickSessions(live, now: now)) }
        }
        return actions
    }

    /// Whether a periodic deadline passed; moves it one period on (or to a period from now
    /// when it fell behind, or when the clock went back).
    static func due(_ deadline: inout UInt64, every period: UInt64, now: UInt64) -> Bool {
        guard now >= deadline else {
            if deadline > now + period { deadline = now + period }
            return false
        }
        deadline += period
        if deadline <= now { deadline = now + period }
        return true
    }

    /// The replica's stamps and what changed since `lastStamp`, read after `.observeChanges`.
    /// Only what changed is offered and re-checked: the work per change does not grow with the
    /// number of groups held. Membership and authorities change only with group operations, so
    /// the folds that re-check them run only for groups that had one. `changes` nil (rows were
    /// deleted, so what changed cannot be told) or a group-operation stamp that moved with no
    /// group named (a removal) re-check and offer everything, as a start does.
    mutating func changesObserved(stamp: [Int64], groupOperations: [Int64], changes: GroupChanges?) -> [NodeAction] {
        let operationsMoved = groupOperations != lastGroupOperations
        guard stamp != lastStamp || operationsMoved else { return [] }
        lastStamp = stamp
        lastGroupOperations = groupOperations
        let live = liveConnectionIDs
        var actions: [NodeAction] = []
        if operationsMoved {
            let groups = changes.flatMap { $0.groupOperations.isEmpty ? nil : $0.groupOperations.sorted() }
            actions.append(.refreshMembership(groups: groups))
            actions += live.map { .recheckMembership($0, groups: groups) }
        }
        guard !live.isEmpty else { return actions }
        if let changes {
            if !changes.groups.isEmpty { actions.append(.offerChanges(changes.groups.sorted(), to: live)) }
        } else {
            actions.append(.offerAllGroups(to: live))
        }
        return actions
    }
}
