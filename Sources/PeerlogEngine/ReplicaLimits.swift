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
    /// Invalid receipts (failed signature or certificate) kept as evidence per sending peer, and
    /// in all: the newest are kept, the oldest dropped (docs/PROTOCOL.md §10). A flood of
    /// forgeries costs bounded space; `dead-letters` lists the newest 1,000 anyway.
    public var maxEvidencePerPeer: Int = 1_000
    /// …and in all, whoever sent them.
    public var maxEvidence: Int = 10_000
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
    /// The fewest tentative receipts, the earliest by HLC, that a bounded sequencer pass reads
    /// (a relay on a shared store reads at least twice its `maxReservationBatch`), so a pass
    /// costs the same however long the backlog behind it.
    public var sequencingWindow: Int = 1_024
    /// Offline limits (docs/PROTOCOL.md §10.5): most of this device's own writes that may wait
    /// for a seq in one group. An application write that would pass it is refused (nothing
    /// written) until the sequencer commits some; a group can override it
    /// (`Replica.setOfflineLimits`). 100,000 is weeks of heavy app use on a laptop, tens of MB.
    public var maxWaitingLocalWrites: Int = 100_000
    /// …and the oldest age (ms; 30 days) such a waiting write may reach: past it, application
    /// writes are refused until the sequencer commits it. Measured from when this replica
    /// stored the write.
    public var maxWaitingLocalAgeMillis: UInt64 = 30 * 24 * 3_600_000
    /// Group operations (`group.*`) may go this many writes past `maxWaitingLocalWrites`, at any
    /// age: leaving, removing a lost device or deleting the group stay possible at the limit.
    public var offlineGroupOperationReserve: Int = 100

    /// A snapshot of a group's committed state is made in the transaction whose commits cross a
    /// multiple of this many seqs (docs/PROTOCOL.md §23.1); 0 makes none automatically.
    public var snapshotInterval: UInt64 = 10_000
    /// Snapshots kept per group above its floor (the floor's own is always kept).
    public var snapshotsKept: Int = 2

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
