import PeerlogSequencer

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
    /// Receipts we sent that a peer's sequencer (a relay, say) refused, newest last (at most 32).
    public var refusals: [RefusalStatus]?
    /// What this node refused from peers (invalid signatures or certificates among them),
    /// newest last (at most 32), and how many since it started.
    public var rejected: [RejectionStatus]?
    public var rejectedTotal: Int?
}

public struct RejectionStatus: Codable, Sendable, Equatable {
    public var group: String
    public var cid: String
    /// The author device and identity the receipt claims (nil for an envelope).
    public var author: String?
    public var identity: String?
    /// The peer device that sent it.
    public var from: String
    public var reason: String
    /// Its signature or certificate failed: possible forgery.
    public var invalid: Bool
    public var at: UInt64
}

public struct RefusalStatus: Codable, Sendable, Equatable {
    public var group: String
    public var cid: String
    /// The refusing peer's device.
    public var by: String
    public var reason: String
    public var at: UInt64
}

public struct PeerStatus: Codable, Sendable, Equatable {
    /// The dialed address (static peers) or the remote address (inbound).
    public var address: String
    public var state: State
    public var direction: Direction
    /// How we know the peer.
    public var source: Source
    public var device: String?
    public var name: String?
    public var connectedSince: UInt64?
    public var lastError: String?
    /// Milliseconds until the next dial, in `backoff`.
    public var retryInMs: UInt64?

    /// Where the node is with a peer (the raw values are what `status --json` prints).
    public enum State: String, Codable, Sendable {
        case connected, connecting, backoff
        /// Found on the LAN but not dialed (see `lastError`).
        case discovered
    }

    /// Who dialed, from this node's point of view.
    public enum Direction: String, Codable, Sendable {
        case inbound, outbound
    }

    public enum Source: String, Codable, Sendable {
        /// `--peer` or the configuration file.
        case `static`
        /// LAN discovery (DNS-SD).
        case mdns
        /// It dialed us.
        case inbound
        /// A relay one of our groups names.
        case relay
    }
}

public struct GroupStatus: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var committed: UInt64
    public var tentative: Int
    public var peers: [GroupPeerStatus]
    /// Who assigns the group's seqs (nil before the group is committed here).
    public var sequencer: SequencerStatus?

    public init(id: String, name: String, committed: UInt64, tentative: Int, peers: [GroupPeerStatus], sequencer: SequencerStatus? = nil) {
        self.id = id
        self.name = name
        self.committed = committed
        self.tentative = tentative
        self.peers = peers
        self.sequencer = sequencer
    }
}

/// The group's sequencer authority and, on a voter of an elected one, the election's state.
public struct SequencerStatus: Codable, Sendable, Equatable {
    public var authority: Authority
    /// The solo device, the voters, or the relay's key.
    public var devices: [String]
    public var address: String?
    /// Receipts held here that wait for a seq (the commit lag).
    public var commitLag: Int
    /// On a voter: its role in the election, the term, the leader it knows, and the seq after
    /// which this authority assigns.
    public var role: SequencerRole?
    public var term: UInt64?
    public var leader: String?
    public var base: UInt64?

    public init(authority: Authority, devices: [String], address: String? = nil, commitLag: Int) {
        self.authority = authority
        self.devices = devices
        self.address = address
        self.commitLag = commitLag
    }

    /// The kind of sequencer authority (the raw values are what `status --json` prints).
    public enum Authority: String, Codable, Sendable {
        case solo, elected, relay
    }
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
