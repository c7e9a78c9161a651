import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Snapshots, floors and compaction (docs/PROTOCOL.md §23), inside the pipeline's transaction:
/// a snapshot is made in the transaction whose commits cross a multiple of
/// `ReplicaLimits.snapshotInterval`, compaction runs right after it, and a snapshot a peer sent
/// is installed as one write. A kill at any point leaves all of it or none.
extension Pipeline {
    /// A snapshot of the group's committed state at its committed mark (the stored one when one
    /// exists at that seq). Throws `snapshotUnavailable` when none can be made now.
    mutating func makeSnapshot(_ group: GroupID) throws -> StoredSnapshot {
        func unavailable(_ why: String) -> ReplicaError { ReplicaError(.snapshotUnavailable, why) }
        let seq = try db.committedSeq(group: group)
        guard seq >= 1 else { throw unavailable("group \(group) has nothing committed yet") }
        if let held = try db.snapshot(group: group, seq: seq) { return held }
        guard let blob = try db.groupStateBlob(group: group), !(try isTombstoned(group)) else {
            throw unavailable("group \(group) is deleted or not created here")
        }
        let state = try GroupState(storedBytes: blob)
        guard state.members[local.identity]?.status == .active else {
            throw unavailable("this identity is not an active member of group \(group): only members make snapshots")
        }
        guard try db.sealedWaitingCount(group: group) == 0 else {
            throw unavailable("committed receipts of group \(group) wait for an epoch key; a snapshot would miss them")
        }
        guard let anchor = try db.envelopes(group: group, from: seq, to: seq).first?.envelope,
            let anchorReceipt = try db.loadReceipt(anchor.receipt)?.receipt
        else { throw unavailable("the envelope at seq \(seq) of group \(group) is not held here") }
        var entities = [GroupSnapshot.Entity]()
        for e in try db.entities(group: group) {
            entities.append(.init(key: e.key, value: try CBORDecoder.decodeStrict(e.value), cid: e.cid, seq: e.seq))
        }
        // Author counters: the newest snapshot below plus what was committed since (the cost
        // follows the seqs since that snapshot, not the log).
        var counters = [DeviceID: UInt64]()
        var from: UInt64 = 1
        if let previous = try db.snapshots(group: group, limit: 1).first, previous.seq < seq {
            for (author, counter) in try GroupSnapshot(encoded: previous.encoded).authors { counters[author] = counter }
            from = previous.seq + 1
        }
        for (author, counter) in try db.committedAuthorCounters(group: group, from: from, to: seq) {
            counters[author] = max(counters[author] ?? 0, counter)
        }
        let snapshot = GroupSnapshot(group: group, seq: seq, state: state, entities: entities, authors: Array(counters))
        let encoded = snapshot.encoded
        guard encoded.count <= GroupSnapshot.maxEncodedBytes else {
            throw unavailable(
                "the state of group \(group) is \(encoded.count) bytes, over the snapshot limit of \(GroupSnapshot.maxEncodedBytes)"
            )
        }
        let stored = StoredSnapshot(
            seq: seq, cid: CID(hashing: encoded), stateHash: snapshot.stateHash, encoded: encoded,
            anchorEnvelope: anchor.encoded, anchorReceipt: anchorReceipt.encoded, madeAt: now)
        try db.insertSnapshot(group: group, stored)
        try dropOldSnapshots(group)
        return stored
    }

    /// Keeps the floor's snapshot and the newest `snapshotsKept` above it.
    mutating func dropOldSnapshots(_ group: GroupID) throws {
        let floor = try db.floor(group: group)?.seq ?? 0
        try db.deleteSnapshots(group: group, below: floor)
        let above = try db.snapshotSummaries(group: group).filter { $0.seq > floor }
        if above.count > limits.snapshotsKept, let oldestKept = above.dropLast(above.count - limits.snapshotsKept).last
        {
            for s in above where s.seq < oldestKept.seq { try db.deleteSnapshot(group: group, seq: s.seq) }
        }
    }

    /// Prunes the group below its watermark (§23.4): the newest snapshot above the floor that
    /// every peer has acknowledged (its last vector's committed mark reaches it), or that is
    /// older than the group's retention age. Nil when retention is off (and not `forced`) or no
    /// snapshot qualifies.
    mutating func compact(_ group: GroupID, forced: Bool = false) throws -> CompactionResult? {
        let minAge = try db.retention(group: group)
        guard forced || minAge != nil else { return nil }
        let floor = try db.floor(group: group)?.seq ?? 0
        let acknowledged = try db.lowestPeerCommitted(group: group)
        guard
            let mark = try db.snapshotSummaries(group: group).first(where: { s in
                s.seq > floor
                    && (acknowledged.map { s.seq <= $0 } ?? true
                        || (minAge.map { now >= s.madeAt &+ $0 } ?? false))
            })
        else { return nil }
        guard let stored = try db.snapshot(group: group, seq: mark.seq) else { return nil }
        let snapshot = try GroupSnapshot(encoded: stored.encoded)
        try overlayBaseline(group)
        let pruned = try db.pruneSuperseded(group: group, below: mark.seq)
        try db.setFloor(group: group, seq: mark.seq, snapshot: mark.cid, authors: snapshot.authors)
        try dropOldSnapshots(group)
        // Only committed receipts went: the tentative view is as it was; repair stamps it so.
        if overlay.committed[group] == nil { overlay.committed[group] = [] }
        caches.heldCounters = Memo()
        return CompactionResult(group: group, floor: mark.seq, snapshot: mark.cid, pruned: pruned)
    }

