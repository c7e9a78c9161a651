import Foundation
import PeerlogEngine
import PeerlogSequencer

/// What `peerlog status` shows; sent as JSON over the control socket.
public struct NodeStatus: Codable, Sendable, Equatable {
    /// This node's device key, as its `b…` base32 string.
    public var device: String
    /// The identity the device belongs to (`b…` base32).
    public var identity: String
    /// The device name in its certificate.
    public var name: String
    /// The bound listen address (`HOST:PORT` or `[V6]:PORT`, the real port when 0 was asked);
    /// nil before the listener is up or when the node does not listen.
    public var listening: String?
    /// Configured and discovered peers as their dialers see them, then the connections no dialer
    /// shows (inbound ones, mostly).
    public var peers: [PeerStatus]
    /// Every group in the replica.
    public var groups: [GroupStatus]
    /// The last connections that ended, newest last, with why.
    public var recentlyClosed: [ClosedStatus]
    /// Why LAN discovery is not running (nil when it runs or is turned off).
    public var discoveryUnavailable: String?
    /// LAN discovery is turned on (it may still be unavailable: `discoveryUnavailable`).
    public var discovery: Bool
    /// The capture in progress, if any.
    public var capture: CaptureStatus?
    /// Receipts we sent that a peer's sequencer (a relay, say) refused, newest last (at most 32).
    public var refusals: [RefusalStatus]?
    /// What this node refused from peers (invalid signatures or certificates among them),
    /// newest last (at most 32), and how many since it started.
    public var rejected: [RejectionStatus]?
    /// Items refused from peers since the node started (`rejected` keeps only the newest 32).
    public var rejectedTotal: Int?
    /// Pairing sessions this node hosts and the newest pairing events, refusals among them
    /// (nil when none ever ran).
    public var pairing: PairingStatus?
    /// Set when this device was revoked by its identity: the revocation's reason
    /// (`device … was revoked by identity … at …`). Peers refuse it from then on.
    public var revoked: String? = nil
    /// When the hub built this status, in milliseconds since the Unix epoch. A node busy taking
    /// in a long log answers within a fraction of a second with the newest status it built, so
    /// this may be a few seconds old then (its pairing, capture and discovery parts are current).
    public var builtAt: UInt64? = nil
    /// Blob transfers (docs/PROTOCOL.md §24): those in progress and the bytes moved since start.
    public var blobs: BlobsStatus? = nil
}

/// What a node's blob transfers are doing.
public struct BlobsStatus: Codable, Sendable, Equatable {
    /// Blobs being fetched now.
    public var fetching: [BlobFetchStatus]
    /// Bytes of chunks received and written since the daemon started.
    public var receivedBytes: UInt64
    /// Bytes of chunks served to peers since the daemon started.
    public var servedBytes: UInt64
    /// Bytes of the whole blobs held here.
    public var heldBytes: UInt64
    /// Of those, bytes of blobs fetched from peers (the cache).
    public var cachedBytes: UInt64
    /// The most the cache keeps before it evicts (`NodeConfiguration.blobCacheBytes`).
    public var cacheLimitBytes: UInt64
}

/// One blob being fetched.
public struct BlobFetchStatus: Codable, Sendable, Equatable {
    /// The blob id.
    public var blob: String
    /// The group it is fetched for.
    public var group: String
    /// Its size in bytes.
    public var size: UInt64
    /// Bytes of it held (checked and written).
    public var heldBytes: UInt64
    /// Requests in flight.
    public var requests: Int
}

extension NodeStatus {
    /// The status document (`peerlog status --json`, `/api/status`): JSON with sorted keys,
    /// pretty-printed, or on one line for a server-sent event.
    public func document(pretty: Bool = true) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }
}

/// Pairing sessions (`peerlog device link`, `peerlog invite create`) for `status`.
public struct PairingStatus: Codable, Sendable, Equatable {
    /// Sessions whose code is still valid.
    public var open: [PairingSessionStatus]
    /// The newest pairing events (at most 20), newest last: pairings, failed attempts, refusals.
    public var recent: [PairingEventStatus]
}

