import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

extension SyncSession {
    func handle(_ m: SyncMessage, size: Int, into out: inout [SyncAction]) throws {
        if case .error(let code, let message) = m {
            phase = .closed
            out.append(.close(reason: "peer error \(code): \(message)"))
            out.append(.event(.peerError(code: code, message: message)))
            return
        }
        if case .ping = m { return }
        if case .unknown(let type) = m {
            ignored += 1
            out.append(.event(.ignoredUnknownMessage(type: type)))
            return
        }
        if case .revocations(let items) = m {
            // Accepted in any phase (it may arrive right after the peer's hello): not group data.
            var valid: [DeviceRevocation] = []
            var invalid = 0
            for item in items {
                let revocation: DeviceRevocation
                do { revocation = try DeviceRevocation(encoded: item) } catch {
                    throw SyncFailure("malformed", "revocation item: \(error)")
                }
                if revocation.verify().isValid { valid.append(revocation) } else { invalid += 1 }
            }
            out.append(.event(.revocations(valid, invalid: invalid)))
            return
        }
        if case .hello(let versions, let capabilities, let peerGroups) = m {
            return try hello(versions: versions, capabilities: capabilities, groups: peerGroups, into: &out)
        }
        guard phase == .open else { throw SyncFailure("protocol", "\"\(m.type)\" before hello") }
        if let g = m.group, groups[g] == nil, withdrawn[g] != nil, lateForWithdrawn(m) {
            // Sent before our "unshared" reached the peer: dropped, but the credit is returned.
            ignored += 1
            if m.isBatch {
                guard granted > 0 else { throw SyncFailure("credit", "\"\(m.type)\" sent without credit") }
                if options.autoGrant { send(.credit(1), into: &out) } else { granted -= 1 }
            }
            return
        }
        switch m {
        case .election(let g, let e):
            // Only for groups shared with this peer; the node checks the sender is a voter.
            if groups[g] != nil || offered.contains(g) {
                out.append(.event(.election(group: g, from: peer.device, e)))
            } else {
                ignored += 1
            }
        case .refused(let g, let items): out.append(.event(.refusedByPeer(group: g, items: items)))
        case .blob(let b):
            // The node answers a request only for a group this session syncs (`syncs(_:)`).
            out.append(.event(.blob(b)))
        case .unshared(let g, let reason):
            guard groups[g] != nil || offered.contains(g) else {
                ignored += 1
                return
            }
            forget(g)
            unsharedByPeer.insert(g)
            out.append(.event(.unsharedByPeer(group: g, reason: reason)))
        case .vector(let g, let committed, let authors):
            try vector(g, committed: committed, authors: authors, into: &out)
        case .receipts(let g, let items): try batch(g, receipts: items, envelopes: [], size: size, into: &out)
        case .envelopes(let g, let items): try batch(g, receipts: [], envelopes: items, size: size, into: &out)
        case .commits(let g, let receipts, let envelopes):
            try batch(g, receipts: receipts, envelopes: envelopes, size: size, into: &out)
        case .snapshot(let g, let bundle):
            guard granted > 0 else { throw SyncFailure("credit", "\"snapshot\" sent without credit") }
            granted -= 1
            guard groups[g] != nil else {
                throw SyncFailure("protocol", "\"snapshot\" for group \(g), which is not synced")
            }
            // Only as the answer to our vector, once per session and group (§23.3).
            guard !groups[g]!.snapshotReceived else {
                throw SyncFailure("protocol", "a second \"snapshot\" for group \(g) in one session")
            }
            groups[g]!.snapshotReceived = true
            let pending = PendingIngest(
                group: g, receipts: [], firstEnvelopeSeq: nil, lastEnvelopeSeq: nil, items: 1, size: size,
                snapshot: true)
            let ingest = SyncIngest(
                group: g, receipts: [], envelopes: [], from: peer.device, sender: peer.identity,
                snapshot: bundle, trustedForBootstrap: options.trustsPeerForBootstrap)
            if bundle.blob != nil {
                // Its bytes are a blob: the node fetches it, then `snapshotBlobFetched` ingests
                // it. The session goes on meanwhile; the peer waits for this group's vector.
                groups[g]!.deferredSnapshot = (pending, ingest)
                out.append(.ingest(ingest))
                return
            }
            awaitingIngests.append(pending)
            out.append(.ingest(ingest))
        case .request(let g, let id, let what):
            guard groups[g] != nil else { throw SyncFailure("protocol", "request for group \(g), which is not synced") }
            guard outstandingAnswers < limits.maxOutstandingRequests else {
                throw SyncFailure(
                    "limit",
                    "maxOutstandingRequests: \(outstandingAnswers + 1) requests unanswered, limit \(limits.maxOutstandingRequests)"
                )
            }
            let cursor: UInt64 =
                switch what {
                case .after(let s): s &+ 1
                case .seqRange(let from, _), .authorCounters(_, let from, _): from
                case .cids: 0
                }
            outstandingAnswers += 1
            groups[g]!.answers.append(Answer(id: id, what: what, cursor: cursor))
        case .credit(let n):
            guard n <= limits.maxCredit, credit + n <= limits.maxCredit else {
                throw SyncFailure(
                    "limit",
                    "maxCredit: credit would be \(credit + min(n, limits.maxCredit)), limit \(limits.maxCredit)")
            }
            credit += n
        case .caughtUp(let g):
            guard groups[g] != nil else {
                throw SyncFailure("protocol", "caught_up for group \(g), which is not synced")
            }
            groups[g]!.caughtUpReceived = true
            out.append(.event(.caughtUp(group: g)))
        case .done(_, let id):
            if let key = inFlightByID.removeValue(forKey: id) {
                inFlight[key] = nil
                // The answerer takes a group's requests in order: the next one starts now.
                groups[key.group]?.answeredAt = now
            }
        case .hello, .error, .unknown, .revocations, .ping: break
        }
    }

