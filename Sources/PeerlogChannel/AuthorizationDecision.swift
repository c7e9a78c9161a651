/// Whether a peer that completed the handshake may use the channel.
public enum AuthorizationDecision: Sendable, Equatable {
    case allow
    case deny(String)
}
