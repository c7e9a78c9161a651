import PeerlogEngine
import PeerlogModel

/// What `Peerlog.export(group:to:)` wrote.
public struct PeerlogExportCounts: Sendable, Hashable {
    /// Receipts written (signed bytes).
    public let receipts: Int
    /// Sequencer envelopes written (the committed order).
    public let envelopes: Int
}

/// What `Peerlog.import(from:)` did with a file's receipts and envelopes.
public struct PeerlogImportReport: Sendable, Hashable {
    /// New items stored.
    public let stored: Int
    /// Items held already.
    public let duplicates: Int
    /// Receipts committed by the envelopes.
    public let committed: Int
    /// Items waiting for others (a gap in the order or the group's creation).
    public let queued: Int
    /// Items not for this replica.
    public let ignored: Int
    /// Receipts committed without effect, with the group rules' reason.
    public let rejected: [Rejection]

    /// A receipt that had no effect.
    public struct Rejection: Sendable, Hashable {
        /// The receipt.
        public let cid: CID
        /// Why it had no effect.
        public let reason: String
    }
}

extension Peerlog {
    /// Largest export file `import(from:)` reads (1 GiB).
    public static let maxImportBytes = 1 << 30

    /// Writes everything held of `group` to a new file at `path` (JSON lines of signed
    /// receipts and envelopes) for `import(from:)` on another device. An existing file is never
    /// overwritten; the file appears whole or not at all (written aside, then renamed).
    public func export(group: GroupID, to path: String) async throws -> PeerlogExportCounts {
        if FileIO.exists(path) { throw PeerlogError(.file, "\(path) already exists; refusing to overwrite it") }
        var bytes = [UInt8]()
        let counts = try call {
            try requireHeld(group)
            return try replica.export(group: group) { line in
                bytes += line.utf8
                bytes.append(0x0a)
            }
        }
        do { try FileIO.writeNew(bytes, to: path, mode: 0o644) } catch { throw PeerlogError(.file, "\(error)") }
        return PeerlogExportCounts(receipts: counts.receipts, envelopes: counts.envelopes)
    }

    /// Verifies and applies an export file (at most `maxImportBytes`). A malformed file is
    /// refused as a whole, nothing written, and the error names the line; importing the same
    /// file twice changes nothing.
    public func `import`(from path: String) async throws -> PeerlogImportReport {
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path, maxBytes: Self.maxImportBytes) } catch {
            throw PeerlogError(.file, "\(error)")
        }
        // Empty lines are kept so that the line numbers in errors match the file.
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(
            String.init)
        let report: IngestReport
        do { report = try replica.importExport(lines: lines) } catch { throw PeerlogError(.file, "\(path): \(error)") }
        return PeerlogImportReport(
            stored: report.stored, duplicates: report.duplicates, committed: report.committed, queued: report.queued,
            ignored: report.ignored,
            rejected: report.rejected.map { .init(cid: $0.cid, reason: $0.reason) })
    }
}
