#if PostgreSQL
import Dispatch
import Logging
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import Synchronization

/// Keeps one relay process's replica caught up with the shared table (§19.3): ingests the rows
/// other processes committed, publishes group history the table lacks, and reruns the
/// sequencer where it stopped on a taken seq. While it runs, the replica's gate driver
/// (`Replica.runSequenceGate`) runs beside it: it reserves the replica's assignments in the
/// table and commits them. Replica work (SQLite, which blocks its thread) runs on a private
/// queue, never on the cooperative pool.
///
/// Another process's assignments arrive as notifications naming their groups (LISTEN, see
/// `PostgresRelayStore.listen`), which this ingests at once; a full pass over every group's
/// heads runs only every `interval`, for lost notifications and for publishing.
public final class PostgresRelayFollower: Sendable {
    /// Rows read or written per query (at most): a pass publishes up to this many of a group's
    /// missing items per gap, and ingests the table's rows in pages of this size.
    public static let pageSize = 1_000
    /// The least time between two passes.
    static let minimumGap: Duration = .milliseconds(50)

    let replica: Replica
    let store: PostgresRelayStore
    let logger: Logger
    let interval: Duration
    private let queue = DispatchQueue(label: "peerlog.relay.follower")
    private let stopped = Atomic<Bool>(false)
    /// The last failure logged, so a server that stays down is said once, not every tick.
    private let lastProblem = Mutex<String?>(nil)

    private let wakeup = FollowerWakeup()

    /// Follows `store` for `replica`, logging failures to `logger`. `interval` is the longest wait
    /// between two full passes (default 1 s); a notification starts a pass sooner, but passes are
    /// at least `minimumGap` (50 ms) apart. Nothing runs until `run()`.
    public init(replica: Replica, store: PostgresRelayStore, logger: Logger, interval: Duration = .seconds(1)) {
        self.replica = replica
        self.store = store
        self.logger = logger
        self.interval = interval
    }

