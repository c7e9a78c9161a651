import PeerlogEncoding
import PeerlogModel

/// The typed meaning of a receipt's `(type, body)` (docs/PROTOCOL.md §9.1).
///
/// `group.*` and `entity.*` types are reserved: each known one has exactly the body listed
/// there, and an unknown one is refused, so a newer peer's operation is never misread as an
/// application receipt. Everything else is an application receipt with any body.
public enum GroupOperation: Hashable, Sendable {
    /// `group.created` `{"name": text, "max_members": uint}`, and in an encrypted group
    /// `"encryption": {"history": bool}` (docs/PROTOCOL.md §22.5).
    case created(name: String, maxMembers: Int, encryption: GroupEncryptionSettings? = nil)
    /// `group.member_added` `{"identity": bstr(32), "role": text}`: invites `identity`.
    case memberAdded(identity: IdentityID, role: Role)
    /// `group.invite_accepted` `{}`
    case inviteAccepted
    /// `group.member_removed` `{"identity": bstr(32)}`
    case memberRemoved(identity: IdentityID)
    /// `group.member_left` `{}`: leaves, or declines a pending invitation.
    case memberLeft
    /// `group.renamed` `{"name": text}`
    case renamed(name: String)
    /// `group.role_changed` `{"identity": bstr(32), "role": text}`
    case roleChanged(identity: IdentityID, role: Role)
    /// `group.sequencer_changed` `{"authority": <authority map>}` (see `SequencerAuthority.cborValue`).
    case sequencerChanged(SequencerAuthority)
    /// `group.deleted` `{}`
    case deleted
    /// `group.device_revoked` `{"revocation": bstr(container)}`: a device revocation
    /// (docs/PROTOCOL.md §3.6) recorded in the group; receipts of the device ordered after it
    /// are refused (§9.4).
    case deviceRevoked(DeviceRevocation)
    /// `group.key` (docs/PROTOCOL.md §22.4): an epoch key sealed to devices; with `rotate`, the
    /// group's new current key.
    case key(EpochKeyShare)
    /// An entity or application receipt of an encrypted group: `type` and the sealed body
    /// `{"k", "n", "c"}` (§22.3). The rules check it sealed (current key); what it does to
    /// entities is known once opened (`Keyring`).
    case sealed(type: String, body: EncryptedBody)
    /// `entity.put` `{"key": text, "value": any}`
    case entityPut(key: String, value: CBOR)
    /// `entity.delete` `{"key": text}`
    case entityDelete(key: String)
    /// `entity.write` `{"ops": [...], "if": [...]}`: conditions and operations on several keys,
    /// all or none at the write's position (docs/PROTOCOL.md §9.7).
    case entityWrite(EntityWrite)
    /// Any other type; the body is kept as is so the operation round-trips.
    case application(type: String, body: CBOR)

    /// The receipt type of ``sequencerChanged(_:)``.
    public static let sequencerChangedType = "group.sequencer_changed"

    /// The operations whose body is empty (`{}`), by receipt type.
    private static let bodiless: [String: GroupOperation] = [
        "group.invite_accepted": .inviteAccepted, "group.member_left": .memberLeft, "group.deleted": .deleted,
    ]

