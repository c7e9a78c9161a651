import PeerlogEncoding
import PeerlogModel

/// How committed group state is kept in the `groups` table: `{"group": bstr(16), "state": canonicalCBOR}`.
extension GroupState {
    var storedBytes: [UInt8] { CBOREncoder.encode(.textMap(["group": .bytes(group.bytes), "state": canonicalCBOR])) }

    init(storedBytes: [UInt8]) throws {
        let outer = try CBORDecoder.decodeStrict(storedBytes)
        guard let groupBytes = outer["group"]?.bytesValue, let s = outer["state"],
            let name = s["name"]?.textValue, let status = s["status"]?.textValue.flatMap(GroupStatus.init(rawValue:)),
            let maxMembers = s["max_members"]?.unsignedValue, let createdBy = s["created_by"]?.bytesValue,
            let authorityValue = s["authority"], let rows = s["members"]?.arrayValue
        else { throw ReplicaError(.storeCorrupt, "stored group state is malformed") }
        let authority = try SequencerAuthority(cborValue: authorityValue)
        var members = [IdentityID: Member]()
        for row in rows {
            guard let cells = row.arrayValue, cells.count == 3, let id = cells[0].bytesValue,
                let role = cells[1].textValue.flatMap(Role.init(rawValue:)),
                let st = cells[2].textValue.flatMap(MemberStatus.init(rawValue:))
            else { throw ReplicaError(.storeCorrupt, "stored member row is malformed") }
            let identity = try IdentityID(bytes: id)
            members[identity] = Member(identity: identity, role: role, status: st)
        }
        var revoked = Set<GroupRevokedDevice>()
        for row in s["revoked_devices"]?.arrayValue ?? [] {
            guard let cells = row.arrayValue, cells.count == 2, let identity = cells[0].bytesValue,
                let device = cells[1].bytesValue
            else { throw ReplicaError(.storeCorrupt, "stored revoked device row is malformed") }
            revoked.insert(
                GroupRevokedDevice(identity: try IdentityID(bytes: identity), device: try DeviceID(bytes: device)))
        }
        var encryption: GroupEncryption?
        if let e = s["encryption"] {
            guard let parsed = GroupEncryption(cborValue: e) else {
                throw ReplicaError(.storeCorrupt, "stored group encryption is malformed")
            }
            encryption = parsed
        }
        self.init(
            group: try GroupID(bytes: groupBytes), name: name, status: status, maxMembers: Int(maxMembers),
            createdBy: try IdentityID(bytes: createdBy), authority: authority, members: members,
            revokedDevices: revoked, encryption: encryption)
    }
}
