import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// What one compaction did (docs/PROTOCOL.md §23.4).
public struct CompactionResult: Sendable, Hashable {
    /// The group.
    public let group: GroupID
    /// The new floor: no complete log is held below this seq.
    public let floor: UInt64
    /// The snapshot the floor rests on.
    public let snapshot: CID
    /// Receipts pruned (with their envelopes).
    public let pruned: Int
}

/// A snapshot held by this replica, as listed by ``Replica/snapshots(of:)``.
public struct SnapshotInfo: Sendable, Hashable {
    /// Its content id.
    public let cid: CID
    /// The committed seq it is at.
    public let seq: UInt64
    /// The committed state hash at that seq.
    public let stateHash: [UInt8]
    /// Its encoded size in bytes.
    public let bytes: Int
    /// When this replica made or installed it (ms).
    public let madeAt: UInt64
    /// The group's floor rests on it.
    public let isFloor: Bool
}

/// A snapshot as it travels (docs/PROTOCOL.md §23.3): the snapshot, its anchor (the envelope and
/// receipt at its seq), the group's committed `group.key` receipts up to it with their envelopes,
/// and its committed `group.sequencer_changed` receipts up to it with theirs (how a receiver walks
/// from the authority it has committed to the one that signed the anchor).
public struct SnapshotBundle: Sendable, Hashable {
    /// The encoded snapshot; empty when it travels as `blob`.
    public let snapshot: [UInt8]
    /// The blob holding the encoded snapshot, for one over `GroupSnapshot.maxInlineBytes`
    /// (docs/PROTOCOL.md §23.3); nil when it is inline.
    public let blob: BlobReference?
    /// The envelope container at the snapshot's seq.
    public let anchorEnvelope: [UInt8]
    /// The receipt container that envelope names.
    public let anchorReceipt: [UInt8]
    /// `[receipt container, envelope container]` pairs: the committed `group.key` receipts.
    public let keyHistory: [[[UInt8]]]
    /// `[receipt container, envelope container]` pairs: the committed `group.sequencer_changed`
    /// receipts at or below the snapshot's seq, in seq order (empty from a sender that predates it).
    public let authorityHistory: [[[UInt8]]]

    /// A bundle of these parts.
    public init(
        snapshot: [UInt8], anchorEnvelope: [UInt8], anchorReceipt: [UInt8], keyHistory: [[[UInt8]]],
        authorityHistory: [[[UInt8]]] = [], blob: BlobReference? = nil
    ) {
        self.snapshot = snapshot
        self.blob = blob
        self.anchorEnvelope = anchorEnvelope
        self.anchorReceipt = anchorReceipt
        self.keyHistory = keyHistory
        self.authorityHistory = authorityHistory
    }
}

/// A bundle whose every part verified (`Replica.verify(_:from:)`).
struct VerifiedSnapshot {
    let snapshot: GroupSnapshot
    let cid: CID
    let encoded: [UInt8]
    let anchor: Envelope
    let anchorReceipt: Receipt
    let history: [(Receipt, Envelope)]
    /// The committed authority changes the bundle carried, in seq order, with the authority each names.
    let authorityChanges: [(Receipt, Envelope, SequencerAuthority)]
}

extension Replica {
    /// Makes a snapshot of the group's committed state now (docs/PROTOCOL.md §23.1), or returns
    /// the one held at its committed mark. Throws `snapshotUnavailable` with the reason when none
    /// can be made.
    @discardableResult
    public func makeSnapshot(of group: GroupID) throws -> SnapshotInfo {
        var made: StoredSnapshot?
        _ = try write { p in made = try p.makeSnapshot(group) }
        guard let made else { throw ReplicaError(.snapshotUnavailable, "no snapshot was made") }
        return SnapshotInfo(
            cid: made.cid, seq: made.seq, stateHash: made.stateHash, bytes: made.encoded.count, madeAt: made.madeAt,
            isFloor: try floor(of: group)?.seq == made.seq)
    }