    /// Installs a verified snapshot (`Replica.installSnapshot` checked it, and
    /// `checkSnapshotTrust` in this transaction): the committed state at its seq replaces this
    /// replica's, its seq becomes the floor, tentative receipts it covers go, and the anchor, key
    /// history and authority history are kept as committed receipts.
    mutating func install(_ b: VerifiedSnapshot) throws -> Bool {
        let g = b.snapshot.group
        let held = try db.committedSeq(group: g)
        guard try !isTombstoned(g), held < b.snapshot.seq else {
            report.duplicates += 1
            return false
        }
        try overlayBaseline(g)
        for (author, counter) in b.snapshot.authors {
            _ = try db.deleteTentativeReceipts(group: g, author: author, through: counter)
        }
        var keys = Set<String>()
        for e in b.snapshot.entities {
            keys.insert(e.key)
            try noteViewChange(g, key: e.key)
            let encoded = CBOREncoder.encode(e.value)
            try db.putEntity(group: g, key: e.key, value: encoded, cid: e.cid, seq: e.seq)
            caches.committedHere[ViewKey(group: g, key: e.key)] = CommittedValue(bytes: encoded)
        }
        for e in try db.entities(group: g) where !keys.contains(e.key) {
            try noteViewChange(g, key: e.key)
            try db.deleteEntity(group: g, key: e.key)
            caches.committedHere[ViewKey(group: g, key: e.key)] = CommittedValue(bytes: nil)
        }
        let state = b.snapshot.state
        try db.saveGroupState(
            group: g, blob: state.storedBytes,
            members: state.sortedMembers.map { ($0.identity.bytes, $0.role.rawValue, $0.status.rawValue) },
            seq: b.snapshot.seq, at: now)
        caches.state[g] = state
        for (r, e) in b.history + b.authorityChanges.map({ ($0.0, $0.1) }) + [(b.anchorReceipt, b.anchor)] {
            // At or below our mark we hold what was committed, or it is below our floor: the
            // items there were not checked against an authority (`checkSnapshotTrust`).
            guard e.seq > held, try !db.receiptExists(r.cid),
                try db.receiptCID(group: g, author: r.author, counter: r.counter) == nil,
                try db.envelopeCID(group: g, seq: e.seq) == nil
            else { continue }
            if caches.knownCertificates.insert(r.certificate.cid).inserted, try !db.certificateKnown(r.certificate.cid)
            {
                try db.insertCertificate(r.certificate)
            }
            try db.insertReceipt(r, receivedAt: now)
            try db.setReceiptSeq(r.cid, seq: e.seq)
            try db.insertEnvelope(e, outcome: .applied, reason: nil, runs: &caches.envelopeRuns)
            if r.type == EpochKeyShare.receiptType { try takeEpochKey(from: r) }
        }
        try db.setFloor(group: g, seq: b.snapshot.seq, snapshot: b.cid, authors: b.snapshot.authors)
        try db.insertSnapshot(
            group: g,
            StoredSnapshot(
                seq: b.snapshot.seq, cid: b.cid, stateHash: b.snapshot.stateHash, encoded: b.encoded,
                anchorEnvelope: b.anchor.encoded, anchorReceipt: b.anchorReceipt.encoded, madeAt: now))
        try dropOldSnapshots(g)
        caches.heldCounters = Memo()
        caches.committedSeqs[g] = b.snapshot.seq
        noteOverlayRebuild(g)
        touch(g)
        report.snapshotsInstalled.append(b.snapshot.seq)
        return true
    }
}

extension Replica {
    /// Where a replay of the committed log starts: the floor's snapshot and the seq after it, or
    /// nothing and seq 1 for a group with the whole log (docs/PROTOCOL.md §23.2).
    static func replayBase(group: GroupID, db: StoreDB) throws -> (fold: Fold, from: UInt64) {
        guard let floor = try db.floor(group: group) else { return (Fold(group: group, state: nil, entities: [:]), 1) }
        guard let stored = try db.snapshot(group: group, seq: floor.seq), stored.cid == floor.snapshot else {
            throw ReplicaError(
                .storeCorrupt, "the snapshot of the floor of group \(group) at seq \(floor.seq) is missing")
        }
        let snapshot = try GroupSnapshot(encoded: stored.encoded)
        var fold = Fold(group: group, state: snapshot.state, entities: [:])
        for e in snapshot.entities {
            fold.entities[e.key] = EntityValue(key: e.key, value: e.value, cid: e.cid, status: .committed(seq: e.seq))
        }
        return (fold, floor.seq + 1)
    }
}
