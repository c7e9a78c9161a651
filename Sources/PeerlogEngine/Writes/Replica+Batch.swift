import Dispatch
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

/// Why `Replica.appendBatch` refused a batch: the operation at `index` (0-based), the
/// reason, and its ``ReplicaError/Code`` (`notAMember`, `payloadTooLarge`, …). Nothing of the
/// batch was written.
public struct BatchError: Error, Hashable, CustomStringConvertible, Sendable {
    /// The refused operation's position in the batch, from 0.
    public let index: Int
    /// Why it was refused: one sentence for people.
    public let reason: String
    /// What kind of refusal, as ``ReplicaError/code`` would say for a single write.
    public let code: ReplicaError.Code

    /// A refusal of the operation at `index`; `code` defaults to `.ruleViolation`.
    public init(index: Int, reason: String, code: ReplicaError.Code = .ruleViolation) {
        self.index = index
        self.reason = reason
        self.code = code
    }

    /// "operation <index>: <reason>".
    public var description: String { "operation \(index): \(reason)" }
}

extension Replica {
    /// Appends `ops` to `group` in one transaction: each its own signed receipt, as `append`
    /// would write them one after the other (counters in order, each receipt the parent of the
    /// next, docs/PROTOCOL.md §10.3), with one commit for all. Every operation is checked
    /// against the group's rules as this replica sees them (the tentative view), the earlier
    /// operations of the batch included, and against the limits, before anything is signed or
    /// stored; if any is refused, nothing is written and a `BatchError` names it. Returns after
    /// the transaction commits, one result per operation, in order. At most
    /// `limits.maxBatchOperations` operations and `limits.maxBatchPayloadBytes` payload bytes
    /// (all receipts together); a batch that would pass the group's offline limits (§10.5) is
    /// refused whole (`offlineLimitReached`).
    @discardableResult
    public func appendBatch(_ ops: [GroupOperation], to group: GroupID) throws -> [AppendResult] {
        guard ops.count <= limits.maxBatchOperations else {
            throw ReplicaError(
                .batchTooLarge,
                "a batch holds at most \(limits.maxBatchOperations) operations (maxBatchOperations), this one \(ops.count): split it into several batches"
            )
        }
        guard !ops.isEmpty else { return [] }
        var receipts = [Receipt]()
        var callers = [Int]()
        let report = try write { p in
            if try p.isTombstoned(group) { throw ReplicaError(.groupDeleted, "group \(group) was deleted") }
            // The whole batch counts: one that would cross an offline limit is refused whole.
            try self.checkOfflineLimits(writing: ops, to: group, pipeline: &p)
            let planned = try self.batchPayloads(ops, to: group, pipeline: &p)
            callers = planned.callers
            receipts = try self.signInParallel(planned.payloads)
            for r in receipts { try self.storeLocal(r, in: &p) }
            // `write` settles once, after this: sequenced here, in this transaction, when this
            // device is the sequencer.
        }
        var seqs = [CID: UInt64]()
        for case .committed(_, let seq, let cid, _, _) in report.events { seqs[cid] = seq }
        // A rotation this device wrote around them (§22.5) is not one of the caller's operations.
        return callers.map { AppendResult(receipt: receipts[$0], seq: seqs[receipts[$0].cid]) }
    }

    /// Checks `ops` as `appendBatch` would, writing nothing (a transaction rolled back): the
    /// group's offline limits for all of them together, then every operation against the rules,
    /// `maxBatchOperations` at a time. For input larger than one batch, checked whole before it
    /// is written in several (`peerlog put --batch`). Throws a `BatchError` whose index counts
    /// in `ops`, or a `ReplicaError`.
    public func checkBatch(_ ops: [GroupOperation], to group: GroupID) throws {
        struct Checked: Error {}
        let now = clock()
        do {
            _ = try store.write { db in
                var p = try Pipeline(db: db, local: local, limits: limits, now: now, gated: sequenceGate != nil)
                if try p.isTombstoned(group) { throw ReplicaError(.groupDeleted, "group \(group) was deleted") }
                try self.checkOfflineLimits(writing: ops, to: group, pipeline: &p)
                for start in stride(from: 0, to: ops.count, by: limits.maxBatchOperations) {
                    let chunk = Array(ops[start..<min(start + limits.maxBatchOperations, ops.count)])
                    do { _ = try self.batchPayloads(chunk, to: group, pipeline: &p) } catch let e as BatchError {
                        throw BatchError(index: start + e.index, reason: e.reason, code: e.code)
                    }
                }
                throw Checked()
            }
        } catch is Checked {}
    }

