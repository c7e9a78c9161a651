/// Why CBOR input was refused, and at which byte offset.
public struct CBORError: Error, Hashable, CustomStringConvertible, Sendable {
    public enum Code: String, Hashable, Sendable {
        case truncated = "input ends inside a data item"
        case trailingBytes = "bytes after the data item"
        case reservedAdditionalInfo = "reserved additional information value (28-30)"
        case indefiniteLength = "indefinite length is not allowed in deterministic CBOR"
        case unexpectedBreak = "break code outside an indefinite-length item"
        case invalidIndefiniteChunk = "chunk of an indefinite-length string has the wrong type"
        case nonShortestArgument = "integer, length or tag is not in its shortest form"
        case nonPreferredFloat = "floating-point value is not in its shortest exact form"
        case nonCanonicalNaN = "NaN must be encoded as f97e00"
        case unsortedMapKeys = "map keys are not sorted by their encoded bytes"
        case duplicateMapKey = "duplicate map key"
        case depthLimitExceeded = "nesting deeper than the limit"
        case sizeLimitExceeded = "item larger than the limit"
        case invalidUTF8 = "text string is not valid UTF-8"
        case invalidSimpleValue = "two-byte simple value below 32 is not well-formed"
        case unsupportedValue = "value cannot be encoded"
    }

    public let code: Code
    /// Byte offset in the input where the problem was found.
    public let offset: Int
    /// Extra detail (limits, values); never contains input bytes.
    public let detail: String

    public init(_ code: Code, at offset: Int, _ detail: String = "") {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    /// Equal when the code and offset are; the detail is for people.
    public static func == (l: CBORError, r: CBORError) -> Bool { l.code == r.code && l.offset == r.offset }
    public func hash(into h: inout Hasher) {
        h.combine(code)
        h.combine(offset)
    }

    public var description: String {
        "CBOR error at offset \(offset): \(code.rawValue)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}
