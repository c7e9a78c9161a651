/// Node-wide bounds on what peers can make a node hold (docs/PROTOCOL.md §14.7). Each name
/// here is the name the protocol document, the logs and close reasons use.
public struct NodeLimits: Sendable {
    /// Memory all partial (fragmented, incomplete) messages may hold together.
    public var reassemblyBudgetBytes = 64 << 20
    /// Memory the partial messages of the devices of one identity may hold together: four
    /// messages of `maxMessageBytes` at once.
    public var reassemblyBytesPerIdentity = 16 << 20
    /// Established connections with the devices of one identity (one person's few devices,
    /// both directions, and tie-break duplicates for the moment they live).
    public var maxConnectionsPerIdentity = 16
    /// Established connections of all identities together (an open relay lets in any
    /// certified device); the node uses at most half its file descriptor limit for them.
    public var maxConnections = 1_024
    /// Decrypted messages waiting for the hub, all connections together: past it, every
    /// connection with a message waiting stops reading (backpressure to the peers' TCP windows)
    /// until the hub has caught up. Each connection also stops above 8 MiB of its own.
    public var maxQueuedMessageBytes = 64 << 20
    /// Accepted connections whose handshake is not finished; a new one beyond this closes
    /// the oldest. The node uses at most a quarter of its file descriptor limit for them.
    public var maxPendingHandshakes = 256
    /// A connection whose partial message had at least this much capacity asks the allocator
    /// to return freed memory to the system (malloc_trim) when it closes.
    public var trimAfterFreeingBytes = 1 << 20

    /// The defaults above (§14.7).
    public init() {}

    /// `maxConnections`, but at most half of `fileDescriptorLimit` (at least 16).
    public func connectionCapacity(fileDescriptorLimit: Int) -> Int {
        max(16, min(maxConnections, fileDescriptorLimit / 2))
    }

    /// `maxPendingHandshakes`, but at most a quarter of `fileDescriptorLimit` (at least 8), so
    /// a burst of handshakes cannot use the descriptors accepts and established peers need.
    public func pendingHandshakeCapacity(fileDescriptorLimit: Int) -> Int {
        max(8, min(maxPendingHandshakes, fileDescriptorLimit / 4))
    }
}
