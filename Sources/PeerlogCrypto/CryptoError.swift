/// The one error type of `PeerlogCrypto`, in the shape of `SequencerError`: a ``code`` over a
/// private enum (so codes can be added), where it was raised, and equality on the code only.
/// Descriptions never contain key material.
public struct CryptoError: Error, Hashable, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            case invalidKeyLength, invalidNonceLength, invalidSignatureLength
            case authenticationFailure, weakSharedSecret, messageTooLarge, invalidParameter
        }
        fileprivate let base: Base
        /// A key had the wrong number of bytes.
        public static let invalidKeyLength = Code(base: .invalidKeyLength)
        /// A nonce had the wrong number of bytes.
        public static let invalidNonceLength = Code(base: .invalidNonceLength)
        /// A signature was not 64 bytes.
        public static let invalidSignatureLength = Code(base: .invalidSignatureLength)
        /// AEAD decryption failed: wrong key, nonce, data or tag.
        public static let authenticationFailure = Code(base: .authenticationFailure)
        /// A Diffie-Hellman result was all zero (low-order point).
        public static let weakSharedSecret = Code(base: .weakSharedSecret)
        /// An input exceeded what the primitive accepts.
        public static let messageTooLarge = Code(base: .messageTooLarge)
        /// A parameter was out of range (hash length, key length).
        public static let invalidParameter = Code(base: .invalidParameter)

        public var description: String {
            switch base {
            case .invalidKeyLength: "invalid key length"
            case .invalidNonceLength: "invalid nonce length"
            case .invalidSignatureLength: "invalid signature length"
            case .authenticationFailure: "authentication failed"
            case .weakSharedSecret: "weak (all-zero) shared secret"
            case .messageTooLarge: "message too large"
            case .invalidParameter: "invalid parameter"
            }
        }
    }

    public let code: Code
    /// Extra context for logs; never secret.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    public init(_ code: Code, _ detail: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    public var description: String { detail.isEmpty ? code.description : "\(code): \(detail)" }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
