import PeerlogCrypto
import PeerlogModel

/// Why a receipt is refused: a malformed body or a rule of docs/PROTOCOL.md §9 it breaks.
/// The reason is a short sentence for people; it is the same on every replica (it is stored
/// as the receipt's rejection), so equality is on the reason. ``code`` is the
/// ``ReplicaError/Code`` a local write refused by it throws (``ReplicaError/init(_:file:line:)``).
public struct RuleViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// One sentence for people naming the rule broken, e.g. "group is deleted"; stored as the
    /// receipt's rejection, so every replica holds the same text.
    public let reason: String
    /// What kind of refusal: `notAMember`, `groupDeleted`, `notPermitted`, …
    public let code: ReplicaError.Code

    /// A refusal with its reason; `code` defaults to `.ruleViolation` when no more specific code fits.
    public init(_ reason: String, code: ReplicaError.Code = .ruleViolation) {
        self.reason = reason
        self.code = code
    }

    /// Equal when the reasons are equal; ``code`` is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.reason == rhs.reason }
    /// Hashes the reason only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(reason) }

    /// The reason.
    public var description: String { reason }
}

/// Who may send what in a group (docs/PROTOCOL.md §9.4).
///
/// A receipt is judged against the state its group had *before* it in the committed order, so
/// every replica reaches the same verdict. This is therefore a pure function of its arguments:
/// no clocks, no randomness, and nothing taken from a dictionary's iteration order.
public enum GroupRules {
    /// The state after `op` sent by `sender` (the author's identity; `device` the author
    /// device), or the reason it is refused. `state` is nil when the group does not exist yet.
    public static func apply(
        _ op: GroupOperation, sender: IdentityID, device: DeviceID, group: GroupID, to state: GroupState?
    ) -> Result<GroupState, RuleViolation> {
        Result { () throws(RuleViolation) in try next(op, sender: sender, device: device, group: group, state: state) }
    }

