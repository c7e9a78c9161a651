import PeerlogModel

/// Named limits of the replica. Every queue is bounded; every retry has an end.
public struct ReplicaLimits: Sendable {
    /// A pending receipt or envelope goes to dead letters after this many failed retries…
    public var maxPendingRetries: Int = 20
    /// …or when it has waited this long (milliseconds; 7 days).
    public var maxPendingAgeMillis: UInt64 = 7 * 24 * 3_600_000
    /// Most receipts waiting for missing author counters, per group. Beyond it, out-of-order
    /// receipts are refused (not stored) and fetched again later.
    public var maxPendingReceiptsPerGroup: Int = 10_000
    /// Most envelopes waiting for a seq gap to fill, per group.
    public var maxPendingEnvelopesPerGroup: Int = 10_000
    /// A backfill request for the same range is not emitted again within this time (ms).
    public var backfillGuardMillis: UInt64 = 10_000
    /// Most receipts verified and stored in one write transaction by `ingest`.
    public var ingestBatchSize: Int = 2_000
    /// Most operations one `appendBatch` call writes (each its own receipt, all in one
    /// transaction). More is refused before anything is signed: split the batch.
    public var maxBatchOperations: Int = 10_000
    /// Most receipt payload bytes one `appendBatch` call writes, all receipts together (32 MiB):
    /// bounds the transaction's memory and WAL growth. More is refused and nothing is written.
    public var maxBatchPayloadBytes: Int = 32 * 1_048_576
    /// Newest change-log rows kept (docs/PROTOCOL.md §10.4). A consumer whose cursor falls
    /// further behind is told so (a gap) and reloads the state instead of replaying changes.
    public var changeLogRetention: Int = 100_000
    /// Most assignments a relay with a shared store (`SequenceGate`) reserves at once; a longer
    /// pass reserves in several batches. Bounds the shared store's transaction and what one
    /// refusal leaves uncommitted.
    public var maxReservationBatch: Int = 1_000
    /// Longest line an export file may hold (bytes, without its newline): a receipt line is
    /// its container in hex (2 × `Receipt.maxEncodedBytes`) plus its type (inside the payload,
    /// so at most `Receipt.maxPayloadBytes`) and its CID, under 3 × `Receipt.maxEncodedBytes`.
    /// Bounds an import's line buffer; a longer line fails the import before anything is written.
    public var maxImportLineBytes: Int = 3 * Receipt.maxEncodedBytes
    /// Most receipts and envelopes an import ingests per chunk…
    public var importChunkItems: Int = 10_000
    /// …and most container bytes per chunk (8 MiB): with `maxImportLineBytes`, what bounds an
    /// import's memory.
    public var importChunkBytes: Int = 8 * 1_048_576
    /// Most refusals an import lists (with reasons); all are counted, and failed signatures
    /// stay listed by `dead-letters`.
    public var maxListedImportRefusals: Int = 100

    /// Limits as documented on each property, the defaults used when none are given.
    public init() {}
}
