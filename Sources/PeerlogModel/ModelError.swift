import PeerlogCrypto

/// The one error type of `PeerlogModel`: malformed or invalid receipts, envelopes,
/// certificates and key files. In the shape of `SequencerError`: a ``code`` (an
/// `ErrorCode`, so codes can be added), where it was raised, and equality on the code only.
/// Descriptions never include secrets.
public struct ModelError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<ModelError>

    /// The kind of failure.
    public let code: Code
    /// What exactly (field names, sizes, paths; never key material).
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error with `code`, a detail for people (never key material), and where it was raised.
    public init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The code's wording, then the detail.
    public var description: String { "\(code.text): \(detail)" }
}

extension ErrorCode where Domain == ModelError {
    /// The bytes are not the strict CBOR this format needs.
    public static let malformedEncoding = Self("malformedEncoding")
    /// A field is missing, extra or of the wrong type.
    public static let wrongShape = Self("wrongShape")
    /// A version this implementation does not read.
    public static let unsupportedVersion = Self("unsupportedVersion")
    /// A field's value is out of its range.
    public static let fieldOutOfRange = Self("fieldOutOfRange")
    /// An object (or a local write's payload) is over its size limit.
    public static let sizeLimitExceeded = Self("sizeLimitExceeded")
    /// A signature does not verify.
    public static let badSignature = Self("badSignature")
    /// A certificate does not match the keys or the author it should.
    public static let certificateMismatch = Self("certificateMismatch")
    /// A key file is missing, exists already or cannot be used.
    public static let keyFile = Self("keyFile")
    /// A passphrase-sealed file (an identity backup, §21) does not open: the passphrase is wrong
    /// or the file was changed; authenticated encryption cannot tell the two apart.
    public static let wrongPassphrase = Self("wrongPassphrase")

    /// The code in words, e.g. `wrong structure` (the prefix of a description).
    public var text: String {
        switch self {
        case .malformedEncoding: "malformed CBOR"
        case .wrongShape: "wrong structure"
        case .unsupportedVersion: "unsupported version"
        case .fieldOutOfRange: "field out of range"
        case .sizeLimitExceeded: "size limit exceeded"
        case .badSignature: "signature does not verify"
        case .certificateMismatch: "certificate does not match"
        case .keyFile: "key file problem"
        case .wrongPassphrase: "wrong passphrase or damaged file"
        default: name
        }
    }
}
