import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

extension Peerlog {
    /// Most operations (and, separately, conditions) in one ``PeerlogTransaction``.
    public static let maxTransactionOperations = GroupLimits.maxWriteOperations

    /// Writes `transaction` as one receipt (`entity.write`) and returns once it is stored. Its
    /// conditions and operations are decided at its committed position, all or none; await
    /// ``outcome(of:)`` for the verdict. Refused at once (nothing written) only
    /// when malformed, over a limit, or outside the group's rules, like any write.
    @discardableResult
    public func write(_ transaction: PeerlogTransaction, in group: GroupID) async throws -> PeerlogWrite {
        guard transaction.operationCount > 0 else {
            throw PeerlogError(.invalidValue, "a transaction needs at least one operation")
        }
        return try await write(.entityWrite(transaction.write), to: group)
    }

    /// Sets `key` to `value` only if `condition` holds at the write's committed position.
    @discardableResult
    public func put<T: Encodable>(
        _ key: String, _ value: T, in group: GroupID, if condition: PeerlogCondition
    ) async throws -> PeerlogWrite {
        var t = PeerlogTransaction()
        t.require(key, condition)
        try t.put(key, value)
        return try await write(t, in: group)
    }

    /// Deletes `key` only if `condition` holds at the write's committed position.
    @discardableResult
    public func delete(_ key: String, in group: GroupID, if condition: PeerlogCondition) async throws -> PeerlogWrite {
        var t = PeerlogTransaction()
        t.require(key, condition)
        t.delete(key)
        return try await write(t, in: group)
    }

    /// Adds `amount` to the counter at `key`; concurrent adds from every device all count.
    @discardableResult
    public func add(_ amount: Int64, to key: String, in group: GroupID) async throws -> PeerlogWrite {
        var t = PeerlogTransaction()
        t.add(key, amount)
        return try await write(t, in: group)
    }

    /// The outcome of `write` as this replica knows it now (it may still be pending).
    public func outcome(of write: PeerlogWrite) async throws -> PeerlogOutcome {
        try await currentOutcome(of: write.cid)
    }

    /// The outcome of the receipt `cid` as known now: for a write made before a restart, or
    /// received from another device. Throws ``PeerlogError/Code/receiptNotFound`` when not held.
    public func currentOutcome(of cid: CID) async throws -> PeerlogOutcome {
        try await call { [self] in
            guard let o = try replica.writeOutcome(of: cid) else {
                throw PeerlogError(.receiptNotFound, "this replica holds no receipt \(cid)")
            }
            return PeerlogOutcome(o)
        }
    }

    /// Waits until `write` is committed or rejected at commit and returns that final outcome.
    /// It waits as long as no sequencer is reached (offline, possibly days): cancel the task, or
    /// use ``finalOutcome(of:timeout:)``, to stop waiting; the write stays either way.
    public func finalOutcome(of write: PeerlogWrite) async throws -> PeerlogOutcome {
        try await finalOutcome(of: write.cid, timeout: nil) ?? .pending(guess: nil)
    }

    /// Waits up to `timeout` (nil: until cancelled) for the receipt `cid` to be committed or
    /// rejected; returns the final outcome, or nil when the time ran out first.
    public func finalOutcome(of cid: CID, timeout: Duration?) async throws -> PeerlogOutcome? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let seen = signal.generation
            let now = try await currentOutcome(of: cid)
            if now.isFinal { return now }
            try Task.checkCancellation()
            if let deadline, ContinuousClock.now >= deadline { return nil }
            // Woken by this process's deliveries; another process's (a daemon) are seen by polling.
            let wait = deadline.map { min(PeerlogChanges.pollInterval, $0 - ContinuousClock.now) }
            await signal.wait(after: seen, timeout: max(wait ?? PeerlogChanges.pollInterval, .milliseconds(1)))
        }
    }
}