    /// The group's snapshots, newest first.
    public func snapshots(of group: GroupID) throws -> [SnapshotInfo] {
        try store.read { db in
            let floor = try db.floor(group: group)?.seq
            return try db.snapshotSummaries(group: group).map {
                SnapshotInfo(
                    cid: $0.cid, seq: $0.seq, stateHash: $0.stateHash, bytes: $0.bytes, madeAt: $0.madeAt,
                    isFloor: $0.seq == floor)
            }
        }
    }

    /// The group's floor: the seq below which no complete log is held here, and its snapshot.
    public func floor(of group: GroupID) throws -> (seq: UInt64, snapshot: CID)? {
        try store.read { try $0.floor(group: group) }
    }

    /// The group's retention (§23.4): nil when off, else the age in ms after which a snapshot is a
    /// watermark even when a peer has not acknowledged it.
    public func retention(of group: GroupID) throws -> UInt64? {
        try store.read { try $0.retention(group: group) }
    }

    /// Turns pruning of superseded receipts on (`minAgeMillis`: see ``retention(of:)``) or off (nil).
    public func setRetention(of group: GroupID, minAgeMillis: UInt64?) throws {
        try store.write { db in
            guard try db.knowsGroup(group) else {
                throw ReplicaError(.groupNotFound, "group \(group) is not held here")
            }
            try db.setRetention(group: group, minAgeMillis: minAgeMillis)
        }
    }

    /// Commits between the group's automatic snapshots (0: none): its own setting, else
    /// `ReplicaLimits.snapshotInterval`.
    public func snapshotInterval(of group: GroupID) throws -> UInt64 {
        try store.read { try $0.snapshotInterval(group: group) } ?? limits.snapshotInterval
    }

    /// Sets the group's snapshot interval (nil: back to the replica's default).
    public func setSnapshotInterval(of group: GroupID, _ interval: UInt64?) throws {
        try store.write { db in
            guard try db.knowsGroup(group) else {
                throw ReplicaError(.groupNotFound, "group \(group) is not held here")
            }
            try db.setSnapshotInterval(group: group, interval)
        }
    }

    /// Prunes the group below its watermark now, whether or not retention is on. Nil when no
    /// snapshot above the floor qualifies (make one first, or wait for peers to acknowledge it).
    public func compact(_ group: GroupID) throws -> CompactionResult? {
        var result: CompactionResult?
        if let short = compactionShortfall(group) { throw ReplicaError(.diskFull, "not enough space: \(short)") }
        do { _ = try write { p in result = try p.compact(group, forced: true) } } catch  where Store.isDiskFull(error) {
            store.truncateWAL()
            throw ReplicaError(.diskFull, "the disk is full: \(spaceNeeded(group)); nothing was pruned")
        }
        return result
    }

    /// What a peer that holds nothing of the group, or holds less than this replica's floor,
    /// starts from: the newest snapshot with its anchor and key history (§23.3). Nil when there
    /// is none, the peer is not that far behind, or the peer's identity is not an active or
    /// pending member in this replica's tentative view (a relay never gets one: it would hold
    /// every value).
    ///
    /// With `blobs` (the peer reads snapshots sent as blobs), a snapshot over
    /// `GroupSnapshot.maxInlineBytes` is stored as a blob served to the group's members (sealed
    /// in an encrypted group; the same snapshot makes the same blob within an epoch) and the
    /// bundle references it; without, such a bundle holds the bytes (too big to send).
    public func bootstrapBundle(
        of group: GroupID, for peer: IdentityID, peerCommitted: UInt64, peerHoldsNothing: Bool, blobs: Bool = false
    ) throws -> SnapshotBundle? {
        guard let bundle = try inlineBootstrapBundle(group, peer, peerCommitted, peerHoldsNothing) else { return nil }
        guard blobs, bundle.snapshot.count > GroupSnapshot.maxInlineBytes else { return bundle }
        return SnapshotBundle(
            snapshot: [], anchorEnvelope: bundle.anchorEnvelope, anchorReceipt: bundle.anchorReceipt,
            keyHistory: bundle.keyHistory, authorityHistory: bundle.authorityHistory,
            blob: try storeSnapshotBlob(bundle.snapshot, in: group))
    }

