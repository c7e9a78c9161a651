/// The channel's settings; both ends must agree on the network id and rekey interval.
public struct ChannelConfiguration: Sendable {
    /// Bound into the Noise prologue: peers with different network ids cannot complete a handshake.
    public var networkID: String = ""
    /// Largest application message sent or reassembled.
    public var maxMessageBytes: Int = 4_194_304
    /// Each direction rekeys its cipher after every this many transport frames (0: never).
    public var rekeyInterval: UInt64 = 4096
    /// How long the NIO layer waits for the handshake before calling `handshakeTimedOut()`.
    public var handshakeTimeout: Duration = .seconds(10)

    /// Settings as given, the defaults of §14.8 for those left out; nothing is checked here.
    public init(
        networkID: String = "", maxMessageBytes: Int = 4_194_304, rekeyInterval: UInt64 = 4096,
        handshakeTimeout: Duration = .seconds(10)
    ) {
        self.networkID = networkID
        self.maxMessageBytes = maxMessageBytes
        self.rekeyInterval = rekeyInterval
        self.handshakeTimeout = handshakeTimeout
    }
}
