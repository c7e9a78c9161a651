import PeerlogEncoding
import PeerlogModel

/// What a member may do in a group (docs/PROTOCOL.md §9.3).
public enum Role: String, CaseIterable, Hashable, Sendable {
    case owner, admin, member
}

/// Where a member stands. Only `active` members may act, except that a `pending` invitee may
/// accept or decline. `removed` and `left` entries are kept so the history stays visible and
/// the identity can be invited again.
public enum MemberStatus: String, CaseIterable, Hashable, Sendable {
    case pending, active, removed, left
}

/// One identity's entry in a group.
public struct Member: Hashable, Sendable {
    /// The member's identity (not a device: one identity may have several devices).
    public var identity: IdentityID
    /// What the member may do (§9.4).
    public var role: Role
    /// Whether the member may act now.
    public var status: MemberStatus

    /// An entry as given; nothing is checked here (the rules check on apply).
    public init(identity: IdentityID, role: Role, status: MemberStatus) {
        self.identity = identity
        self.role = role
        self.status = status
    }
}

/// Who orders a group's receipts (signs its envelopes).
public enum SequencerAuthority: Hashable, Sendable {
    /// One device sequences.
    case solo(DeviceID)
    /// The voters elect a sequencer per term. Sorted ascending by bytes, unique, 1...9 voters.
    case elected(voters: [DeviceID])
    /// A relay sequences; `address` is "host:port", 1...255 bytes.
    case relay(key: DeviceID, address: String)

    /// The map used both in `group.sequencer_changed` bodies and in the canonical state:
    /// `{"kind": "solo", "device"}`, `{"kind": "elected", "voters"}` or `{"kind": "relay", "key", "address"}`.
    public var cborValue: CBOR {
        switch self {
        case .solo(let device):
            .textMap(["kind": "solo", "device": .bytes(device.bytes)])
        case .elected(let voters):
            .textMap(["kind": "elected", "voters": .array(voters.map { .bytes($0.bytes) })])
        case .relay(let key, let address):
            .textMap(["kind": "relay", "key": .bytes(key.bytes), "address": .text(address)])
        }
    }
}

/// A device a `group.device_revoked` took out of a group: its receipts ordered after it are
/// refused (docs/PROTOCOL.md §9.4). It names the identity too: a revocation applies only to a
/// device certified by the identity that signed it.
public struct GroupRevokedDevice: Hashable, Sendable, Comparable {
    /// The identity that revoked the device (and certified it).
    public let identity: IdentityID
    /// The revoked device.
    public let device: DeviceID

    /// The pair as given.
    public init(identity: IdentityID, device: DeviceID) {
        self.identity = identity
        self.device = device
    }

    /// By identity bytes, then device bytes (the canonical order).
    public static func < (l: Self, r: Self) -> Bool {
        l.identity != r.identity ? l.identity < r.identity : l.device < r.device
    }
}

/// An encrypted group's keys as its committed receipts set them (docs/PROTOCOL.md §22.5): which
/// epoch keys entity and application bodies may be sealed under now.
public struct GroupEncryption: Hashable, Sendable {
    /// Most keys valid at once: rotations since the last removal beyond it retire the oldest.
    public static let maxValidKeys = 16

    /// Keys a sealed body may use now, oldest first: every rotation since the last member left
    /// or was removed or a device was revoked (which empties the list, so nothing written after
    /// it opens with a key the departed party holds). Several, so that two devices rotating at
    /// once lose no write sealed under either key. Empty: writes wait for a rotation.
    public var validKeys: [EpochKeyID]
    /// Rotations so far: 1 once the first key is set.
    public var epoch: UInt64
    /// Whether members who join later get the keys of earlier epochs (`group.created` setting).
    public var history: Bool

    /// A state as given.
    public init(validKeys: [EpochKeyID] = [], epoch: UInt64 = 0, history: Bool) {
        self.validKeys = validKeys
        self.epoch = epoch
        self.history = history
    }

    /// The newest valid key: what a local write seals under.
    public var currentKey: EpochKeyID? { validKeys.last }

    /// `{"keys": [bstr(16), …], "epoch": uint, "history": bool}`.
    public var cborValue: CBOR {
        .textMap([
            "keys": .array(validKeys.map { .bytes($0.bytes) }), "epoch": .unsigned(epoch), "history": .bool(history),
        ])
    }

    /// Parses `cborValue` (a stored state).
    init?(cborValue v: CBOR) {
        guard case .bool(let history)? = v["history"], let epoch = v["epoch"]?.unsignedValue,
            case .array(let items)? = v["keys"]
        else { return nil }
        var keys: [EpochKeyID] = []
        for item in items {
            guard case .bytes(let b) = item, let id = try? EpochKeyID(bytes: b) else { return nil }
            keys.append(id)
        }
        self.init(validKeys: keys, epoch: epoch, history: history)
    }
}

/// Whether a group still accepts receipts.
public enum GroupStatus: String, CaseIterable, Hashable, Sendable {
    case active, deleted
}

