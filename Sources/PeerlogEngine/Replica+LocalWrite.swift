import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Where this device's next receipt in a group goes (docs/PROTOCOL.md §10.3): its author
/// counter and its parents (the group's heads, most recent first).
struct LocalWritePosition {
    var counter: UInt64
    var parents: [CID]
    /// The group has more heads than one receipt may name: a next receipt still has some of
    /// them as heads besides the receipt before it, so it asks the store again.
    var moreHeads: Bool
}

extension Replica {
    /// The position of the next local receipt in `group`, with the HLC moved past the heads'.
    func localWritePosition(in group: GroupID, pipeline p: Pipeline) throws -> LocalWritePosition {
        let counter = try p.db.heldCounter(group: group, author: local.device) + 1
        let heads = try p.db.heads(group: group, limit: Receipt.maxParents + 1)
        if let latest = try p.db.latestHeadHLC(group: group) {
            hlc.withLock { $0.observe(HLCTimestamp(packed: latest), wallMillis: p.now) }
        }
        return LocalWritePosition(counter: counter, parents: Array(heads.prefix(Receipt.maxParents)), moreHeads: heads.count > Receipt.maxParents)
    }

    /// Signs `op` as the receipt at `position`, stores it with its outbox row, and moves
    /// `position` on to the next receipt: its parent is this one, which is then the newest
    /// head and has all the others as ancestors. The caller has checked the rules; settling
    /// (sequencing, when this device is the sequencer) is the caller's.
    func signAndStore(_ op: GroupOperation, to group: GroupID, at position: inout LocalWritePosition, in p: inout Pipeline) throws -> Receipt {
        let stamp = hlc.withLock { $0.now(wallMillis: p.now) }
        // `sign` refuses a payload over `Receipt.maxPayloadBytes`, saying what to do instead.
        let receipt = try local.sign(Receipt.Draft(group: group, type: op.receiptType, counter: position.counter, parents: position.parents, hlc: stamp, body: op.body))
        try p.ingest(receipt: receipt, verified: true)
        try p.db.insertOutbox(kind: "receipt", group: group, cid: receipt.cid, seq: nil, at: p.now)
        position.counter += 1
        position.parents = position.moreHeads ? try p.db.heads(group: group, limit: Receipt.maxParents) : [receipt.cid]
        return receipt
    }
}
