import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import Testing

/// The who-may-send-what rules of docs/PROTOCOL.md §9. Expected verdicts are written out by
/// hand, never derived from `GroupRules`, so a change in the rules fails a test.
struct GroupRulesTests {
    // MARK: Fixtures

    static func identity(_ n: UInt8) -> IdentityID { try! IdentityID(bytes: [UInt8](repeating: n, count: 32)) }
    static func device(_ n: UInt8) -> DeviceID { try! DeviceID(bytes: [UInt8](repeating: n, count: 32)) }
    static let group = try! GroupID(bytes: Array(0..<16))
    static let senderDevice = device(0xd0)

    /// A sender's standing in the group, the columns of the matrix.
    enum Standing: String, CaseIterable, Sendable {
        case owner, admin, member, pending, removed, left, stranger

        var identity: IdentityID {
            switch self {
            case .owner: GroupRulesTests.identity(0x10)
            case .admin: GroupRulesTests.identity(0x20)
            case .member: GroupRulesTests.identity(0x30)
            case .pending: GroupRulesTests.identity(0x40)
            case .removed: GroupRulesTests.identity(0x50)
            case .left: GroupRulesTests.identity(0x60)
            case .stranger: GroupRulesTests.identity(0x70)
            }
        }
    }

    /// An active member that operations act on (removed, promoted).
    static let target = identity(0x80)
    /// Someone never added, to be invited.
    static let newcomer = identity(0x90)

    /// One identity in each standing (the stranger has no entry), plus `target`. Built by hand
    /// rather than through the rules, so the matrix does not depend on what it tests.
    static func standingState() -> GroupState {
        let entries: [(IdentityID, Role, MemberStatus)] = [
            (Standing.owner.identity, .owner, .active),
            (Standing.admin.identity, .admin, .active),
            (Standing.member.identity, .member, .active),
            (Standing.pending.identity, .member, .pending),
            (Standing.removed.identity, .member, .removed),
            (Standing.left.identity, .member, .left),
            (target, .member, .active),
        ]
        var members = [IdentityID: Member]()
        for (id, role, status) in entries { members[id] = Member(identity: id, role: role, status: status) }
        return GroupState(
            group: group, name: "Fixture", status: .active, maxMembers: GroupLimits.defaultMaxMembers,
            createdBy: Standing.owner.identity, authority: .solo(device(0x01)), members: members)
    }

    static func apply(
        _ op: GroupOperation, by sender: IdentityID, to state: GroupState?
    ) -> Result<GroupState, RuleViolation> {
        GroupRules.apply(op, sender: sender, device: senderDevice, group: group, to: state)
    }

    static func reason(_ result: Result<GroupState, RuleViolation>) -> String? {
        if case .failure(let v) = result { v.reason } else { nil }
    }

    /// Applies operations that must all be allowed, from a new group created by `owner`.
    static func build(
        _ steps: [(IdentityID, GroupOperation)], maxMembers: Int = GroupLimits.defaultMaxMembers
    ) throws -> GroupState {
        var state = try apply(.created(name: "Test", maxMembers: maxMembers), by: owner, to: nil).get()
        for (sender, op) in steps { state = try apply(op, by: sender, to: state).get() }
        return state
    }

    static let owner = identity(0x01)

    /// One operation of each of the 12 kinds, aimed at the fixture's `target` where it has one.
    static let operations: [GroupOperation] = [
        .created(name: "Again", maxMembers: 12),
        .memberAdded(identity: newcomer, role: .member),
        .inviteAccepted,
        .memberRemoved(identity: target),
        .memberLeft,
        .renamed(name: "Renamed"),
        .roleChanged(identity: target, role: .admin),
        .sequencerChanged(.solo(device(0x02))),
        .deleted,
        .entityPut(key: "color", value: "blue"),
        .entityDelete(key: "color"),
        .application(type: "app.note", body: .textMap(["text": "hi"])),
    ]

    // MARK: 1. The matrix

    struct Row: Sendable, CustomTestStringConvertible {
        let type: String
        /// ✓ allowed / ✗ refused, per Standing.allCases: owner admin member pending removed left stranger.
        let cells: String
        var testDescription: String { type }
    }

