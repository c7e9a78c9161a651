/// The one error type of `PeerlogModel`: malformed or invalid receipts, envelopes,
/// certificates and key files. Descriptions never include secrets.
public struct ModelError: Error, Hashable, CustomStringConvertible, Sendable {
    public enum Code: String, Hashable, Sendable {
        case malformedEncoding = "malformed CBOR"
        case wrongShape = "wrong structure"
        case unsupportedVersion = "unsupported version"
        case fieldOutOfRange = "field out of range"
        case sizeLimitExceeded = "size limit exceeded"
        case badSignature = "signature does not verify"
        case certificateMismatch = "certificate does not match"
        case keyFile = "key file problem"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
    public static func == (l: ModelError, r: ModelError) -> Bool { l.code == r.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
}
