import PeerlogEngine
import PeerlogModel
import PeerlogNode

extension Peerlog {
    /// Creates a group; this device becomes its owner and sequences it until told otherwise.
    /// `maxMembers` counts pending invitations too. `encrypted` (the default): entity and
    /// application bodies are sealed end to end under keys only member devices hold, so a relay
    /// orders what it cannot read (docs/PROTOCOL.md §22). A member invited by identity writes
    /// at once (accepting starts an epoch of its own) and reads what others wrote once a
    /// member's device has its acceptance and shares the key in use.
    /// `keepsHistory`: members who join later read what was written before they joined (only
    /// with `encrypted`; plaintext groups always show it).
    @discardableResult
    public func createGroup(
        named name: String, maxMembers: Int = Peerlog.defaultMaxMembers, encrypted: Bool = true,
        keepsHistory: Bool = false
    ) async throws -> GroupID {
        try await call { [self] in
            try replica.createGroup(
                name: name, maxMembers: maxMembers,
                encryption: encrypted ? GroupEncryptionSettings(history: keepsHistory) : nil)
        }
    }

    /// Starts a new epoch in the encrypted `group` now: later writes are sealed under a fresh
    /// key that only the member devices known here receive. Removals and revocations do this by
    /// themselves; call it to rotate on a schedule of your own.
    @discardableResult
    public func rotateKey(of group: GroupID) async throws -> PeerlogWrite {
        try await call { [self] in
            try requireHeld(group)
            return PeerlogWrite(try replica.rotateEpochKey(of: group))
        }
    }

    /// Whether `group` is end-to-end encrypted and where its keys stand on this device.
    public func encryption(of group: GroupID) async throws -> GroupEncryptionStatus {
        try await call { [self] in
            let e = try replica.state(of: group, view: .tentative)?.encryption
            return GroupEncryptionStatus(
                encrypted: e != nil, epoch: e?.epoch ?? 0, history: e?.history ?? false,
                keysHeld: try replica.epochKeyCount(of: group),
                waitingForKey: try replica.sealedWaitingCount(of: group))
        }
    }

    /// The epoch keys this device holds (of `group`, or of every group), for `peerlog group keys`
    /// (docs/PROTOCOL.md §17.6). Secret: whoever holds them reads the groups.
    package func heldEpochKeys(of group: GroupID? = nil) async throws -> [(group: GroupID, key: EpochKey)] {
        try await call { [self] in try replica.heldEpochKeys(of: group) }
    }

    /// Every group held here, by id; also groups whose creation has not arrived yet (only
    /// receipts waiting for it), which `groups()` leaves out.
    public func groupIDs() async throws -> [GroupID] {
        try await call { [self] in try replica.groupIDs() }
    }

    /// The id of a group held here, given as a user types it: its id, or its name when no
    /// other group has it.
    public func groupID(_ idOrName: String) async throws -> GroupID {
        try await call { [self] in
            let id: GroupID
            do { id = try replica.resolveGroup(idOrName) } catch let e as ReplicaError {
                throw PeerlogError(PeerlogError.Code(engine: e.code), "\(e)")
            }
            guard try replica.knowsGroup(id) else {
                throw PeerlogError(.groupNotFound, "this replica holds no group \(id) (import an export of it first)")
            }
            return id
        }
    }

    /// How far `group` is ordered here: its committed seq and the writes waiting for its
    /// sequencer (known even before the group's creation arrives).
    public func progress(of group: GroupID) async throws -> PeerlogProgress {
        try await call { [self] in
            PeerlogProgress(
                committedSeq: try replica.committedSeq(of: group), tentativeCount: try replica.tentativeCount(of: group)
            )
        }
    }

    /// The status of the node running on this home in another process (`peerlog daemon`), asked
    /// through its control socket `HOME/peerlog.sock`; nil when nothing answers there.
    public func daemonStatus() async -> NodeStatus? {
        let socket = NodeConfiguration().controlSocketPath(home: home)
        return try? await Self.blocking { try ControlClient.status(socketPath: socket) }
    }

    /// Every group held here, by id.
    public func groups() async throws -> [PeerlogGroup] {
        try await call { [self] in try replica.groupIDs().compactMap { try summary($0) } }
    }

    /// Groups this identity was invited to and has not answered (accept, or `leave` to decline).
    public func invitations() async throws -> [PeerlogGroup] {
        try await groups().filter(\.isInvitation)
    }

    /// The group with this id, or this name when exactly one group has it.
    public func group(_ idOrName: String) async throws -> PeerlogGroup {
        try await call { [self] in
            let id: GroupID
            do { id = try replica.resolveGroup(idOrName) } catch let e as ReplicaError {
                throw PeerlogError(PeerlogError.Code(engine: e.code), "\(e)")
            }
            guard let found = try summary(id) else {
                throw PeerlogError(.groupNotFound, "this replica holds no group \(idOrName)")
            }
            return found
        }
    }

