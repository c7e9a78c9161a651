/// The kinds and outcomes the pipeline stores as text. The raw values are the stored bytes
/// (docs/PROTOCOL.md §10.4 and the store's migrations); never change one.

/// What an `outbox` row announces.
enum OutboxKind: String, Sendable {
    /// A local receipt was stored.
    case receipt
    /// A seq was assigned here (by this device as sequencer).
    case envelope
}
