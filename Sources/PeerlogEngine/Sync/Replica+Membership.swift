import PeerlogModel
import PeerlogStore

/// Whom a node lets in and keeps connected: the members and relays of the groups held here.
extension Replica {
    /// Identities a node lets connect: members of any group we hold (except removed or
    /// departed ones), in the tentative view so a just-invited device is let in.
    package func knownMemberIdentities() throws -> Set<IdentityID> {
        try membership(of: groupIDs()).values.reduce(into: Set()) { $0.formUnion($1.members) }
    }
}

extension Replica {
    /// The relays named (in the tentative view) by groups where this identity is a pending or
    /// active member, other than this device itself: a node keeps them connected and lets them in.
    package func relayEndpoints() throws -> Set<RelayEndpoint> {
        Set(try membership(of: groupIDs()).values.compactMap(\.relay))
    }
}

extension Replica {
    /// Per group, what `knownMemberIdentities()` and `relayEndpoints()` gather over all of
    /// them: a node keeps these and re-reads only the groups that changed. A group not held
    /// maps to nothing.
    package func membership(of groups: [GroupID]) throws -> [GroupID: GroupMembershipSummary] {
        var out = [GroupID: GroupMembershipSummary]()
        for group in groups where try knowsGroup(group) {
            var summary = GroupMembershipSummary()
            for view in try members(of: group, view: .tentative)
            where view.member.status == .active || view.member.status == .pending {
                summary.members.insert(view.member.identity)
            }
            if let state = try state(of: group, view: .tentative), state.status == .active,
                case .relay(let key, let address) = state.authority, key != local.device,
                let me = state.members[local.identity], me.status == .active || me.status == .pending
            {
                summary.relay = RelayEndpoint(key: key, address: address)
            }
            out[group] = summary
        }
        return out
    }
}

/// One group's part of who a node lets in: its pending and active members, and the relay it
/// names when this identity is one of them.
package struct GroupMembershipSummary: Sendable, Equatable {
    package var members = Set<IdentityID>()
    package var relay: RelayEndpoint?
}
