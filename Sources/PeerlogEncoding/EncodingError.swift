import PeerlogCrypto

/// The one error type of `PeerlogEncoding`: CBOR, JSON, base32 or CID input refused.
///
/// In the shape of `SequencerError`: a ``code`` (an `ErrorCode`, so codes can be added),
/// where it was raised, and equality on the code only. Descriptions hold offsets, limits and
/// field names, never input bytes. The older names (``CBORError``, ``JSONParseError``,
/// `Base32.DecodingError`, `CID.ParseError`, `CBOR.JSONConversionError`) name this type.
public struct EncodingError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<EncodingError>

    /// The kind of failure.
    public let code: Code
    /// Byte offset in the input where the problem was found, when there is one.
    public let offset: Int?
    /// Extra detail (limits, field names); never contains input bytes.
    public let detail: String
    /// One sentence for people.
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    private init(code: Code, offset: Int?, detail: String, description: String, file: String, line: Int) {
        self.code = code
        self.offset = offset
        self.detail = detail
        self.description = description
        self.file = file
        self.line = line
    }

    /// Refused CBOR: `code` at byte `offset`.
    public init(_ code: Code, at offset: Int, _ detail: String = "", file: String = #fileID, line: Int = #line) {
        self.init(
            code: code, offset: offset, detail: detail,
            description: "CBOR error at offset \(offset): \(code.text)" + (detail.isEmpty ? "" : " (\(detail))"),
            file: file, line: line)
    }

    /// JSON text that does not parse, and why.
    public init(offset: Int, reason: String, file: String = #fileID, line: Int = #line) {
        self.init(
            code: .invalidJSON, offset: offset, detail: reason,
            description: "invalid JSON at offset \(offset): \(reason)", file: file, line: line)
    }

    /// A JSON value with no CBOR form here.
    public init(description: String, file: String = #fileID, line: Int = #line) {
        self.init(
            code: .invalidJSONValue, offset: nil, detail: description, description: description, file: file, line: line)
    }

    // Base32 (`invalidBase32`).
    package static func invalidCharacter(offset: Int, file: String = #fileID, line: Int = #line) -> Self {
        Self(
            code: .invalidBase32, offset: offset, detail: "",
            description: "invalid base32 character at offset \(offset) (expected a-z or 2-7)", file: file, line: line)
    }
    package static func invalidLength(_ n: Int, file: String = #fileID, line: Int = #line) -> Self {
        Self(
            code: .invalidBase32, offset: nil, detail: "", description: "invalid base32 length \(n)", file: file,
            line: line)
    }
    package static func nonZeroTrailingBits(file: String = #fileID, line: Int = #line) -> Self {
        Self(
            code: .invalidBase32, offset: nil, detail: "",
            description: "base32 text has non-zero trailing bits (not canonical)", file: file, line: line)
    }

    // CIDs (`invalidCID`).
    private static func cid(_ description: String, file: String, line: Int) -> Self {
        Self(code: .invalidCID, offset: nil, detail: "", description: description, file: file, line: line)
    }
    package static func empty(file: String = #fileID, line: Int = #line) -> Self {
        cid("empty CID", file: file, line: line)
    }
    package static func unsupportedMultibase(_ c: Character, file: String = #fileID, line: Int = #line) -> Self {
        cid("unsupported multibase prefix '\(c)' (expected 'b', base32 lower-case)", file: file, line: line)
    }
    package static func invalidBase32(_ e: EncodingError, file: String = #fileID, line: Int = #line) -> Self {
        cid("invalid CID text: \(e)", file: file, line: line)
    }
    package static func malformedVarint(field: String, file: String = #fileID, line: Int = #line) -> Self {
        cid("malformed varint in CID \(field)", file: file, line: line)
    }
    package static func unsupportedVersion(_ v: UInt64, file: String = #fileID, line: Int = #line) -> Self {
        cid("unsupported CID version \(v) (expected 1)", file: file, line: line)
    }
    package static func unsupportedCodec(_ c: UInt64, file: String = #fileID, line: Int = #line) -> Self {
        cid("unsupported CID codec 0x\(String(c, radix: 16)) (expected 0x71 dag-cbor)", file: file, line: line)
    }
    package static func unsupportedHash(_ h: UInt64, file: String = #fileID, line: Int = #line) -> Self {
        cid("unsupported multihash 0x\(String(h, radix: 16)) (expected 0x12 sha2-256)", file: file, line: line)
    }
    package static func wrongDigestLength(_ n: UInt64, file: String = #fileID, line: Int = #line) -> Self {
        cid("multihash digest length \(n) (expected 32)", file: file, line: line)
    }
    package static func trailingBytes(_ n: Int, file: String = #fileID, line: Int = #line) -> Self {
        cid("\(n) bytes after the CID", file: file, line: line)
    }
}

