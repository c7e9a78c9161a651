import PeerlogEngine
import PeerlogModel

/// What `Peerlog.export(group:to:progress:)` wrote.
public struct PeerlogExportCounts: Sendable, Hashable {
    /// Receipts written (signed bytes).
    public let receipts: Int
    /// Sequencer envelopes written (the committed order).
    public let envelopes: Int
}

/// What `Peerlog.import(from:progress:)` did with a file's receipts and envelopes
/// (docs/PROTOCOL.md §13.2). `everythingTaken` is what the `peerlog import` exit status reports.
public struct PeerlogImportReport: Sendable, Hashable {
    /// Receipt lines in the file (equivocation evidence included).
    public let receipts: Int
    /// Envelope lines in the file.
    public let envelopes: Int
    /// New receipts stored.
    public let stored: Int
    /// Items held already.
    public let duplicates: Int
    /// Receipts committed by the envelopes.
    public let committed: Int
    /// Of `committed`, receipts the group rules rejected: part of the log, with no effect (taken).
    public let ruleRejected: Int
    /// Items waiting for others (a gap in the order or an author's earlier counters).
    public let queued: Int
    /// Receipts kept as evidence of equivocation (taken: the exporter held them the same way).
    public let equivocations: Int
    /// Items for a group deleted on this replica: not taken.
    public let ignored: Int
    /// Items refused: a signature or certificate that fails, an author revoked here, an
    /// envelope not from the group's sequencer or conflicting with a committed seq, a full queue.
    public let refused: Int
    /// Of `refused`, items whose signature or certificate failed (possible forgeries, listed
    /// by `invalidReceipts()`).
    public let invalid: Int
    /// The first refusals (at most 100), with the reason.
    public let refusals: [Refusal]
    /// Blobs taken (docs/PROTOCOL.md §13: written whole after their bytes hashed to their id,
    /// or held already).
    public var blobs = 0
    /// Why blobs were refused (each is counted in `refused` too), at most 100.
    public var blobRefusals: [String] = []

    /// True when every item was taken (nothing refused or ignored): `peerlog import` exits 0
    /// then, 2 otherwise.
    public var everythingTaken: Bool { refused == 0 && ignored == 0 }

    /// An item the import refused.
    public struct Refusal: Sendable, Hashable {
        /// The receipt (for an envelope: the receipt it names).
        public let cid: CID
        /// Why it was refused.
        public let reason: String
    }
}

/// How far an export or import is, for a progress bar.
public struct PeerlogTransferProgress: Sendable, Hashable {
    /// The stage of the work.
    public enum Phase: Sendable, Hashable {
        /// Writing the export (`completed` and `total` count lines).
        case exporting
        /// The import's first pass: checking every line, nothing written (bytes of the file).
        case checking
        /// The import's second pass: verifying and applying (bytes of the file).
        case applying
    }

    /// The stage.
    public let phase: Phase
    /// Done so far in this phase.
    public let completed: Int
    /// All there is to do in this phase.
    public let total: Int
}

extension Peerlog {
    /// A file error as one line: the path and what went wrong (no "key file problem" prefix).
    static func fileError(_ error: any Error) -> PeerlogError {
        PeerlogError(.file, (error as? ModelError)?.detail ?? "\(error)")
    }

    /// Lines between two progress reports.
    static let progressEveryLines = 4_096

    /// Writes everything held of `group` to a new file at `path` (JSON lines of signed
    /// receipts and envelopes) for `import(from:progress:)` on another device. Streams from the
    /// store in constant memory. An existing file is never overwritten; the file appears whole
    /// or not at all (written aside, synced, then linked into place).
    public func export(
        group: GroupID, to path: String, progress: (@Sendable (PeerlogTransferProgress) -> Void)? = nil
    ) async throws -> PeerlogExportCounts {
        if FileIO.exists(path) { throw PeerlogError(.file, "\(path) already exists; refusing to overwrite it") }
        let (counts, lines) = try await call { [self] in
            try requireHeld(group)
            let file: NewFile
            do { file = try NewFile(path: path, mode: 0o644) } catch { throw Self.fileError(error) }
            var total = 0
            var lines = 0
            let counts = try replica.export(group: group, announce: { total = 1 + $0 + $1 }) { line in
                do { try file.write(line: line) } catch { throw Self.fileError(error) }
                lines += 1
                if let progress, lines % Self.progressEveryLines == 0 {
                    progress(PeerlogTransferProgress(phase: .exporting, completed: lines, total: total))
                }
            }
            do { try file.commit() } catch { throw Self.fileError(error) }
            return (counts, lines)
        }
        progress?(PeerlogTransferProgress(phase: .exporting, completed: lines, total: lines))
        return PeerlogExportCounts(receipts: counts.receipts, envelopes: counts.envelopes)
    }

    /// Verifies and applies an export file in two passes, in constant memory: the first
    /// checks every line and writes nothing (a malformed or incomplete file is refused as a
    /// whole, the error naming the line); the second verifies signatures and applies in
    /// chunks. Items refused (a failed signature, …) do not stop the import: they are counted
    /// in the report, whose `everythingTaken` is then false. Importing the same file twice
    /// changes nothing. `path` must be a regular file (it is read twice).
    public func `import`(
        from path: String, progress: (@Sendable (PeerlogTransferProgress) -> Void)? = nil
    ) async throws -> PeerlogImportReport {
        let maxLine = replica.limits.maxImportLineBytes
        let tally: ImportTally
        do {
            tally = try replica.importExport { phase, take in
                let reader = try FileLines(path: path, maxLineBytes: maxLine)
                let stage: PeerlogTransferProgress.Phase = phase == .checking ? .checking : .applying
                while let line = try reader.next() {
                    try take(line)
                    if let progress, reader.lineNumber % Self.progressEveryLines == 0 {
                        progress(PeerlogTransferProgress(phase: stage, completed: reader.offset, total: reader.size))
                    }
                }
                progress?(PeerlogTransferProgress(phase: stage, completed: reader.offset, total: reader.offset))
            }
        } catch let error as ReplicaError where error.code == .invalidImport {
            throw PeerlogError(.file, "\(path): \(error)")
        } catch let error as ModelError {
            throw Self.fileError(error)
        } catch let error as ReplicaError {
            throw PeerlogError(PeerlogError.Code(engine: error.code), error.description)
        } catch let error as PeerlogError {
            throw error
        } catch {
            throw PeerlogError(.storage, "\(error)")
        }
        var report = PeerlogImportReport(
            receipts: tally.receiptLines, envelopes: tally.envelopeLines, stored: tally.stored,
            duplicates: tally.duplicates, committed: tally.committed, ruleRejected: tally.ruleRejected,
            queued: tally.queued, equivocations: tally.equivocations, ignored: tally.ignored, refused: tally.refused,
            invalid: tally.invalid,
            refusals: tally.refusals.map { PeerlogImportReport.Refusal(cid: $0.cid, reason: $0.reason) })
        report.blobs = tally.blobs
        report.blobRefusals = tally.blobRefusals
        return report
    }
}
