/// Named limits of the sync protocol (docs/PROTOCOL.md §15.3). Going over one is an
/// "error" with code "limit" and a reason naming the limit and the value.
public struct SyncLimits: Sendable {
    /// One whole application message, as the transport delivers it.
    public var maxMessageBytes = 4_194_304
    /// Items in one "receipts" or "envelopes" message.
    public var maxBatchItems = 512
    /// Sum of the item byte strings in one batch message.
    public var maxBatchBytes = 1_048_576
    /// Batch messages granted right after hello.
    public var initialCredit: UInt64 = 8
    /// Unsent batches a sender may hold before it drops them and resyncs from the peer's vector.
    public var maxQueuedBatches = 64
    /// Groups in one hello.
    public var maxGroupsPerHello = 4_096
    /// Authors in one vector.
    public var maxAuthorsPerVector = 65_536
    /// CIDs in one request.
    public var maxCIDsPerRequest = 512
    /// Requests received and not yet answered, per session.
    public var maxOutstandingRequests = 256
    /// Credit a peer may grant beyond what was used (guards the counter).
    public var maxCredit: UInt64 = 1 << 20
    /// Versions, capabilities (each ≤ 64 bytes) in a hello.
    public var maxHelloListItems = 64
    /// Bytes of an error message text.
    public var maxErrorMessageBytes = 1_024
    /// Receipts from the peer that fail verification (signature or certificate) in one session;
    /// past it the session ends with `error` code `invalid` (the batch that passes it is still
    /// ingested, so at most this plus one batch), and the node refuses the device a while.
    public var maxInvalidItems = 16

    /// Revocation containers in one "revocations" message (docs/PROTOCOL.md §15.1); a sender
    /// holding more sends several messages.
    public var maxRevocationsPerMessage = 256
    /// Most `[receipt, envelope]` pairs in a `snapshot` message's key history (§23.3). A group
    /// with more committed `group.key` receipts is not bootstrapped from a snapshot.
    public var maxSnapshotKeyHistory = 1_024

    /// Milliseconds a request we sent may wait for its `done` while no batch of its group and
    /// no `done` of another of its requests arrives (§15.2.7); then it is sent again. Counted
    /// in the `now` of ``SyncSession/tick(now:)``; never while we withhold the peer's credit.
    public var requestTimeoutMs: UInt64 = 30_000
    /// Times one request is sent (the first and its repeats, each after `requestTimeoutMs`)
    /// before the session gives up: `error` code `timeout`, close. At least 1.
    public var maxRequestAttempts = 3
    /// Milliseconds between our `ping`s to a peer whose hello lists `keepalive` (§15.2.12).
    public var keepaliveIntervalMs: UInt64 = 30_000
    /// Milliseconds a session waits for any message before it ends with `error` code `idle`
    /// (§15.2.12): from a peer whose hello lists `keepalive`, and from a peer that has sent no
    /// hello yet. A peer without the capability is not timed out once its hello came.
    public var idleTimeoutMs: UInt64 = 90_000

    /// Chunks one `blob_get` may ask for (§24.3).
    public var maxBlobChunksPerGet = 16

    /// The defaults above, which are the protocol's (§15.3).
    public init() {}
}
