import PeerlogModel

/// One application message, or a connection opening or closing, seen by a capture tap
/// (called by the NIO layer).
public struct TapRecord: Sendable {
    public enum Direction: String, Sendable { case inbound, outbound }
    public enum Kind: Sendable {
        /// `message` is an application message sent or received.
        case message
        /// Established; `message` is the peer's certificate container, `direction` is
        /// outbound when we dialed.
        case opened
        /// Closed; `message` is the UTF-8 reason.
        case closed
    }
    /// Milliseconds since the Unix epoch.
    public let time: UInt64
    public let kind: Kind
    public let direction: Direction
    public let connection: UInt64
    public let local: DeviceID
    public let peer: DeviceID
    public let message: [UInt8]

    public init(time: UInt64, kind: Kind = .message, direction: Direction, connection: UInt64, local: DeviceID, peer: DeviceID, message: [UInt8]) {
        self.time = time
        self.kind = kind
        self.direction = direction
        self.connection = connection
        self.local = local
        self.peer = peer
        self.message = message
    }
}

public typealias Tap = @Sendable (TapRecord) -> Void
