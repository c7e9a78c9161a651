import PeerlogModel
import PeerlogStore

/// The assignments of a relay pass that a shared store (`SequenceGate`) has not admitted yet
/// (docs/PROTOCOL.md §19.3). They are committed locally inside a savepoint and reserved
/// together; if the store refuses them, the savepoint and the pipeline's memory (report,
/// caches, overlay notes) go back to where the batch began, so none of it is left behind.
struct GatedBatch {
    static let savepoint = "peerlog_gated_batch"
    var entries: [(envelope: Envelope, receipt: Receipt)] = []
    /// The pipeline as it was when the savepoint opened (nil: no savepoint open).
    var start: Pipeline?
}

extension Pipeline {
    /// Opens a savepoint and remembers the pipeline, unless a batch is already open.
    mutating func openGatedBatch(_ batch: inout GatedBatch) throws {
        guard batch.start == nil else { return }
        batch.start = self
        try db.beginSavepoint(GatedBatch.savepoint)
    }

    /// Reserves the batch's assignments in one call. True when admitted (its work stays); false
    /// when refused: the work since the savepoint is undone and `group` is marked contended.
    /// A failing gate undoes it too, then the error goes on (and fails the transaction).
    mutating func closeGatedBatch(_ batch: inout GatedBatch, gate: any SequenceGate, group: GroupID) throws -> Bool {
        guard let start = batch.start else { return true }
        let entries = batch.entries
        batch = GatedBatch()
        let answer: SequenceReservation
        do {
            answer = entries.isEmpty ? .reserved : try gate.reserve(entries)
        } catch {
            try? undoGatedBatch(to: start)  // the transaction fails with the gate's error anyway
            throw error
        }
        guard answer == .taken else {
            try db.releaseSavepoint(GatedBatch.savepoint)
            return true
        }
        try undoGatedBatch(to: start)
        report.contended.insert(group)
        return false
    }

    private mutating func undoGatedBatch(to start: Pipeline) throws {
        try db.rollbackToSavepoint(GatedBatch.savepoint)
        self = start
    }
}