    /// Messages a peer may still send for a group we withdrew before it heard of it.
    func lateForWithdrawn(_ m: SyncMessage) -> Bool {
        switch m {
        case .receipts, .envelopes, .commits, .snapshot, .request, .caughtUp, .done, .refused, .election: true
        default: false
        }
    }

    func hello(
        versions: [UInt64], capabilities: [String], groups peerGroups: [GroupID], into out: inout [SyncAction]
    ) throws {
        guard phase == .started else { throw SyncFailure("protocol", "second hello") }
        sendsCommits = capabilities.contains(Self.commitsCapability)
        peerPreVotes = capabilities.contains(Self.preVoteCapability)
        peerServesBlobs = capabilities.contains(Self.blobsCapability)
        peerReadsRuns = capabilities.contains(Self.envelopeRunsCapability)
        peerReadsSnapshots = capabilities.contains(Self.snapshotsCapability)
        peerReadsSnapshotBlobs =
            peerReadsSnapshots && capabilities.contains(Self.snapshotBlobsCapability)
            && capabilities.contains(Self.blobsCapability) && options.offersBlobs
        peerReadsEncrypted = capabilities.contains(Self.encryptedGroupsCapability)
        peerKeepsAlive = capabilities.contains(Self.keepaliveCapability)
        guard let common = versions.filter(Self.versions.contains).max() else {
            throw SyncFailure("version", "no common version: peer speaks \(versions), we speak \(Self.versions)")
        }
        version = common
        phase = .open
        // Both offer it; or the peer offers one we lack (an invitation) or hold without being a
        // member in our copy yet (an invitee's interrupted catch-up), which we only receive.
        for g in Set(peerGroups).sorted() {
            if offered.contains(g) {
                try accept(g, serves: true, into: &out)
                continue
            }
            let sharing = try store.syncSharing(g, with: peer)
            if sharing.acceptsOffer {
                try accept(g, serves: sharing.serves, into: &out)
            } else {
                out.append(.event(.ignoredOffer(group: g)))
            }
        }
        // What did not fit in our hello (§15.2): offered now, as a group that became shared would be.
        for g in offered.sorted().dropFirst(limits.maxGroupsPerHello) where groups[g] == nil {
            offerAnew(g, into: &out)
        }
        out.append(.event(.ready(groups: order)))
    }

