import Foundation
import PeerlogCapture
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import PeerlogSync

extension NodeHub {
    /// Answers one control-socket request line: `ping` at once, `status` through
    /// `requestStatus` (never long behind a busy hub), the rest on the hub's queue.
    func answer(_ line: String, reply: @escaping @Sendable ([UInt8]) -> Void) {
        let parsed = ControlRequest.parse(line)
        switch parsed {
        case .success(.ping):
            return reply(Array(#"{"ok":true}"#.utf8))
        case .success(.status):
            return requestStatus { reply((try? $0.document()) ?? ControlReply.error("cannot encode status")) }
        case .success(.wrote):
            reply(Array(#"{"ok":true}"#.utf8))
            return lookNow()
        case .success(.put(let put)):
            // Written by the node's owner (the store's own writer), off the hub's queue.
            guard let delegate else { return reply(ControlReply.error("this node takes no writes")) }
            Task { reply(await delegate.controlPut(put)) }
            return
        default: break
        }
        queueAsync { [self] in
            switch parsed {
            case .success(.ping), .success(.status), .success(.wrote), .success(.put):
                break
            case .success(.captureStart(let path, let maxBytes, let omitBodies)):
                reply(startCapture(path: path, options: .init(maxBytes: maxBytes, omitBodies: omitBodies)))
            case .success(.captureStop):
                reply(stopCapture())
            case .success(.pairOpen(let request)):
                guard let delegate else { return reply(ControlReply.error("this node hosts no pairing sessions")) }
                Task { reply(await delegate.pairingOpen(request)) }
            case .success(.pairAdopt(let adoption)):
                reply(delegate?.pairingAdopt(adoption) ?? ControlReply.error("this node cannot adopt pairings"))
            case .failure(let invalid):
                reply(ControlReply.error(invalid.description))
            }
        }
    }

    /// Another process, or the app, wrote to the store: read the change stamp now rather than
    /// at the next poll. Many writes at once make one look.
    func lookNow() {
        guard !lookPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queueAsync { [self] in
            lookPending.store(false, ordering: .releasing)
            perform([.pollChangeStamp])
        }
    }

    /// A status built earlier, with what is kept off the hub's queue read afresh.
    func refreshedOffQueueParts(_ status: NodeStatus) -> NodeStatus {
        var status = status
        status.listening = listening.withLock { $0 }
        status.discoveryUnavailable = discoveryState.withLock { $0.unavailable }
        status.discovery = discoveryState.withLock { $0.enabled }
        status.capture = capture.status
        status.pairing = delegate?.pairingStatus()
        return status
    }

    /// Must run on the hub's queue.
    func buildStatus() -> NodeStatus {
        let dialers = delegate?.peerStatus() ?? []
        var peers = dialers
        let dialedDevices = Set(dialers.compactMap(\.device))
        let sessionStatus = sessionsSnapshot()
        // Connections a dialer does not already show (inbound ones, mostly).
        for (connection, _) in sessionStatus where !dialedDevices.contains(connection.peer.device.string) {
            peers.append(
                PeerStatus(
                    address: connection.remote, state: .connected,
                    direction: connection.outbound ? .outbound : .inbound,
                    source: connection.outbound ? .static : .inbound,
                    device: connection.peer.device.string, name: connection.peer.name, connectedSince: connection.since
                ))
        }
        // Each session's groups by group, once: a status of G groups and S sessions costs the
        // groups the sessions sync, not G × S searches.
        var synced = [GroupID: [(NodeConnection, SyncGroupStatus)]]()
        for (connection, status) in sessionStatus {
            for g in status.groups { synced[g.group, default: []].append((connection, g)) }
        }
        var groups: [GroupStatus] = []
        // A group operation since the last poll drops its group's kept folds too (the poll will
        // see it again; that is harmless).
        if let seen = try? replica.observeChanges(since: machine.lastStamp) {
            forgetStatusFolds(seen.changes, groupOperations: seen.groupOperations)
        }
        let facts = (try? replica.statusFacts(of: replica.groupIDs(), reusing: statusFolds)) ?? []
        keepStatusFolds(facts)
        groups.reserveCapacity(facts.count)
        for f in facts {
            let (group, committed) = (f.group, f.committedSeq)
            var lags: [GroupPeerStatus] = []
            for (connection, g) in synced[group] ?? [] {
                let past = pastTraffic[connection.peer.device]?[group] ?? (0, 0)
                lags.append(
                    GroupPeerStatus(
                        device: connection.peer.device.string, peerCommitted: g.peerCommitted,
                        behind: g.peerCommitted.map { $0 > committed ? $0 - committed : 0 } ?? 0,
                        ahead: g.peerCommitted.map { committed > $0 ? committed - $0 : 0 } ?? 0,
                        caughtUp: g.caughtUpReceived, itemsReceived: g.received.items, itemsSent: g.sent.items,
                        itemsReceivedTotal: past.received + g.received.items, itemsSentTotal: past.sent + g.sent.items
                    ))
            }
            var entry = GroupStatus(
                id: group.string, name: f.folded.name ?? "", committed: committed,
                tentative: f.tentativeCount, peers: lags)
            entry.sequencer = sequencerStatus(
                group, authority: f.folded.authority, tentative: f.tentativeCount)
            entry.offline = f.offline.map(OfflineStatus.init)
            entry.maintenanceSkipped = replica.maintenanceSkipped(of: group)?.reason
            entry.waitingForKey = f.sealedWaiting
            groups.append(entry)
        }
        return NodeStatus(
            device: device.device.string, identity: device.identity.string, name: device.certificate.name,
            listening: listening.withLock { $0 }, peers: peers, groups: groups,
            recentlyClosed: recentCloses().map {
                ClosedStatus(device: $0.peer?.string, address: $0.remote, reason: $0.reason, at: $0.at)
            },
            discoveryUnavailable: discoveryState.withLock { $0.unavailable },
            discovery: discoveryState.withLock { $0.enabled },
            capture: capture.status,
            refusals: recentRefusals(),
            rejected: recentRejections(),
            rejectedTotal: rejectedTotal,
            pairing: delegate?.pairingStatus(),
            revoked: (try? replica.revocation(of: device.device))?.reason,
            builtAt: WallClock.nowMillis(),
            blobs: blobs.status()
        )
    }

    /// Who orders the group, and (for a voter) the election as this device sees it.
    private func sequencerStatus(_ group: GroupID, authority: SequencerAuthority?, tentative: Int) -> SequencerStatus? {
        guard let authority else { return nil }
        var s: SequencerStatus
        switch authority {
        case .solo(let d): s = SequencerStatus(authority: .solo, devices: [d.string], commitLag: tentative)
        case .elected(let voters):
            s = SequencerStatus(authority: .elected, devices: voters.map(\.string), commitLag: tentative)
        case .relay(let key, let address):
            s = SequencerStatus(authority: .relay, devices: [key.string], address: address, commitLag: tentative)
        }
        if let v = election.view(of: group) {
            s.role = v.role
            s.term = v.term
            s.leader = v.leader?.string
            s.base = v.base
        }
        return s
    }

    /// Replies with the new capture's status or an error.
    private func startCapture(path: String, options: CaptureWriter.Options) -> [UInt8] {
        do {
            try capture.start(path: path, options: options)
            return try Array(JSONEncoder().encode(capture.status))
        } catch {
            return ControlReply.error("\(error)")
        }
    }

    /// Replies with the stopped capture's status or an error.
    private func stopCapture() -> [UInt8] {
        guard let stopped = capture.stop() else { return ControlReply.error("no capture is running") }
        do { return try Array(JSONEncoder().encode(stopped)) } catch { return ControlReply.error("\(error)") }
    }
}

extension NodeHub {
    /// Keeps the folded parts a status read, those that were read whole (a state that could not
    /// be read is folded again next time).
    func keepStatusFolds(_ facts: [GroupStatusFacts]) {
        statusFolds.removeAll(keepingCapacity: true)
        for f in facts where f.folded.name != nil && f.folded.authority != nil { statusFolds[f.group] = f.folded }
    }

    /// Drops the kept folds of the groups with a group operation since the last look; all of
    /// them when what changed cannot be told (rows were deleted, or a group operation was
    /// removed), as the offers do.
    func forgetStatusFolds(_ changes: GroupChanges?, groupOperations: [Int64]) {
        guard let changes, groupOperations == machine.lastGroupOperations || !changes.groupOperations.isEmpty else {
            return statusFolds.removeAll()
        }
        for group in changes.groupOperations { statusFolds[group] = nil }
    }
}
