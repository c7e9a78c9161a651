import PeerlogModel
import PeerlogStore

extension Replica {
    /// Up to `limit` change-log rows after `cursor`, oldest first (docs/PROTOCOL.md §10.4).
    /// Every process writing this store adds to the same log, so this sees their changes too.
    public func changes(after cursor: Int64, group: GroupID? = nil, limit: Int = 256) throws -> [ChangeLogRow] {
        try store.read { try $0.changes(after: cursor, group: group, limit: limit) }
    }

    /// The oldest row still held (nil: none) and the newest (0: none ever). A cursor below
    /// `first - 1` has lost rows to retention.
    public func changeLogBounds() throws -> (first: Int64?, last: Int64) {
        try store.read { (try $0.firstChangeID(), try $0.lastChangeID()) }
    }
}