    /// The group `id` as `view` shows it, or nil when it is not held here (or its creation has
    /// not arrived in that view yet).
    public func group(_ id: GroupID, view: View = .tentative) async throws -> PeerlogGroup? {
        try await call { [self] in try summary(id, view: view) }
    }

    /// Members of `group`, added or invited, with their status.
    public func members(of group: GroupID, view: View = .tentative) async throws -> [PeerlogMember] {
        try await call { [self] in
            try requireHeld(group)
            return try replica.members(of: group, view: view).map {
                var seq: UInt64?
                if case .committed(let s) = $0.status { seq = s }
                return PeerlogMember(
                    identity: $0.member.identity, role: $0.member.role, status: $0.member.status, seq: seq)
            }
        }
    }

    /// Invites `identity` (it joins once it accepts). Admins and owners may invite.
    @discardableResult
    public func invite(_ identity: IdentityID, to group: GroupID, as role: Role = .member) async throws -> PeerlogWrite
    {
        try await write(.memberAdded(identity: identity, role: role), to: group)
    }

    /// Accepts this identity's invitation to `group` (it arrived by sync or in an export).
    @discardableResult
    public func acceptInvitation(to group: GroupID) async throws -> PeerlogWrite {
        try await write(.inviteAccepted, to: group)
    }

    /// Leaves `group` (or declines its invitation).
    @discardableResult
    public func leave(_ group: GroupID) async throws -> PeerlogWrite { try await write(.memberLeft, to: group) }

    /// Removes `identity` from `group`.
    @discardableResult
    public func remove(_ identity: IdentityID, from group: GroupID) async throws -> PeerlogWrite {
        try await write(.memberRemoved(identity: identity), to: group)
    }

    /// Gives `identity` another role in `group`.
    @discardableResult
    public func setRole(_ role: Role, of identity: IdentityID, in group: GroupID) async throws -> PeerlogWrite {
        try await write(.roleChanged(identity: identity, role: role), to: group)
    }

    /// Renames `group`.
    @discardableResult
    public func rename(_ group: GroupID, to name: String) async throws -> PeerlogWrite {
        try await write(.renamed(name: name), to: group)
    }

    /// Hands ordering of `group` to `authority` (this device alone, a relay, or elected voters).
    @discardableResult
    public func setSequencer(of group: GroupID, to authority: SequencerAuthority) async throws -> PeerlogWrite {
        try await write(.sequencerChanged(authority), to: group)
    }

    /// Deletes `group` for every member once committed: its entities go, its log stays as evidence.
    @discardableResult
    public func deleteGroup(_ group: GroupID) async throws -> PeerlogWrite { try await write(.deleted, to: group) }

    // MARK: Internals

    func write(_ op: GroupOperation, to group: GroupID) async throws -> PeerlogWrite {
        let written = try await call { [self] in
            try requireHeld(group)
            return PeerlogWrite(try replica.append(op, to: group))
        }
        offerNow()
        return written
    }

    func requireHeld(_ group: GroupID) throws {
        guard try replica.knowsGroup(group) else {
            throw PeerlogError(.groupNotFound, "this replica holds no group \(group)")
        }
    }

    func summary(_ id: GroupID, view: View = .tentative) throws -> PeerlogGroup? {
        guard let state = try replica.state(of: id, view: view) else { return nil }
        let me = state.member(identity)
        return PeerlogGroup(
            id: id, name: state.name, status: state.status, sequencer: state.authority, maxMembers: state.maxMembers,
            createdBy: state.createdBy,
            role: me?.status == .active ? me?.role : nil, isInvitation: me?.status == .pending,
            invitedRole: me?.status == .pending ? me?.role : nil,
            memberCount: state.members.values.count { $0.status == .active },
            committedSeq: try replica.committedSeq(of: id), tentativeCount: try replica.tentativeCount(of: id))
    }
}

/// An encrypted group's keys as this device sees them (docs/PROTOCOL.md §22).
public struct GroupEncryptionStatus: Sendable, Hashable {
    /// Whether bodies are sealed end to end (set when the group was created).
    public let encrypted: Bool
    /// Epochs so far: one per rotation (at creation, after a departure or a revocation, on demand,
    /// and when a member that holds no key in use writes).
    public let epoch: UInt64
    /// Whether members who join later read what was written before.
    public let history: Bool
    /// Epoch keys this device holds.
    public let keysHeld: Int
    /// Committed receipts this device cannot open yet: they apply when their key arrives.
    public let waitingForKey: Int
}
