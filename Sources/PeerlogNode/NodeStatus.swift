/// What `peerlog status` shows; sent as JSON over the control socket.
public struct NodeStatus: Codable, Sendable, Equatable {
    public var device: String
    public var identity: String
    public var name: String
    public var listening: String?
    public var peers: [PeerStatus]
    public var groups: [GroupStatus]
    /// The last connections that ended, newest last, with why.
    public var recentlyClosed: [ClosedStatus]
    /// Why LAN discovery is not running (nil when it runs or is turned off).
    public var discoveryUnavailable: String?
    public var discovery: Bool
    /// The capture in progress, if any.
    public var capture: CaptureStatus?
}

public struct PeerStatus: Codable, Sendable, Equatable {
    /// The dialed address (static peers) or the remote address (inbound).
    public var address: String
    /// `connected`, `connecting`, `backoff`, `discovered` (found but not dialed, see lastError).
    public var state: String
    public var direction: String
    /// How we know the peer: `static` (--peer or config), `mdns` (LAN discovery), `inbound`.
    public var source: String
    public var device: String?
    public var name: String?
    public var connectedSince: UInt64?
    public var lastError: String?
    /// Milliseconds until the next dial, in `backoff`.
    public var retryInMs: UInt64?
}

public struct GroupStatus: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var committed: UInt64
    public var tentative: Int
    public var peers: [GroupPeerStatus]
}

public struct GroupPeerStatus: Codable, Sendable, Equatable {
    public var device: String
    /// The peer's committed high-water mark as it last told us.
    public var peerCommitted: UInt64?
    /// How many committed seqs we lack compared to that peer (0 when we are ahead or equal).
    public var behind: UInt64
    /// How many it lacks compared to us.
    public var ahead: UInt64
    public var caughtUp: Bool
    /// Items (receipts and envelopes) received from / sent to this peer in this connection.
    public var itemsReceived: Int
    public var itemsSent: Int
}

public struct ClosedStatus: Codable, Sendable, Equatable {
    public var device: String?
    public var address: String
    public var reason: String
    public var at: UInt64
}
