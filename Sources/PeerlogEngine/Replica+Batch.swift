import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Why `Replica.appendBatch` refused a batch: the operation at `index` (0-based) and the
/// reason. Nothing of the batch was written.
public struct BatchError: Error, Hashable, CustomStringConvertible, Sendable {
    public let index: Int
    public let reason: String

    public init(index: Int, reason: String) {
        self.index = index
        self.reason = reason
    }

    public var description: String { "operation \(index): \(reason)" }
}

extension Replica {
    /// Appends `ops` to `group` in one transaction: each its own signed receipt, as `append`
    /// would write them one after the other (counters in order, each receipt the parent of the
    /// next, PROTOCOL.md §10.3), with one commit (one fsync) for all. Every operation is checked
    /// against the group's rules as this replica sees them (the tentative view), the earlier
    /// operations of the batch included. If any is refused, nothing is written and a
    /// `BatchError` names it. Returns after the transaction commits, one result per operation,
    /// in order. At most `limits.maxBatchOperations` operations and
    /// `limits.maxBatchPayloadBytes` payload bytes (all receipts together).
    @discardableResult
    public func appendBatch(_ ops: [GroupOperation], to group: GroupID) throws -> [AppendResult] {
        guard ops.count <= limits.maxBatchOperations else {
            throw ReplicaError("a batch holds at most \(limits.maxBatchOperations) operations (maxBatchOperations), this one \(ops.count): split it into several batches")
        }
        guard !ops.isEmpty else { return [] }
        var receipts = [Receipt]()
        receipts.reserveCapacity(ops.count)
        var seqs = [CID: UInt64]()
        _ = try write { p in
            if try p.isTombstoned(group) { throw ReplicaError("group \(group) was deleted") }
            // The tentative view as `append` checks it; each op then applies to the state the
            // ones before it left, since each receipt comes after all the others it can see.
            var state = try self.fold(group: group, view: .tentative, db: p.db, entities: .none).state
            var position = try self.localWritePosition(in: group, pipeline: p)
            var payloadBytes = 0
            for (index, op) in ops.enumerated() {
                do {
                    // The body as every replica will parse it (shape and GroupLimits), then the rules.
                    _ = try GroupOperation(receiptType: op.receiptType, body: op.body)
                    state = try GroupRules.apply(op, sender: self.local.identity, device: self.local.device, group: group, to: state).get()
                    let receipt = try self.signAndStore(op, to: group, at: &position, in: &p)
                    payloadBytes += receipt.payload.count
                    guard payloadBytes <= self.limits.maxBatchPayloadBytes else {
                        throw ReplicaError("the batch's receipts reach \(payloadBytes) payload bytes, over the limit of \(self.limits.maxBatchPayloadBytes) (maxBatchPayloadBytes): split it into several batches")
                    }
                    receipts.append(receipt)
                } catch {
                    throw BatchError(index: index, reason: Self.reason(error))
                }
            }
            // Sequences them here when this device is the sequencer: one pass for the batch.
            try p.settle()
            for case .committed(_, let seq, let cid, _, _) in p.report.events { seqs[cid] = seq }
        }
        return receipts.map { AppendResult(receipt: $0, seq: seqs[$0.cid]) }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case let v as RuleViolation: v.reason
        case let e as ReplicaError: e.description
        default: "\(error)"
        }
    }
}
