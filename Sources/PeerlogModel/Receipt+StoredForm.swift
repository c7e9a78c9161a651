import PeerlogEncoding

/// A receipt's payload as a store keeps it (docs/PROTOCOL.md §10): of its nine fields, seven
/// are also the store's columns (`v` is always 1), so the row keeps only the two that are not,
/// as a CBOR sequence: the `parents` array, then the `body`. A read puts the payload back
/// together from them and the columns, byte for byte what was signed: strict decoding (§1)
/// makes every received payload the deterministic encoding of its fields, whose keys sort as
/// `v`, `hlc`, `body`, `type`, `group`, `author`, `counter`, `parents`, `identity`.
extension Receipt {
    /// The columns a stored form is put back together with.
    package struct StoredColumns: Sendable {
        package var hlc: UInt64
        package var type: String
        package var group: [UInt8]
        package var author: [UInt8]
        package var counter: UInt64
        package var identity: [UInt8]

        package init(hlc: UInt64, type: String, group: [UInt8], author: [UInt8], counter: UInt64, identity: [UInt8]) {
            (self.hlc, self.type, self.group, self.author, self.counter) = (hlc, type, group, author, counter)
            self.identity = identity
        }
    }

    /// The columns this receipt is stored with.
    package var storedColumns: StoredColumns {
        StoredColumns(
            hlc: hlc.packed, type: type, group: group.bytes, author: author.bytes, counter: counter,
            identity: identity.bytes)
    }

    /// The payload's stored form, or nil when the payload put back together from it would not
    /// be this payload (then the store keeps the payload whole).
    package var storedPayload: [UInt8]? {
        let columns = storedColumns
        let parentsBytes = Self.parentsArray(parents)
        // What `payload(stored:columns:)` puts around the body must be what surrounds it here.
        let before = Self.fieldsBeforeBody(columns)
        let after = Self.fieldsAfterBody(columns, parents: parentsBytes[...])
        guard payload.count > before.count + after.count, payload.starts(with: before),
            payload.suffix(after.count).elementsEqual(after)
        else { return nil }
        return parentsBytes + payload[before.count..<(payload.count - after.count)]
    }

    /// The `parents` array as signed: a head, then per parent tag 42 and a byte string (§3.1's
    /// CID links).
    static func parentsArray(_ parents: [CID]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(1 + parents.count * 41)
        CBOREncoder.appendHead(major: 4, argument: UInt64(parents.count), to: &out)
        for parent in parents {
            out += [0xd8, 0x2a]  // tag 42
            CBOREncoder.appendHead(major: 2, argument: UInt64(parent.bytes.count + 1), to: &out)
            out.append(0x00)
            out += parent.bytes
        }
        return out
    }

    /// The payload of these columns, `parents` (as signed: sorted, no duplicate) and encoded
    /// `body`: the deterministic encoding of the nine fields, written in their order without
    /// building the map first.
    static func payload(columns c: StoredColumns, parents: [CID], body: [UInt8]) -> [UInt8] {
        let before = fieldsBeforeBody(c)
        let after = fieldsAfterBody(c, parents: parentsArray(parents)[...])
        var out = [UInt8]()
        out.reserveCapacity(before.count + body.count + after.count)
        out += before
        out += body
        out += after
        return out
    }

    /// The payload a stored form and its row's columns stand for. A payload stored whole (a
    /// CBOR map, as every row was before this form) is returned as it is. Throws a
    /// `ModelError` for bytes that are neither.
    package static func payload(stored: [UInt8], columns: @autoclosure () throws -> StoredColumns) throws -> [UInt8] {
        switch stored.first.map({ $0 >> 5 }) {
        case 5?: return stored  // a map: the payload, stored whole
        case 4?: break  // an array: the parents of a stored form
        default: throw ModelError(.wrongShape, "a stored receipt payload is neither a payload nor its stored form")
        }
        let columns = try columns()
        let parentsEnd = try parentsLength(stored)
        // The fields around the body take at most 175 bytes besides the type and the parents.
        var out = fieldsBeforeBody(columns, capacity: stored.count + columns.type.utf8.count + 175)
        out += stored[parentsEnd...]
        out += fieldsAfterBody(columns, parents: stored[..<parentsEnd])
        return out
    }

