import PeerlogEncoding
import PeerlogModel

/// What an `entity.write` does at its position (docs/PROTOCOL.md §9.7): a pure function of the
/// write and the values its keys hold just before it, so every replica reaches the same verdict.
extension EntityWrite {
    /// A key's value and the receipt that last wrote it.
    public struct Held: Hashable, Sendable {
        /// The value.
        public var value: CBOR
        /// The receipt that wrote it (the key's version).
        public var cid: CID

        /// A value written by `cid`.
        public init(value: CBOR, cid: CID) {
            self.value = value
            self.cid = cid
        }
    }

    /// Why a write had no effect: the condition or operation that failed, for people.
    public struct Rejection: Error, Hashable, Sendable {
        /// One sentence, the same on every replica; starts "condition N failed" for a condition.
        public let reason: String
    }

    /// The value each changed key holds after the write (nil: absent), in first-mention order;
    /// or why the write is rejected. `held` reads a key's value just before the write.
    public func apply(held: (String) throws -> Held?) rethrows -> Result<[(key: String, value: CBOR?)], Rejection> {
        for (i, c) in conditions.enumerated() {
            let current = try held(c.key)
            if let failure = Self.failure(of: c, current: current) {
                return .failure(Rejection(reason: "condition \(i + 1) failed: \(failure)"))
            }
        }
        var working = [String: CBOR?]()
        for (i, change) in changes.enumerated() {
            let key = change.key
            let current: CBOR? =
                if let pending = working[key] { pending } else { try held(key)?.value }
            switch Self.applying(change, to: current) {
            case .success(let next): working[key] = .some(next)
            case .failure(let why):
                return .failure(
                    Rejection(reason: "operation \(i + 1) (\(change.name) \"\(key)\") failed: \(why.reason)"))
            }
        }
        return .success(changedKeys.map { ($0, working[$0]!) })
    }

    private static func failure(of c: Condition, current: Held?) -> String? {
        switch c {
        case .absent(let key):
            return current == nil ? nil : "\"\(key)\" holds a value"
        case .version(let key, let cid):
            guard let current else { return "\"\(key)\" holds no value (expected version \(cid))" }
            return current.cid == cid ? nil : "\"\(key)\" was last written by \(current.cid), not \(cid)"
        case .value(let key, let value):
            guard let current else { return "\"\(key)\" holds no value" }
            return CBOREncoder.encode(current.value) == CBOREncoder.encode(value)
                ? nil : "\"\(key)\" holds another value"
        }
    }

    /// The value after `change` (nil: absent), or why it cannot apply.
    static func applying(_ change: Change, to current: CBOR?) -> Result<CBOR?, Rejection> {
        let result: CBOR?
        switch change {
        case .put(_, let value): return .success(value)
        case .delete: return .success(nil)
        case .add(_, let by):
            let base: Int64
            if let current {
                guard let n = current.int64Value else {
                    return .failure(Rejection(reason: "the value is not an integer"))
                }
                base = n
            } else {
                base = 0
            }
            let (sum, overflow) = base.addingReportingOverflow(by)
            if overflow { return .failure(Rejection(reason: "the counter would leave -2^63...2^63-1")) }
            result = .int(sum)
        case .insert(_, let elements):
            guard let set = setElements(current) else {
                return .failure(Rejection(reason: "the value is not an array"))
            }
            result = canonicalSet(set + elements)
        case .remove(_, let elements):
            guard let current else { return .success(nil) }
            guard let set = setElements(current) else {
                return .failure(Rejection(reason: "the value is not an array"))
            }
            let gone = Set(elements.map { CBOREncoder.encode($0) })
            result = canonicalSet(set.filter { !gone.contains(CBOREncoder.encode($0)) })
        case .setFields(_, let fields):
            guard var map = fieldMap(current) else {
                return .failure(Rejection(reason: "the value is not a map with text keys"))
            }
            for (name, value) in fields { map[name] = value }
            result = .textMap(map)
        case .removeFields(_, let names):
            guard let current else { return .success(nil) }
            guard var map = fieldMap(current) else {
                return .failure(Rejection(reason: "the value is not a map with text keys"))
            }
            for name in names { map[name] = nil }
            result = .textMap(map)
        }
        if let result, CBOREncoder.encode(result).count > GroupLimits.maxMergedValueBytes {
            return .failure(Rejection(reason: "the value would exceed \(GroupLimits.maxMergedValueBytes) bytes"))
        }
        return .success(result)
    }

    /// An absent key is the empty set; an array is the set of its elements; nothing else is.
    private static func setElements(_ value: CBOR?) -> [CBOR]? {
        guard let value else { return [] }
        return value.arrayValue
    }

    /// Distinct elements sorted by their deterministic encodings, compared bytewise.
    static func canonicalSet(_ elements: [CBOR]) -> CBOR {
        var byBytes = [[UInt8]: CBOR]()
        for e in elements { byBytes[CBOREncoder.encode(e)] = e }
        return .array(byBytes.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { byBytes[$0]! })
    }

    /// An absent key is the empty map; a map with text keys only is its fields; nothing else is.
    private static func fieldMap(_ value: CBOR?) -> [String: CBOR]? {
        guard let value else { return [:] }
        guard case .map(let entries) = value else { return nil }
        var fields = [String: CBOR]()
        for (k, v) in entries {
            guard case .text(let name) = k else { return nil }
            fields[name] = v
        }
        return fields
    }
}
