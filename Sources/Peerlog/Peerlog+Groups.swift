import PeerlogEngine
import PeerlogModel

extension Peerlog {
    /// Creates a group; this device becomes its owner and sequences it until told otherwise.
    @discardableResult
    public func createGroup(named name: String) async throws -> GroupID {
        try call { try replica.createGroup(name: name) }
    }

    /// Every group held here, by id.
    public func groups() async throws -> [PeerlogGroup] {
        try call { try replica.groupIDs().compactMap { try summary($0) } }
    }

    /// Groups this identity was invited to and has not answered (accept, or `leave` to decline).
    public func invitations() async throws -> [PeerlogGroup] {
        try await groups().filter(\.isInvitation)
    }

    /// The group with this id, or this name when exactly one group has it.
    public func group(_ idOrName: String) async throws -> PeerlogGroup {
        try call {
            let id: GroupID
            do { id = try replica.resolveGroup(idOrName) } catch { throw PeerlogError(.unknownGroup, "\(error)") }
            guard let found = try summary(id) else { throw PeerlogError(.unknownGroup, "this replica holds no group \(idOrName)") }
            return found
        }
    }

    /// The group `id`, or nil when it is not held here (or its creation has not arrived yet).
    public func group(_ id: GroupID) async throws -> PeerlogGroup? {
        try call { try summary(id) }
    }

    /// Members of `group`, added or invited, with their status.
    public func members(of group: GroupID, view: View = .tentative) async throws -> [PeerlogMember] {
        try call {
            try requireHeld(group)
            return try replica.members(of: group, view: view).map {
                PeerlogMember(identity: $0.member.identity, role: $0.member.role, status: $0.member.status, isCommitted: $0.status != .tentative)
            }
        }
    }

    /// Invites `identity` (it joins once it accepts). Admins and owners may invite.
    public func invite(_ identity: IdentityID, to group: GroupID, as role: Role = .member) async throws {
        try write(.memberAdded(identity: identity, role: role), to: group)
    }

    /// Accepts this identity's invitation to `group` (it arrived by sync or in an export).
    public func acceptInvitation(to group: GroupID) async throws { try write(.inviteAccepted, to: group) }

    /// Leaves `group` (or declines its invitation).
    public func leave(_ group: GroupID) async throws { try write(.memberLeft, to: group) }

    /// Removes `identity` from `group`.
    public func remove(_ identity: IdentityID, from group: GroupID) async throws { try write(.memberRemoved(identity: identity), to: group) }

    /// Gives `identity` another role in `group`.
    public func setRole(_ role: Role, of identity: IdentityID, in group: GroupID) async throws {
        try write(.roleChanged(identity: identity, role: role), to: group)
    }

    /// Renames `group`.
    public func rename(_ group: GroupID, to name: String) async throws { try write(.renamed(name: name), to: group) }

    /// Hands ordering of `group` to `authority` (this device alone, a relay, or elected voters).
    public func setSequencer(of group: GroupID, to authority: SequencerAuthority) async throws {
        try write(.sequencerChanged(authority), to: group)
    }

    /// Deletes `group` for every member once committed: its entities go, its log stays as evidence.
    public func deleteGroup(_ group: GroupID) async throws { try write(.deleted, to: group) }

    // MARK: Internals

    func write(_ op: GroupOperation, to group: GroupID) throws {
        try call {
            try requireHeld(group)
            try replica.append(op, to: group)
        }
    }

    func requireHeld(_ group: GroupID) throws {
        guard try replica.groupIDs().contains(group) else { throw PeerlogError(.unknownGroup, "this replica holds no group \(group)") }
    }

    func summary(_ id: GroupID) throws -> PeerlogGroup? {
        guard let state = try replica.state(of: id, view: .tentative) else { return nil }
        let me = state.member(identity)
        return PeerlogGroup(
            id: id, name: state.name, status: state.status, sequencer: state.authority,
            role: me?.status == .active ? me?.role : nil, isInvitation: me?.status == .pending,
            memberCount: state.members.values.count { $0.status == .active },
            committedSeq: try replica.committedSeq(of: id), tentativeCount: try replica.tentativeCount(of: id))
    }
}
