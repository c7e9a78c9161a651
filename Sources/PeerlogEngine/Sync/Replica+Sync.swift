import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// A receipt ready to go on the wire: its container bytes plus where it sits.
public struct SyncReceiptItem: Sendable {
    /// The device that signed the receipt.
    public let author: DeviceID
    /// Its author counter (§3.2): 1, 2, 3, … per (group, author).
    public let counter: UInt64
    /// The committed seq, nil while tentative.
    public let seq: UInt64?
    /// The receipt container (§3.2), byte-identical to `Receipt.encoded`.
    public let encoded: [UInt8]
}

/// A committed envelope with its receipt, for committed catch-up.
public struct SyncCommittedItem: Sendable {
    /// The envelope's seq in its group, from 1.
    public let seq: UInt64
    /// The envelope container (§3.4).
    public let envelope: [UInt8]
    /// The receipt the envelope commits.
    public let receipt: SyncReceiptItem
}

/// A committed envelope alone.
public struct SyncEnvelopeItem: Sendable {
    /// The envelope's seq in its group, from 1.
    public let seq: UInt64
    /// The envelope container (§3.4), byte-identical to `Envelope.encoded`.
    public let encoded: [UInt8]
}

/// How one group is shared with one peer, as this replica sees it (§15.2.2–3).
public struct SyncSharing: Sendable, Hashable {
    /// Anything of the group is held (a receipt or a tombstone).
    public let held: Bool
    /// Held, not tombstoned and not deleted.
    public let open: Bool
    /// The peer may be sent the group: its identity is a pending or active member (or it is the
    /// group's relay and we are present, or we are the relay and it is a member). Open groups only.
    public let peerPresent: Bool
    /// Our identity is a pending or active member, or this device is the group's relay.
    public let localPresent: Bool
    /// The group is end-to-end encrypted (§22): only a peer that lists the `encrypted_groups`
    /// capability is sent it (§15.2.4).
    public var encrypted = false

    /// Flags as given; `open` defaults to true.
    public init(held: Bool, open: Bool = true, peerPresent: Bool, localPresent: Bool, encrypted: Bool = false) {
        self.held = held
        self.open = open
        self.peerPresent = peerPresent
        self.localPresent = localPresent
        self.encrypted = encrypted
    }

    /// Not held at all: an offer of it is an invitation.
    public static let notHeld = SyncSharing(held: false, open: false, peerPresent: false, localPresent: false)
    /// Deleted (tombstoned): never offered, accepted nor sent.
    public static let closed = SyncSharing(held: true, open: false, peerPresent: false, localPresent: false)
    /// Held, but no group state can be folded yet (no `group.created`): we are no member yet.
    public static let unknownState = SyncSharing(held: true, open: true, peerPresent: false, localPresent: false)

    /// Offered to the peer in `hello` or by an unasked `vector`.
    public var offers: Bool { peerPresent && localPresent }
    /// The peer's offer is accepted: we lack the group, or we would offer it too, or we are not a
    /// member in our own view yet, which is how an invitee whose copy stops before its own
    /// invitation (an interrupted catch-up) finishes it. Accepting only lets the peer send.
    public var acceptsOffer: Bool { !held || (open && (peerPresent || !localPresent)) }
    /// What the peer lacks is sent to it (pushed, or served on request).
    public var serves: Bool { peerPresent }
}

/// Queries the sync protocol needs (docs/PROTOCOL.md §15). Reads only; writes go through `ingest`.
extension Replica {
    /// Groups to offer `peer` in a hello: held, not deleted, and in the tentative view the
    /// peer's identity is a pending or active member and so is ours, or one of the two is the
    /// group's relay (§19.1).
    public func syncOfferedGroups(to peer: DeviceCertificate) throws -> [GroupID] {
        try groupIDs().filter { try syncOffers($0, to: peer) }
    }

    /// Whether `group` would be offered to `peer` now.
    public func syncOffers(_ group: GroupID, to peer: DeviceCertificate) throws -> Bool {
        try syncSharing(group, with: peer).offers
    }

    /// How `group` is shared with `peer` in this replica's tentative view (§15.2.2–3): whether
    /// to offer it, accept the peer's offer of it, and send it what it lacks.
    public func syncSharing(_ group: GroupID, with peer: DeviceCertificate) throws -> SyncSharing {
        try store.read { db in
            guard try db.holdsGroup(group) else { return .notHeld }
            guard try !db.isTombstoned(group: group) else { return .closed }
            // No state yet: a copy without `group.created` (pieces that arrived out of order).
            guard let state = try fold(group: group, view: .tentative, db: db, entities: .none).state else {
                return .unknownState
            }
            guard state.status == .active else { return .closed }
            func present(_ id: IdentityID) -> Bool {
                guard let m = state.members[id] else { return false }
                return m.status == .pending || m.status == .active
            }
            let encrypted = state.encryption != nil
            if case .relay(let key, _) = state.authority {
                if key == local.device {
                    return SyncSharing(
                        held: true, peerPresent: present(peer.identity), localPresent: true, encrypted: encrypted)
                }  // we are its relay
                if key == peer.device {
                    return SyncSharing(
                        held: true, peerPresent: present(local.identity), localPresent: present(local.identity),
                        encrypted: encrypted)
                }  // the peer is it
            }
            return SyncSharing(
                held: true, peerPresent: present(peer.identity), localPresent: present(local.identity),
                encrypted: encrypted)
        }
    }

