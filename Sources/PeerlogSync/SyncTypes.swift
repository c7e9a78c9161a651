import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer

/// What the node must do after a session call, in order.
public enum SyncAction: Sendable {
    /// Send these bytes as one application message.
    case send([UInt8])
    /// Close the connection (after sending what came before).
    case close(reason: String)
    /// Report this to the node (status, logs, fan-out, elections); no reply is owed.
    case event(SyncEvent)
    /// Verify, store and apply what the peer sent, then hand the outcome to
    /// ``SyncSession/ingested(_:)`` before any other call on the session. Always the last
    /// action of its call: what follows depends on the outcome.
    case ingest(SyncIngest)
    /// Record the vector the peer said it holds for a group (the `peer_vectors` table).
    case recordPeerVector(PeerVector)
}

/// A batch the peer sent, parsed and checked against its group, for the driver to ingest.
public struct SyncIngest: Sendable {
    /// The group the batch is for, one this session syncs with the peer.
    public let group: GroupID
    /// The receipts of a `receipts` or `commits` message (empty for `envelopes`).
    public let receipts: [Receipt]
    /// The envelopes of an `envelopes` or `commits` message (empty for `receipts`).
    public let envelopes: [Envelope]
    /// The peer's device (recorded with what it sent, e.g. as the sender of an invalid receipt).
    public let from: DeviceID
    /// The peer's identity (a snapshot is taken only from an active member, §23.3).
    public var sender: IdentityID? = nil
    /// A `snapshot` message's bundle: install it instead (`receipts` and `envelopes` are empty).
    public var snapshot: SnapshotBundle? = nil
    /// The node trusts the peer to start a group this replica holds nothing of
    /// (`SyncSession.Options.trustsPeerForBootstrap`).
    public var trustedForBootstrap = false
}

/// A peer's `vector` message for a group: what it said it holds (§15.2.4).
public struct PeerVector: Sendable, Equatable {
    /// The device that sent the vector.
    public let peer: DeviceID
    /// The group the vector is for.
    public let group: GroupID
    /// Its committed high-water mark.
    public let committed: UInt64
    /// Its contiguous counter per author (authors it did not list hold nothing).
    public let authors: [AuthorCounter]
}

/// Something the session reports to the node, through ``SyncAction/event(_:)``.
public enum SyncEvent: Sendable {
    /// Hello exchanged; these groups are synced (more may join: `groupAdded`).
    case ready(groups: [GroupID])
    /// A group became synced after hello (an offer by vector, e.g. a live invitation).
    case groupAdded(group: GroupID)
    /// The peer has sent everything we lacked as of the vector we sent.
    case caughtUp(group: GroupID)
    /// What the peer sent was ingested; the node fans the replica's changes out to other sessions.
    case ingested(group: GroupID, report: IngestReport)
    /// We are closing: the peer broke the protocol or went over a limit (we sent "error").
    case protocolError(String)
    /// The peer sent "error" and is closing.
    case peerError(code: String, message: String)
    /// A well-formed message of a type we do not know was ignored.
    case ignoredUnknownMessage(type: String)
    /// A vector for a group we neither offer nor lack was ignored.
    case ignoredVector(group: GroupID)
    /// The peer's hello offered a group we hold and do not share with it (§15.2.3): ignored.
    case ignoredOffer(group: GroupID)
    /// We stopped syncing the group with this peer and sent "unshared" (membership changed).
    case withdrew(group: GroupID, reason: String)
    /// The peer stopped syncing the group with us ("unshared").
    case unsharedByPeer(group: GroupID, reason: String)
    /// A request we sent (`id`) got no answer within `requestTimeoutMs`: sent again under a new
    /// id, this being send number `attempt` of at most `maxRequestAttempts` (§15.2.7).
    case requestRepeated(group: GroupID, id: UInt64, attempt: Int, waitedMs: UInt64)
    /// Unsent batches went over `maxQueuedBatches`: dropped; resending from the peer's vector.
    case resync
    /// A message for the group's elected sequencer from this peer's device (§18.3).
    case election(group: GroupID, from: DeviceID, SequencerMessage<CID>)
    /// Items the peer sent were refused by our replica: invalid signatures or certificates
    /// (possible forgeries), a full queue, an envelope not from the sequencer.
    case rejected(group: GroupID, items: [RejectedItem])
    /// The peer's sequencer refused receipts we sent it (§19.2).
    case refusedByPeer(group: GroupID, items: [RefusedReceipt])
    /// The peer sent device revocations (parsed, signatures verified); the node stores them.
    /// `invalid` counts the items whose signature did not verify (dropped).
    case revocations([DeviceRevocation], invalid: Int)
    /// A blob request or answer from the peer (§24.3), for the node's blob transfers.
    case blob(BlobMessage)
}

