import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// Group state and entities folded over a sequence of receipts with the group rules: the one
/// definition of "what a receipt does", used for the tentative overlay (starting from the
/// committed state) and for replaying a committed log from nothing (to check the store).
struct Fold {
    var group: GroupID
    var state: GroupState?
    var entities: [String: EntityValue]
    /// Entities outside the scope are not tracked (their receipts still pass through the rules).
    var scope: Replica.EntityScope = .all
    /// The group's epoch keys this device holds: sealed bodies open with them (§22.5).
    var keys: [EpochKeyID: EpochKey] = [:]
    /// Committed sealed receipts that had no effect for want of a key: their seq and key.
    var waiting: [(seq: UInt64, keyID: EpochKeyID)] = []

    init(group: GroupID, state: GroupState?, entities: [String: EntityValue]) {
        self.group = group
        self.state = state
        self.entities = entities
    }

    /// Applies `r` at the next position; returns why it was rejected, or nil.
    mutating func apply(_ r: Receipt, status: ItemStatus) -> String? {
        let outcome = Self.step(r, group: group, state: state, keys: { keys[$0] })
        guard outcome.rejected == nil, let op = outcome.op else { return outcome.rejected }
        if case .sealed(_, let body) = op, state?.encryption != nil, case .committed(let seq) = status {
            waiting.append((seq, body.keyID))
        }
        if case .entityWrite(let write) = op {
            // Read from every entity: a fold that reads `entity.write`s keeps scope `.all`.
            switch write.apply(held: { entities[$0].map { EntityWrite.Held(value: $0.value, cid: $0.cid) } }) {
            case .failure(let rejection): return rejection.reason
            case .success(let changed):
                for (key, value) in changed where tracks(key) {
                    entities[key] = value.map { EntityValue(key: key, value: $0, cid: r.cid, status: status) }
                }
            }
        }
        state = outcome.state
        switch op {
        case .entityPut(let key, let value) where tracks(key):
            entities[key] = EntityValue(key: key, value: value, cid: r.cid, status: status)
        case .entityDelete(let key) where tracks(key): entities[key] = nil
        case .deleted: entities = [:]
        default: break
        }
        return nil
    }

    /// What `r` does at a position whose group state is `state`: its operation (nil when the
    /// body does not parse), the state after it, and why it is rejected (nil when applied). The
    /// one rule both the fold and the maintained overlay use.
    ///
    /// In an encrypted group a sealed operation the rules accept is opened with `keys`: the
    /// result carries the plaintext operation, or stays `.sealed` (no effect on entities) when
    /// the key is missing, or is rejected when the body does not open with its key.
    static func step(
        _ r: Receipt, group: GroupID, state: GroupState?, keys: (EpochKeyID) -> EpochKey? = { _ in nil }
    ) -> (op: GroupOperation?, state: GroupState?, rejected: String?) {
        if state?.status == .deleted { return (nil, state, "group is deleted") }
        let op: GroupOperation
        do { op = try GroupOperation(receiptType: r.type, body: r.body) } catch { return (nil, state, error.reason) }
        switch GroupRules.apply(op, sender: r.identity, device: r.author, group: group, to: state) {
        case .failure(let v): return (op, state, v.reason)
        case .success(let next):
            guard case .sealed = op, state?.encryption != nil else { return (op, next, nil) }
            switch op.opening(r, keys: keys) {
            case .opened(let inner): return (inner, next, nil)
            case .waiting: return (op, next, nil)
            case .bad(let reason): return (op, state, reason)
            }
        }
    }

    private func tracks(_ key: String) -> Bool {
        switch scope {
        case .none: false
        case .key(let k): k == key
        case .all: true
        }
    }

    /// The state hash (docs/PROTOCOL.md §12): SHA-256 of
    /// `{"v": 1, "group": bstr(16), "state": canonical state or null, "entities": [[key, value, cid link], …]}`
    /// with entities sorted by the UTF-8 bytes of their keys.
    var stateHash: [UInt8] {
        let rows: [CBOR] = entities.values.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            .map {
                .array([.text($0.key), $0.value, $0.cid.cborLink])
            }
        return SHA256.hash(
            CBOREncoder.encode(
                .textMap([
                    "v": 1,
                    "group": .bytes(group.bytes),
                    "state": state?.canonicalCBOR ?? .null,
                    "entities": .array(rows),
                ])))
    }
}
