/// A group as this replica sees it (tentative view, unless a call says otherwise).
public struct PeerlogGroup: Sendable, Hashable, Identifiable {
    /// The group's id (random, 16 bytes).
    public let id: GroupID
    /// Its current name.
    public let name: String
    /// Active, or deleted.
    public let status: GroupStatus
    /// Who orders the group's writes.
    public let sequencer: SequencerAuthority
    /// Most members, pending invitations included.
    public let maxMembers: Int
    /// The identity that created the group.
    public let createdBy: IdentityID
    /// This identity's role, when it is an active member.
    public let role: Role?
    /// True while this identity is invited and has not accepted (`acceptInvitation`).
    public let isInvitation: Bool
    /// The role offered, while `isInvitation`.
    public let invitedRole: Role?
    /// Active members.
    public let memberCount: Int
    /// The group's committed high-water mark (the last seq held in order).
    public let committedSeq: UInt64
    /// Writes held here that no sequencer has ordered yet.
    public let tentativeCount: Int
}

/// A member of a group.
public struct PeerlogMember: Sendable, Hashable {
    /// The member's identity.
    public let identity: IdentityID
    /// Owner, admin or member.
    public let role: Role
    /// Invited (pending), active, removed or left.
    public let status: MemberStatus
    /// The seq of the receipt that last changed the member's role or status; nil while that
    /// receipt is still tentative.
    public let seq: UInt64?
    /// False while the receipt that made it so is still tentative.
    public var isCommitted: Bool { seq != nil }
}

/// How far a group is ordered on this replica.
public struct PeerlogProgress: Sendable, Hashable {
    /// The committed high-water mark (the last seq held in order).
    public let committedSeq: UInt64
    /// Writes held here that no sequencer has ordered yet.
    public let tentativeCount: Int
}
