import PeerlogModel
import PeerlogStore

extension Replica {
    /// Changes whenever receipts or envelopes were stored (by this or another process).
    public func changeStamp() throws -> [Int64] { try store.read { try $0.changeStamp() } }

    /// Changes when membership or sequencer authority may have changed (a `group.*` receipt
    /// was stored, removed or committed).
    public func groupOperationStamp() throws -> [Int64] { try store.read { try $0.groupOperationStamp() } }

    /// The group's committed high-water mark alone (cheaper than `vector(of:)`).
    public func committedSeq(of group: GroupID) throws -> UInt64 { try store.read { try $0.committedSeq(group: group) } }

    /// Identities a node lets connect: members of any group we hold (except removed or
    /// departed ones), in the tentative view so a just-invited device is let in.
    public func knownMemberIdentities() throws -> Set<IdentityID> {
        var result = Set<IdentityID>()
        for group in try groupIDs() {
            for view in try members(of: group, view: .tentative) where view.member.status == .active || view.member.status == .pending {
                result.insert(view.member.identity)
            }
        }
        return result
    }
}
