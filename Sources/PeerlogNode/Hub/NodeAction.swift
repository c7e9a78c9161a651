import Logging
import PeerlogChannel
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import PeerlogSync

/// One established connection as the node's policy sees it (no socket: the hub keeps those).
struct NodeConnection: Sendable, Equatable {
    let id: UInt64
    /// Dialed by this node (from the local side's point of view).
    let outbound: Bool
    let remote: String
    let peer: DeviceCertificate
    /// When the handshake finished (milliseconds since the epoch).
    let since: UInt64
}

/// Why the node closes a connection. `description` is the text of the close record the peer
/// receives (docs/PROTOCOL.md §14), so it must not change.
enum NodeCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// Another connection to the same device won the tie-break (`TieBreak`).
    case duplicateConnection
    /// A group operation removed what we shared with the peer's identity.
    case noLongerAdmitted(String)
    /// The sync session closed it (protocol error, limit).
    case session(String)
    /// The peer's device was revoked by its identity (docs/PROTOCOL.md §3.6); the text is the
    /// revocation's reason, sent as the close record so the revoked device learns why.
    case revoked(String)
    /// The node is stopping.
    case shuttingDown

    var description: String {
        switch self {
        case .duplicateConnection: "duplicate connection (tie-break)"
        case .noLongerAdmitted(let why): "no longer admitted: \(why)"
        case .session(let why): why
        case .revoked(let why): why
        case .shuttingDown: "shutting down"
        }
    }

    /// Whether a connection ended because one side's tie-break dropped it: our own close, or
    /// the close record of a peer running the same policy (whose text is this enum's).
    static func isDuplicateConnection(_ reason: ChannelCloseReason) -> Bool {
        switch reason {
        case .local(let text), .remote(let text): text == NodeCloseReason.duplicateConnection.description
        default: false
        }
    }
}

/// Who is let in: our identity, configured ones, members of groups we hold, the relays our
/// groups name (or anyone, for an open relay).
struct NodeAdmission: Sendable, Equatable {
    /// Our identity, `NodeConfiguration.allow` and identities paired since the start.
    private(set) var configured: Set<IdentityID>
    let open: Bool
    private(set) var allowed: Set<IdentityID>
    private(set) var relays: Set<RelayEndpoint> = []
    /// Revoked devices and the reason each is refused with (docs/PROTOCOL.md §3.6).
    private(set) var revoked: [RevokedDevice: String] = [:]

    init(configured: Set<IdentityID>, open: Bool) {
        self.configured = configured
        self.open = open
        allowed = configured
    }

    /// Lets `identity` in from now on, as `allow` would (a pairing); false if it already was.
    mutating func admit(_ identity: IdentityID) -> Bool {
        guard configured.insert(identity).inserted else { return false }
        allowed.insert(identity)
        return true
    }

    /// Whether a device of this identity may start a group this node holds nothing of from its
    /// snapshot: our own identity (a linked device), or one named by `allow` or a pairing (an
    /// inviter). Members of other groups we share are let in, but not trusted for this.
    func trustsForBootstrap(_ identity: IdentityID) -> Bool { configured.contains(identity) }

    /// Whether a device of this identity would be let in (for dialing discovered peers).
    func mayConnect(identity: IdentityID) -> Bool { allowed.contains(identity) }

    func decide(_ certificate: DeviceCertificate) -> AuthorizationDecision {
        if let why = revoked[RevokedDevice(certificate)] { return .deny(why) }
        if open || allowed.contains(certificate.identity) { return .allow }
        if relays.contains(where: { $0.key == certificate.device }) { return .allow }
        return .deny(
            "identity \(certificate.identity) is not ours, not a member of a group we hold, not a relay of one, and not allowed for pairing"
        )
    }

    /// Takes the replica's revocations (device → reason); true when they changed.
    mutating func update(revoked now: [RevokedDevice: String]) -> Bool {
        defer { revoked = now }
        return now != revoked
    }

    /// Takes the replica's members and named relays; says which of the two changed.
    mutating func update(members: Set<IdentityID>, relays named: Set<RelayEndpoint>) -> (members: Bool, relays: Bool) {
        let now = configured.union(members)
        let changed = (now != allowed, named != relays)
        allowed = now
        relays = named
        return changed
    }
}

/// A device as a revocation names it: a revocation applies only to a device whose certificate
/// names the identity that signed it (docs/PROTOCOL.md §3.6).
struct RevokedDevice: Hashable, Sendable {
    let identity: IdentityID
    let device: DeviceID

    init(identity: IdentityID, device: DeviceID) {
        self.identity = identity
        self.device = device
    }

    init(_ certificate: DeviceCertificate) { self.init(identity: certificate.identity, device: certificate.device) }
    init(_ revocation: DeviceRevocation) { self.init(identity: revocation.identity, device: revocation.device) }
}

/// A message an elected sequencer wants sent to a voter.
struct ElectionSend: Sendable, Equatable {
    let to: DeviceID
    let group: GroupID
    let message: SequencerMessage<CID>
}

/// What `NodeStateMachine` asks its driver to do, in order.
enum NodeAction: Sendable, Equatable {
    /// Create the connection's sync session and perform its `start()`.
    case startSession(UInt64)
    /// Forget the connection's session and close it with this reason (a close record).
    case close(UInt64, NodeCloseReason)
    /// The connection is gone: forget its session.
    case dropSession(UInt64)
    /// Tell the session the replica's group changed (`SyncSession.localChanged`).
    case offerChange(GroupID, to: UInt64)
    /// Every group the replica holds changed (another process wrote): `offerChange` of each
    /// group to each of these sessions, group by group.
    case offerAllGroups(to: [UInt64])
    /// These groups changed (another process wrote, or a peer's ingest): `offerChange` of each
    /// to each of these sessions.
    case offerChanges([GroupID], to: [UInt64])
    /// Run `SyncSession.membershipChanged(groups:)` for these groups (nil: all of them), then
    /// report `membershipRechecked(_:)`.
    case recheckMembership(UInt64, groups: [GroupID]?)
    /// Have the session carry an election message to its peer.
    case sendElection(GroupID, SequencerMessage<CID>, to: UInt64)
    /// Hand a voter's message to the elected sequencers; report with `electionOutput`.
    case receiveElection(GroupID, from: DeviceID, SequencerMessage<CID>)
    /// One tick of the elected sequencers; report with `electionOutput`.
    case tickElection
    /// Check revocations, then `observeChanges`.
    case pollChangeStamp
    /// Read the replica's stamps and what changed since `lastStamp`; report with
    /// `changesObserved(stamp:groupOperations:changes:)`.
    case observeChanges
    /// Pass the time to these sessions (`SyncSession.tick(now:)`: requests in flight time out).
    case tickSessions([UInt64], now: UInt64)
    /// Read members and named relays of these groups (nil: all; report with
    /// `membershipObserved`) and refresh their elected sequencers.
    case refreshMembership(groups: [GroupID]?)
    /// The identities let in changed (discovered peers may be dialed now).
    case admissionChanged
    /// The relays our groups name changed.
    case relaysChanged(Set<RelayEndpoint>)
    /// Retry the replica's pending queue; backfill it asks for goes to this session, if any.
    case retryQueued(backfillVia: UInt64?)
    case log(Logger.Level, String)
}
