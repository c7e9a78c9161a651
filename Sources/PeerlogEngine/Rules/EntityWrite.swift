import PeerlogEncoding
import PeerlogModel

/// The body of an `entity.write` (docs/PROTOCOL.md §9.7): conditions on the group's keys and
/// operations on them, applied all or none at the write's position in the order.
public struct EntityWrite: Hashable, Sendable {
    /// What a key must hold before the write for it to apply.
    public enum Condition: Hashable, Sendable {
        /// `{"key", "absent": true}`: the key holds no value.
        case absent(key: String)
        /// `{"key", "version": CID link}`: the key's value was last written by this receipt.
        case version(key: String, CID)
        /// `{"key", "value": any}`: the key holds exactly this value (same deterministic bytes).
        case value(key: String, CBOR)

        /// The key the condition reads.
        public var key: String {
            switch self {
            case .absent(let key), .version(let key, _), .value(let key, _): key
            }
        }
    }

    /// One change to one key.
    public enum Change: Hashable, Sendable {
        /// `{"op": "put", "key", "value"}`: sets the value (last writer wins).
        case put(key: String, value: CBOR)
        /// `{"op": "delete", "key"}`: removes the value.
        case delete(key: String)
        /// `{"op": "add", "key", "by": int}`: a counter; absent counts as 0.
        case add(key: String, by: Int64)
        /// `{"op": "insert", "key", "elements": [any]}`: a set (an array of distinct elements).
        case insert(key: String, elements: [CBOR])
        /// `{"op": "remove", "key", "elements": [any]}`: removes elements from a set.
        case remove(key: String, elements: [CBOR])
        /// `{"op": "set_fields", "key", "fields": {text: any}}`: sets fields of a map value.
        case setFields(key: String, fields: [String: CBOR])
        /// `{"op": "remove_fields", "key", "fields": [text]}`: removes fields of a map value.
        case removeFields(key: String, fields: [String])

        /// The key the operation changes.
        public var key: String {
            switch self {
            case .put(let key, _), .delete(let key), .add(let key, _), .insert(let key, _), .remove(let key, _),
                .setFields(let key, _), .removeFields(let key, _):
                key
            }
        }

        /// The `"op"` name on the wire.
        public var name: String {
            switch self {
            case .put: "put"
            case .delete: "delete"
            case .add: "add"
            case .insert: "insert"
            case .remove: "remove"
            case .setFields: "set_fields"
            case .removeFields: "remove_fields"
            }
        }
    }

    /// Checked in order against the state before the write.
    public var conditions: [Condition]
    /// Applied in order, each to the state the ones before it left.
    public var changes: [Change]

    /// A write of `changes` under `conditions`.
    public init(conditions: [Condition] = [], changes: [Change]) {
        self.conditions = conditions
        self.changes = changes
    }

    /// The receipt type.
    public static let receiptType = "entity.write"

    /// `{"ops": [...]}`, with `"if": [...]` when there are conditions.
    public var body: CBOR {
        var m: [String: CBOR] = ["ops": .array(changes.map(\.cbor))]
        if !conditions.isEmpty { m["if"] = .array(conditions.map(\.cbor)) }
        return .textMap(m)
    }

    /// Every key the write reads or changes, each once, in first-mention order (conditions first).
    public var keys: [String] {
        var seen = Set<String>()
        return (conditions.map(\.key) + changes.map(\.key)).filter { seen.insert($0).inserted }
    }

    /// The keys the write changes, each once, in first-mention order.
    public var changedKeys: [String] {
        var seen = Set<String>()
        return changes.map(\.key).filter { seen.insert($0).inserted }
    }

    /// Parses a body (shape only; `validate` checks the limits).
    init(parsing body: CBOR, what: String) throws(RuleViolation) {
        let f = try BodyFields(body, what: what, keys: body["if"] != nil ? ["ops", "if"] : ["ops"])
        guard case .array(let ops) = f.fields["ops"]! else {
            throw RuleViolation("\(what): \"ops\" must be an array", code: .invalidOperation)
        }
        var changes = [Change]()
        for (i, op) in ops.enumerated() { changes.append(try Change(parsing: op, what: "\(what).ops[\(i)]")) }
        var conditions = [Condition]()
        if let raw = f.fields["if"] {
            guard case .array(let items) = raw, !items.isEmpty else {
                throw RuleViolation(
                    "\(what): \"if\" must be a non-empty array (leave it out when there are no conditions)",
                    code: .invalidOperation)
            }
            for (i, c) in items.enumerated() { conditions.append(try Condition(parsing: c, what: "\(what).if[\(i)]")) }
        }
        self.init(conditions: conditions, changes: changes)
    }

