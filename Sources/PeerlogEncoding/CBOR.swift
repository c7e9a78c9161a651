/// A CBOR data item (RFC 8949). Maps are unordered here; the encoder writes them in
/// deterministic order (keys sorted by their encoded bytes, RFC 8949 §4.2.1).
public indirect enum CBOR: Hashable, Sendable {
    /// Major type 0: 0...2^64-1.
    case unsigned(UInt64)
    /// Major type 1: the value is -1 - n.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a UTF-8 text string.
    case text(String)
    /// Major type 4.
    case array([CBOR])
    /// Major type 5; keys of any type, unique.
    case map([CBOR: CBOR])
    /// Major type 6: a tag number and its content (tag 42 is a CID link, `CID.cborLink`).
    case tagged(UInt64, CBOR)
    /// Simple values 20 (`false`) and 21 (`true`).
    case bool(Bool)
    /// Simple value 22.
    case null
    /// Simple value 23.
    case undefined
    /// Simple values other than false, true, null and undefined.
    case simple(UInt8)
    /// Major type 7 floats of any width; the encoder picks the shortest that keeps the value.
    case float(Double)

    /// A signed integer, mapped to major type 0 or 1.
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A map with text keys, the common case in Peerlog formats.
    public static func textMap(_ entries: [String: CBOR]) -> CBOR {
        .map(Dictionary(uniqueKeysWithValues: entries.map { (CBOR.text($0.key), $0.value) }))
    }
}

extension CBOR {
    /// The value of an `.unsigned` item; nil for anything else, negative integers included.
    public var unsignedValue: UInt64? { if case .unsigned(let v) = self { v } else { nil } }
    /// The bytes of a `.bytes` item; nil otherwise.
    public var bytesValue: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
    /// The string of a `.text` item; nil otherwise.
    public var textValue: String? { if case .text(let v) = self { v } else { nil } }
    /// The elements of an `.array` item; nil otherwise.
    public var arrayValue: [CBOR]? { if case .array(let v) = self { v } else { nil } }
    /// The entries of a `.map` item; nil otherwise.
    public var mapValue: [CBOR: CBOR]? { if case .map(let v) = self { v } else { nil } }
    /// The value of a `.bool` item; nil otherwise (`.null` included).
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }

    /// The value as Int64 when it is an integer that fits.
    public var int64Value: Int64? {
        switch self {
        case .unsigned(let v): v <= UInt64(Int64.max) ? Int64(v) : nil
        case .negative(let n): n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: nil
        }
    }

    /// Looks up a text key in a map.
    public subscript(key: String) -> CBOR? { mapValue?[.text(key)] }
}

extension CBOR: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByArrayLiteral,
    ExpressibleByBooleanLiteral
{
    /// A string literal is a `.text` item.
    public init(stringLiteral value: String) { self = .text(value) }
    /// An integer literal is `.int(value)`: major type 0 or 1 by sign.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// An array literal is an `.array` item.
    public init(arrayLiteral elements: CBOR...) { self = .array(elements) }
    /// A Boolean literal is a `.bool` item.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension CBOR {
    /// The item simple value `v` stands for (RFC 8949 §3.3): 20 false, 21 true, 22 null,
    /// 23 undefined, any other value `.simple(v)`. Whether `v` is allowed where it was read is
    /// the caller's check.
    static func simpleValue(_ v: UInt8) -> CBOR {
        switch v {
        case 20: .bool(false)
        case 21: .bool(true)
        case 22: .null
        case 23: .undefined
        default: .simple(v)
        }
    }
}
