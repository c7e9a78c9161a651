// The Noise Protocol Framework (noiseprotocol.org/noise.html, revision 34) as pure state
// machines: no I/O, no clock. Only 25519, ChaChaPoly and BLAKE2b/SHA256 are supported.

/// The largest Noise message (handshake or transport), spec §3.
public let noiseMaxMessageLength = 65535

public enum NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    case decryptFailed
    case nonceExhausted
    case lowOrderPublicKey
    case messageTooShort
    case messageOutOfTurn
    case messageTooLong
    case unsupportedProtocol(String)
    case missingKey(String)
    case handshakeNotComplete
    /// A previous step of this handshake failed; a failed handshake cannot continue.
    case handshakeAborted

    public var description: String {
        switch self {
        case .decryptFailed: "decrypt failed"
        case .nonceExhausted: "nonce exhausted"
        case .lowOrderPublicKey: "low-order public key"
        case .messageTooShort: "handshake message too short"
        case .messageOutOfTurn: "message out of turn"
        case .messageTooLong: "message longer than 65535 bytes"
        case .unsupportedProtocol(let name): "unsupported Noise protocol \"\(name)\""
        case .missingKey(let which): "missing key: \(which)"
        case .handshakeNotComplete: "handshake not complete"
        case .handshakeAborted: "handshake aborted after an earlier failure"
        }
    }
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
        else { throw NoiseError.unsupportedProtocol(name) }
        self.name = name
        self.pattern = pattern
        self.hash = hash
    }
}