    /// Follows the table, and runs the replica's gate driver, until `stop()` or cancellation.
    public func run() async {
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { [store, wakeup] in await store.listen { wakeup.signal($0) } }
            tasks.addTask { [replica, logger] in
                await replica.runSequenceGate { error in
                    logger.warning("relay store: \(error); assigning again shortly")
                }
            }
            await follow()
            tasks.cancelAll()
        }
    }

    private func follow() async {
        var groups: Set<GroupID>? = nil
        while !stopped.load(ordering: .relaxed), !Task.isCancelled {
            var failed = false
            do {
                if let groups { try await catchUp(groups) } else { try await catchUp() }
                if lastProblem.withLock({ $0 }) != nil {
                    lastProblem.withLock { $0 = nil }
                    logger.notice("PostgreSQL relay store reachable again")
                }
            } catch {
                let text = "\(error)"
                if lastProblem.withLock({ p in
                    defer { p = text }
                    return p != text
                }) {
                    logger.warning("relay store: \(text); retrying")
                }
                failed = true
                try? await Task.sleep(for: .milliseconds(50))
            }
            // Every assignment notifies, this process's own too: under a stream of them, passes
            // are spaced by `minimumGap` (collecting what arrives meanwhile), so the follower
            // reacts at once to a lone assignment but never runs more than 20 passes a second.
            let ended = ContinuousClock.now
            let named = await wakeup.wait(timeout: interval)
            let gap = Self.minimumGap - (ContinuousClock.now - ended)
            if gap > .zero { try? await Task.sleep(for: gap) }
            // After a failed pass the next is a full one: the groups it was given are not lost.
            let more = wakeup.take()
            groups = failed ? nil : named.flatMap { n in more.map { n.union($0) } }
        }
    }

    /// A notified pass: ingest the rows beyond the replica of the groups named, nothing else.
    func catchUp(_ groups: Set<GroupID>) async throws {
        var moved = Set<GroupID>()
        for group in groups.sorted(by: { $0.string < $1.string }) {
            if try await ingest(group, upTo: nil) { moved.insert(group) }
            if store.holdsLease(group), try await takeInHandedOver(group) { moved.insert(group) }
        }
        if !moved.isEmpty {
            let groups = Array(moved)
            try await onQueue { _ = try self.replica.resequence(groups) }
        }
    }

    /// Asks `run()` to return: the follower stops once its current pass and the wait after it
    /// (at most `interval`) end, and `run()` then cancels the listener and the gate driver.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// One pass: ingest what the table holds beyond the replica, publish what the replica holds
    /// beyond the table, resequence the groups that moved.
    public func catchUp() async throws {
        let heads = try await store.heads()
        var moved = Set<GroupID>()
        for (group, span) in heads.sorted(by: { $0.key.string < $1.key.string }) {
            if try await ingest(group, upTo: span.last) { moved.insert(group) }
        }
        // Receipts handed over to a holder that stopped, or whose lease ran out: whoever takes
        // them in here then takes the lease when its gate driver plans the group.
        for group in try await store.groupsToTakeOver().sorted(by: { $0.string < $1.string }) {
            if try await takeInHandedOver(group) { moved.insert(group) }
        }
        for group in try await onQueue({ try self.groupsSequencedHere() }) {
            // What the table lacks: the history below its first row (a relay seq may have been
            // stored before it) and anything committed here above its last.
            var missing = [ClosedRange<UInt64>]()
            if let span = heads[group] {
                if span.first > 1 { missing.append(1...(span.first - 1)) }
                missing.append((span.last + 1)...UInt64.max)
            } else {
                missing.append(1...UInt64.max)
            }
            for range in missing {
                let items = try await onQueue {
                    try self.replica.syncCommitted(group: group, fromSeq: range.lowerBound, limit: Self.pageSize)
                }.filter { range.contains($0.seq) }
                guard !items.isEmpty else { continue }
                try await store.publish(
                    group: group,
                    try items.map { item in
                        (item.seq, try Envelope(encoded: item.envelope).receipt, item.envelope, item.receipt.encoded)
                    })
                moved.insert(group)
            }
        }
        if !moved.isEmpty {
            let groups = Array(moved)
            try await onQueue { _ = try self.replica.resequence(groups) }
        }
    }

    /// Ingests `group`'s rows beyond the replica's committed seq (up to `head`, or as far as the
    /// table goes); true if the replica moved.
    private func ingest(_ group: GroupID, upTo head: UInt64?) async throws -> Bool {
        var local = try await onQueue { try self.replica.committedSeq(of: group) }
        var moved = false
        while head.map({ $0 > local }) ?? true {
            let rows = try await store.entries(group: group, after: local, limit: Self.pageSize)
            guard !rows.isEmpty else { break }
            var receipts = [Receipt]()
            var envelopes = [Envelope]()
            for row in rows {
                do {
                    envelopes.append(try Envelope(encoded: row.envelope))
                    receipts.append(try Receipt(encoded: row.receipt))
                } catch {
                    logger.error("relay store: row seq \(row.seq) of group \(group) does not decode: \(error); skipped")
                }
            }
            let batch = (receipts, envelopes)
            let now = try await onQueue { () throws -> UInt64 in
                _ = try self.replica.ingest(receipts: batch.0, envelopes: batch.1)
                return try self.replica.committedSeq(of: group)
            }
            // Rows the replica cannot apply yet (the group's earlier history is missing
            // here): wait for a member to bring it rather than spin.
            guard now > local else { break }
            local = now
            moved = true
        }
        return moved
    }

    /// Ingests the receipts other processes handed over in `group` (§19.3), in the order they
    /// were handed over, and drops those already settled here (committed or refused); true if
    /// any was new here, so that the group is sequenced again.
    private func takeInHandedOver(_ group: GroupID) async throws -> Bool {
        var after: Int64 = 0
        var fresh = false
        while true {
            let rows = try await store.handedOver(group: group, after: after, limit: Self.pageSize)
            guard let last = rows.last else { return fresh }
            after = last.id
            var receipts = [Receipt]()
            var undecodable = [[UInt8]]()
            for row in rows {
                do { receipts.append(try Receipt(encoded: row.receipt)) } catch {
                    logger.error(
                        "relay store: a receipt handed over in group \(group) does not decode: \(error); dropped")
                    undecodable.append(row.cid)
                }
            }
            let batch = receipts
            // Settled or refused here at ingest (a bad signature, not a member): nothing to assign.
            let (settled, refused) = try await onQueue { () throws -> ([CID], [CID]) in
                let settled = try self.replica.settledAmong(Set(batch.map(\.cid)), group: group)
                let report = try self.replica.ingest(receipts: batch.filter { !settled.contains($0.cid) })
                return (Array(settled), report.rejected.map(\.cid) + report.invalid)
            }
            fresh = fresh || settled.count + refused.count < receipts.count
            try await store.dropHandedOver(group: group, (settled + refused).map(\.bytes) + undecodable)
            guard rows.count == Self.pageSize else { return fresh }
        }
    }

    /// Groups whose committed authority is this relay.
    func groupsSequencedHere() throws -> [GroupID] {
        try replica.groupIDs().filter { g in
            guard case .relay(let key, _)? = try replica.state(of: g, view: .committed)?.authority else { return false }
            return key == replica.local.device
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in queue.async { c.resume(with: Result { try body() }) } }
    }
}
#endif