    /// The parents named by a stored payload, in either form, without putting the payload back
    /// together (a store deleting a receipt's parent links reads them from here).
    package static func parents(stored: [UInt8]) throws -> [CID] {
        let links: CBOR?
        switch stored.first.map({ $0 >> 5 }) {
        case 5?: links = try CBORDecoder.decodeStrict(stored).mapValue?[.text("parents")]
        case 4?: links = try CBORDecoder.decodeStrict(Array(stored[..<parentsLength(stored)]))
        default: throw ModelError(.wrongShape, "a stored receipt payload is neither a payload nor its stored form")
        }
        guard let array = links?.arrayValue else {
            throw ModelError(.wrongShape, "a stored receipt payload names no parents array")
        }
        return try array.map { try CID(cborLink: $0) }
    }

    /// `{` `"v": 1, "hlc": …, "body":` — what precedes the body.
    private static func fieldsBeforeBody(_ c: StoredColumns, capacity: Int = 22) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(capacity)
        out += [0xa9, 0x61, 0x76, 0x01, 0x63, 0x68, 0x6c, 0x63]  // map(9), "v": 1, "hlc"
        CBOREncoder.appendHead(major: 0, argument: c.hlc, to: &out)
        out += [0x64, 0x62, 0x6f, 0x64, 0x79]  // "body"
        return out
    }

    /// `"type": …, "group": …, "author": …, "counter": …, "parents": …, "identity": …` `}`.
    private static func fieldsAfterBody(_ c: StoredColumns, parents: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(c.type.utf8.count + c.group.count + c.author.count + c.identity.count + parents.count + 70)
        out += [0x64, 0x74, 0x79, 0x70, 0x65]  // "type"
        CBOREncoder.appendHead(major: 3, argument: UInt64(c.type.utf8.count), to: &out)
        out += c.type.utf8
        out += [0x65, 0x67, 0x72, 0x6f, 0x75, 0x70]  // "group"
        CBOREncoder.appendHead(major: 2, argument: UInt64(c.group.count), to: &out)
        out += c.group
        out += [0x66, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72]  // "author"
        CBOREncoder.appendHead(major: 2, argument: UInt64(c.author.count), to: &out)
        out += c.author
        out += [0x67, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x65, 0x72]  // "counter"
        CBOREncoder.appendHead(major: 0, argument: c.counter, to: &out)
        out += [0x67, 0x70, 0x61, 0x72, 0x65, 0x6e, 0x74, 0x73]  // "parents"
        out += parents
        out += [0x68, 0x69, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79]  // "identity"
        CBOREncoder.appendHead(major: 2, argument: UInt64(c.identity.count), to: &out)
        out += c.identity
        return out
    }

    /// The length of the `parents` array that starts a stored form: a head, then per parent
    /// tag 42 and a byte string (§3.1's CID links).
    private static func parentsLength(_ s: [UInt8]) throws -> Int {
        var i = 0
        func argument() throws -> Int {
            guard i < s.count else { throw truncated }
            let ai = s[i] & 0x1f
            i += 1
            switch ai {
            case 0..<24: return Int(ai)
            case 24:
                guard i < s.count else { throw truncated }
                i += 1
                return Int(s[i - 1])
            default: throw ModelError(.wrongShape, "a stored receipt's parents have an unexpected length")
            }
        }
        let count = try argument()
        for _ in 0..<count {
            guard i + 2 < s.count, s[i] == 0xd8, s[i + 1] == 0x2a, s[i + 2] >> 5 == 2 else { throw truncated }
            i += 2
            i += try argument()
        }
        guard i < s.count else { throw truncated }  // a body follows
        return i
    }

    private static var truncated: ModelError { ModelError(.wrongShape, "a stored receipt's parents are cut off") }
}
