import PeerlogEngine
import PeerlogModel
import PeerlogSync

/// Snapshots sent as blobs (docs/PROTOCOL.md §23.3): a `snapshot` message that references a
/// blob is held back from the session's ingest until the blob transfers have fetched and checked
/// the blob (from the sender or any member that serves it); then the bundle, with the bytes, is
/// ingested as an inline one would be. A blob that makes no progress for
/// `snapshotBlobStallMs` is given up: the snapshot is refused and the session asks for the log.
extension NodeHub {
    /// No chunk of a snapshot's blob for this long (ms): refused, the log follows.
    static let snapshotBlobStallMs: UInt64 = 30_000

    /// One `snapshot` ingest waiting for its blob.
    struct SnapshotAwaitingBlob {
        let connection: UInt64
        let batch: SyncIngest
        let reference: BlobReference
        var heldChunks: Int
        var progressAt: UInt64
    }

    /// Takes out of `actions` the ingests of snapshots sent as blobs, and starts fetching them.
    func holdSnapshotBlobs(_ actions: [SyncAction], on id: UInt64) -> [SyncAction] {
        actions.filter { action in
            guard case .ingest(let batch) = action, let reference = batch.snapshot?.blob else { return true }
            do {
                try replica.wantBlob(reference, for: batch.group, snapshot: true)
            } catch {
                logger.error("cannot fetch the snapshot blob \(reference.id) of group \(batch.group): \(error)")
            }
            logger.info(
                "fetching the snapshot of group \(batch.group) sent as blob \(reference.id) (\(reference.layout.size) bytes)"
            )
            awaitingSnapshotBlobs.append(
                SnapshotAwaitingBlob(
                    connection: id, batch: batch, reference: reference, heldChunks: 0, progressAt: clock()))
            wakeBlobs()
            return false
        }
    }

    /// A blob became whole, or time passed: ingests the snapshots whose blob is here, and
    /// refuses those whose blob stalled. On the executor.
    func settleSnapshotBlobs() {
        guard !awaitingSnapshotBlobs.isEmpty else { return }
        let now = clock()
        var waiting: [SnapshotAwaitingBlob] = []
        for var entry in awaitingSnapshotBlobs {
            let stored = try? replica.storedBlob(entry.reference.id)
            if stored?.complete == true {
                ingest(entry, bytes: try? replica.blobBytes(entry.reference, maxBytes: GroupSnapshot.maxEncodedBytes))
            } else if session(entry.connection) == nil {
                continue  // the session ended: its next one gets a snapshot again
            } else if let held = stored?.held, held > entry.heldChunks {
                entry.heldChunks = held
                entry.progressAt = now
                waiting.append(entry)
            } else if now >= entry.progressAt &+ Self.snapshotBlobStallMs {
                logger.warning(
                    "no part of the snapshot blob \(entry.reference.id) of group \(entry.batch.group) arrived for \(Self.snapshotBlobStallMs / 1000) s: asking for the log"
                )
                ingest(entry, bytes: nil)
            } else {
                waiting.append(entry)
            }
        }
        awaitingSnapshotBlobs = waiting
    }

    /// The held-back ingest, with the snapshot's bytes (nil: none, which refuses it).
    private func ingest(_ entry: SnapshotAwaitingBlob, bytes: [UInt8]?) {
        guard let session = session(entry.connection) else { return }
        perform(session.snapshotBlobFetched(group: entry.batch.group, bytes: bytes), on: entry.connection)
    }
}