    static func next(
        _ op: GroupOperation, sender: IdentityID, device: DeviceID, group: GroupID, state: GroupState?
    ) throws(RuleViolation) -> GroupState {
        try op.validate()
        guard var state else {
            guard case .created(let name, let maxMembers, let encryption) = op else {
                throw RuleViolation("group does not exist", code: .groupNotFound)
            }
            return GroupState(
                group: group, name: name, status: .active, maxMembers: maxMembers, createdBy: sender,
                authority: .solo(device), members: [sender: Member(identity: sender, role: .owner, status: .active)],
                encryption: encryption.map { GroupEncryption(history: $0.history) })
        }
        guard state.group == group else {
            throw RuleViolation("receipt is for group \(group.string), the state is of group \(state.group.string)")
        }
        // Checked before "already exists": a deleted group's id is never reused either way,
        // and "deleted" is the more useful thing to tell.
        guard state.status == .active else { throw RuleViolation("group is deleted", code: .groupDeleted) }
        // A revoked device's receipts ordered after its revocation are refused, whatever they are.
        guard !state.revokedDevices.contains(GroupRevokedDevice(identity: sender, device: device)) else {
            throw RuleViolation(
                "author device \(device) was revoked by identity \(sender) in this group", code: .notPermitted)
        }

        switch op {
        case .created:
            throw RuleViolation("group already exists")

        case .inviteAccepted:
            switch state.members[sender]?.status {
            case .pending: state.members[sender]!.status = .active
            case .active: throw RuleViolation("sender is already an active member")
            case .removed, .left, nil: throw RuleViolation("sender has no pending invitation")
            }

        case .memberLeft:
            guard let me = state.members[sender], me.status == .pending || me.status == .active else {
                throw RuleViolation("sender is not a member", code: .notAMember)
            }
            if me.status == .active, me.role == .owner, state.activeOwnerCount < 2 {
                throw RuleViolation("the last active owner may not leave; transfer ownership first")
            }
            state.members[sender]!.status = .left
            if me.status == .active { state.encryption?.validKeys = [] }

        case .memberAdded(let target, let role):
            let senderRole = try activeRole(of: sender, in: state)
            guard senderRole != .member else {
                throw RuleViolation("only an owner or admin may add members", code: .notPermitted)
            }
            guard senderRole == .owner || role == .member else {
                throw RuleViolation(
                    "an admin may add only members; only an owner may add an \(role.rawValue)", code: .notPermitted)
            }
            switch state.members[target]?.status {
            case .active: throw RuleViolation("identity \(target.short) is already a member")
            case .pending: throw RuleViolation("identity \(target.short) is already invited")
            case .removed, .left, nil: break
            }
            // Pending invitations hold a seat, so accepting can never overfill the group.
            guard state.occupiedSeats < state.maxMembers else {
                throw RuleViolation(
                    "group is full: all \(state.maxMembers) seats (max_members) are taken by active and pending members",
                    code: .groupFull)
            }
            state.members[target] = Member(identity: target, role: role, status: .pending)

        case .memberRemoved(let target):
            let senderRole = try activeRole(of: sender, in: state)
            guard senderRole != .member else {
                throw RuleViolation("only an owner or admin may remove members", code: .notPermitted)
            }
            // Owners cannot remove themselves, so removal can never take away the last owner.
            guard target != sender else {
                throw RuleViolation("a member cannot remove themselves; use group.member_left")
            }
            guard let t = state.members[target], t.status == .pending || t.status == .active else {
                throw RuleViolation("identity \(target.short) is not a member", code: .notAMember)
            }
            guard senderRole == .owner || t.role == .member else {
                throw RuleViolation("an admin may remove only members", code: .notPermitted)
            }
            state.members[target]!.status = .removed
            if t.status == .active { state.encryption?.validKeys = [] }

        case .renamed(let name):
            guard try activeRole(of: sender, in: state) != .member else {
                throw RuleViolation("only an owner or admin may rename the group", code: .notPermitted)
            }
            state.name = name

        case .roleChanged(let target, let role):
            guard try activeRole(of: sender, in: state) == .owner else {
                throw RuleViolation("only an owner may change roles", code: .notPermitted)
            }
            guard let t = state.members[target], t.status == .active else {
                throw RuleViolation("identity \(target.short) is not an active member", code: .notAMember)
            }
            guard t.role != role else { throw RuleViolation("identity \(target.short) is already \(role.rawValue)") }
            if t.role == .owner, state.activeOwnerCount < 2 {
                throw RuleViolation("the group must keep at least one active owner")
            }
            state.members[target]!.role = role

        case .sequencerChanged(let authority):
            guard try activeRole(of: sender, in: state) == .owner else {
                throw RuleViolation("only an owner may change the sequencer", code: .notPermitted)
            }
            // Voter sets change one voter at a time (docs/PROTOCOL.md §18.4).
            if case .elected(let old) = state.authority, case .elected(let new) = authority,
                Set(old).symmetricDifference(Set(new)).count > 1
            {
                throw RuleViolation(
                    "an elected voter set changes one voter at a time (\(Set(old).symmetricDifference(Set(new)).count) differ)"
                )
            }
            state.authority = authority

        case .deleted:
            guard try activeRole(of: sender, in: state) == .owner else {
                throw RuleViolation("only an owner may delete the group", code: .notPermitted)
            }
            state.status = .deleted

        case .deviceRevoked(let revocation):
            _ = try activeRole(of: sender, in: state)
            // The signature is the authority: a member may revoke only devices of its own identity.
            guard revocation.identity == sender else {
                throw RuleViolation(
                    "a revocation signed by identity \(revocation.identity.short) may be sent only by that identity",
                    code: .notPermitted)
            }
            guard revocation.verify().isValid else {
                throw RuleViolation("the revocation's signature does not verify", code: .invalidOperation)
            }
            let revoked = GroupRevokedDevice(identity: revocation.identity, device: revocation.device)
            guard !state.revokedDevices.contains(revoked) else {
                throw RuleViolation("device \(revocation.device.short) is already revoked in this group")
            }
            state.revokedDevices.insert(revoked)
            state.encryption?.validKeys = []

        case .key(let share):
            _ = try activeRole(of: sender, in: state)
            guard state.encryption != nil else {
                throw RuleViolation("group.key in a plaintext group", code: .invalidOperation)
            }
            if share.rotate {
                guard !state.encryption!.validKeys.contains(share.keyID) else {
                    throw RuleViolation("epoch key \(share.keyID) is already in use")
                }
                state.encryption!.validKeys = Array(
                    (state.encryption!.validKeys + [share.keyID]).suffix(GroupEncryption.maxValidKeys))
                state.encryption!.epoch += 1
            }

        case .sealed(let type, let body):
            _ = try activeRole(of: sender, in: state)
            guard let encryption = state.encryption else {
                // A plaintext group's application receipt may have any body, this shape too.
                guard !type.hasPrefix("entity.") else {
                    throw RuleViolation("a sealed \(type) body in a plaintext group", code: .invalidOperation)
                }
                break
            }
            guard encryption.validKeys.contains(body.keyID) else {
                throw RuleViolation(
                    encryption.validKeys.isEmpty
                        ? "the group has no epoch key in use (none yet, or a member left or a device was revoked since the last rotation)"
                        : "sealed under epoch key \(body.keyID), which is not in use in this group (retired by a removal or a revocation)"
                )
            }

        case .entityPut, .entityDelete, .entityWrite, .application:
            _ = try activeRole(of: sender, in: state)
            guard state.encryption == nil else {
                throw RuleViolation(
                    "an encrypted group takes entity and application bodies only sealed (docs/PROTOCOL.md §22.3)",
                    code: .invalidOperation)
            }
        }
        return state
    }

    /// The sender's role, if the sender is an active member; refused otherwise.
    static func activeRole(of sender: IdentityID, in state: GroupState) throws(RuleViolation) -> Role {
        guard let role = state.activeRole(of: sender) else {
            throw RuleViolation("sender is not an active member", code: .notAMember)
        }
        return role
    }
}
