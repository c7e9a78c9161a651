import PeerlogCrypto

/// A HandshakeState (spec §5.3) for one side of a handshake. Any error aborts the handshake:
/// later calls throw `handshakeAborted`, so a half-processed message can never be continued.
public struct NoiseHandshake: Sendable {
    /// The protocol this handshake runs.
    public let noiseProtocol: NoiseProtocol
    /// True for the side that writes the first message: in Peerlog, the side that opened the
    /// connection (docs/PROTOCOL.md §14.1).
    public let initiator: Bool
    private var symmetric: SymmetricState
    private let messages: [[NoisePattern.Token]]
    private var index = 0
    private var aborted = false
    private let s: X25519.PrivateKey?
    private var e: X25519.PrivateKey?
    private var pendingEphemeral: X25519.PrivateKey?
    private var rs: X25519.PublicKey?
    private var re: X25519.PublicKey?

    private static let dhLength = X25519.keyLength

    /// Initialize (spec §5.3): mixes the protocol name, `prologue` and any pre-message keys into the
    /// handshake hash. `localStatic` is required when this side sends its static key or has it as a
    /// pre-message; `remoteStatic` when the peer's is a pre-message (the initiator of IK and XK).
    /// `ephemeral` fixes this side's ephemeral key, for test vectors; by default a fresh one is
    /// made. Throws a `NoiseError` when a required key is missing.
    public init(
        protocol noiseProtocol: NoiseProtocol, initiator: Bool, prologue: [UInt8], localStatic: X25519.PrivateKey?,
        remoteStatic: X25519.PublicKey? = nil, ephemeral: X25519.PrivateKey? = nil
    ) throws {
        self.noiseProtocol = noiseProtocol
        self.initiator = initiator
        let definition = noiseProtocol.pattern.definition
        messages = definition.messages
        s = localStatic
        rs = remoteStatic
        pendingEphemeral = ephemeral
        symmetric = SymmetricState(protocolName: noiseProtocol.name, hash: noiseProtocol.hash)
        symmetric.mixHash(prologue)
        // Pre-messages: the initiator's keys first, then the responder's (spec §7.1).
        for (token, ours) in definition.initiatorPre.map({ ($0, initiator) })
            + definition.responderPre.map({ ($0, !initiator) })
        {
            guard token == .s else { throw NoiseError(.unsupportedProtocol, noiseProtocol.name) }
            guard let key = ours ? s?.publicKey : rs else {
                throw NoiseError(.missingKey, ours ? "local static" : "remote static")
            }
            symmetric.mixHash(key.rawRepresentation)
        }
        // Every pattern here that sends or uses `s` needs a local static key.
        let usesLocalStatic =
            definition.messages.enumerated().contains { i, tokens in
                (i % 2 == 0) == initiator && tokens.contains(.s)
            } || (initiator ? definition.initiatorPre : definition.responderPre).contains(.s)
        if usesLocalStatic && s == nil { throw NoiseError(.missingKey, "local static") }
    }

    /// True once every message of the pattern has been written or read; then call `split()`.
    public var isComplete: Bool { index == messages.count }
    /// h: after the last handshake message, the channel binding value of spec §11.2.
    public var handshakeHash: [UInt8] { symmetric.h }
    /// The peer's static key: from a pre-message, or once its `s` token has been read (in XX,
    /// message 2 at the initiator, message 3 at the responder); nil before.
    public var remoteStaticKey: X25519.PublicKey? { rs }
    /// The initiator's ephemeral public key once sent or received: it is in clear text on the
    /// wire, so a key log can use it to name the connection.
    public var initiatorEphemeralKey: X25519.PublicKey? { initiator ? e?.publicKey : re }
    /// True when the next handshake message is ours to write.
    public var isMyTurn: Bool { !isComplete && (index % 2 == 0) == initiator }