/// Counters of one direction.
public struct SyncTraffic: Sendable, Equatable {
    /// Items (receipts and envelopes) in the batch messages counted.
    public var items = 0
    /// Batch messages (`receipts`, `envelopes`, `commits`).
    public var messages = 0
    /// Bytes of those messages, encoded (whole application messages).
    public var bytes = 0
    /// All counters zero.
    public init() {}
}

/// One synced group as the session sees it.
public struct SyncGroupStatus: Sendable {
    /// The synced group.
    public let group: GroupID
    /// The peer's committed mark as last known (its vector, raised by what was exchanged); nil before its vector.
    public let peerCommitted: UInt64?
    /// Our committed mark for the group: the replica's when it can be read, else the session's
    /// last known.
    public let localCommitted: UInt64
    /// How far the peer is ahead of us (0 if not).
    public var behind: UInt64 { peerCommitted.map { $0 > localCommitted ? $0 - localCommitted : 0 } ?? 0 }
    /// How far we are ahead of the peer (0 if not).
    public var ahead: UInt64 { peerCommitted.map { localCommitted > $0 ? localCommitted - $0 : 0 } ?? 0 }
    /// Receipts and envelopes (items), batch messages and their bytes.
    public let sent: SyncTraffic
    /// Same counters for the batches the peer sent us, counted once ingested.
    public let received: SyncTraffic
    /// We sent "caught_up" for the peer's latest vector.
    public let caughtUpSent: Bool
    /// The peer sent "caught_up" for our vector.
    public let caughtUpReceived: Bool
}

/// A snapshot of one session, from ``SyncSession/status()`` (§15.4).
public struct SyncSessionStatus: Sendable {
    /// The protocol version agreed in hello; nil before the peer's hello.
    public let version: UInt64?
    /// The synced groups, in the order they were accepted.
    public let groups: [SyncGroupStatus]
    /// Batch messages we may still send / the peer may still send us.
    public let creditAvailable: UInt64
    /// (`creditAvailable` is ours, `creditGranted` the peer's: credit we granted, not yet used.)
    public let creditGranted: UInt64
    /// Unsent batch messages in the queue (past `maxQueuedBatches` they are dropped: `.resync`).
    public let queuedBatches: Int
    /// Requests we sent for which the peer's `done` has not come.
    public let requestsInFlight: Int
    /// Messages from the peer that were dropped without error: unknown types, vectors, elections
    /// and `unshared` for groups not shared, and late messages for groups we withdrew.
    public let ignoredMessages: Int
    /// The session ended after an error, ours or the peer's (`receive`, `ingested` and `grant` then
    /// return no actions).
    public let closed: Bool
}

/// One item of a peer's batch that our replica refused, with what it claims.
public struct RejectedItem: Sendable, Equatable {
    /// The receipt's CID (for an envelope, the CID it names).
    public let cid: CID
    /// The author device and identity the receipt claims (nil for an envelope).
    public let author: DeviceID?
    /// The identity the receipt's certificate claims (nil for an envelope).
    public let identity: IdentityID?
    /// Why the replica refused it, as the replica worded it.
    public let reason: String
    /// Its signature or certificate failed: a forgery or corruption, recorded as evidence.
    public let invalid: Bool
}

extension SyncAction {
    /// The action ends the session (`.close`).
    public var closes: Bool {
        if case .close = self { true } else { false }
    }

    /// An ingest of a snapshot sent as a blob (§23.3): the node fetches the blob first.
    public var holdsSnapshotBlob: Bool {
        if case .ingest(let batch) = self { return batch.snapshot?.blob != nil }
        return false
    }
}