    /// The limits of §9.2.
    func validate(what: String) throws(RuleViolation) {
        guard (1...GroupLimits.maxWriteOperations).contains(changes.count) else {
            throw RuleViolation(
                "\(what): \"ops\" must hold 1 to \(GroupLimits.maxWriteOperations) operations, got \(changes.count)",
                code: .invalidOperation)
        }
        guard conditions.count <= GroupLimits.maxWriteConditions else {
            throw RuleViolation(
                "\(what): \"if\" holds at most \(GroupLimits.maxWriteConditions) conditions, got \(conditions.count)",
                code: .invalidOperation)
        }
        for key in keys {
            try GroupOperation.checkBytes(key, key: "key", limit: GroupLimits.maxEntityKeyBytes, what: what)
        }
        for (i, change) in changes.enumerated() {
            let count: Int? =
                switch change {
                case .insert(_, let e), .remove(_, let e): e.count
                case .setFields(_, let f): f.count
                case .removeFields(_, let f): f.count
                default: nil
                }
            if let count, !(1...GroupLimits.maxMergeItems).contains(count) {
                throw RuleViolation(
                    "\(what): operation \(i) (\(change.name)) must name 1 to \(GroupLimits.maxMergeItems) items, got \(count)",
                    code: .invalidOperation)
            }
            if case .setFields(_, let fields) = change {
                for name in fields.keys where name.isEmpty {
                    throw RuleViolation("\(what): operation \(i): a field name is empty", code: .invalidOperation)
                }
            }
        }
    }
}

extension EntityWrite.Condition {
    var cbor: CBOR {
        switch self {
        case .absent(let key): .textMap(["key": .text(key), "absent": .bool(true)])
        case .version(let key, let cid): .textMap(["key": .text(key), "version": cid.cborLink])
        case .value(let key, let value): .textMap(["key": .text(key), "value": value])
        }
    }

    init(parsing value: CBOR, what: String) throws(RuleViolation) {
        let kind = ["absent", "version", "value"].filter { value[$0] != nil }
        guard kind.count == 1 else {
            throw RuleViolation(
                "\(what) must hold \"key\" and exactly one of \"absent\", \"version\", \"value\"",
                code: .invalidOperation)
        }
        let f = try BodyFields(value, what: what, keys: ["key", kind[0]])
        let key = try f.text("key")
        switch kind[0] {
        case "absent":
            guard f.fields["absent"] == .bool(true) else {
                throw RuleViolation("\(what): \"absent\" must be true", code: .invalidOperation)
            }
            self = .absent(key: key)
        case "version":
            guard let cid = try? CID(cborLink: f.fields["version"]!) else {
                throw RuleViolation("\(what): \"version\" must be a CID link (tag 42)", code: .invalidOperation)
            }
            self = .version(key: key, cid)
        default:
            self = .value(key: key, f.fields["value"]!)
        }
    }
}

extension EntityWrite.Change {
    var cbor: CBOR {
        var m: [String: CBOR] = ["op": .text(name), "key": .text(key)]
        switch self {
        case .put(_, let value): m["value"] = value
        case .delete: break
        case .add(_, let by): m["by"] = .int(by)
        case .insert(_, let elements), .remove(_, let elements): m["elements"] = .array(elements)
        case .setFields(_, let fields): m["fields"] = .textMap(fields)
        case .removeFields(_, let fields): m["fields"] = .array(fields.map { .text($0) })
        }
        return .textMap(m)
    }

    init(parsing value: CBOR, what: String) throws(RuleViolation) {
        guard case .text(let op)? = value["op"] else {
            throw RuleViolation("\(what): \"op\" must be text", code: .invalidOperation)
        }
        let extra: [String: String] = [
            "put": "value", "add": "by", "insert": "elements", "remove": "elements", "set_fields": "fields",
            "remove_fields": "fields",
        ]
        guard op == "delete" || extra[op] != nil else {
            throw RuleViolation(
                "\(what): \"op\" must be one of put, delete, add, insert, remove, set_fields, remove_fields",
                code: .invalidOperation)
        }
        let f = try BodyFields(value, what: what, keys: ["op", "key"] + (extra[op].map { [$0] } ?? []))
        let key = try f.text("key")
        func array(_ name: String) throws(RuleViolation) -> [CBOR] {
            guard case .array(let items) = f.fields[name]! else {
                throw RuleViolation("\(what): \"\(name)\" must be an array", code: .invalidOperation)
            }
            return items
        }
        switch op {
        case "put": self = .put(key: key, value: f.fields["value"]!)
        case "delete": self = .delete(key: key)
        case "add":
            guard let by = f.fields["by"]!.int64Value else {
                throw RuleViolation("\(what): \"by\" must be an integer from -2^63 to 2^63-1", code: .invalidOperation)
            }
            self = .add(key: key, by: by)
        case "insert": self = .insert(key: key, elements: try array("elements"))
        case "remove": self = .remove(key: key, elements: try array("elements"))
        case "set_fields":
            guard case .map(let entries) = f.fields["fields"]! else {
                throw RuleViolation("\(what): \"fields\" must be a map", code: .invalidOperation)
            }
            var fields = [String: CBOR]()
            for (k, v) in entries {
                guard case .text(let name) = k else {
                    throw RuleViolation("\(what): \"fields\" must have text keys only", code: .invalidOperation)
                }
                fields[name] = v
            }
            self = .setFields(key: key, fields: fields)
        default:
            var names = [String]()
            for item in try array("fields") {
                guard case .text(let name) = item else {
                    throw RuleViolation("\(what): \"fields\" must hold text only", code: .invalidOperation)
                }
                names.append(name)
            }
            self = .removeFields(key: key, fields: names)
        }
    }
}
