import PeerlogCrypto

// The Noise Protocol Framework (noiseprotocol.org/noise.html, revision 34) as pure state
// machines: no I/O, no clock. Only 25519, ChaChaPoly and BLAKE2b/SHA256 are supported.

/// The largest Noise message (handshake or transport), spec §3.
public let noiseMaxMessageLength = 65535

/// The one error type of `PeerlogNoise`, a `CodedFailure`: a code to
/// compare against the static members of `Code` (which can grow without breaking clients),
/// where it was raised, and equality on the code only. Descriptions never hold key material.
public typealias NoiseError = CodedFailure<NoiseDomain>

/// The domain of ``NoiseError``.
public enum NoiseDomain: ErrorDomain {}

extension ErrorCode where Domain == NoiseError {
    /// AEAD decryption failed: wrong key, nonce, associated data or tag.
    public static let decryptFailed = Self("decryptFailed", description: "decrypt failed")
    /// The cipher's nonce reached 2^64-1; the session must end.
    public static let nonceExhausted = Self("nonceExhausted", description: "nonce exhausted")
    /// A peer's Diffie-Hellman key is a low-order point.
    public static let lowOrderPublicKey = Self("lowOrderPublicKey", description: "low-order public key")
    /// A handshake message is shorter than its pattern requires.
    public static let messageTooShort = Self("messageTooShort", description: "handshake message too short")
    /// A handshake message was written or read when it was the other side's turn.
    public static let messageOutOfTurn = Self("messageOutOfTurn", description: "message out of turn")
    /// A message is longer than 65535 bytes.
    public static let messageTooLong = Self("messageTooLong", description: "message longer than 65535 bytes")
    /// A protocol name this implementation does not support.
    public static let unsupportedProtocol = Self("unsupportedProtocol", description: "unsupported Noise protocol")
    /// A key the pattern needs was not given.
    public static let missingKey = Self("missingKey", description: "missing key")
    /// `split()` before the handshake completed.
    public static let handshakeNotComplete = Self("handshakeNotComplete", description: "handshake not complete")
    /// A previous step of this handshake failed; a failed handshake cannot continue.
    public static let handshakeAborted = Self(
        "handshakeAborted", description: "handshake aborted after an earlier failure")
}

/// A protocol name such as `Noise_XX_25519_ChaChaPoly_BLAKE2b`.
public struct NoiseProtocol: Sendable, Equatable {
    /// The full name as given, e.g. `Noise_XX_25519_ChaChaPoly_BLAKE2b`; it is the first input to
    /// the handshake hash (spec §5.2).
    public let name: String
    /// The handshake pattern, the name's second part.
    public var pattern: NoisePattern
    /// The hash function, the name's last part.
    public let hash: NoiseHash

    /// Parses `Noise_<pattern>_25519_ChaChaPoly_<hash>`: a `NoisePattern` in any case and `BLAKE2b`
    /// or `SHA256`. Throws a `NoiseError` for any other name. Peerlog's channel runs
    /// `Noise_XX_25519_ChaChaPoly_BLAKE2b` (docs/PROTOCOL.md §14.1).
    public init(name: String) throws {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[0] == "Noise", parts[2] == "25519", parts[3] == "ChaChaPoly",
            let pattern = NoisePattern(name: parts[1]), let hash = NoiseHash(rawValue: parts[4])
        else { throw NoiseError(.unsupportedProtocol, "\"\(name)\"") }
        self.name = name
        self.pattern = pattern
        self.hash = hash
    }
}