    /// Checks every operation and makes its receipt payload, chained to the one before by CID.
    /// In an encrypted group a `group.key` rotation joins them (§22.5): before the first sealed
    /// operation when this device holds no key in use, and right after an operation that
    /// leaves the group without one (its creation, a departure), so what follows in the batch
    /// is sealed under the new key. `callers` are the positions of `ops`' own payloads.
    private func batchPayloads(
        _ ops: [GroupOperation], to group: GroupID, pipeline p: inout Pipeline
    ) throws -> (payloads: [[UInt8]], callers: [Int]) {
        // The tentative view as `append` checks it; each op then applies to the state the ones
        // before it left, since each receipt comes after every other it can see (§11).
        var state = try fold(group: group, view: .tentative, db: p.db, entities: .none).state
        var position = try localWritePosition(in: group, pipeline: p, forMore: true)
        var payloads = [[UInt8]]()
        payloads.reserveCapacity(ops.count + 1)
        var payloadBytes = 0
        /// Refuses a payload over `Receipt.maxPayloadBytes`, saying what to do instead, and a
        /// batch over `maxBatchPayloadBytes`.
        func addPayload(_ op: GroupOperation) throws {
            let payload = try Receipt.payload(
                of: localDraft(op, to: group, at: position, wall: p.now), certificate: local.certificate)
            payloadBytes += payload.count
            guard payloadBytes <= limits.maxBatchPayloadBytes else {
                throw ReplicaError(
                    .payloadTooLarge,
                    "the batch's receipts reach \(payloadBytes) payload bytes, over the limit of \(limits.maxBatchPayloadBytes) (maxBatchPayloadBytes): split it into several batches"
                )
            }
            position.advance(past: CID(hashing: payload))
            payloads.append(payload)
        }

        if let content = ops.first(where: \.isSealedInEncryptedGroups),
            let start = try epochStartIfKeyless(before: content, in: group, state: state, in: &p)
        {
            try addPayload(start.rotation)
            state = start.state
        }
        var callers = [Int]()
        callers.reserveCapacity(ops.count)
        for (index, plain) in ops.enumerated() {
            do {
                // Sealed under the group's current key in an encrypted group (§22.5).
                let op = try sealedForWrite(plain, to: group, state: state, counter: position.counter, in: &p)
                // The body as every replica will parse it (shape and GroupLimits), then the rules.
                _ = try GroupOperation(receiptType: op.receiptType, body: op.body)
                let before = state
                state = try GroupRules.apply(op, sender: local.identity, device: local.device, group: group, to: state)
                    .get()
                callers.append(payloads.count)
                try addPayload(op)
                // A new encrypted group needs its first key, and a departure retires the keys in
                // use: a new epoch follows at once, in this transaction (§22.5), written by a
                // member who stays (one who left starts none; those who stay do as they see it).
                if let after = state, let encryption = after.encryption, encryption.validKeys.isEmpty,
                    before?.encryption?.validKeys.isEmpty != true, after.activeRole(of: local.identity) != nil
                {
                    let rotation = GroupOperation.key(try rotation(group, state: after, in: &p))
                    state = try GroupRules.apply(
                        rotation, sender: local.identity, device: local.device, group: group, to: state
                    ).get()
                    try addPayload(rotation)
                }
            } catch {
                throw BatchError(index: index, reason: Self.reason(error), code: Self.code(error))
            }
        }
        return (payloads, callers)
    }

    /// Signs the payloads on all cores, keeping their order.
    private func signInParallel(_ payloads: [[UInt8]]) throws -> [Receipt] {
        let results = Mutex([Result<Receipt, any Error>?](repeating: nil, count: payloads.count))
        let chunks = max(1, min(payloads.count / 64, 32))
        let device = local
        DispatchQueue.concurrentPerform(iterations: chunks) { c in
            var signed = [(Int, Result<Receipt, any Error>)]()
            for i in stride(from: c, to: payloads.count, by: chunks) {
                signed.append(
                    (
                        i,
                        Result {
                            try Receipt.sign(
                                payload: payloads[i], signingKey: device.signingKey, certificate: device.certificate)
                        }
                    ))
            }
            results.withLock { for (i, r) in signed { $0[i] = r } }
        }
        return try results.withLock { $0 }.enumerated().map { i, r in
            do { return try r!.get() } catch {
                throw BatchError(index: i, reason: Self.reason(error), code: Self.code(error))
            }
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case let v as RuleViolation: v.reason
        case let e as ReplicaError: e.description
        case let e as ModelError where e.code == .sizeLimitExceeded: e.detail
        default: "\(error)"
        }
    }

    private static func code(_ error: any Error) -> ReplicaError.Code {
        switch error {
        case let v as RuleViolation: v.code
        case let e as ReplicaError: e.code
        case let e as ModelError where e.code == .sizeLimitExceeded: .payloadTooLarge
        default: .invalidOperation
        }
    }
}
