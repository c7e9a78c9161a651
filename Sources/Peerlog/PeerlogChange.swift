import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore

/// Where a change stream resumes: keep the cursor of the last change you handled (it is
/// `Codable`), pass it to `changes(after:)` after a restart, and nothing is missed.
public struct ChangeCursor: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The change-log row id (docs/PROTOCOL.md §10.4).
    public let rawValue: Int64
    /// A cursor from a saved `rawValue`.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Later changes have greater cursors.
    public static func < (l: ChangeCursor, r: ChangeCursor) -> Bool { l.rawValue < r.rawValue }
    /// The row id as text.
    public var description: String { String(rawValue) }
}

/// One change an app sees, in commit order across every process writing the home.
public struct PeerlogChange: Sendable, Hashable {
    /// Resume after this change with `changes(after: cursor)`.
    public let cursor: ChangeCursor
    /// When the write that made it was stored here (milliseconds since 1970).
    public let at: UInt64
    /// What changed.
    public let event: Event

    /// The kinds of change.
    public enum Event: Sendable, Hashable {
        /// A key's visible value, or its tentative/committed state, changed.
        case entity(EntityChange)
        /// Receipts with these seqs were committed (ordered for good).
        case committed(group: GroupID, seqs: ClosedRange<UInt64>)
        /// These keys changed value because the committed order differed from the tentative
        /// guess (each also has its own `.entity` change, flagged `reordered`).
        case reordered(group: GroupID, keys: [String])
        /// A receipt had no effect: the group's rules refused it when it was committed, or this
        /// device, as sequencer, refused to order it.
        case rejected(group: GroupID, receipt: CID, reason: String)
        /// Members, roles, the name, the sequencer or the epoch keys of the group may have
        /// changed: read them again.
        case membershipChanged(group: GroupID)
        /// This identity was invited to the group (`acceptInvitation` or `leave`).
        case invited(group: GroupID, receipt: CID)
        /// The group was deleted.
        case groupDeleted(group: GroupID)
        /// A blob fetched (or imported) for the group is whole here now: the values that
        /// reference it read (``Peerlog/blobData(_:in:view:)``).
        case blobHeld(group: GroupID, blob: BlobID)
        /// Changes between the previous cursor and this one were pruned before they were read
        /// (the consumer was further behind than `ReplicaLimits.changeLogRetention`): reload
        /// the state you show. Changes after this cursor follow as usual.
        case gap
    }

    /// The group the change is about (nil for `.gap`).
    public var group: GroupID? {
        switch event {
        case .entity(let e): e.group
        case .committed(let g, _), .reordered(let g, _), .rejected(let g, _, _), .membershipChanged(let g),
            .invited(let g, _), .groupDeleted(let g), .blobHeld(let g, _):
            g
        case .gap: nil
        }
    }
}

/// A key's visible value before and after a change. The visible value is the tentative view's:
/// committed writes with the waiting ones applied in the tentative order.
public struct EntityChange: Sendable, Hashable {
    /// The group of the entity.
    public let group: GroupID
    /// The entity's key.
    public let key: String
    /// nil: the key was absent.
    public let old: CBOR?
    /// nil: the key is now absent (deleted).
    public let new: CBOR?
    /// Whether a write not yet ordered decided the old value.
    public let wasTentative: Bool
    /// Whether a write not yet ordered decides the new value.
    public let isTentative: Bool
    /// The value moved because the committed order differed from the tentative guess.
    public let reordered: Bool

    /// The new value decoded through the JSON mapping; nil when the key is absent.
    public func newValue<T: Decodable>(as type: T.Type = T.self) throws -> T? {
        try new.map { try ValueMapping.decode(type, from: $0, key: key) }
    }

    /// The old value decoded through the JSON mapping; nil when the key was absent.
    public func oldValue<T: Decodable>(as type: T.Type = T.self) throws -> T? {
        try old.map { try ValueMapping.decode(type, from: $0, key: key) }
    }
}

extension PeerlogChange {
    /// The typed form of a change-log row (docs/PROTOCOL.md §10.4); nil for a kind this
    /// version does not know (written by a newer one).
    init?(_ row: ChangeLogRow) {
        cursor = ChangeCursor(rawValue: row.id)
        at = row.at
        let g = row.group
        func value(_ bytes: [UInt8]?) -> CBOR? { bytes.flatMap { try? CBORDecoder.decodeStrict($0) } }
        switch ChangeLogKind(rawValue: row.kind) {
        case .entity?:
            let f = row.flags
            event = .entity(
                EntityChange(
                    group: g, key: row.key ?? "", old: value(row.oldValue), new: value(row.newValue),
                    wasTentative: f & ChangeLogFlags.oldTentative != 0,
                    isTentative: f & ChangeLogFlags.newTentative != 0,
                    reordered: f & ChangeLogFlags.reordered != 0))
        case .committed?:
            guard let first = row.firstSeq, let last = row.lastSeq, first <= last else { return nil }
            event = .committed(group: g, seqs: first...last)
        case .reordered?:
            guard case .array(let keys)? = value(row.newValue) else { return nil }
            event = .reordered(group: g, keys: keys.compactMap(\.textValue))
        case .rejected?:
            guard let cid = row.cid else { return nil }
            event = .rejected(group: g, receipt: cid, reason: row.reason ?? "")
        case .members?: event = .membershipChanged(group: g)
        case .invited?:
            guard let cid = row.cid else { return nil }
            event = .invited(group: g, receipt: cid)
        case .deleted?: event = .groupDeleted(group: g)
        case .blob?:
            guard let blob = row.key.flatMap({ try? BlobID(string: $0) }) else { return nil }
            event = .blobHeld(group: g, blob: blob)
        case nil: return nil
        }
    }
}
