import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// A group's committed state at one seq (docs/PROTOCOL.md §23.1): what a device starts from
/// instead of replaying the log below it. Content-addressed (its CID is the hash of its
/// bytes) and deterministic: every replica that committed the same prefix makes the same bytes.
public struct GroupSnapshot: Sendable, Hashable {
    /// The group.
    public let group: GroupID
    /// The committed seq the state is at.
    public let seq: UInt64
    /// The committed state hash at `seq` (§12), carried so a reader checks it before use.
    public let stateHash: [UInt8]
    /// The group state at `seq`.
    public let state: GroupState
    /// The entities at `seq`, sorted by the UTF-8 bytes of their keys, each with its writer and
    /// the seq it was committed at.
    public let entities: [Entity]
    /// Per author device, its highest counter among the receipts committed at or below `seq`,
    /// ascending by device bytes: what a device starting here counts as held.
    public let authors: [(DeviceID, UInt64)]

    /// One entity of a snapshot.
    public struct Entity: Sendable, Hashable {
        /// The key.
        public let key: String
        /// The value.
        public let value: CBOR
        /// The receipt that wrote it.
        public let cid: CID
        /// The seq that receipt was committed at.
        public let seq: UInt64

        /// An entity of these parts.
        package init(key: String, value: CBOR, cid: CID, seq: UInt64) {
            self.key = key
            self.value = value
            self.cid = cid
            self.seq = seq
        }
    }

    /// Most bytes of an encoded snapshot (256 MiB): a group whose state is bigger makes none and
    /// keeps replaying its log (docs/PROTOCOL.md §23.1).
    public static let maxEncodedBytes = 256 << 20
    /// Most bytes of a snapshot sent inside its `snapshot` message; a bigger one is sent as a
    /// blob the message references (docs/PROTOCOL.md §23.3).
    public static let maxInlineBytes = 4_063_232

    /// The deterministic CBOR encoding (§23.1).
    public var encoded: [UInt8] {
        CBOREncoder.encode(
            .textMap([
                "v": 1,
                "group": .bytes(group.bytes),
                "seq": .unsigned(seq),
                "state_hash": .bytes(stateHash),
                "state": state.canonicalCBOR,
                "entities": .array(
                    entities.map { .array([.text($0.key), $0.value, $0.cid.cborLink, .unsigned($0.seq)]) }),
                "authors": .array(authors.map { .array([.bytes($0.0.bytes), .unsigned($0.1)]) }),
            ]))
    }

    /// The snapshot's content id: the CID of `encoded`.
    public var cid: CID { CID(hashing: encoded) }

    /// The state hash recomputed from the content (§12): equal to `stateHash` in a sound snapshot.
    public var computedStateHash: [UInt8] {
        var fold = Fold(group: group, state: state, entities: [:])
        for e in entities {
            fold.entities[e.key] = EntityValue(key: e.key, value: e.value, cid: e.cid, status: .committed(seq: e.seq))
        }
        return fold.stateHash
    }

    /// A snapshot of the given parts; `entities` and `authors` are sorted here.
    init(
        group: GroupID, seq: UInt64, stateHash: [UInt8], state: GroupState, entities: [Entity],
        authors: [(DeviceID, UInt64)]
    ) {
        self.group = group
        self.seq = seq
        self.stateHash = stateHash
        self.state = state
        self.entities = entities.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        self.authors = authors.sorted { $0.0.bytes.lexicographicallyPrecedes($1.0.bytes) }
    }

    /// The snapshot of the given parts, its state hash computed from them (§12).
    package init(group: GroupID, seq: UInt64, state: GroupState, entities: [Entity], authors: [(DeviceID, UInt64)]) {
        let unhashed = GroupSnapshot(
            group: group, seq: seq, stateHash: [], state: state, entities: entities, authors: authors)
        self = GroupSnapshot(
            group: group, seq: seq, stateHash: unhashed.computedStateHash, state: state, entities: unhashed.entities,
            authors: unhashed.authors)
    }

    /// Parses an encoded snapshot strictly (deterministic CBOR, every field typed) and checks that
    /// the content hashes to the state hash it carries. Throws `snapshotRefused` otherwise.
    public init(encoded bytes: [UInt8]) throws {
        func refuse(_ why: String) -> ReplicaError { ReplicaError(.snapshotRefused, "snapshot refused: \(why)") }
        guard bytes.count <= Self.maxEncodedBytes else {
            throw refuse("\(bytes.count) bytes, over the limit of \(Self.maxEncodedBytes)")
        }
        let map: CBOR
        do { map = try CBORDecoder.decodeStrict(bytes) } catch { throw refuse("not deterministic CBOR (\(error))") }
        guard map["v"]?.unsignedValue == 1, let g = map["group"]?.bytesValue, let seq = map["seq"]?.unsignedValue,
            seq >= 1, let hash = map["state_hash"]?.bytesValue, hash.count == 32, let state = map["state"],
            let rows = map["entities"]?.arrayValue, let authorRows = map["authors"]?.arrayValue
        else { throw refuse("a field is missing or mistyped") }
        let group = try GroupID(bytes: g)
        let parsedState: GroupState
        do {
            parsedState = try GroupState(
                storedBytes: CBOREncoder.encode(.textMap(["group": .bytes(group.bytes), "state": state])))
        } catch { throw refuse("the group state is malformed") }
        var entities = [Entity]()
        entities.reserveCapacity(rows.count)
        for row in rows {
            guard let cells = row.arrayValue, cells.count == 4, let key = cells[0].textValue,
                let cid = try? CID(cborLink: cells[2]), let at = cells[3].unsignedValue, at <= seq
            else { throw refuse("an entity row is malformed") }
            if let previous = entities.last, !Array(previous.key.utf8).lexicographicallyPrecedes(Array(key.utf8)) {
                throw refuse("entity keys are not strictly ascending")
            }
            entities.append(Entity(key: key, value: cells[1], cid: cid, seq: at))
        }
        var authors = [(DeviceID, UInt64)]()
        for row in authorRows {
            guard let cells = row.arrayValue, cells.count == 2, let d = cells[0].bytesValue,
                let device = try? DeviceID(bytes: d), let counter = cells[1].unsignedValue
            else { throw refuse("an author row is malformed") }
            authors.append((device, counter))
        }
        self.init(group: group, seq: seq, stateHash: hash, state: parsedState, entities: entities, authors: authors)
        guard encoded == bytes else { throw refuse("entities or authors are not in canonical order") }
        guard computedStateHash == hash else { throw refuse("the content does not hash to its state hash") }
    }

    /// Equal when the encodings are equal.
    public static func == (l: GroupSnapshot, r: GroupSnapshot) -> Bool { l.encoded == r.encoded }
    /// Hashes the state hash and seq (equal snapshots have equal ones).
    public func hash(into h: inout Hasher) {
        h.combine(stateHash)
        h.combine(seq)
    }
}
