import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// What a key must hold for a write to apply, checked by every replica at the write's committed
/// position (docs/PROTOCOL.md §9.7).
public enum PeerlogCondition: Sendable, Hashable {
    /// The key holds no value: "claim it unless someone already has".
    case absent
    /// The key's value was last written by this receipt (``PeerlogEntry/cid``): "change it only
    /// if nobody changed it since I read it".
    case version(CID)
    /// The key holds exactly this value.
    case value(CBOR)

    /// The key holds `value` (an `Encodable` through the JSON mapping).
    public static func equals<T: Encodable>(_ value: T) throws -> PeerlogCondition {
        .value(try ValueMapping.encode(value, key: "condition"))
    }

    func on(_ key: String) -> EntityWrite.Condition {
        switch self {
        case .absent: .absent(key: key)
        case .version(let cid): .version(key: key, cid)
        case .value(let v): .value(key: key, v)
        }
    }
}

/// Several operations on keys of one group, under conditions: one receipt, applied all or none
/// at its committed position (docs/PROTOCOL.md §9.7). Build it, then hand it to
/// ``Peerlog/write(_:in:)``.
///
/// ```swift
/// var booking = PeerlogTransaction()
/// booking.require("slot/9", .absent)
/// try booking.put("slot/9", "ann")
/// booking.add("booked", 1)
/// let write = try await peerlog.write(booking, in: group)
/// switch try await peerlog.outcome(of: write) { … }
/// ```
///
/// At most 1,000 operations and 1,000 conditions (``Peerlog/maxTransactionOperations``), and the
/// receipt's 64 KiB.
public struct PeerlogTransaction: Sendable, Hashable {
    var write = EntityWrite(changes: [])

    /// An empty transaction.
    public init() {}

    /// The operations added so far.
    public var operationCount: Int { write.changes.count }

    /// Adds a condition: the write applies only if `key` holds what `condition` says just before
    /// it, in the committed order.
    public mutating func require(_ key: String, _ condition: PeerlogCondition) {
        write.conditions.append(condition.on(key))
    }

    /// Sets `key` to `value` (last writer wins).
    public mutating func put<T: Encodable>(_ key: String, _ value: T) throws {
        write.changes.append(.put(key: key, value: try ValueMapping.encode(value, key: key)))
    }

    /// Sets `key` to a raw value.
    public mutating func put(_ key: String, cbor value: CBOR) { write.changes.append(.put(key: key, value: value)) }

    /// Deletes `key`.
    public mutating func delete(_ key: String) { write.changes.append(.delete(key: key)) }

    /// Adds `amount` to the counter at `key` (absent counts as 0). Concurrent adds all count.
    public mutating func add(_ key: String, _ amount: Int64) { write.changes.append(.add(key: key, by: amount)) }

    /// Adds elements to the set at `key` (an array of distinct values, kept sorted by encoding).
    /// Concurrent inserts all stay.
    public mutating func insert<T: Encodable>(_ elements: [T], into key: String) throws {
        write.changes.append(.insert(key: key, elements: try elements.map { try ValueMapping.encode($0, key: key) }))
    }

    /// Adds raw elements to the set at `key`.
    public mutating func insert(cbor elements: [CBOR], into key: String) {
        write.changes.append(.insert(key: key, elements: elements))
    }

    /// Removes raw elements from the set at `key`.
    public mutating func remove(cbor elements: [CBOR], from key: String) {
        write.changes.append(.remove(key: key, elements: elements))
    }

    /// Removes elements from the set at `key`.
    public mutating func remove<T: Encodable>(_ elements: [T], from key: String) throws {
        write.changes.append(.remove(key: key, elements: try elements.map { try ValueMapping.encode($0, key: key) }))
    }

    /// Sets fields of the record (a map) at `key`, keeping its other fields. Concurrent changes
    /// to different fields both stay.
    public mutating func setFields<T: Encodable>(_ fields: [String: T], of key: String) throws {
        write.changes.append(
            .setFields(key: key, fields: try fields.mapValues { try ValueMapping.encode($0, key: key) }))
    }

    /// Sets fields of the record at `key` to raw values.
    public mutating func setFields(cbor fields: [String: CBOR], of key: String) {
        write.changes.append(.setFields(key: key, fields: fields))
    }

    /// Removes fields of the record at `key`.
    public mutating func removeFields(_ names: [String], of key: String) {
        write.changes.append(.removeFields(key: key, fields: names))
    }

    /// Adds `other`'s conditions and operations after this one's.
    public mutating func append(_ other: PeerlogTransaction) {
        write.conditions += other.write.conditions
        write.changes += other.write.changes
    }

    /// Adds one batch operation: a put, a delete, or another transaction's content.
    public mutating func append(_ operation: PeerlogOperation) {
        switch operation {
        case .put(let key, let value): put(key, cbor: value)
        case .delete(let key): delete(key)
        case .transaction(let t): append(t)
        }
    }
}

/// What became of a write (``Peerlog/outcome(of:)``).
public enum PeerlogOutcome: Sendable, Hashable {
    /// No sequencer has ordered it yet. `guess` is what the tentative view expects: nil when it
    /// applies there, else why it would be rejected. Writes made offline stay here until a
    /// sequencer is reached.
    case pending(guess: String?)
    /// Committed at `seq`, its effect applied on every replica.
    case committed(seq: UInt64)
    /// Committed at `seq` without effect, the same on every replica: a condition failed, an
    /// operation could not apply, or the group's rules refused it there. `reason` says which.
    case rejected(seq: UInt64, reason: String)

    /// Whether the outcome is final.
    public var isFinal: Bool {
        if case .pending = self { false } else { true }
    }

    init(_ o: WriteOutcome) {
        switch o {
        case .tentative(_, let rejected): self = .pending(guess: rejected)
        case .committed(_, let seq): self = .committed(seq: seq)
        case .rejected(_, let seq, let reason): self = .rejected(seq: seq, reason: reason)
        }
    }
}
