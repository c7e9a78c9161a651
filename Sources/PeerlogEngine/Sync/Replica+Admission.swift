import PeerlogModel
import PeerlogStore

extension Replica {
    /// Changes whenever receipts or envelopes were stored (by this or another process).
    package func changeStamp() throws -> [Int64] { try store.read { try $0.changeStamp() } }

    /// Changes when membership or sequencer authority may have changed (a `group.*` receipt
    /// was stored, removed or committed).
    package func groupOperationStamp() throws -> [Int64] { try store.read { try $0.groupOperationStamp() } }

    /// The group's committed high-water mark alone (cheaper than `vector(of:)`).
    public func committedSeq(of group: GroupID) throws -> UInt64 {
        try store.read { try $0.committedSeq(group: group) }
    }

    /// Identities a node lets connect: members of any group we hold (except removed or
    /// departed ones), in the tentative view so a just-invited device is let in.
    package func knownMemberIdentities() throws -> Set<IdentityID> {
        var result = Set<IdentityID>()
        for group in try groupIDs() {
            for view in try members(of: group, view: .tentative)
            where view.member.status == .active || view.member.status == .pending {
                result.insert(view.member.identity)
            }
        }
        return result
    }
}

extension Replica {
    /// The relays named (in the tentative view) by groups where this identity is a pending or
    /// active member, other than this device itself: a node keeps them connected and lets them in.
    package func relayEndpoints() throws -> Set<RelayEndpoint> {
        var result = Set<RelayEndpoint>()
        for group in try groupIDs() {
            guard let state = try state(of: group, view: .tentative), state.status == .active,
                case .relay(let key, let address) = state.authority, key != local.device,
                let me = state.members[local.identity], me.status == .active || me.status == .pending
            else { continue }
            result.insert(RelayEndpoint(key: key, address: address))
        }
        return result
    }
}
