/// Counters for logs and tests. Frames and bytes include the handshake and framing.
public struct ChannelStatistics: Sendable, Equatable {
    public var framesIn: UInt64 = 0
    public var framesOut: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var messagesIn: UInt64 = 0
    public var messagesOut: UInt64 = 0
    public var rekeysIn: UInt64 = 0
    public var rekeysOut: UInt64 = 0
    public init() {}
}