    /// The committed seq at which `identity` stopped being a member of `group` (its committed
    /// status `removed` or `left`, since that seq), nil otherwise.
    public func syncDepartureSeq(_ group: GroupID, of identity: IdentityID) throws -> UInt64? {
        try store.read { db in
            try db.members(group: group).first { $0.identity == identity.bytes }
                .flatMap {
                    [MemberStatus.removed, .left].contains(MemberStatus(rawValue: $0.status)) ? $0.sinceSeq : nil
                }
        }
    }

    /// Whether this replica holds anything of `group` (a receipt or a tombstone).
    public func syncHolds(_ group: GroupID) throws -> Bool { try store.read { try $0.holdsGroup(group) } }

    /// Up to `limit` committed positions from `fromSeq`, in seq order, with their receipts.
    public func syncCommitted(group: GroupID, fromSeq: UInt64, limit: Int) throws -> [SyncCommittedItem] {
        try store.read { db in
            try db.rawCommitted(group: group, fromSeq: fromSeq, limit: limit).map {
                SyncCommittedItem(
                    seq: $0.seq,
                    envelope: Self.envelopeContainer(payload: $0.envelopePayload, signature: $0.envelopeSignature),
                    receipt: try Self.item($0.receipt))
            }
        }
    }

    /// Committed envelope containers for seqs `from...to`, at most `limit`.
    public func syncEnvelopes(group: GroupID, from: UInt64, to: UInt64, limit: Int) throws -> [SyncEnvelopeItem] {
        try store.read { db in
            try db.rawEnvelopes(group: group, from: from, to: to, limit: limit).map {
                SyncEnvelopeItem(
                    seq: $0.seq, encoded: Self.envelopeContainer(payload: $0.payload, signature: $0.signature))
            }
        }
    }

    /// `encoded` as a single envelope (§3.4) for a peer that reads no batched ones (§15.2.4):
    /// itself if single; a run item this device signed is signed again alone (the same
    /// statement, so no fork); a run item of another sequencer cannot be, so nil.
    public func syncSingleEnvelope(_ encoded: [UInt8]) throws -> [UInt8]? {
        let e = try Envelope(encoded: encoded)
        guard e.run != nil else { return encoded }
        guard e.sequencer == local.device else { return nil }
        return try Envelope.sign(
            group: e.group, seq: e.seq, receipt: e.receipt, term: e.term, receivedAt: e.receivedAt,
            key: local.signingKey
        ).encoded
    }

    /// One author's receipts with counters `from...to`, in counter order, at most `limit`.
    public func syncReceipts(
        group: GroupID, author: DeviceID, from: UInt64, to: UInt64, limit: Int
    ) throws -> [SyncReceiptItem] {
        try store.read { db in
            try db.rawReceipts(group: group, author: author, from: from, to: to, limit: limit).map(Self.item)
        }
    }

    /// Receipts of `group` by CID; CIDs not held (or of another group) are skipped.
    public func syncReceipts(group: GroupID, cids: [CID]) throws -> [SyncReceiptItem] {
        try store.read { db in try db.rawReceipts(group: group, cids: cids).map(Self.item) }
    }

    static func item(_ row: RawReceiptRow) throws -> SyncReceiptItem {
        SyncReceiptItem(
            author: try DeviceID(bytes: row.author), counter: row.counter, seq: row.seq,
            encoded: receiptContainer(payload: row.payload, signature: row.signature, certificate: row.certificate))
    }

    /// `Receipt.encoded` spliced from stored parts without parsing the payload: the keys in
    /// deterministic order are "sig", "receipt", "certificate" (shorter encodings first).
    public static func receiptContainer(payload: [UInt8], signature: [UInt8], certificate: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(payload.count + signature.count + certificate.count + 32)
        out.append(0xa3)
        CBOREncoder.append(.text("sig"), to: &out)
        CBOREncoder.append(.bytes(signature), to: &out)
        CBOREncoder.append(.text("receipt"), to: &out)
        CBOREncoder.append(.bytes(payload), to: &out)
        CBOREncoder.append(.text("certificate"), to: &out)
        out.append(contentsOf: certificate)
        return out
    }

    /// `Envelope.encoded` from stored parts: keys "sig", then "envelope".
    public static func envelopeContainer(payload: [UInt8], signature: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(payload.count + signature.count + 24)
        out.append(0xa2)
        CBOREncoder.append(.text("sig"), to: &out)
        CBOREncoder.append(.bytes(signature), to: &out)
        CBOREncoder.append(.text("envelope"), to: &out)
        CBOREncoder.append(.bytes(payload), to: &out)
        return out
    }
}
