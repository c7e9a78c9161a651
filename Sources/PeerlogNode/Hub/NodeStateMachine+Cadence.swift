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
                actions.append(.retryQueued(backfillVia: liveConnections.first?.id))
            }
            actions.append(.pollChangeStamp)
            let live = liveConnections.map(\.id)
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

    /// The replica's change stamp, read after `.pollChangeStamp`. A change (a write by another
    /// process, an applied retry) is offered to every session in every group.
    mutating func changeStampObserved(_ stamp: [Int64]) -> [NodeAction] {
        guard stamp != lastStamp else { return [] }
        lastStamp = stamp
        let live = liveConnections.map(\.id)
        return [.checkGroupOperations] + (live.isEmpty ? [] : [.offerAllGroups(to: live)])
    }

    /// Membership and authorities change only with group operations: the driver skips the
    /// folds (over every tentative receipt) when none changed, e.g. during a catch-up. When one
    /// did, membership is read again and every live session re-checks its groups.
    mutating func groupOperationsObserved(_ stamp: [Int64]) -> [NodeAction] {
        guard stamp != lastGroupOperations else { return [] }
        lastGroupOperations = stamp
        return [.refreshMembership] + liveConnections.map { .recheckMembership($0.id) }
    }
}