    /// Parses a receipt's type and body, checking the body's shape and the limits of
    /// `GroupLimits`. The reason of a violation names the type and the offending key.
    public init(receiptType: String, body: CBOR) throws(RuleViolation) {
        let what = "\(receiptType) body"
        switch receiptType {
        case "group.created":
            let encrypted = body["encryption"] != nil
            let f = try BodyFields(
                body, what: what, keys: encrypted ? ["name", "max_members", "encryption"] : ["name", "max_members"])
            self = .created(
                name: try f.text("name"), maxMembers: Int(clamping: try f.uint("max_members")),
                encryption: encrypted
                    ? try GroupEncryptionSettings(parsing: f.fields["encryption"]!, what: "\(what).encryption") : nil)
        case "group.key":
            do { self = .key(try EpochKeyShare(body: body)) } catch {
                throw RuleViolation("\(what): \((error as? ModelError)?.detail ?? "\(error)")", code: .invalidOperation)
            }
        case "group.member_added":
            let f = try BodyFields(body, what: what, keys: ["identity", "role"])
            self = .memberAdded(identity: try f.key("identity"), role: try f.role("role"))
        case "group.member_removed":
            let f = try BodyFields(body, what: what, keys: ["identity"])
            self = .memberRemoved(identity: try f.key("identity"))
        case "group.renamed":
            let f = try BodyFields(body, what: what, keys: ["name"])
            self = .renamed(name: try f.text("name"))
        case "group.role_changed":
            let f = try BodyFields(body, what: what, keys: ["identity", "role"])
            self = .roleChanged(identity: try f.key("identity"), role: try f.role("role"))
        case "group.sequencer_changed":
            let f = try BodyFields(body, what: what, keys: ["authority"])
            self = .sequencerChanged(try SequencerAuthority(parsing: f.fields["authority"]!, what: "\(what).authority"))
        case "group.device_revoked":
            let f = try BodyFields(body, what: what, keys: ["revocation"])
            guard case .bytes(let container) = f.fields["revocation"]!,
                let revocation = try? DeviceRevocation(encoded: container)
            else {
                throw RuleViolation(
                    "\(what): \"revocation\" must be a device revocation container", code: .invalidOperation)
            }
            self = .deviceRevoked(revocation)
        case _ where !receiptType.hasPrefix("group.") && Self.looksSealed(body):
            do { self = .sealed(type: receiptType, body: try EncryptedBody(cbor: body)) } catch {
                throw RuleViolation("\(what): \((error as? ModelError)?.detail ?? "\(error)")", code: .invalidOperation)
            }
        case "entity.put":
            let f = try BodyFields(body, what: what, keys: ["key", "value"])
            self = .entityPut(key: try f.text("key"), value: f.fields["value"]!)
        case "entity.delete":
            let f = try BodyFields(body, what: what, keys: ["key"])
            self = .entityDelete(key: try f.text("key"))
        case EntityWrite.receiptType:
            self = .entityWrite(try EntityWrite(parsing: body, what: what))
        case let type where Self.bodiless[type] != nil:
            _ = try BodyFields(body, what: what, keys: [])
            self = Self.bodiless[type]!
        default:
            guard !Self.isReserved(receiptType) else {
                throw RuleViolation(
                    "unknown receipt type \"\(receiptType)\": group.* and entity.* types are reserved",
                    code: .invalidOperation)
            }
            self = .application(type: receiptType, body: body)
        }
        try validate()
    }

    /// The receipt type this operation is sent as.
    public var receiptType: String {
        switch self {
        case .created: "group.created"
        case .memberAdded: "group.member_added"
        case .inviteAccepted: "group.invite_accepted"
        case .memberRemoved: "group.member_removed"
        case .memberLeft: "group.member_left"
        case .renamed: "group.renamed"
        case .roleChanged: "group.role_changed"
        case .sequencerChanged: Self.sequencerChangedType
        case .deleted: "group.deleted"
        case .deviceRevoked: "group.device_revoked"
        case .key: EpochKeyShare.receiptType
        case .sealed(let type, _): type
        case .entityPut: "entity.put"
        case .entityDelete: "entity.delete"
        case .entityWrite: EntityWrite.receiptType
        case .application(let type, _): type
        }
    }

    /// The receipt body this operation is sent as; `init(receiptType:body:)` gives it back.
    public var body: CBOR {
        switch self {
        case .created(let name, let maxMembers, let encryption):
            // `.int` so an out-of-range value stays visible (and refused) instead of wrapping.
            if let encryption {
                .textMap([
                    "name": .text(name), "max_members": .int(Int64(maxMembers)), "encryption": encryption.cborValue,
                ])
            } else {
                .textMap(["name": .text(name), "max_members": .int(Int64(maxMembers))])
            }
        case .key(let share):
            share.body
        case .sealed(_, let body):
            body.cbor
        case .memberAdded(let identity, let role), .roleChanged(let identity, let role):
            .textMap(["identity": .bytes(identity.bytes), "role": .text(role.rawValue)])
        case .memberRemoved(let identity):
            .textMap(["identity": .bytes(identity.bytes)])
        case .inviteAccepted, .memberLeft, .deleted:
            .map([:])
        case .renamed(let name):
            .textMap(["name": .text(name)])
        case .sequencerChanged(let authority):
            .textMap(["authority": authority.cborValue])
        case .deviceRevoked(let revocation):
            .textMap(["revocation": .bytes(revocation.encoded)])
        case .entityPut(let key, let value):
            .textMap(["key": .text(key), "value": value])
        case .entityDelete(let key):
            .textMap(["key": .text(key)])
        case .entityWrite(let write):
            write.body
        case .application(_, let body):
            body
        }
    }