extension ErrorCode where Domain == EncodingError {
    /// CBOR: the input ends inside a data item.
    public static let truncated = Self("truncated")
    /// CBOR: bytes after the data item.
    public static let trailingBytes = Self("trailingBytes")
    /// CBOR: reserved additional information value (28-30).
    public static let reservedAdditionalInfo = Self("reservedAdditionalInfo")
    /// CBOR: indefinite length, not allowed in deterministic CBOR.
    public static let indefiniteLength = Self("indefiniteLength")
    /// CBOR: a break code outside an indefinite-length item.
    public static let unexpectedBreak = Self("unexpectedBreak")
    /// CBOR: a chunk of an indefinite-length string has the wrong type.
    public static let invalidIndefiniteChunk = Self("invalidIndefiniteChunk")
    /// CBOR: an integer, length or tag is not in its shortest form.
    public static let nonShortestArgument = Self("nonShortestArgument")
    /// CBOR: a floating-point value is not in its shortest exact form.
    public static let nonPreferredFloat = Self("nonPreferredFloat")
    /// CBOR: NaN not encoded as f97e00.
    public static let nonCanonicalNaN = Self("nonCanonicalNaN")
    /// CBOR: map keys not sorted by their encoded bytes.
    public static let unsortedMapKeys = Self("unsortedMapKeys")
    /// CBOR: a map key appears twice.
    public static let duplicateMapKey = Self("duplicateMapKey")
    /// CBOR: nesting deeper than the limit.
    public static let depthLimitExceeded = Self("depthLimitExceeded")
    /// CBOR: an item larger than the limit.
    public static let sizeLimitExceeded = Self("sizeLimitExceeded")
    /// CBOR: a text string that is not valid UTF-8.
    public static let invalidUTF8 = Self("invalidUTF8")
    /// CBOR: a two-byte simple value below 32.
    public static let invalidSimpleValue = Self("invalidSimpleValue")
    /// CBOR: a value that cannot be encoded.
    public static let unsupportedValue = Self("unsupportedValue")
    /// JSON text that does not parse (the offset says where).
    public static let invalidJSON = Self("invalidJSON")
    /// A JSON value with no CBOR form here (a float where none is allowed, a bad `$bytes`, …).
    public static let invalidJSONValue = Self("invalidJSONValue")
    /// Base32 text that is not strict lower-case, unpadded, canonical base32.
    public static let invalidBase32 = Self("invalidBase32")
    /// A CID that is not a CIDv1 dag-cbor sha2-256 CID.
    public static let invalidCID = Self("invalidCID")

    /// The code in words, as a CBOR error's description says it.
    public var text: String {
        switch self {
        case .truncated: "input ends inside a data item"
        case .trailingBytes: "bytes after the data item"
        case .reservedAdditionalInfo: "reserved additional information value (28-30)"
        case .indefiniteLength: "indefinite length is not allowed in deterministic CBOR"
        case .unexpectedBreak: "break code outside an indefinite-length item"
        case .invalidIndefiniteChunk: "chunk of an indefinite-length string has the wrong type"
        case .nonShortestArgument: "integer, length or tag is not in its shortest form"
        case .nonPreferredFloat: "floating-point value is not in its shortest exact form"
        case .nonCanonicalNaN: "NaN must be encoded as f97e00"
        case .unsortedMapKeys: "map keys are not sorted by their encoded bytes"
        case .duplicateMapKey: "duplicate map key"
        case .depthLimitExceeded: "nesting deeper than the limit"
        case .sizeLimitExceeded: "item larger than the limit"
        case .invalidUTF8: "text string is not valid UTF-8"
        case .invalidSimpleValue: "two-byte simple value below 32 is not well-formed"
        case .unsupportedValue: "value cannot be encoded"
        case .invalidJSON: "invalid JSON"
        case .invalidJSONValue: "invalid JSON value"
        case .invalidBase32: "invalid base32"
        case .invalidCID: "invalid CID"
        default: name
        }
    }
}

/// Refused CBOR input: ``EncodingError`` with a CBOR code and an offset.
public typealias CBORError = EncodingError
/// JSON text that does not parse: ``EncodingError`` with code `invalidJSON`.
public typealias JSONParseError = EncodingError

extension Base32 {
    /// Base32 text refused: ``EncodingError`` with code `invalidBase32`.
    public typealias DecodingError = EncodingError
}

extension CID {
    /// A CID refused: ``EncodingError`` with code `invalidCID`.
    public typealias ParseError = EncodingError
}

extension CBOR {
    /// A JSON value with no CBOR form: ``EncodingError`` with code `invalidJSONValue`.
    public typealias JSONConversionError = EncodingError
}
