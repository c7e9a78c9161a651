import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Where this device's next receipt in a group goes (docs/PROTOCOL.md §10.3): its author
/// counter and its parents (the group's heads, most recent first, at most `Receipt.maxParents`).
struct LocalWritePosition {
    var counter: UInt64
    var parents: [CID]
    /// Heads the parents leave out (the group had more than `Receipt.maxParents`), newest first.
    var unnamedHeads: [CID]

    /// Moves on past the receipt `cid` written here. It is then the newest head, and every
    /// other held receipt is its ancestor except the heads it left out, so the next receipt
    /// names it and as many of those as fit: what the store's heads would say.
    mutating func advance(past cid: CID) {
        counter += 1
        let more = unnamedHeads.prefix(Receipt.maxParents - 1)
        parents = [cid] + more
        unnamedHeads.removeFirst(more.count)
    }
}

extension Replica {
    /// The position of the next local receipt in `group`, with the HLC moved past the heads'.
    /// `forMore`: receipts will follow it, so keep the heads it leaves out.
    func localWritePosition(in group: GroupID, pipeline p: Pipeline, forMore: Bool = false) throws -> LocalWritePosition
    {
        let counter = try p.db.heldCounter(group: group, author: local.device) + 1
        var heads = try p.db.heads(group: group, limit: Receipt.maxParents + 1)
        if forMore, heads.count > Receipt.maxParents { heads = try p.db.heads(group: group, limit: Int.max) }
        if let latest = try p.db.latestHeadHLC(group: group) {
            hlc.withLock { $0.observe(HLCTimestamp(packed: latest), wallMillis: p.now) }
        }
        return LocalWritePosition(
            counter: counter, parents: Array(heads.prefix(Receipt.maxParents)),
            unnamedHeads: Array(heads.dropFirst(Receipt.maxParents)))
    }

    /// The draft of `op` at `position`, with the next HLC (after every earlier local one).
    func localDraft(
        _ op: GroupOperation, to group: GroupID, at position: LocalWritePosition, wall: UInt64
    ) -> Receipt.Draft {
        let stamp = hlc.withLock { $0.now(wallMillis: wall) }
        return Receipt.Draft(
            group: group, type: op.receiptType, counter: position.counter, parents: position.parents, hlc: stamp,
            body: op.body)
    }

    /// Stores a signed local receipt. Settling (sequencing, when this
    /// device is the sequencer) is the caller's.
    func storeLocal(_ receipt: Receipt, in p: inout Pipeline) throws {
        try p.ingest(receipt: receipt, verified: true)
    }

    /// Signs `op` as the receipt at `position`, stores it, and moves `position` past it. The
    /// caller has checked the rules.
    func signAndStore(
        _ op: GroupOperation, to group: GroupID, at position: inout LocalWritePosition, in p: inout Pipeline
    ) throws -> Receipt {
        // `sign` refuses a payload over `Receipt.maxPayloadBytes`, saying what to do instead.
        let receipt: Receipt
        do { receipt = try local.sign(localDraft(op, to: group, at: position, wall: p.now)) } catch let e as ModelError
            where e.code == .sizeLimitExceeded
        { throw ReplicaError(.payloadTooLarge, e.detail) }
        try storeLocal(receipt, in: &p)
        position.advance(past: receipt.cid)
        return receipt
    }
}