    /// Checks the limits that the cases' types do not express (lengths, ranges, voter order).
    /// `init(receiptType:body:)` and `GroupRules.apply` both call it, so an operation built
    /// in code is held to the same limits as one parsed from a receipt.
    public func validate() throws(RuleViolation) {
        let what = "\(receiptType) body"
        switch self {
        case .created(let name, let maxMembers, _):
            try Self.checkBytes(name, key: "name", limit: GroupLimits.maxNameBytes, what: what)
            guard (1...GroupLimits.maxMembersCeiling).contains(maxMembers) else {
                throw RuleViolation(
                    "\(what): \"max_members\" must be 1 to \(GroupLimits.maxMembersCeiling), got \(maxMembers)",
                    code: .invalidOperation)
            }
        case .renamed(let name):
            try Self.checkBytes(name, key: "name", limit: GroupLimits.maxNameBytes, what: what)
        case .sequencerChanged(let authority):
            try authority.validate(what: "\(what).authority")
        case .entityPut(let key, _), .entityDelete(let key):
            try Self.checkBytes(key, key: "key", limit: GroupLimits.maxEntityKeyBytes, what: what)
        case .entityWrite(let write):
            try write.validate(what: what)
        case .application(let type, _):
            guard !Self.isReserved(type) else {
                throw RuleViolation(
                    "application receipt type \"\(type)\" uses a reserved prefix (group. or entity.)",
                    code: .invalidOperation)
            }
        case .sealed(let type, _):
            guard !type.hasPrefix("group.") else {
                throw RuleViolation("\(type) receipts are never sealed", code: .invalidOperation)
            }
        case .memberAdded, .inviteAccepted, .memberRemoved, .memberLeft, .roleChanged, .deleted, .deviceRevoked, .key:
            break
        }
    }

    static func isReserved(_ type: String) -> Bool { type.hasPrefix("group.") || type.hasPrefix("entity.") }

    /// Whether a body has the shape of a sealed body: a map with exactly the text keys `k`, `n`
    /// and `c`, all byte strings (§22.3). No plaintext `entity.*` body has it.
    static func looksSealed(_ body: CBOR) -> Bool {
        guard case .map(let m) = body, m.count == 3 else { return false }
        return ["k", "n", "c"].allSatisfy { if case .bytes? = m[.text($0)] { true } else { false } }
    }

    static func checkBytes(_ s: String, key: String, limit: Int, what: String) throws(RuleViolation) {
        let n = s.utf8.count
        guard (1...limit).contains(n) else {
            throw RuleViolation(
                "\(what): \"\(key)\" must be 1 to \(limit) bytes of UTF-8, got \(n)", code: .invalidOperation)
        }
    }
}

extension SequencerAuthority {
    /// Parses and checks an authority map (the inverse of `cborValue`), e.g. from a stored state.
    public init(cborValue: CBOR) throws(RuleViolation) {
        try self.init(parsing: cborValue, what: "authority")
        try validate(what: "authority")
    }

    init(parsing value: CBOR, what: String) throws(RuleViolation) {
        // The kind decides which keys are allowed, so it is read before the exact-keys check.
        guard case .map(let entries) = value else {
            throw RuleViolation("\(what) must be a map", code: .invalidOperation)
        }
        guard let kindValue = entries[.text("kind")] else {
            throw RuleViolation("\(what): missing \"kind\"", code: .invalidOperation)
        }
        guard case .text(let kind) = kindValue else {
            throw RuleViolation("\(what): \"kind\" must be text", code: .invalidOperation)
        }
        switch kind {
        case "solo":
            let f = try BodyFields(value, what: what, keys: ["kind", "device"])
            self = .solo(try f.key("device"))
        case "elected":
            let f = try BodyFields(value, what: what, keys: ["kind", "voters"])
            guard case .array(let items) = f.fields["voters"]! else {
                throw RuleViolation("\(what): \"voters\" must be an array", code: .invalidOperation)
            }
            var voters = [DeviceID]()
            for item in items {
                guard case .bytes(let b) = item, b.count == 32, let id = try? DeviceID(bytes: b) else {
                    throw RuleViolation("\(what): \"voters\" must hold 32-byte byte strings", code: .invalidOperation)
                }
                voters.append(id)
            }
            self = .elected(voters: voters)
        case "relay":
            let f = try BodyFields(value, what: what, keys: ["kind", "key", "address"])
            self = .relay(key: try f.key("key"), address: try f.text("address"))
        default:
            throw RuleViolation("\(what): \"kind\" must be one of solo, elected, relay", code: .invalidOperation)
        }
    }

