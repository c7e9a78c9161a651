import PeerlogModel

/// Where a relay makes each seq assignment durable before committing it, when several relay
/// processes share one store of record (PostgreSQL, docs/PROTOCOL.md §19.3). The gate admits
/// one receipt per (group, seq) and one seq per (group, receipt) across all of them.
public protocol SequenceGate: Sendable {
    /// Records `envelope` with its receipt as seq `envelope.seq` of its group. `.taken` when
    /// another process holds that seq, or that receipt at another seq: the caller stops
    /// assigning in that group until it has caught up from the shared store.
    func reserve(_ envelope: Envelope, receipt: Receipt) throws -> SequenceReservation
}

public enum SequenceReservation: Sendable, Equatable {
    case reserved
    case taken
}
