/// The one error type of `PeerlogCrypto`, in the shape of ``CodedError``: a ``code`` (an
/// ``ErrorCode``, so codes can be added), where it was raised, and equality on the code only.
/// Descriptions never contain key material.
public struct CryptoError: CodedError {
    /// The codes of this module (the static members of `ErrorCode where Domain == CryptoError`).
    public typealias Code = ErrorCode<CryptoError>

    /// The kind of failure.
    public let code: Code
    /// Extra context for logs; never secret.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error with `code`, optional non-secret `detail`, and where it was raised.
    public init(_ code: Code, _ detail: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The code, then the detail if there is one.
    public var description: String { detail.isEmpty ? code.description : "\(code): \(detail)" }
}

extension ErrorCode where Domain == CryptoError {
    /// A key had the wrong number of bytes.
    public static let invalidKeyLength = Self("invalidKeyLength", description: "invalid key length")
    /// A nonce had the wrong number of bytes.
    public static let invalidNonceLength = Self("invalidNonceLength", description: "invalid nonce length")
    /// A signature was not 64 bytes.
    public static let invalidSignatureLength = Self("invalidSignatureLength", description: "invalid signature length")
    /// AEAD decryption failed: wrong key, nonce, data or tag.
    public static let authenticationFailure = Self("authenticationFailure", description: "authentication failed")
    /// A Diffie-Hellman result was all zero (low-order point).
    public static let weakSharedSecret = Self("weakSharedSecret", description: "weak (all-zero) shared secret")
    /// An input exceeded what the primitive accepts.
    public static let messageTooLarge = Self("messageTooLarge", description: "message too large")
    /// A parameter was out of range (hash length, key length).
    public static let invalidParameter = Self("invalidParameter", description: "invalid parameter")
    /// A primitive could not allocate the memory it needs (Argon2id's memory cost).
    public static let outOfMemory = Self("outOfMemory", description: "out of memory")
}
