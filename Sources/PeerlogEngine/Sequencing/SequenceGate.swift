import PeerlogModel

/// Where a relay makes its seq assignments durable before committing them, when several relay
/// processes share one store of record (PostgreSQL, docs/PROTOCOL.md §19.3). The gate admits
/// one receipt per (group, seq) and one seq per (group, receipt) across all of them. The
/// replica asks it between two transactions, never inside one (`Replica.sequenceThroughGate`).
public protocol SequenceGate: Sendable {
    /// Records each envelope with its receipt as seq `envelope.seq` of its group, all of them or
    /// none: a relay pass reserves its assignments together (one round trip, one durable write).
    /// `.reserved` also when every row already holds exactly these receipts (a retry whose
    /// answer was lost). `.taken` when another process holds one of these seqs, or one of these
    /// receipts at another seq: nothing is recorded, and the caller stops assigning in that
    /// group until it has caught up from the shared store.
    func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) async throws -> SequenceReservation

    /// Whether this process may assign in `group` now. A shared store may lend each group to one
    /// process at a time (a lease, §19.3), so that processes do not race for the same seqs and a
    /// receipt is assigned by one of them only. Safety never rests on the answer: `reserve`
    /// still admits one receipt per seq. The default lends every group to every caller.
    func mayAssign(in group: GroupID) async throws -> Bool

    /// Passes receipts this process holds in `group`, and may not assign, to the process that
    /// may, in the order given (the order they were stored, or planned). The default does
    /// nothing: a gate that always answers `mayAssign` with true is never asked.
    func handOver(_ receipts: [Receipt], of group: GroupID) async throws
}

extension SequenceGate {
    /// Every group is this caller's: true.
    public func mayAssign(in group: GroupID) async throws -> Bool { true }

    /// Nothing to hand over where every group is the caller's.
    public func handOver(_ receipts: [Receipt], of group: GroupID) async throws {}

    /// One assignment alone.
    public func reserve(_ envelope: Envelope, receipt: Receipt) async throws -> SequenceReservation {
        try await reserve([(envelope, receipt)])
    }
}

/// What `SequenceGate.reserve` answers.
public enum SequenceReservation: Sendable, Equatable {
    /// Every assignment of the batch is recorded (or was already, by an earlier attempt).
    case reserved
    /// Another process holds one of the seqs or receipts: nothing was recorded.
    case taken
}
