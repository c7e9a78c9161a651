/// Why a channel closed.
public enum ChannelCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// We closed (and sent a close record if established).
    case local(String)
    /// The peer's close record.
    case remote(String)
    case protocolError(String)
    case unauthorized(String)
    /// The stream ended without a close record.
    case truncated
    case handshakeTimeout
    /// We closed because the peer reached a resource limit; the text names the limit.
    case resourceLimit(String)

    /// A short sentence for logs: "closed", "closed by peer: …", "protocol error: …", ….
    public var description: String {
        switch self {
        case .local(let r): r.isEmpty ? "closed" : "closed: \(r)"
        case .remote(let r): r.isEmpty ? "closed by peer" : "closed by peer: \(r)"
        case .protocolError(let r): "protocol error: \(r)"
        case .unauthorized(let r): "not authorized: \(r)"
        case .truncated: "connection ended without a close record"
        case .handshakeTimeout: "handshake timed out"
        case .resourceLimit(let r): "resource limit: \(r)"
        }
    }
}
