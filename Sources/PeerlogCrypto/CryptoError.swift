/// The one error type of `PeerlogCrypto` (a ``CodedFailure``): a code (an ``ErrorCode``, so codes
/// can be added), where it was raised, and equality on the code only. Details never contain key
/// material.
public typealias CryptoError = CodedFailure<CryptoDomain>

/// The domain of ``CryptoError``.
public enum CryptoDomain: ErrorDomain {}

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
