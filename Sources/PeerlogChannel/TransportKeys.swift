/// What a key log records for one connection (docs/PROTOCOL.md §17.5): the initiator's
/// ephemeral key (clear text in handshake message 1) names it; the two transport keys at
/// nonce 0 decrypt it. Whoever holds these can read the whole connection.
public struct TransportKeys: Sendable, Equatable {
    public let initiatorEphemeral: [UInt8]
    public let initiatorToResponder: [UInt8]
    public let responderToInitiator: [UInt8]

    public init(initiatorEphemeral: [UInt8], initiatorToResponder: [UInt8], responderToInitiator: [UInt8]) {
        self.initiatorEphemeral = initiatorEphemeral
        self.initiatorToResponder = initiatorToResponder
        self.responderToInitiator = responderToInitiator
    }
}