    private func inlineBootstrapBundle(
        _ group: GroupID, _ peer: IdentityID, _ peerCommitted: UInt64, _ peerHoldsNothing: Bool
    ) throws -> SnapshotBundle? {
        try store.read { db in
            let floor = try db.floor(group: group)?.seq ?? 0
            guard peerHoldsNothing || peerCommitted < floor, let s = try db.snapshots(group: group, limit: 1).first,
                s.seq > peerCommitted,
                let status = try fold(group: group, view: .tentative, db: db, entities: .none).state?.members[peer]?
                    .status,
                status == .active || status == .pending
            else { return nil }
            let history = try db.committedReceipts(group: group, type: EpochKeyShare.receiptType, through: s.seq)
            let authority = try db.committedReceipts(
                group: group, type: GroupOperation.sequencerChangedType, through: s.seq)
            let readable = try readableSnapshot(s.encoded, for: peer, db: db)
            return SnapshotBundle(
                snapshot: readable, anchorEnvelope: s.anchorEnvelope, anchorReceipt: s.anchorReceipt,
                keyHistory: history.map { [$0.receipt.encoded, $0.envelope] },
                authorityHistory: authority.map { [$0.receipt.encoded, $0.envelope] })
        }
    }

    /// `encoded` as `peer` may read it (docs/PROTOCOL.md §23.3, SECURITY.md): in an encrypted
    /// group without `history`, only the values whose writers were sealed under a key in use now
    /// (what the peer holds once it accepts, or already holds when invited by code); values under
    /// retired keys, which the log would never open for it, are left out and the state hash
    /// recomputed. A device of this identity gets every value (it gets every key, §22.5). While
    /// no key was ever retired (every epoch's key is still in use) nothing is left out; after a
    /// retirement, a value whose writer receipt this replica does not hold (it started from a
    /// snapshot itself) is left out too, since which key sealed it cannot be told.
    func readableSnapshot(_ encoded: [UInt8], for peer: IdentityID, db: StoreDB) throws -> [UInt8] {
        let snapshot = try GroupSnapshot(encoded: encoded)
        guard peer != local.identity, let blob = try db.groupStateBlob(group: snapshot.group),
            let encryption = try GroupState(storedBytes: blob).encryption, !encryption.history,
            encryption.epoch > UInt64(encryption.validKeys.count)
        else { return encoded }
        let inUse = Set(encryption.validKeys)
        let kept = try snapshot.entities.filter { e in
            guard let r = try db.loadReceipt(e.cid)?.receipt, GroupOperation.looksSealed(r.body),
                let sealed = try? EncryptedBody(cbor: r.body)
            else { return false }
            return inUse.contains(sealed.keyID)
        }
        guard kept.count < snapshot.entities.count else { return encoded }
        return GroupSnapshot(
            group: snapshot.group, seq: snapshot.seq, state: snapshot.state, entities: kept, authors: snapshot.authors
        ).encoded
    }