/// One open pairing session.
public struct PairingSessionStatus: Codable, Sendable, Equatable {
    /// The code's public part.
    public var nameplate: Int
    /// `link` or `invite`.
    public var purpose: String
    /// When the code dies (milliseconds since 1970).
    public var expiresAt: UInt64
    /// Wrong codes still allowed before the code dies.
    public var attemptsLeft: Int
    /// The session's listener (HOST:PORT).
    public var address: String
    /// For an invitation: the group.
    public var group: String?
}

/// Something that happened in a pairing session.
public struct PairingEventStatus: Codable, Sendable, Equatable {
    /// When (milliseconds since 1970).
    public var at: UInt64
    /// The session's nameplate.
    public var nameplate: Int
    /// The guest's address.
    public var remote: String
    /// `paired`, `failed` (a PAKE or payload failure) or `refused` (no attempt made).
    public var outcome: String
    /// What was paired, or why it failed.
    public var detail: String
}

/// One item of a peer's batch that our replica refused (§15.1), for `status`.
public struct RejectionStatus: Codable, Sendable, Equatable {
    /// The group (`b…` base32).
    public var group: String
    /// The receipt's CID (for an envelope, the CID it names).
    public var cid: String
    /// The author device and identity the receipt claims (nil for an envelope).
    public var author: String?
    /// The identity the receipt's certificate claims (`b…` base32; nil for an envelope).
    public var identity: String?
    /// The peer device that sent it.
    public var from: String
    /// Why the replica refused it.
    public var reason: String
    /// Its signature or certificate failed: possible forgery.
    public var invalid: Bool
    /// When it was refused, in milliseconds since the Unix epoch.
    public var at: UInt64
}

/// A receipt we sent that a peer's sequencer refused (§19.2), for `status`.
public struct RefusalStatus: Codable, Sendable, Equatable {
    /// The group (`b…` base32).
    public var group: String
    /// The refused receipt's CID.
    public var cid: String
    /// The refusing peer's device.
    public var by: String
    /// The rule it breaks, as the refusing sequencer worded it.
    public var reason: String
    /// When the refusal arrived, in milliseconds since the Unix epoch.
    public var at: UInt64
}

/// A peer the node dials or is connected to, for `status`.
public struct PeerStatus: Codable, Sendable, Equatable {
    /// The dialed address (static peers) or the remote address (inbound).
    public var address: String
    /// Where the node is with it.
    public var state: State
    /// Who dialed.
    public var direction: Direction
    /// How we know the peer.
    public var source: Source
    /// The peer's device key (`b…` base32), once known (a handshake, or its DNS-SD record).
    public var device: String?
    /// The device name in the peer's certificate.
    public var name: String?
    /// When the current connection's handshake finished, in milliseconds since the Unix epoch;
    /// nil when not connected.
    public var connectedSince: UInt64?
    /// Why the last attempt or connection ended (or, when `discovered`, why it is not dialed).
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

    /// How the node knows of the peer (the raw values are what `status --json` prints).
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

/// ``GroupStatus`` under a name of its own, for the facade, whose `GroupStatus` is a group's
/// membership status (active, removed, …): an app that imports only `Peerlog` names it so.
public typealias NodeGroupStatus = GroupStatus

/// A group in the replica, for `status`.
public struct GroupStatus: Codable, Sendable, Equatable {
    /// The group ID (`b…` base32).
    public var id: String
    /// The group's name in its tentative state (empty if it cannot be read).
    public var name: String
    /// The committed high-water mark: the highest seq of the group committed here.
    public var committed: UInt64
    /// Receipts held here that have no seq yet.
    public var tentative: Int
    /// Connected peers syncing this group with us.
    public var peers: [GroupPeerStatus]
    /// Who assigns the group's seqs (nil before the group is committed here).
    public var sequencer: SequencerStatus?
    /// In an end-to-end encrypted group (docs/PROTOCOL.md §22): committed receipts this device
    /// cannot open yet for want of an epoch key; nil in a plaintext group.
    public var waitingForKey: Int?
    /// This device's headroom against the group's offline limits (docs/PROTOCOL.md §10.5).
    public var offline: OfflineStatus?
    /// Why the group's last automatic snapshot or compaction was skipped (a full disk, with the
    /// space it needs), until one completes; nil when none was (docs/PROTOCOL.md §23.4).
    public var maintenanceSkipped: String?

