import PeerlogModel

/// One application message, or a connection opening or closing, seen by a capture tap
/// (called by the NIO layer).
public struct TapRecord: Sendable {
    /// Whether the record was received (`inbound`) or sent (`outbound`).
    public enum Direction: String, Sendable { case inbound, outbound }
    /// What a record reports.
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
    /// What the record reports.
    public let kind: Kind
    /// Received or sent; for `opened`, who dialed.
    public let direction: Direction
    /// Names the connection: every record of one connection carries the same number.
    public let connection: UInt64
    /// This node's device.
    public let local: DeviceID
    /// The peer's device.
    public let peer: DeviceID
    /// The message bytes, the peer's certificate or the close reason, as `kind` says.
    public let message: [UInt8]

    /// A record as given; nothing is checked here.
    public init(
        time: UInt64, kind: Kind = .message, direction: Direction, connection: UInt64, local: DeviceID, peer: DeviceID,
        message: [UInt8]
    ) {
        self.time = time
        self.kind = kind
        self.direction = direction
        self.connection = connection
        self.local = local
        self.peer = peer
        self.message = message
    }
}

/// Where the NIO layer hands each `TapRecord`; called on the connection's event loop, so it
/// must return quickly.
public typealias Tap = @Sendable (TapRecord) -> Void
