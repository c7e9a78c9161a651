import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// An entity's value as a view shows it.
public struct PeerlogEntry: Sendable, Hashable {
    /// The entity's key.
    public let key: String
    /// The value as stored (deterministic CBOR's data model).
    public let value: CBOR
    /// The receipt that wrote the value.
    public let cid: CID
    /// True while a write that no sequencer has ordered yet decides it.
    public let isTentative: Bool
    /// Its seq when committed.
    public let seq: UInt64?

    /// The value decoded through the JSON mapping (docs/PROTOCOL.md §8).
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try ValueMapping.decode(type, from: value, key: key)
    }
}

extension Peerlog {
    /// Sets `key` to `value` (any `Encodable` the JSON mapping holds: no floats) and returns
    /// once the write is stored. It is tentative until the group's sequencer orders it.
    @discardableResult
    public func put<T: Encodable>(_ key: String, _ value: T, in group: GroupID) async throws -> PeerlogWrite {
        let cbor = try ValueMapping.encode(value, key: key)
        return try await write(.entityPut(key: key, value: cbor), to: group)
    }

    /// Sets `key` to a raw value.
    @discardableResult
    public func put(_ key: String, cbor value: CBOR, in group: GroupID) async throws -> PeerlogWrite {
        try await write(.entityPut(key: key, value: value), to: group)
    }

    /// Deletes `key`.
    @discardableResult
    public func delete(_ key: String, in group: GroupID) async throws -> PeerlogWrite {
        try await write(.entityDelete(key: key), to: group)
    }

    /// Writes many keys in one transaction: each its own signed receipt, one commit for all.
    /// `nil` deletes a key. Nothing is written when any entry is refused. At most 10,000 entries
    /// and 32 MiB of payloads (`ReplicaLimits`).
    @discardableResult
    public func putBatch<T: Encodable>(
        _ entries: [(key: String, value: T?)], in group: GroupID
    ) async throws -> [PeerlogWrite] {
        var ops = [PeerlogOperation]()
        for e in entries {
            ops.append(
                try e.value.map { .put(key: e.key, value: try ValueMapping.encode($0, key: e.key)) }
                    ?? .delete(key: e.key))
        }
        return try await writeBatch(ops, to: group)
    }

    /// Writes raw operations in one transaction, like `putBatch`. When one is refused nothing
    /// is written, and the error's `batchEntry` says which (its index in `operations`) and why.
    @discardableResult
    public func putBatch(_ operations: [PeerlogOperation], in group: GroupID) async throws -> [PeerlogWrite] {
        try await writeBatch(operations, to: group)
    }

    /// The value of `key` decoded as `T`, or nil when the view holds no such key.
    public func get<T: Decodable>(
        _ key: String, as type: T.Type = T.self, in group: GroupID, view: View = .tentative
    ) async throws -> T? {
        try await entry(key, in: group, view: view)?.decode(type)
    }

    /// The entry of `key`, or nil when the view holds no such key.
    public func entry(_ key: String, in group: GroupID, view: View = .tentative) async throws -> PeerlogEntry? {
        try await call { [self] in try replica.entity(key, in: group, view: view).map(Self.entry) }
    }

    /// Every entry whose key starts with `prefix` (all when empty), in key order.
    public func entries(in group: GroupID, prefix: String = "", view: View = .tentative) async throws -> [PeerlogEntry]
    {
        try await call { [self] in
            try requireHeld(group)
            return try replica.entities(in: group, view: view).filter { $0.key.hasPrefix(prefix) }.sorted {
                $0.key < $1.key
            }.map(Self.entry)
        }
    }

    /// The keys starting with `prefix`, in order.
    public func keys(in group: GroupID, prefix: String = "", view: View = .tentative) async throws -> [String] {
        try await entries(in: group, prefix: prefix, view: view).map(\.key)
    }

    /// The group's log: committed receipts in seq order, then (tentative view) the waiting ones
    /// in the tentative order.
    public func log(of group: GroupID, view: View = .tentative) async throws -> [PeerlogLogItem] {
        try await call { [self] in
            try requireHeld(group)
            let items = try replica.log(of: group, view: view)
            let opened = try replica.openedBodies(of: items.map(\.receipt), in: group)
            return zip(items, opened).map { item, plaintext in
                var seq: UInt64?
                if case .committed(let s) = item.status { seq = s }
                let r = item.receipt
                return PeerlogLogItem(
                    cid: r.cid, type: r.type, author: r.author, identity: r.identity, counter: r.counter,
                    time: r.hlc.physical,
                    body: r.body, plaintext: plaintext, seq: seq, rejected: item.rejected)
            }
        }
    }