    /// A group's status; `sequencer` nil when not given.
    public init(
        id: String, name: String, committed: UInt64, tentative: Int, peers: [GroupPeerStatus],
        sequencer: SequencerStatus? = nil
    ) {
        self.id = id
        self.name = name
        self.committed = committed
        self.tentative = tentative
        self.peers = peers
        self.sequencer = sequencer
    }
}

/// This device's own writes waiting for a seq in a group, against the offline limits
/// (docs/PROTOCOL.md §10.5): at either limit, application writes are refused.
public struct OfflineStatus: Codable, Sendable, Equatable {
    /// This device's writes in the group that have no seq yet.
    public var waiting: Int
    /// The most that may wait (`maxWaitingLocalWrites`, or the group's override).
    public var maxWaiting: Int
    /// How long the oldest of them has waited (ms); nil when none waits.
    public var oldestAgeMs: UInt64?
    /// The oldest age allowed (ms; `maxWaitingLocalAgeMillis`, or the group's override).
    public var maxAgeMs: UInt64

    /// The status of `headroom`.
    public init(_ headroom: OfflineHeadroom) {
        waiting = headroom.waiting
        maxWaiting = headroom.limits.maxWaiting
        oldestAgeMs = headroom.oldestAgeMillis
        maxAgeMs = headroom.limits.maxAgeMillis
    }
}

/// The group's sequencer authority and, on a voter of an elected one, the election's state.
public struct SequencerStatus: Codable, Sendable, Equatable {
    /// The kind of authority.
    public var authority: Authority
    /// The solo device, the voters, or the relay's key.
    public var devices: [String]
    /// The relay's address as the group names it (relay authority only).
    public var address: String?
    /// Receipts held here that wait for a seq (the commit lag).
    public var commitLag: Int
    /// On a voter: its role in the election, the term, the leader it knows, and the seq after
    /// which this authority assigns.
    public var role: SequencerRole?
    /// The election's current term as this voter knows it.
    public var term: UInt64?
    /// The leader this voter knows (`b…` base32); nil when it knows none.
    public var leader: String?
    /// The seq after which this authority assigns.
    public var base: UInt64?

    /// The authority's part; the election fields stay nil until set.
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

/// One connected peer's standing in one group, for `status`.
public struct GroupPeerStatus: Codable, Sendable, Equatable {
    /// The peer's device key (`b…` base32).
    public var device: String
    /// The peer's committed high-water mark as it last told us.
    public var peerCommitted: UInt64?
    /// How many committed seqs we lack compared to that peer (0 when we are ahead or equal).
    public var behind: UInt64
    /// How many it lacks compared to us.
    public var ahead: UInt64
    /// The peer sent `caught_up` for our latest vector: it has sent everything we lacked then.
    public var caughtUp: Bool
    /// Items (receipts and envelopes) received from this peer in this group over this connection.
    public var itemsReceived: Int
    /// Items sent to it in this group over this connection.
    public var itemsSent: Int
    /// Items received from this device in this group since the daemon started, over all its
    /// connections (a reconnection, a tie-break, does not zero it).
    public var itemsReceivedTotal: Int
    /// Items sent to this device in this group since the daemon started, over all its connections.
    public var itemsSentTotal: Int
}

/// A connection that ended, for `status` (the newest 32 are kept).
public struct ClosedStatus: Codable, Sendable, Equatable {
    /// The peer's device key (`b…` base32); nil if it ended before the handshake told it.
    public var device: String?
    /// The remote address, `IP:PORT` ("?" when the socket did not say).
    public var address: String
    /// Why it ended.
    public var reason: String
    /// When it ended, in milliseconds since the Unix epoch.
    public var at: UInt64
}