    func vector(_ g: GroupID, committed: UInt64, authors: [AuthorCounter], into out: inout [SyncAction]) throws {
        if groups[g] == nil {
            // An offer by vector (the peer holds a group we lack, or it learnt we share one).
            let sharing = try store.syncSharing(g, with: peer)
            guard sharing.acceptsOffer else {
                ignored += 1
                out.append(.event(.ignoredVector(group: g)))
                return
            }
            withdrawn[g] = nil
            unsharedByPeer.remove(g)
            try accept(g, serves: sharing.serves, into: &out)
            // Withdrawn instead (a group the peer cannot follow): nothing more to record.
            guard groups[g] != nil else { return }
            out.append(.event(.groupAdded(group: g)))
        }
        var s = groups[g]!
        s.planned.merge(committed: committed, authors: authors)
        s.sent.merge(committed: committed, authors: authors)
        s.peerVectorKnown = true
        s.awaitingVector = false
        s.dirty = true
        s.owesCaughtUp = true
        s.caughtUpSent = false
        groups[g] = s
        out.append(.recordPeerVector(PeerVector(peer: peer.device, group: g, committed: committed, authors: authors)))
    }

    func batch(
        _ g: GroupID, receipts items: [[UInt8]], envelopes envelopeItems: [[UInt8]], size: Int,
        into out: inout [SyncAction]
    ) throws {
        let kind = envelopeItems.isEmpty ? "receipts" : items.isEmpty ? "envelopes" : "commits"
        guard granted > 0 else { throw SyncFailure("credit", "\"\(kind)\" sent without credit") }
        granted -= 1
        guard groups[g] != nil else { throw SyncFailure("protocol", "\"\(kind)\" for group \(g), which is not synced") }
        groups[g]!.answeredAt = now
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        for item in items {
            guard let r = try? options.decodeReceipt(item) else {
                throw SyncFailure("malformed", "a receipt item does not parse")
            }
            guard r.group == g else { throw SyncFailure("protocol", "receipt of group \(r.group) in a batch for \(g)") }
            receipts.append(r)
        }
        for item in envelopeItems {
            guard let e = try? Envelope(encoded: item) else {
                throw SyncFailure("malformed", "an envelope item does not parse")
            }
            guard e.group == g else {
                throw SyncFailure("protocol", "envelope of group \(e.group) in a batch for \(g)")
            }
            envelopes.append(e)
        }
        // The driver writes; the rest of this message waits for `ingested(_:)`.
        awaitingIngests.append(
            PendingIngest(
                group: g, receipts: receipts, firstEnvelopeSeq: envelopes.first?.seq,
                lastEnvelopeSeq: envelopes.last?.seq,
                items: items.count + envelopeItems.count, size: size))
        out.append(.ingest(SyncIngest(group: g, receipts: receipts, envelopes: envelopes, from: peer.device)))
    }