    /// WriteMessage (spec §5.3): the next handshake message, carrying `payload` (encrypted once a
    /// key exists). Throws a `NoiseError` when it is not this side's turn, the handshake has
    /// aborted, the message would exceed 65535 bytes, or a DH result is all zero; any error but
    /// the turn check aborts the handshake.
    public mutating func writeMessage(payload: [UInt8]) throws -> [UInt8] {
        guard !aborted else { throw NoiseError(.handshakeAborted) }
        guard isMyTurn else { throw NoiseError(.messageOutOfTurn) }
        var next = self
        do {
            let out = try next.write(payload: payload)
            self = next
            return out
        } catch {
            aborted = true
            throw error
        }
    }

    /// ReadMessage (spec §5.3): processes the peer's next handshake message and returns its
    /// payload. Throws a `NoiseError` when it is not the peer's turn, the handshake has aborted,
    /// the message is too short or too long, a field fails to decrypt (e.g. another prologue,
    /// docs/PROTOCOL.md §14.1) or the peer's key has low order; any error but the turn check
    /// aborts the handshake.
    public mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        guard !aborted else { throw NoiseError(.handshakeAborted) }
        guard !isComplete, !isMyTurn else { throw NoiseError(.messageOutOfTurn) }
        var next = self
        do {
            let payload = try next.read(message)
            self = next
            return payload
        } catch {
            aborted = true
            throw error
        }
    }

    /// The transport CipherStates, oriented for this side.
    public mutating func split() throws -> (send: NoiseCipherState, receive: NoiseCipherState) {
        guard !aborted else { throw NoiseError(.handshakeAborted) }
        guard isComplete else { throw NoiseError(.handshakeNotComplete) }
        let (c1, c2) = symmetric.split()
        return initiator ? (c1, c2) : (c2, c1)
    }

    private mutating func write(payload: [UInt8]) throws -> [UInt8] {
        var out = [UInt8]()
        for token in messages[index] {
            switch token {
            case .e:
                let key = pendingEphemeral ?? X25519.PrivateKey()
                pendingEphemeral = nil
                e = key
                out += key.publicKey.rawRepresentation
                symmetric.mixHash(key.publicKey.rawRepresentation)
            case .s:
                guard let s else { throw NoiseError(.missingKey, "local static") }
                out += try symmetric.encryptAndHash(s.publicKey.rawRepresentation)
            default:
                try mixDH(token)
            }
        }
        out += try symmetric.encryptAndHash(payload)
        guard out.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        index += 1
        return out
    }

    private mutating func read(_ message: [UInt8]) throws -> [UInt8] {
        guard message.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        var rest = message[...]
        func take(_ n: Int) throws -> [UInt8] {
            guard rest.count >= n else { throw NoiseError(.messageTooShort) }
            defer { rest = rest.dropFirst(n) }
            return Array(rest.prefix(n))
        }
        for token in messages[index] {
            switch token {
            case .e:
                let bytes = try take(Self.dhLength)
                re = try X25519.PublicKey(bytes)
                symmetric.mixHash(bytes)
            case .s:
                let bytes = try take(Self.dhLength + (symmetric.hasKey ? NoiseCipherState.tagLength : 0))
                rs = try X25519.PublicKey(try symmetric.decryptAndHash(bytes))
            default:
                try mixDH(token)
            }
        }
        if symmetric.hasKey && rest.count < NoiseCipherState.tagLength { throw NoiseError(.messageTooShort) }
        let payload = try symmetric.decryptAndHash(Array(rest))
        index += 1
        return payload
    }

    /// ee, es, se, ss: the first letter names the initiator's key, the second the responder's.
    private mutating func mixDH(_ token: NoisePattern.Token) throws {
        let (local, remote): (X25519.PrivateKey?, X25519.PublicKey?)
        switch token {
        case .ee: (local, remote) = (e, re)
        case .ss: (local, remote) = (s, rs)
        case .es: (local, remote) = initiator ? (e, rs) : (s, re)
        case .se: (local, remote) = initiator ? (s, re) : (e, rs)
        case .e, .s: preconditionFailure("not a DH token")
        }
        guard let local, let remote else { throw NoiseError(.missingKey, "DH key for \(token)") }
        let shared: SecureBytes
        do { shared = try local.sharedSecret(with: remote) } catch { throw NoiseError(.lowOrderPublicKey) }
        var ikm = shared.copyBytes()
        defer { SecureBytes.zero(&ikm) }
        symmetric.mixKey(ikm)
    }
}
