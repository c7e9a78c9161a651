/// A CBOR data item (RFC 8949). Maps are unordered here; the encoder writes them in
/// deterministic order (keys sorted by their encoded bytes, RFC 8949 §4.2.1).
public indirect enum CBOR: Hashable, Sendable {
    /// Major type 0: 0...2^64-1.
    case unsigned(UInt64)
    /// Major type 1: the value is -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([CBOR: CBOR])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    /// Simple values other than false, true, null and undefined.
    case simple(UInt8)
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
    public var unsignedValue: UInt64? { if case .unsigned(let v) = self { v } else { nil } }
    public var bytesValue: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
    public var textValue: String? { if case .text(let v) = self { v } else { nil } }
    public var arrayValue: [CBOR]? { if case .array(let v) = self { v } else { nil } }
    public var mapValue: [CBOR: CBOR]? { if case .map(let v) = self { v } else { nil } }
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

extension CBOR: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByArrayLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(arrayLiteral elements: CBOR...) { self = .array(elements) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