/// Fixed limits of group state, checked when a body is parsed (docs/PROTOCOL.md §9.2).
public enum GroupLimits {
    /// The `max_members` a client proposes when the user gives none.
    public static let defaultMaxMembers = 12
    /// `max_members` must be 1...maxMembersCeiling.
    public static let maxMembersCeiling = 1000
    /// Group names are 1...maxNameBytes bytes of UTF-8.
    public static let maxNameBytes = 128
    /// Entity keys are 1...maxEntityKeyBytes bytes of UTF-8.
    public static let maxEntityKeyBytes = 256
    /// An elected authority has 1...maxVoters voters.
    public static let maxVoters = 9
    /// A relay address is 1...maxRelayAddressBytes bytes of UTF-8.
    public static let maxRelayAddressBytes = 255
    /// An `entity.write` holds 1...maxWriteOperations operations (docs/PROTOCOL.md §9.7).
    public static let maxWriteOperations = 1000
    /// An `entity.write` holds 0...maxWriteConditions conditions.
    public static let maxWriteConditions = 1000
    /// A set operation names 1...maxMergeItems elements, a field operation 1...maxMergeItems fields.
    public static let maxMergeItems = 1000
    /// A value a counter, set or field operation produces encodes to at most this many bytes;
    /// a write that would make a larger one is rejected (the same as a receipt's payload limit).
    public static let maxMergedValueBytes = 65_536
}

/// A group as its committed receipts describe it: the input of `GroupRules.apply`.
public struct GroupState: Hashable, Sendable {
    /// The group this state describes.
    public var group: GroupID
    /// The group's name: 1...`GroupLimits.maxNameBytes` bytes of UTF-8.
    public var name: String
    /// `.deleted` once a `group.deleted` took effect; a deleted group accepts no more receipts.
    public var status: GroupStatus
    /// The seat limit (§9.5): 1...`GroupLimits.maxMembersCeiling`.
    public var maxMembers: Int
    /// The identity that created the group.
    public var createdBy: IdentityID
    /// Who orders the group's receipts (§10.2).
    public var authority: SequencerAuthority
    /// Every identity ever added, whatever its status now. Keyed by `Member.identity`.
    public var members: [IdentityID: Member]
    /// Devices revoked in this group (`group.device_revoked`), whose later receipts are refused.
    public var revokedDevices: Set<GroupRevokedDevice>
    /// Set in an encrypted group (docs/PROTOCOL.md §22.5); nil in a plaintext one.
    public var encryption: GroupEncryption?

    /// A state as given; nothing is checked here (limits are checked when a body is parsed).
    public init(
        group: GroupID, name: String, status: GroupStatus = .active, maxMembers: Int, createdBy: IdentityID,
        authority: SequencerAuthority, members: [IdentityID: Member], revokedDevices: Set<GroupRevokedDevice> = [],
        encryption: GroupEncryption? = nil
    ) {
        self.group = group
        self.name = name
        self.status = status
        self.maxMembers = maxMembers
        self.createdBy = createdBy
        self.authority = authority
        self.members = members
        self.revokedDevices = revokedDevices
        self.encryption = encryption
    }

    /// The entry of `identity`, if it was ever added.
    public func member(_ identity: IdentityID) -> Member? { members[identity] }

    /// The role of `identity` if it is an active member, else nil.
    public func activeRole(of identity: IdentityID) -> Role? {
        guard let m = members[identity], m.status == .active else { return nil }
        return m.role
    }

    /// Members whose status is active and role owner.
    public var activeOwnerCount: Int {
        members.values.count { $0.status == .active && $0.role == .owner }
    }

    /// Seats taken: pending invitations count, so invitations cannot overshoot `maxMembers`.
    public var occupiedSeats: Int {
        members.values.count { $0.status == .active || $0.status == .pending }
    }

    /// All entries, sorted ascending by identity bytes (the order of `canonicalCBOR`).
    public var sortedMembers: [Member] {
        members.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Deterministic CBOR of the state, used for state hashes:
    /// `{"name": text, "status": text, "max_members": uint, "created_by": bstr(32),
    /// "authority": <authority map>, "members": [[identity bstr(32), role text, status text], …]}`
    /// with members sorted by identity bytes, and, only when a device was revoked,
    /// `"revoked_devices": [[identity bstr(32), device bstr(32)], …]` sorted by identity then
    /// device bytes (so states without one hash as before), and, only in an encrypted group,
    /// `"encryption": <GroupEncryption.cborValue>`. The group id is not included: a
    /// state hash is always computed within one group.
    public var canonicalCBOR: CBOR {
        // Sorted explicitly: dictionary order differs between replicas (per-process hash seeds).
        let rows: [CBOR] = members.sorted { $0.key < $1.key }.map { id, m in
            .array([.bytes(id.bytes), .text(m.role.rawValue), .text(m.status.rawValue)])
        }
        // The clamp only keeps a hand-built invalid state from trapping; rules never produce one.
        var map: [String: CBOR] = [
            "name": .text(name),
            "status": .text(status.rawValue),
            "max_members": .unsigned(UInt64(max(maxMembers, 0))),
            "created_by": .bytes(createdBy.bytes),
            "authority": authority.cborValue,
            "members": .array(rows),
        ]
        if !revokedDevices.isEmpty {
            map["revoked_devices"] = .array(
                revokedDevices.sorted().map { .array([.bytes($0.identity.bytes), .bytes($0.device.bytes)]) })
        }
        if let encryption { map["encryption"] = encryption.cborValue }
        return .textMap(map)
    }
}