    /// Verifies a snapshot a peer sent and installs it when it is ahead of what is held here
    /// (docs/PROTOCOL.md §23.3). `sender`: the identity of the peer (from its certificate), `device`
    /// its device. `trustedForBootstrap`: the node trusts this identity to start a group this
    /// replica holds nothing committed of (its own identity, or one named by `allow` or a pairing:
    /// the inviter); a replica that holds the group checks the snapshot against its own committed
    /// authority instead and ignores it. Throws `snapshotRefused` when any part does not verify or
    /// the snapshot is not one this replica may take; nothing is written then but the evidence
    /// (`deadLetters`), for a snapshot that contradicts what is held here or whose anchor is not
    /// signed by the authority in force.
    @discardableResult
    public func installSnapshot(
        _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID? = nil, trustedForBootstrap: Bool = false
    ) throws -> IngestReport {
        let verified = try Self.verify(bundle, from: sender)
        do {
            return try write { p in
                try p.checkSnapshotTrust(
                    verified, from: sender, device: device, trustedForBootstrap: trustedForBootstrap)
                _ = try p.install(verified)
            }
        } catch let refusal as SnapshotRefusal {
            if refusal.isEvidence {
                try? store.write { db in
                    try db.markInvalid(
                        verified.cid, group: verified.snapshot.group, author: verified.anchor.sequencer,
                        identity: sender, peer: device, reason: refusal.error.detail, at: clock())
                    try db.trimInvalid(peer: device, perPeer: limits.maxEvidencePerPeer, total: limits.maxEvidence)
                }
            }
            throw refusal.error
        }
    }

    /// The checks that need nothing but the bundle: every signature, the content hash, and that
    /// the anchor and histories are of the snapshot's group and seq. Whom they make it trusted
    /// by is `Pipeline.checkSnapshotTrust`.
    static func verify(_ b: SnapshotBundle, from sender: IdentityID) throws -> VerifiedSnapshot {
        func refuse(_ why: String) -> ReplicaError { ReplicaError(.snapshotRefused, "snapshot refused: \(why)") }
        let snapshot = try GroupSnapshot(encoded: b.snapshot)
        let g = snapshot.group
        guard snapshot.state.members[sender]?.status == .active else {
            throw refuse("the sender \(sender) is not an active member of group \(g) in it")
        }
        guard let anchor = try? Envelope(encoded: b.anchorEnvelope), anchor.verify().isValid else {
            throw refuse("its anchor envelope does not verify")
        }
        guard anchor.group == g, anchor.seq == snapshot.seq else {
            throw refuse("its anchor is for seq \(anchor.seq), the snapshot for seq \(snapshot.seq)")
        }
        guard let receipt = try? Receipt(encoded: b.anchorReceipt), receipt.cid == anchor.receipt,
            receipt.group == g, receipt.verify(certificateVerified: false).isValid
        else { throw refuse("its anchor receipt does not verify or is not the one the anchor names") }
        func pairs(_ items: [[[UInt8]]], type: String, what: String) throws -> [(Receipt, Envelope)] {
            var out = [(Receipt, Envelope)]()
            for pair in items {
                guard pair.count == 2, let r = try? Receipt(encoded: pair[0]), let e = try? Envelope(encoded: pair[1]),
                    r.group == g, r.type == type, e.group == g, e.receipt == r.cid, e.seq <= snapshot.seq,
                    out.last.map({ $0.1.seq < e.seq }) ?? true,
                    r.verify(certificateVerified: false).isValid, e.verify().isValid
                else { throw refuse("an item of its \(what) does not verify") }
                out.append((r, e))
            }
            return out
        }
        let history = try pairs(b.keyHistory, type: EpochKeyShare.receiptType, what: "key history")
        var changes = [(Receipt, Envelope, SequencerAuthority)]()
        for (r, e) in try pairs(
            b.authorityHistory, type: GroupOperation.sequencerChangedType, what: "authority history")
        {
            guard case .sequencerChanged(let authority)? = try? GroupOperation(receiptType: r.type, body: r.body) else {
                throw refuse("an item of its authority history names no authority")
            }
            changes.append((r, e, authority))
        }
        return VerifiedSnapshot(
            snapshot: snapshot, cid: CID(hashing: b.snapshot), encoded: b.snapshot, anchor: anchor,
            anchorReceipt: receipt, history: history, authorityChanges: changes)
    }
}

extension SequencerAuthority {
    /// The keys whose envelopes this authority signs.
    var signers: Set<DeviceID> {
        switch self {
        case .solo(let device): [device]
        case .elected(let voters): Set(voters)
        case .relay(let key, _): [key]
        }
    }
}