    static let expectedMatrix: [Row] = [
        //                                       own adm mem pnd rem left str
        Row(type: "group.created", cells: "✗ ✗ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "group.member_added", cells: "✓ ✓ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "group.invite_accepted", cells: "✗ ✗ ✗ ✓ ✗ ✗ ✗"),
        Row(type: "group.member_removed", cells: "✓ ✓ ✗ ✗ ✗ ✗ ✗"),
        // The fixture's owner is the only one, so it may not leave (see lastOwnerCannotLeave).
        Row(type: "group.member_left", cells: "✗ ✓ ✓ ✓ ✗ ✗ ✗"),
        Row(type: "group.renamed", cells: "✓ ✓ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "group.role_changed", cells: "✓ ✗ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "group.sequencer_changed", cells: "✓ ✗ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "group.deleted", cells: "✓ ✗ ✗ ✗ ✗ ✗ ✗"),
        Row(type: "entity.put", cells: "✓ ✓ ✓ ✗ ✗ ✗ ✗"),
        Row(type: "entity.delete", cells: "✓ ✓ ✓ ✗ ✗ ✗ ✗"),
        Row(type: "app.note", cells: "✓ ✓ ✓ ✗ ✗ ✗ ✗"),
    ]

    @Test func matrixCoversEveryOperationKind() {
        #expect(Self.expectedMatrix.map(\.type) == Self.operations.map(\.receiptType))
        #expect(Set(Self.expectedMatrix.map(\.type)).count == 12)
    }

    @Test(arguments: expectedMatrix) func matrix(_ row: Row) throws {
        let op = try #require(Self.operations.first { $0.receiptType == row.type })
        let cells = row.cells.split(separator: " ")
        try #require(cells.count == Standing.allCases.count)
        let state = Self.standingState()
        for (standing, cell) in zip(Standing.allCases, cells) {
            let result = Self.apply(op, by: standing.identity, to: state)
            switch cell {
            case "✓": #expect(Self.reason(result) == nil, "\(row.type) by \(standing) should be allowed")
            case "✗":
                let reason = Self.reason(result)
                #expect(reason != nil, "\(row.type) by \(standing) should be refused")
                #expect(reason?.isEmpty == false)
            default: Issue.record("bad cell \(cell)")
            }
            // Entity and application receipts never change the group.
            if case .success(let after) = result, [.entityPut, .entityDelete, .application].contains(Kind(op)) {
                #expect(after == state)
            }
        }
    }

    @Test func strangersAndFormerMembersGetTheNotActiveReason() {
        let state = Self.standingState()
        for standing in [Standing.removed, .left, .stranger] {
            for op in [GroupOperation.renamed(name: "x"), .entityPut(key: "k", value: 1), .deleted] {
                #expect(
                    Self.reason(Self.apply(op, by: standing.identity, to: state)) == "sender is not an active member")
            }
        }
        #expect(
            Self.reason(Self.apply(.entityPut(key: "k", value: 1), by: Standing.pending.identity, to: state))
                == "sender is not an active member")
        #expect(
            Self.reason(Self.apply(.memberLeft, by: Standing.removed.identity, to: state)) == "sender is not a member")
        #expect(
            Self.reason(Self.apply(.inviteAccepted, by: Standing.member.identity, to: state))
                == "sender is already an active member")
        #expect(
            Self.reason(Self.apply(.inviteAccepted, by: Standing.stranger.identity, to: state))
                == "sender has no pending invitation")
        #expect(
            Self.reason(
                Self.apply(
                    .memberAdded(identity: Self.newcomer, role: .member), by: Standing.member.identity, to: state))
                == "only an owner or admin may add members")
        #expect(
            Self.reason(Self.apply(.deleted, by: Standing.admin.identity, to: state))
                == "only an owner may delete the group")
    }

    @Test func createdOnANewGroup() throws {
        // Anyone may create a group that does not exist; the creator is its only member.
        for standing in Standing.allCases {
            let state = try Self.apply(.created(name: "New", maxMembers: 5), by: standing.identity, to: nil).get()
            #expect(
                state.group == Self.group && state.name == "New" && state.status == .active && state.maxMembers == 5)
            #expect(state.createdBy == standing.identity)
            #expect(state.authority == .solo(Self.senderDevice))
            #expect(
                state.members == [standing.identity: Member(identity: standing.identity, role: .owner, status: .active)]
            )
        }
        // Nothing else may come first.
        for op in Self.operations where op.receiptType != "group.created" {
            #expect(
                Self.reason(Self.apply(op, by: Standing.owner.identity, to: nil)) == "group does not exist",
                "\(op.receiptType)")
        }
        #expect(
            Self.reason(
                Self.apply(
                    .created(name: "Again", maxMembers: 12), by: Standing.owner.identity, to: Self.standingState()))
                == "group already exists")
    }

    @Test func deletedGroupRefusesEverything() throws {
        let deleted = try Self.apply(.deleted, by: Standing.owner.identity, to: Self.standingState()).get()
        #expect(deleted.status == .deleted)
        #expect(deleted.members == Self.standingState().members, "members are kept as they were")
        for op in Self.operations {
            for standing in Standing.allCases {
                #expect(
                    Self.reason(Self.apply(op, by: standing.identity, to: deleted)) == "group is deleted",
                    "\(op.receiptType) by \(standing)")
            }
        }
    }

    @Test func stateOfAnotherGroupIsRefused() throws {
        let other = try GroupID(bytes: [UInt8](repeating: 9, count: 16))
        let result = GroupRules.apply(
            .entityPut(key: "k", value: 1), sender: Standing.owner.identity, device: Self.senderDevice, group: other,
            to: Self.standingState())
        #expect(Self.reason(result)?.hasPrefix("receipt is for group") == true)
    }

    // MARK: 2. Target constraints

    @Test func whoMayAddWhichRole() throws {
        let admin = Self.identity(0x02)
        let x = Self.identity(0x03)
        let state = try Self.build([
            (Self.owner, .memberAdded(identity: admin, role: .admin)), (admin, .inviteAccepted),
        ])
        #expect(
            Self.reason(Self.apply(.memberAdded(identity: x, role: .admin), by: admin, to: state))
                == "an admin may add only members; only an owner may add an admin")
        #expect(
            Self.reason(Self.apply(.memberAdded(identity: x, role: .owner), by: admin, to: state))
                == "an admin may add only members; only an owner may add an owner")
        let byAdmin = try Self.apply(.memberAdded(identity: x, role: .member), by: admin, to: state).get()
        #expect(byAdmin.member(x) == Member(identity: x, role: .member, status: .pending))
        for role in Role.allCases {
            let byOwner = try Self.apply(.memberAdded(identity: x, role: role), by: Self.owner, to: state).get()
            #expect(byOwner.member(x) == Member(identity: x, role: role, status: .pending))
        }
        // Accepting keeps the invited role.
        let accepted = try Self.apply(
            .inviteAccepted, by: x,
            to: Self.apply(.memberAdded(identity: x, role: .admin), by: Self.owner, to: state).get()
        ).get()
        #expect(accepted.member(x) == Member(identity: x, role: .admin, status: .active))
    }

    @Test func addingAnExistingMemberIsRefusedButFormerMembersReturn() throws {
        let x = Self.identity(0x03)
        let y = Self.identity(0x04)
        let z = Self.identity(0x05)
        let state = try Self.build([
            (Self.owner, .memberAdded(identity: x, role: .member)),
            (Self.owner, .memberAdded(identity: y, role: .member)), (y, .inviteAccepted),
            (Self.owner, .memberAdded(identity: z, role: .member)), (z, .inviteAccepted),
        ])
        #expect(
            Self.reason(Self.apply(.memberAdded(identity: x, role: .member), by: Self.owner, to: state))?.hasSuffix(
                "is already invited") == true)
        #expect(
            Self.reason(Self.apply(.memberAdded(identity: y, role: .admin), by: Self.owner, to: state))?.hasSuffix(
                "is already a member") == true)
        #expect(
            Self.reason(Self.apply(.memberAdded(identity: Self.owner, role: .member), by: Self.owner, to: state))?
                .hasSuffix("is already a member") == true)

        let gone = try Self.build([
            (Self.owner, .memberAdded(identity: y, role: .member)), (y, .inviteAccepted),
            (Self.owner, .memberRemoved(identity: y)),
            (Self.owner, .memberAdded(identity: z, role: .member)), (z, .inviteAccepted), (z, .memberLeft),
            (Self.owner, .memberAdded(identity: x, role: .member)), (x, .memberLeft),  // declined
        ])
        #expect(
            gone.member(y)?.status == .removed && gone.member(z)?.status == .left && gone.member(x)?.status == .left)
        let back = try Self.apply(.memberAdded(identity: y, role: .admin), by: Self.owner, to: gone).get()
        #expect(back.member(y) == Member(identity: y, role: .admin, status: .pending))
        let returned = try Self.apply(.memberAdded(identity: z, role: .member), by: Self.owner, to: gone).get()
        #expect(returned.member(z) == Member(identity: z, role: .member, status: .pending))
        #expect(Self.reason(Self.apply(.inviteAccepted, by: y, to: gone)) == "sender has no pending invitation")
    }

    @Test func seatLimit() throws {
        // The owner plus 10 invitations: 11 of the default 12 seats.
        var steps = [(IdentityID, GroupOperation)]()
        for n in UInt8(0x20)..<0x2a {
            steps.append((Self.owner, .memberAdded(identity: Self.identity(n), role: .member)))
        }
        steps.append((Self.identity(0x20), .inviteAccepted))  // accepting does not take another seat
        let eleven = try Self.build(steps)
        #expect(GroupLimits.defaultMaxMembers == 12)
        #expect(eleven.occupiedSeats == GroupLimits.defaultMaxMembers - 1)

        let twelve = try Self.apply(
            .memberAdded(identity: Self.identity(0x40), role: .member), by: Self.owner, to: eleven
        ).get()
        #expect(twelve.occupiedSeats == 12)
        #expect(
            Self.reason(
                Self.apply(.memberAdded(identity: Self.identity(0x41), role: .member), by: Self.owner, to: twelve))
                == "group is full: all 12 seats (max_members) are taken by active and pending members")

        // Removing, declining and leaving free a seat.
        for (sender, op) in [
            (Self.owner, GroupOperation.memberRemoved(identity: Self.identity(0x21))),
            (Self.identity(0x22), .memberLeft), (Self.identity(0x20), .memberLeft),
        ] {
            let freed = try Self.apply(op, by: sender, to: twelve).get()
            #expect(freed.occupiedSeats == 11)
            #expect(
                Self.reason(
                    Self.apply(.memberAdded(identity: Self.identity(0x41), role: .member), by: Self.owner, to: freed))
                    == nil)
        }

        // A one-seat group is full with its creator.
        let solo = try Self.build([], maxMembers: 1)
        #expect(
            Self.reason(
                Self.apply(.memberAdded(identity: Self.identity(0x41), role: .member), by: Self.owner, to: solo))?
                .contains("all 1 seats") == true)
    }

    @Test func removalConstraints() throws {
        let owner2 = Self.identity(0x02)
        let admin = Self.identity(0x03)
        let admin2 = Self.identity(0x04)
        let member = Self.identity(0x05)
        let invitedAdmin = Self.identity(0x06)
        let invitedMember = Self.identity(0x07)
        let state = try Self.build([
            (Self.owner, .memberAdded(identity: owner2, role: .owner)), (owner2, .inviteAccepted),
            (Self.owner, .memberAdded(identity: admin, role: .admin)), (admin, .inviteAccepted),
            (Self.owner, .memberAdded(identity: admin2, role: .admin)), (admin2, .inviteAccepted),
            (Self.owner, .memberAdded(identity: member, role: .member)), (member, .inviteAccepted),
            (Self.owner, .memberAdded(identity: invitedAdmin, role: .admin)),
            (Self.owner, .memberAdded(identity: invitedMember, role: .member)),
        ])
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: Self.owner), by: Self.owner, to: state))
                == "a member cannot remove themselves; use group.member_left")
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: admin), by: admin, to: state))
                == "a member cannot remove themselves; use group.member_left")
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: admin2), by: admin, to: state))
                == "an admin may remove only members")
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: owner2), by: admin, to: state))
                == "an admin may remove only members")
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: invitedAdmin), by: admin, to: state))
                == "an admin may remove only members")
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: Self.newcomer), by: Self.owner, to: state))?.hasSuffix(
                "is not a member") == true)

        // Allowed: admin removes a member or a pending member; an owner removes anyone else, owners included.
        for (sender, target) in [
            (admin, member), (admin, invitedMember), (Self.owner, owner2), (Self.owner, admin2), (owner2, Self.owner),
            (Self.owner, invitedAdmin),
        ] {
            let after = try Self.apply(.memberRemoved(identity: target), by: sender, to: state).get()
            #expect(after.member(target)?.status == .removed)
            #expect(after.member(target)?.role == state.member(target)?.role, "role kept for the record")
            #expect(after.activeOwnerCount >= 1)
        }
        // Removing twice is refused.
        let removed = try Self.apply(.memberRemoved(identity: member), by: admin, to: state).get()
        #expect(
            Self.reason(Self.apply(.memberRemoved(identity: member), by: admin, to: removed))?.hasSuffix(
                "is not a member") == true)
    }

    @Test func lastOwnerCannotLeave() throws {
        let owner2 = Self.identity(0x02)
        let x = Self.identity(0x03)
        let alone = try Self.build([(Self.owner, .memberAdded(identity: x, role: .member)), (x, .inviteAccepted)])
        #expect(
            Self.reason(Self.apply(.memberLeft, by: Self.owner, to: alone))
                == "the last active owner may not leave; transfer ownership first")
        // A pending second owner does not count.
        let invited = try Self.apply(.memberAdded(identity: owner2, role: .owner), by: Self.owner, to: alone).get()
        #expect(Self.reason(Self.apply(.memberLeft, by: Self.owner, to: invited)) != nil)
        let two = try Self.apply(.inviteAccepted, by: owner2, to: invited).get()
        let after = try Self.apply(.memberLeft, by: Self.owner, to: two).get()
        #expect(after.member(Self.owner)?.status == .left && after.activeOwnerCount == 1)
        #expect(Self.reason(Self.apply(.memberLeft, by: owner2, to: after)) != nil)
        #expect(Self.reason(Self.apply(.memberLeft, by: Self.owner, to: after)) == "sender is not a member")
    }

    @Test func roleChangeConstraints() throws {
        let x = Self.identity(0x03)
        let invited = Self.identity(0x04)
        let state = try Self.build([
            (Self.owner, .memberAdded(identity: x, role: .member)), (x, .inviteAccepted),
            (Self.owner, .memberAdded(identity: invited, role: .member)),
        ])
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: Self.owner, role: .admin), by: Self.owner, to: state))
                == "the group must keep at least one active owner")
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: x, role: .member), by: Self.owner, to: state))?.hasSuffix(
                "is already member") == true)
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: Self.owner, role: .owner), by: Self.owner, to: state))?
                .hasSuffix("is already owner") == true)
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: invited, role: .admin), by: Self.owner, to: state))?
                .hasSuffix("is not an active member") == true)

        let promoted = try Self.apply(.roleChanged(identity: x, role: .owner), by: Self.owner, to: state).get()
        #expect(
            promoted.member(x) == Member(identity: x, role: .owner, status: .active) && promoted.activeOwnerCount == 2)
        // With two owners, one may step down (or be demoted by the other).
        let demoted = try Self.apply(.roleChanged(identity: Self.owner, role: .member), by: Self.owner, to: promoted)
            .get()
        #expect(demoted.member(Self.owner)?.role == .member && demoted.activeOwnerCount == 1)
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: x, role: .admin), by: x, to: demoted))
                == "the group must keep at least one active owner")
        #expect(
            Self.reason(Self.apply(.roleChanged(identity: x, role: .admin), by: Self.owner, to: demoted))
                == "only an owner may change roles")
    }

    @Test func appliedOperationsChangeTheState() throws {
        let state = try Self.build([
            (Self.owner, .renamed(name: "Renamed")),
            (Self.owner, .sequencerChanged(.elected(voters: [Self.device(1), Self.device(2)]))),
        ])
        #expect(state.name == "Renamed")
        #expect(state.authority == .elected(voters: [Self.device(1), Self.device(2)]))
    }

    @Test func invalidOperationsBuiltInCodeAreRefusedByTheRules() {
        let state = Self.standingState()
        let owner = Standing.owner.identity
        #expect(
            Self.reason(Self.apply(.renamed(name: ""), by: owner, to: state))
                == "group.renamed body: \"name\" must be 1 to 128 bytes of UTF-8, got 0")
        #expect(
            Self.reason(Self.apply(.created(name: "x", maxMembers: 0), by: owner, to: nil))
                == "group.created body: \"max_members\" must be 1 to 1000, got 0")
        #expect(
            Self.reason(
                Self.apply(.sequencerChanged(.elected(voters: [Self.device(2), Self.device(1)])), by: owner, to: state))?
                .contains("sorted") == true)
        #expect(
            Self.reason(Self.apply(.application(type: "group.custom", body: .null), by: owner, to: state))?.contains(
                "reserved") == true)
    }

    // MARK: 3. Bodies

    static let sampleOperations: [GroupOperation] =
        operations + [
            .memberAdded(identity: identity(7), role: .owner),
            .roleChanged(identity: identity(7), role: .member),
            .sequencerChanged(.elected(voters: (1...9).map { device($0) })),
            .sequencerChanged(.relay(key: device(3), address: "relay.example.org:4433")),
            .entityPut(key: "nested", value: .textMap(["a": [1, .bytes([2]), .null], "b": .bool(true)])),
            .application(type: "chat.message", body: .null),
            .application(type: "app-x_1.v2", body: "text body"),
            .application(type: "groupie", body: .int(-5)),
        ]

    @Test(arguments: sampleOperations) func bodyRoundTrips(_ op: GroupOperation) throws {
        #expect(try GroupOperation(receiptType: op.receiptType, body: op.body) == op)
        // Through the bytes, as a receipt carries it.
        let decoded = try CBORDecoder.decodeStrict(CBOREncoder.encode(op.body))
        #expect(try GroupOperation(receiptType: op.receiptType, body: decoded) == op)
    }

    /// Hand-written bodies (literal key names) and what they must parse to.
    static let validBodies: [(String, CBOR, GroupOperation)] = {
        let id7: CBOR = .bytes([UInt8](repeating: 7, count: 32))
        let name128 = String(repeating: "n", count: 128)
        let accents = String(repeating: "é", count: 64)  // 128 bytes, 64 characters
        let key256 = String(repeating: "k", count: 256)
        let address255 = String(repeating: "h", count: 250) + ":4433"
        let nine: CBOR = .array((1...9).map { .bytes([UInt8](repeating: $0, count: 32)) })
        return [
            (
                "group.created", .textMap(["name": "Family", "max_members": 12]),
                .created(name: "Family", maxMembers: 12)
            ),
            (
                "group.created", .textMap(["name": .text(name128), "max_members": 1000]),
                .created(name: name128, maxMembers: 1000)
            ),
            (
                "group.created", .textMap(["name": .text(accents), "max_members": 1]),
                .created(name: accents, maxMembers: 1)
            ),
            (
                "group.member_added", .textMap(["identity": id7, "role": "admin"]),
                .memberAdded(identity: identity(7), role: .admin)
            ),
            ("group.invite_accepted", .map([:]), .inviteAccepted),
            ("group.member_removed", .textMap(["identity": id7]), .memberRemoved(identity: identity(7))),
            ("group.member_left", .map([:]), .memberLeft),
            ("group.renamed", .textMap(["name": .text(name128)]), .renamed(name: name128)),
            (
                "group.role_changed", .textMap(["identity": id7, "role": "owner"]),
                .roleChanged(identity: identity(7), role: .owner)
            ),
            (
                "group.sequencer_changed", .textMap(["authority": .textMap(["kind": "solo", "device": id7])]),
                .sequencerChanged(.solo(device(7)))
            ),
            (
                "group.sequencer_changed", .textMap(["authority": .textMap(["kind": "elected", "voters": nine])]),
                .sequencerChanged(.elected(voters: (1...9).map { device($0) }))
            ),
            (
                "group.sequencer_changed",
                .textMap(["authority": .textMap(["kind": "relay", "key": id7, "address": .text(address255)])]),
                .sequencerChanged(.relay(key: device(7), address: address255))
            ),
            (
                "group.sequencer_changed",
                .textMap(["authority": .textMap(["kind": "relay", "key": id7, "address": "[::1]:65535"])]),
                .sequencerChanged(.relay(key: device(7), address: "[::1]:65535"))
            ),
            ("group.deleted", .map([:]), .deleted),
            ("entity.put", .textMap(["key": .text(key256), "value": .null]), .entityPut(key: key256, value: .null)),
            ("entity.delete", .textMap(["key": "k"]), .entityDelete(key: "k")),
            (
                "app.note", .textMap(["anything": [1, 2]]),
                .application(type: "app.note", body: .textMap(["anything": [1, 2]]))
            ),
        ]
    }()

    @Test func handWrittenBodiesParse() throws {
        for (type, body, expected) in Self.validBodies {
            #expect(try GroupOperation(receiptType: type, body: body) == expected, "\(type)")
            #expect(expected.body == body && expected.receiptType == type)
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let type: String
        let body: CBOR
        /// The exact reason expected.
        let reason: String
    }

    static let malformed: [Malformed] = {
        let id7: CBOR = .bytes([UInt8](repeating: 7, count: 32))
        func voters(_ ns: [UInt8]) -> CBOR {
            .textMap([
                "authority": .textMap([
                    "kind": "elected", "voters": .array(ns.map { .bytes([UInt8](repeating: $0, count: 32)) }),
                ])
            ])
        }
        func relay(_ address: String) -> CBOR {
            .textMap(["authority": .textMap(["kind": "relay", "key": id7, "address": .text(address)])])
        }
        let sc = "group.sequencer_changed body.authority"
        return [
            Malformed(
                testDescription: "missing key", type: "group.member_added", body: .textMap(["identity": id7]),
                reason: "group.member_added body: missing \"role\""),
            Malformed(
                testDescription: "extra key", type: "group.member_added",
                body: .textMap(["identity": id7, "role": "member", "note": "x"]),
                reason: "group.member_added body: unexpected key \"note\""),
            Malformed(
                testDescription: "extra key in an empty body", type: "group.invite_accepted", body: .textMap(["x": 1]),
                reason: "group.invite_accepted body: unexpected key \"x\""),
            Malformed(
                testDescription: "body not a map", type: "group.deleted", body: .null,
                reason: "group.deleted body must be a map"),
            Malformed(
                testDescription: "non-text key", type: "group.member_left", body: .map([1: 1]),
                reason: "group.member_left body must have text keys only"),
            Malformed(
                testDescription: "identity as text", type: "group.member_removed", body: .textMap(["identity": "bob"]),
                reason: "group.member_removed body: \"identity\" must be a 32-byte byte string"),
            Malformed(
                testDescription: "identity 31 bytes", type: "group.role_changed",
                body: .textMap(["identity": .bytes([UInt8](repeating: 7, count: 31)), "role": "admin"]),
                reason: "group.role_changed body: \"identity\" must be a 32-byte byte string"),
            Malformed(
                testDescription: "bad role", type: "group.member_added",
                body: .textMap(["identity": id7, "role": "superuser"]),
                reason: "group.member_added body: \"role\" must be one of owner, admin, member"),
            Malformed(
                testDescription: "role as a number", type: "group.role_changed",
                body: .textMap(["identity": id7, "role": 1]),
                reason: "group.role_changed body: \"role\" must be one of owner, admin, member"),
            Malformed(
                testDescription: "name empty", type: "group.created", body: .textMap(["name": "", "max_members": 12]),
                reason: "group.created body: \"name\" must be 1 to 128 bytes of UTF-8, got 0"),
            Malformed(
                testDescription: "name 129 bytes", type: "group.renamed",
                body: .textMap(["name": .text(String(repeating: "n", count: 129))]),
                reason: "group.renamed body: \"name\" must be 1 to 128 bytes of UTF-8, got 129"),
            Malformed(
                testDescription: "name 65 characters, 130 bytes", type: "group.renamed",
                body: .textMap(["name": .text(String(repeating: "é", count: 65))]),
                reason: "group.renamed body: \"name\" must be 1 to 128 bytes of UTF-8, got 130"),
            Malformed(
                testDescription: "name as bytes", type: "group.created",
                body: .textMap(["name": .bytes([0x61]), "max_members": 12]),
                reason: "group.created body: \"name\" must be text"),
            Malformed(
                testDescription: "max_members 0", type: "group.created",
                body: .textMap(["name": "g", "max_members": 0]),
                reason: "group.created body: \"max_members\" must be 1 to 1000, got 0"),
            Malformed(
                testDescription: "max_members 1001", type: "group.created",
                body: .textMap(["name": "g", "max_members": 1001]),
                reason: "group.created body: \"max_members\" must be 1 to 1000, got 1001"),
            Malformed(
                testDescription: "max_members huge", type: "group.created",
                body: .textMap(["name": "g", "max_members": .unsigned(.max)]),
                reason: "group.created body: \"max_members\" must be 1 to 1000, got \(Int.max)"),
            Malformed(
                testDescription: "max_members negative", type: "group.created",
                body: .textMap(["name": "g", "max_members": .int(-1)]),
                reason: "group.created body: \"max_members\" must be an unsigned integer"),
            Malformed(
                testDescription: "max_members as text", type: "group.created",
                body: .textMap(["name": "g", "max_members": "12"]),
                reason: "group.created body: \"max_members\" must be an unsigned integer"),
            Malformed(
                testDescription: "entity key empty", type: "entity.delete", body: .textMap(["key": ""]),
                reason: "entity.delete body: \"key\" must be 1 to 256 bytes of UTF-8, got 0"),
            Malformed(
                testDescription: "entity key 257 bytes", type: "entity.put",
                body: .textMap(["key": .text(String(repeating: "k", count: 257)), "value": 1]),
                reason: "entity.put body: \"key\" must be 1 to 256 bytes of UTF-8, got 257"),
            Malformed(
                testDescription: "entity.put without value", type: "entity.put", body: .textMap(["key": "k"]),
                reason: "entity.put body: missing \"value\""),
            Malformed(
                testDescription: "authority not a map", type: "group.sequencer_changed",
                body: .textMap(["authority": "solo"]),
                reason: "\(sc) must be a map"),
            Malformed(
                testDescription: "authority without kind", type: "group.sequencer_changed",
                body: .textMap(["authority": .textMap(["device": id7])]),
                reason: "\(sc): missing \"kind\""),
            Malformed(
                testDescription: "unknown authority kind", type: "group.sequencer_changed",
                body: .textMap(["authority": .textMap(["kind": "raft"])]),
                reason: "\(sc): \"kind\" must be one of solo, elected, relay"),
            Malformed(
                testDescription: "solo with voters", type: "group.sequencer_changed",
                body: .textMap(["authority": .textMap(["kind": "solo", "device": id7, "voters": []])]),
                reason: "\(sc): unexpected key \"voters\""),
            Malformed(
                testDescription: "unsorted voters", type: "group.sequencer_changed", body: voters([2, 1]),
                reason: "\(sc): \"voters\" must be sorted ascending by bytes, without duplicates"),
            Malformed(
                testDescription: "duplicate voters", type: "group.sequencer_changed", body: voters([1, 1]),
                reason: "\(sc): \"voters\" must be sorted ascending by bytes, without duplicates"),
            Malformed(
                testDescription: "10 voters", type: "group.sequencer_changed", body: voters(Array(1...10)),
                reason: "\(sc): \"voters\" must hold 1 to 9 devices, got 10"),
            Malformed(
                testDescription: "no voters", type: "group.sequencer_changed", body: voters([]),
                reason: "\(sc): \"voters\" must hold 1 to 9 devices, got 0"),
            Malformed(
                testDescription: "voter too short", type: "group.sequencer_changed",
                body: .textMap(["authority": .textMap(["kind": "elected", "voters": [.bytes([1])]])]),
                reason: "\(sc): \"voters\" must hold 32-byte byte strings"),
            Malformed(
                testDescription: "relay address empty", type: "group.sequencer_changed", body: relay(""),
                reason: "\(sc): \"address\" must be 1 to 255 bytes of UTF-8, got 0"),
            Malformed(
                testDescription: "relay address 256 bytes", type: "group.sequencer_changed",
                body: relay(String(repeating: "h", count: 251) + ":4433"),
                reason: "\(sc): \"address\" must be 1 to 255 bytes of UTF-8, got 256"),
            Malformed(
                testDescription: "relay address without port", type: "group.sequencer_changed",
                body: relay("relay.example.org"),
                reason: "\(sc): \"address\" must be host:port with a port of 1 to 65535"),
            Malformed(
                testDescription: "relay port 0", type: "group.sequencer_changed", body: relay("relay:0"),
                reason: "\(sc): \"address\" must be host:port with a port of 1 to 65535"),
            Malformed(
                testDescription: "relay port 65536", type: "group.sequencer_changed", body: relay("relay:65536"),
                reason: "\(sc): \"address\" must be host:port with a port of 1 to 65535"),
            Malformed(
                testDescription: "relay without host", type: "group.sequencer_changed", body: relay(":4433"),
                reason: "\(sc): \"address\" must be host:port with a port of 1 to 65535"),
            Malformed(
                testDescription: "unknown group.* type", type: "group.archived", body: .map([:]),
                reason: "unknown receipt type \"group.archived\": group.* and entity.* types are reserved"),
            Malformed(
                testDescription: "unknown entity.* type", type: "entity.patch", body: .textMap(["key": "k"]),
                reason: "unknown receipt type \"entity.patch\": group.* and entity.* types are reserved"),
        ]
    }()

    @Test(arguments: malformed) func malformedBodyIsRefused(_ c: Malformed) {
        #expect(throws: RuleViolation(c.reason)) { try GroupOperation(receiptType: c.type, body: c.body) }
    }

    @Test func authorityMapRoundTrips() throws {
        for a in [
            SequencerAuthority.solo(Self.device(1)), .elected(voters: [Self.device(1), Self.device(2)]),
            .relay(key: Self.device(3), address: "r:1"),
        ] {
            #expect(try SequencerAuthority(cborValue: a.cborValue) == a)
        }
        #expect(throws: RuleViolation("authority: \"voters\" must be sorted ascending by bytes, without duplicates")) {
            try SequencerAuthority(
                cborValue: SequencerAuthority.elected(voters: [Self.device(2), Self.device(1)]).cborValue)
        }
    }

    // MARK: 4. Determinism

    @Test func canonicalEncodingIgnoresInsertionOrder() throws {
        let x = Self.identity(0x03)
        let y = Self.identity(0x04)
        let z = Self.identity(0x05)
        let a = try Self.build([
            (Self.owner, .memberAdded(identity: x, role: .member)),
            (Self.owner, .memberAdded(identity: y, role: .admin)),
            (Self.owner, .memberAdded(identity: z, role: .member)),
            (x, .inviteAccepted), (z, .inviteAccepted),
        ])
        let b = try Self.build([
            (Self.owner, .memberAdded(identity: z, role: .member)),
            (Self.owner, .memberAdded(identity: y, role: .admin)),
            (z, .inviteAccepted),
            (Self.owner, .memberAdded(identity: x, role: .member)),
            (x, .inviteAccepted),
        ])
        #expect(CBOREncoder.encode(a.canonicalCBOR) == CBOREncoder.encode(b.canonicalCBOR))

        // The same entries in dictionaries of different sizes iterate in different orders.
        var c = a
        var bigger = [IdentityID: Member](minimumCapacity: 1000)
        for m in a.sortedMembers.reversed() { bigger[m.identity] = m }
        c.members = bigger
        #expect(CBOREncoder.encode(c.canonicalCBOR) == CBOREncoder.encode(a.canonicalCBOR))

        // Members come out sorted by identity bytes.
        let rows = try #require(a.canonicalCBOR["members"]?.arrayValue)
        #expect(rows.compactMap { $0.arrayValue?.first?.bytesValue } == [Self.owner, x, y, z].map(\.bytes))

        let changed = try Self.apply(.roleChanged(identity: x, role: .admin), by: Self.owner, to: a).get()
        #expect(CBOREncoder.encode(changed.canonicalCBOR) != CBOREncoder.encode(a.canonicalCBOR))
        let renamed = try Self.apply(.renamed(name: "Other"), by: Self.owner, to: a).get()
        #expect(CBOREncoder.encode(renamed.canonicalCBOR) != CBOREncoder.encode(a.canonicalCBOR))
    }

    @Test func canonicalEncodingGolden() throws {
        // docs/PROTOCOL.md §9.5: created by identity 01…, device 02…, then identity 03… invited as member.
        let state = try GroupRules.apply(
            .memberAdded(identity: Self.identity(0x03), role: .member), sender: Self.identity(0x01),
            device: Self.device(0x02), group: Self.group,
            to: GroupRules.apply(
                .created(name: "g", maxMembers: 12), sender: Self.identity(0x01), device: Self.device(0x02),
                group: Self.group, to: nil
            ).get()
        ).get()
        #expect(hexString(CBOREncoder.encode(state.canonicalCBOR)) == Self.goldenState)
    }

    /// Written out piece by piece from §9.5, not produced by the code under test.
    static let goldenState = [
        "a6",  // map(6), keys in deterministic order
        "646e616d65", "6167",  // "name": "g"
        "66737461747573", "66616374697665",  // "status": "active"
        "676d656d62657273", "82",  // "members": array(2), by identity bytes
        // [01…, "owner", "active"]
        "83", "5820" + String(repeating: "01", count: 32), "656f776e6572", "66616374697665",
        // [03…, "member", "pending"]
        "83", "5820" + String(repeating: "03", count: 32), "666d656d626572", "6770656e64696e67",
        "69617574686f72697479", "a2",  // "authority": map(2)
        "646b696e64", "64736f6c6f",  //   "kind": "solo"
        "66646576696365", "5820" + String(repeating: "02", count: 32),  //   "device": 02…
        "6a637265617465645f6279", "5820" + String(repeating: "01", count: 32),  // "created_by": 01…
        "6b6d61785f6d656d62657273", "0c",  // "max_members": 12
    ].joined()

    /// The case of an operation, without its payload, for grouping in assertions.
    enum Kind: Hashable {
        case entityPut, entityDelete, application, other

        init(_ op: GroupOperation) {
            switch op {
            case .entityPut: self = .entityPut
            case .entityDelete: self = .entityDelete
            case .application: self = .application
            default: self = .other
            }
        }
    }
}
