/// What a key log records for one connection (docs/PROTOCOL.md §17.5): the initiator's
/// ephemeral key (clear text in handshake message 1) names it; the two transport keys at
/// nonce 0 decrypt it. Whoever holds these can read the whole connection.
public struct TransportKeys: Sendable, Equatable {
    /// The initiator's ephemeral public key (32 bytes), as sent in handshake message 1.
    public let initiatorEphemeral: [UInt8]
    /// The key of the initiator-to-responder cipher at nonce 0 (32 bytes).
    public let initiatorToResponder: [UInt8]
    /// The key of the responder-to-initiator cipher at nonce 0 (32 bytes).
    public let responderToInitiator: [UInt8]

    /// Keys as given; their lengths are not checked here.
    public init(initiatorEphemeral: [UInt8], initiatorToResponder: [UInt8], responderToInitiator: [UInt8]) {
        self.initiatorEphemeral = initiatorEphemeral
        self.initiatorToResponder = initiatorToResponder
        self.responderToInitiator = responderToInitiator
    }
}
