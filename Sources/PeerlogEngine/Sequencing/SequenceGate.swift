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
}

extension SequenceGate {
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
