/// The kinds and outcomes the store keeps as text. Each raw value is the stored text: never
/// change one (the frozen migrations and existing files hold them).

/// What a pending or dead-letter item holds (`dead_letters.kind`).
public enum QueuedKind: String, Hashable, Sendable {
    case receipt
    case envelope
}

/// Why the pipeline finished with a receipt without storing it (`processed_receipts.outcome`).
package enum ProcessedOutcome: String, Hashable, Sendable {
    /// Its signature or certificate failed.
    case invalid
    /// Its group is deleted.
    case ignored
    /// It claims a (group, author, counter) another receipt holds: kept as evidence.
    case equivocation
}

/// What a committed receipt did (`envelopes.outcome`).
package enum CommitOutcome: String, Hashable, Sendable {
    case applied
    /// Committed without effect: the committed state did not authorize it (the reason is kept).
    case rejected
}

/// What a backfill request asks for (`backfill_requests.kind`).
package enum BackfillKind: String, Hashable, Sendable {
    /// A range of committed seqs.
    case seq
    /// A range of one author's counters.
    case author
    /// Receipts by CID.
    case cid
}