    func validate(what: String) throws(RuleViolation) {
        switch self {
        case .solo:
            break
        case .elected(let voters):
            guard (1...GroupLimits.maxVoters).contains(voters.count) else {
                throw RuleViolation(
                    "\(what): \"voters\" must hold 1 to \(GroupLimits.maxVoters) devices, got \(voters.count)",
                    code: .invalidOperation)
            }
            // Strictly ascending: one order for every replica, and no device with two votes.
            for (a, b) in zip(voters, voters.dropFirst()) where !(a < b) {
                throw RuleViolation(
                    "\(what): \"voters\" must be sorted ascending by bytes, without duplicates", code: .invalidOperation
                )
            }
        case .relay(_, let address):
            try GroupOperation.checkBytes(address, key: "address", limit: GroupLimits.maxRelayAddressBytes, what: what)
            guard Self.isHostPort(address) else {
                throw RuleViolation(
                    "\(what): \"address\" must be host:port with a port of 1 to 65535", code: .invalidOperation)
            }
        }
    }

    /// A non-empty host, a colon, and a decimal port 1...65535. The last colon splits, so
    /// bracketed IPv6 hosts (`[::1]:4000`) work.
    static func isHostPort(_ address: String) -> Bool {
        let u = Array(address.utf8)
        guard let colon = u.lastIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let port = u[(colon + 1)...]
        guard (1...5).contains(port.count), port.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
        let value = port.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return (1...65_535).contains(value)
    }
}

/// A body map with exactly the given text keys (no missing, no extra), and typed readers.
struct BodyFields {
    let what: String
    let fields: [String: CBOR]

    init(_ value: CBOR, what: String, keys: [String]) throws(RuleViolation) {
        guard case .map(let entries) = value else {
            throw RuleViolation("\(what) must be a map", code: .invalidOperation)
        }
        var fields = [String: CBOR]()
        for (k, v) in entries {
            guard case .text(let key) = k else {
                throw RuleViolation("\(what) must have text keys only", code: .invalidOperation)
            }
            fields[key] = v
        }
        if let missing = keys.first(where: { fields[$0] == nil }) {
            throw RuleViolation("\(what): missing \"\(missing)\"", code: .invalidOperation)
        }
        // Sorted so that the reason is the same on every replica.
        if let extra = fields.keys.filter({ !keys.contains($0) }).sorted().first {
            throw RuleViolation("\(what): unexpected key \"\(extra)\"", code: .invalidOperation)
        }
        self.what = what
        self.fields = fields
    }

    func text(_ key: String) throws(RuleViolation) -> String {
        guard case .text(let s) = fields[key] else {
            throw RuleViolation("\(what): \"\(key)\" must be text", code: .invalidOperation)
        }
        return s
    }

    func uint(_ key: String) throws(RuleViolation) -> UInt64 {
        guard case .unsigned(let v) = fields[key] else {
            throw RuleViolation("\(what): \"\(key)\" must be an unsigned integer", code: .invalidOperation)
        }
        return v
    }

    func key<K: Ed25519KeyID>(_ key: String) throws(RuleViolation) -> K {
        guard case .bytes(let b) = fields[key], b.count == 32, let id = try? K(bytes: b) else {
            throw RuleViolation("\(what): \"\(key)\" must be a 32-byte byte string", code: .invalidOperation)
        }
        return id
    }

    func role(_ key: String) throws(RuleViolation) -> Role {
        guard case .text(let s) = fields[key], let role = Role(rawValue: s) else {
            throw RuleViolation(
                "\(what): \"\(key)\" must be one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))",
                code: .invalidOperation)
        }
        return role
    }
}

/// The encryption settings a `group.created` receipt fixes: `{"history": bool}`.
public struct GroupEncryptionSettings: Hashable, Sendable {
    /// Whether members who join later get the keys of earlier epochs.
    public var history: Bool

    /// Settings as given.
    public init(history: Bool) { self.history = history }

    /// `{"history": bool}`.
    public var cborValue: CBOR { .textMap(["history": .bool(history)]) }

    init(parsing value: CBOR, what: String) throws(RuleViolation) {
        let f = try BodyFields(value, what: what, keys: ["history"])
        guard case .bool(let history) = f.fields["history"]! else {
            throw RuleViolation("\(what): \"history\" must be a boolean", code: .invalidOperation)
        }
        self.history = history
    }
}
