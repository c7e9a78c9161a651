/// Errors thrown to the local caller of `send`; the connection itself is unaffected.
public enum ChannelError: Error, Equatable, Sendable, CustomStringConvertible {
    case notEstablished
    case closed
    case emptyMessage
    case messageTooLarge(size: Int, limit: Int)

    public var description: String {
        switch self {
        case .notEstablished: "channel is not established"
        case .closed: "channel is closed"
        case .emptyMessage: "empty application messages are invalid"
        case .messageTooLarge(let size, let limit): "message of \(size) bytes exceeds \(limit) bytes"
        }
    }
}