    /// What arrived was ingested (`report`): the peer holds it, the replica may have refused
    /// some of it or need backfill, and the peer gets its credit back.
    func afterIngest(_ p: PendingIngest, report: IngestReport, into out: inout [SyncAction]) throws {
        let g = p.group
        // The peer holds what it sent: never echo it back.
        var s = groups[g]!
        for r in p.receipts.sorted(by: { $0.counter < $1.counter }) {
            s.planned.hold(r.author, r.counter)
            s.sent.hold(r.author, r.counter)
        }
        if let first = p.firstEnvelopeSeq, let last = p.lastEnvelopeSeq, first <= last {
            s.planned.commit(from: 1, to: last)
            s.sent.commit(from: 1, to: last)
        }
        s.receivedTraffic.items += p.items
        s.receivedTraffic.messages += 1
        s.receivedTraffic.bytes += p.size
        // Our sequencer may have committed what arrived, or the peer may lack what we just got.
        s.dirty = true
        // Receiving a group we lacked: once our copy names the peer a member, we serve it too.
        if !s.serves { s.serves = try store.syncSharing(g, with: peer).serves }
        groups[g] = s
        out.append(.event(.ingested(group: g, report: report)))
        invalidReceived += report.invalid.count
        if !report.rejected.isEmpty {
            let byCID = Dictionary(p.receipts.map { ($0.cid, $0) }, uniquingKeysWith: { a, _ in a })
            let invalid = Set(report.invalid)
            out.append(
                .event(
                    .rejected(
                        group: g,
                        items: report.rejected.map { cid, reason in
                            RejectedItem(
                                cid: cid, author: byCID[cid]?.author, identity: byCID[cid]?.certificate.identity,
                                reason: reason, invalid: invalid.contains(cid))
                        })))
        }
        if invalidReceived > limits.maxInvalidItems {
            // After the rejection is reported (the evidence is kept): a forger goes now.
            throw SyncFailure(
                "invalid",
                "\(invalidReceived) receipts from this device failed verification in this session, over maxInvalidItems (\(limits.maxInvalidItems))"
            )
        }
        // Our sequencer refused some of what the peer sent: tell it why (it keeps them tentative).
        let sent = Set(p.receipts.map(\.cid))
        let refused = report.events.compactMap { e -> RefusedReceipt? in
            guard case .refused(let group, let cid, let reason) = e, group == g, sent.contains(cid) else { return nil }
            return RefusedReceipt(
                cid: cid, reason: String(reason.utf8.prefix(limits.maxErrorMessageBytes)) ?? "refused")
        }
        if !refused.isEmpty { send(.refused(group: g, items: refused), into: &out) }
        if options.autoGrant {
            granted += 1
            send(.credit(1), into: &out)
        }
        request(report.actions, into: &out)
        if p.snapshot {
            // Installed or refused: the sender waits to hear what we hold now (§23.3).
            let v = try store.vector(of: g)
            send(
                .vector(
                    group: g, committed: v.committed,
                    authors: v.authors.map { AuthorCounter(author: $0.0, counter: $0.1) }), into: &out)
        }
    }

    /// Sends one request per backfill action not already in flight.
    func request(_ actions: [ReplicaAction], into out: inout [SyncAction]) {
        for action in actions {
            let asks: [(GroupID, SyncRequest)]
            switch action {
            case .requestSeqRange(let g, let from, let to): asks = [(g, .seqRange(from: from, to: to))]
            case .requestAuthorCounters(let g, let a, let from, let to):
                asks = [(g, .authorCounters(author: a, from: from, to: to))]
            case .requestReceipts(let g, let cids):
                asks = stride(from: 0, to: cids.count, by: limits.maxCIDsPerRequest).map {
                    (g, .cids(Array(cids[$0..<min($0 + limits.maxCIDsPerRequest, cids.count)])))
                }
            }
            for (g, what) in asks where groups[g] != nil {
                let key = RequestKey(group: g, what: what)
                guard inFlight[key] == nil else { continue }
                sendRequest(key, attempt: 1, into: &out)
            }
        }
    }

    /// Sends `key` under a new id, stamped with the last tick's time.
    func sendRequest(_ key: RequestKey, attempt: Int, into out: inout [SyncAction]) {
        let id = nextRequestID
        nextRequestID += 1
        inFlight[key] = InFlightRequest(id: id, attempt: attempt, sentAt: now)
        inFlightByID[id] = key
        send(.request(group: key.group, id: id, what: key.what), into: &out)
    }
}