    /// The group's state hash in `view`: replicas holding the same receipts have the same
    /// hashes (compare them to tell whether two devices agree).
    public func stateHash(of group: GroupID, view: View = .tentative) async throws -> [UInt8] {
        try await call { [self] in
            try requireHeld(group)
            return try replica.stateHash(of: group, view: view)
        }
    }

    static func entry(_ e: EntityValue) -> PeerlogEntry {
        var seq: UInt64?
        if case .committed(let s) = e.status { seq = s }
        return PeerlogEntry(key: e.key, value: e.value, cid: e.cid, isTentative: seq == nil, seq: seq)
    }

    /// Checks `operations` as `putBatch` would, writing nothing, however many there are (each
    /// `maxBatchOperations` against the rules, all of them against the offline limits): for input
    /// checked whole before it is written in several batches (`peerlog put --batch`).
    package func checkBatch(_ operations: [PeerlogOperation], in group: GroupID) async throws {
        let ops = Self.groupOperations(operations)
        try await call { [self] in
            try requireHeld(group)
            do { try replica.checkBatch(ops, to: group) } catch let e as BatchError {
                throw PeerlogError(
                    PeerlogError.Code(engine: e.code), "\(operations[e.index].key): \(e.reason)",
                    batchEntry: .init(index: e.index, reason: e.reason))
            }
        }
    }

    static func groupOperations(_ operations: [PeerlogOperation]) -> [GroupOperation] {
        operations.map {
            switch $0 {
            case .put(let key, let value): .entityPut(key: key, value: value)
            case .delete(let key): .entityDelete(key: key)
            case .transaction(let t): .entityWrite(t.write)
            }
        }
    }

    func writeBatch(_ operations: [PeerlogOperation], to group: GroupID) async throws -> [PeerlogWrite] {
        let ops = Self.groupOperations(operations)
        let written = try await call { [self] in
            try requireHeld(group)
            do { return try replica.appendBatch(ops, to: group).map(PeerlogWrite.init) } catch let e as BatchError {
                throw PeerlogError(
                    PeerlogError.Code(engine: e.code), "\(operations[e.index].key): \(e.reason)",
                    batchEntry: .init(index: e.index, reason: e.reason))
            }
        }
        offerNow()
        return written
    }
}

/// One receipt of a group's log.
public struct PeerlogLogItem: Sendable, Hashable {
    /// The receipt's content id.
    public let cid: CID
    /// `entity.put`, `group.member_added`, …
    public let type: String
    /// The device that signed it.
    public let author: DeviceID
    /// The identity that device acts for.
    public let identity: IdentityID
    /// The author's counter: its receipts in the group are numbered 1, 2, 3, …
    public let counter: UInt64
    /// When the author wrote it (its hybrid clock's milliseconds since 1970).
    public let time: UInt64
    /// The receipt's body (the operation's fields); in an encrypted group, the sealed body
    /// (docs/PROTOCOL.md §22.3).
    public let body: CBOR
    /// In an encrypted group, the sealed body opened with this device's keys; nil for a
    /// plaintext body, or when this device does not hold the key.
    public let plaintext: CBOR?
    /// Its seq once committed; nil while tentative.
    public let seq: UInt64?
    /// Why it had (or, tentative, would have) no effect; nil when it took effect.
    public let rejected: String?
}

/// `Codable` values through the JSON view of CBOR (docs/PROTOCOL.md §8), without floats:
/// receipt bodies must encode the same on every device.
enum ValueMapping {
    static func encode<T: Encodable>(_ value: T, key: String) throws -> CBOR {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(value)
            return try CBOR(json: try JSON.parse(String(decoding: data, as: UTF8.self)), allowFloats: false)
        } catch {
            throw PeerlogError(.invalidValue, "the value for \"\(key)\" cannot be stored: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: CBOR, key: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(value.json.serialized().utf8))
        } catch {
            throw PeerlogError(.invalidValue, "the value of \"\(key)\" is not a \(T.self): \(error)")
        }
    }
}
