/// Counters for logs and tests. Frames and bytes include the handshake and framing.
public struct ChannelStatistics: Sendable, Equatable {
    /// Frames read from the peer, handshake frames included.
    public var framesIn: UInt64 = 0
    /// Frames written, handshake frames included.
    public var framesOut: UInt64 = 0
    /// Bytes read from the stream, length headers included.
    public var bytesIn: UInt64 = 0
    /// Bytes written, length headers included.
    public var bytesOut: UInt64 = 0
    /// Application messages delivered (a fragmented one counts once).
    public var messagesIn: UInt64 = 0
    /// Application messages sent (a fragmented one counts once).
    public var messagesOut: UInt64 = 0
    /// Rekeys of the receiving cipher (§14.5).
    public var rekeysIn: UInt64 = 0
    /// Rekeys of the sending cipher (§14.5).
    public var rekeysOut: UInt64 = 0
    /// All counters 0.
    public init() {}
}
