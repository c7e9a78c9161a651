import PeerlogEngine
import PeerlogModel
import PeerlogSync

extension NodeStateMachine {
    /// What a connection's session reported.
    mutating func sessionEvent(_ event: SyncEvent, on id: UInt64, now: UInt64) -> [NodeAction] {
        guard let connection = connections[id] else { return [] }
        let peer = connection.peer
        switch event {
        case .ingested(let group, let report):
            // Membership first: nothing is pushed to a peer that what arrived just removed.
            return (report.touchesGroupOperations ? [.observeChanges] : []) + fanOut(group, except: id)
                + report.maintenanceSkipped.map { .log(.warning, "snapshot/compaction skipped: \($0.reason)") }
        case .ignoredOffer(let group):
            return [
                .log(
                    .notice,
                    "\(peer.device.short) offered group \(group), which we hold and do not share with it: not synced")
            ]
        case .withdrew(let group, let why):
            return [.log(.notice, "stopped syncing group \(group) with \(peer.device.short): \(why)")]
        case .unsharedByPeer(let group, let why):
            return [.log(.warning, "\(peer.device.short) stopped syncing group \(group) with us: \(why)")]
        case .requestRepeated(let group, let id, let attempt, let waited):
            return [
                .log(
                    .notice,
                    "request \(id) for group \(group) to \(peer.device.short) unanswered for \(waited) ms: sent again (send \(attempt))"
                )
            ]
        case .caughtUp(let group):
            return [.log(.debug, "caught up with \(peer.device.short) on group \(group)")]
        case .protocolError(let why):
            return [.log(.warning, "protocol error from \(peer.device): \(why)")]
        case .ignoredUnknownMessage(let type):
            return [.log(.notice, "ignored unknown message type \"\(type)\" from \(peer.device.short)")]
        case .election(let group, let from, let message):
            return [.receiveElection(group, from: from, message)]
        case .rejected(let group, let items):
            return rejected(group: group, items: items, from: peer, now: now)
        case .refusedByPeer(let group, let items):
            Self.remember(
                &refusals,
                items.map {
                    RefusalStatus(
                        group: group.string, cid: $0.cid.string, by: peer.device.string, reason: $0.reason, at: now)
                })
            return items.map {
                .log(.warning, "\(peer.device.short) refused receipt \($0.cid) of group \(group): \($0.reason)")
            }
        default:
            return []
        }
    }

    /// A change to the group is offered to every live session but the one it came from.
    func fanOut(_ group: GroupID, except: UInt64? = nil) -> [NodeAction] {
        liveConnections.filter { $0.id != except }.map { .offerChange(group, to: $0.id) }
    }

    /// Logs what our replica refused from a peer (a few lines per batch, so a flood cannot
    /// flood the log) and keeps the newest for `status`. Invalid signatures and certificates
    /// are warnings: they are evidence of a forgery attempt.
    private mutating func rejected(
        group: GroupID, items: [RejectedItem], from peer: DeviceCertificate, now: UInt64
    ) -> [NodeAction] {
        var actions: [NodeAction] = []
        for item in items.prefix(Self.rejectionLogLines) {
            let what = item.invalid ? "invalid receipt" : "receipt"
            let claims = item.author.map { " claiming author \($0) of identity \(item.identity?.string ?? "?")" } ?? ""
            actions.append(
                .log(
                    .warning,
                    "rejected \(what) \(item.cid) of group \(group)\(claims) from peer \(peer.device) (identity \(peer.identity)): \(item.reason)"
                ))
        }
        if items.count > Self.rejectionLogLines {
            actions.append(
                .log(
                    .warning,
                    "… and \(items.count - Self.rejectionLogLines) more rejected from \(peer.device) in the same batch")
            )
        }
        Self.remember(
            &rejections,
            items.map {
                RejectionStatus(
                    group: group.string, cid: $0.cid.string, author: $0.author?.string, identity: $0.identity?.string,
                    from: peer.device.string, reason: $0.reason, invalid: $0.invalid, at: now)
            })
        rejectedTotal += items.count
        return actions
    }

    /// What the elected sequencers produced: messages go to the voters that are connected
    /// (Raft tolerates the loss of the others), envelopes just signed are offered to every
    /// session, problems are logged.
    func electionOutput(sends: [ElectionSend], signed: Set<GroupID>, problems: [ElectionError]) -> [NodeAction] {
        var actions: [NodeAction] = []
        // Every tick of every node comes here, most with nothing to send.
        let live = sends.isEmpty ? [] : liveConnections
        for send in sends {
            for connection in live where connection.peer.device == send.to {
                actions.append(.sendElection(send.group, send.message, to: connection.id))
            }
        }
        for group in signed.sorted(by: { $0.string < $1.string }) { actions += fanOut(group) }
        return actions + problems.map { .log(.warning, $0.description) }
    }
}
