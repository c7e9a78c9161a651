import PeerlogCrypto

/// The JSON view of CBOR used by the CLI and export files (docs/PROTOCOL.md §JSON view):
/// integers as numbers; byte strings as `{"$bytes": "<hex>"}`; CID links (tag 42) as
/// `{"$cid": "b…"}`; other tags as `{"$tag": n, "$value": v}`; maps with non-text keys as
/// `{"$map": [[k, v], …]}`; floats as numbers (non-finite ones as `{"$float": "NaN"}` etc.);
/// undefined and other simple values as `{"$simple": n}`.
extension CBOR {
    /// This value in the JSON view described above (docs/PROTOCOL.md §8), map members in
    /// deterministic key order. Total: every CBOR value has a JSON form.
    public var json: JSON {
        switch self {
        case .unsigned(let v): return .number(String(v))
        case .negative(let n): return .number(n == .max ? "-18446744073709551616" : "-\(n + 1)")
        case .bytes(let b): return .object([("$bytes", .string(hexString(b)))])
        case .text(let s): return .string(s)
        case .array(let items): return .array(items.map(\.json))
        case .map(let entries):
            let sorted = entries.sorted {
                CBOREncoder.encode($0.key).lexicographicallyPrecedes(CBOREncoder.encode($1.key))
            }
            if sorted.allSatisfy({ $0.key.textValue != nil }) {
                return .object(sorted.map { ($0.key.textValue!, $0.value.json) })
            }
            return .object([("$map", .array(sorted.map { .array([$0.key.json, $0.value.json]) }))])
        case .tagged(let tag, let inner):
            if tag == CID.cborLinkTag, let cid = try? CID(cborLink: self) {
                return .object([("$cid", .string(cid.string))])
            }
            return .object([("$tag", .number(String(tag))), ("$value", inner.json)])
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .undefined: return .object([("$simple", .number("23"))])
        case .simple(let v): return .object([("$simple", .number(String(v)))])
        case .float(let d):
            return d.isFinite
                ? .number(CBOR.diagnosticFloat(d)) : .object([("$float", .string(CBOR.diagnosticFloat(d)))])
        }
    }

    /// The inverse of `json`. Numbers with a fraction or exponent become floats unless
    /// `allowFloats` is false (receipt bodies), in which case they are refused.
    public init(json: JSON, allowFloats: Bool = true) throws(JSONConversionError) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .string(let s): self = .text(s)
        case .number(let n):
            if let u = UInt64(n) {
                self = .unsigned(u)
                return
            }
            if n.hasPrefix("-"), let m = UInt64(n.dropFirst()), m >= 1 {
                self = .negative(m - 1)
                return
            }
            if n == "-18446744073709551616" {
                self = .negative(.max)
                return
            }
            if n.allSatisfy({ $0 == "-" || $0.isNumber }) {
                throw JSONConversionError(description: "integer \(n) is outside the CBOR range")
            }
            guard allowFloats else {
                throw JSONConversionError(
                    description: "\(n): floating-point numbers are not allowed here (use an integer or a string)")
            }
            guard let d = Double(n) else { throw JSONConversionError(description: "bad number \(n)") }
            self = .float(d)
        case .array(let items):
            var out = [CBOR]()
            for item in items { out.append(try CBOR(json: item, allowFloats: allowFloats)) }
            self = .array(out)
        case .object(let entries):
            if entries.count == 1, let (key, value) = entries.first, key.hasPrefix("$") {
                self = try CBOR.special(key, value, allowFloats: allowFloats)
                return
            }
            if entries.count == 2, entries[0].0 == "$tag", entries[1].0 == "$value", case .number(let t) = entries[0].1,
                let tag = UInt64(t)
            {
                self = .tagged(tag, try CBOR(json: entries[1].1, allowFloats: allowFloats))
                return
            }
            var map = [CBOR: CBOR]()
            for (k, v) in entries { map[.text(k)] = try CBOR(json: v, allowFloats: allowFloats) }
            self = .map(map)
        }
    }

    private static func special(_ key: String, _ value: JSON, allowFloats: Bool) throws(JSONConversionError) -> CBOR {
        switch (key, value) {
        case ("$bytes", .string(let hex)):
            guard let b = PeerlogCrypto.bytes(fromHex: hex) else {
                throw JSONConversionError(description: "$bytes must be hex")
            }
            return .bytes(b)
        case ("$cid", .string(let s)):
            do { return try CID(string: s).cborLink } catch { throw JSONConversionError(description: "$cid: \(error)") }
        case ("$map", .array(let pairs)):
            var map = [CBOR: CBOR]()
            for pair in pairs {
                guard case .array(let kv) = pair, kv.count == 2 else {
                    throw JSONConversionError(description: "$map entries must be [key, value]")
                }
                map[try CBOR(json: kv[0], allowFloats: allowFloats)] = try CBOR(json: kv[1], allowFloats: allowFloats)
            }
            return .map(map)
        case ("$simple", .number(let n)):
            guard let v = UInt8(n), v < 24 || v >= 32 else {
                throw JSONConversionError(description: "$simple must be 0...23 or 32...255")
            }
            return .simpleValue(v)
        case ("$float", .string(let s)):
            guard allowFloats else {
                throw JSONConversionError(description: "floating-point numbers are not allowed here")
            }
            switch s {
            case "NaN": return .float(.nan)
            case "Infinity": return .float(.infinity)
            case "-Infinity": return .float(-.infinity)
            default: throw JSONConversionError(description: "$float must be NaN, Infinity or -Infinity")
            }
        default:
            throw JSONConversionError(description: "unknown special object key \(key)")
        }
    }
}
