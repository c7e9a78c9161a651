import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Line-oriented JSON export of a group (docs/PROTOCOL.md §13): a header line, one line per
/// receipt (in author-counter order, equivocation evidence after), one line per envelope (in
/// seq order). Lossless: each line carries the exact container bytes in hex. Both directions
/// stream: memory does not grow with the group.
extension Replica {
    /// The header's `format` value; an import whose header lacks it fails with `.invalidImport`.
    public static let exportFormat = "peerlog-export"
    /// The header's `version`; an import of any other version fails with `.invalidImport`.
    public static let exportVersion = 1

    /// Writes the export line by line through `emit`, reading the store through cursors inside
    /// one read transaction (a consistent snapshot); returns (receipts, envelopes) written.
    /// `announce` gets the header's counts before the first line (for progress).
    ///
    /// A group with a floor (docs/PROTOCOL.md §23.2: it started from a snapshot, or was pruned)
    /// holds no complete log below it, and an export of what it holds would not import: refused
    /// with `logIncomplete`, unless `partial` (what is held, for tests and tools).
    @discardableResult
    public func export(
        group: GroupID, partial: Bool = false, announce: (_ receipts: Int, _ envelopes: Int) -> Void = { _, _ in },
        emit: (String) throws -> Void
    ) throws -> (receipts: Int, envelopes: Int) {
        try store.read { db in
            if !partial, let floor = try db.floor(group: group) {
                throw ReplicaError(
                    .logIncomplete,
                    "group \(group) holds no log below seq \(floor.seq) here (it started from a snapshot or was compacted): export it from a device that holds the whole log, or let a new device sync from this one"
                )
            }
            let receiptCount = try db.receiptCount(group: group) + db.equivocationCount(group: group)
            let envelopeCount = try db.envelopeCount(group: group)
            announce(receiptCount, envelopeCount)
            try emit(
                JSON.object([
                    ("format", .string(Self.exportFormat)), ("version", .int(Self.exportVersion)),
                    ("group", .string(group.string)),
                    ("receipts", .int(receiptCount)), ("envelopes", .int(envelopeCount)),
                ]).serialized())
            var receipts = 0
            func line(_ r: Receipt) throws {
                try emit(
                    JSON.object([
                        ("kind", .string("receipt")), ("cid", .string(r.cid.string)), ("type", .string(r.type)),
                        ("data", .string(hexString(r.encoded))),
                    ]).serialized())
                receipts += 1
            }
            try db.forEachReceipt(group: group, line)
            try db.forEachEquivocation(group: group, line)
            var envelopes = 0
            try db.forEachEnvelope(group: group) { e in
                try emit(
                    JSON.object([
                        ("kind", .string("envelope")), ("seq", .int(e.seq)), ("cid", .string(e.receipt.string)),
                        ("data", .string(hexString(e.encoded))),
                    ]).serialized())
                envelopes += 1
            }
            return (receipts, envelopes)
        }
    }

    /// Imports an export held in memory (tests, small tools): `importExport(passes:)` over `lines`.
    public func importExport(lines: [String]) throws -> ImportTally {
        try importExport { _, line in for l in lines { try line(l) } }
    }

    /// Imports an export in two passes over its lines, in constant memory. `passes` is called
    /// twice and must hand every line of the same file to its closure each time, in order
    /// (empty lines too: line numbers in errors count them).
    ///
    /// The first pass checks every line (JSON, hex, container structure, the header and its
    /// counts) and writes nothing: a malformed or incomplete file fails as a whole with
    /// `.invalidImport` naming the line. The second pass verifies signatures and ingests in
    /// chunks (`limits.importChunkItems`, `limits.importChunkBytes`), each chunk durable when
    /// its transactions commit; a file that changes between the passes fails the second pass,
    /// keeping the chunks already taken (each verified on its own). Importing twice changes nothing.
    public func importExport(
        passes: (_ phase: ImportPhase, _ line: (String) throws -> Void) throws -> Void
    ) throws -> ImportTally {
        var check = ExportLineChecker(maxLineBytes: limits.maxImportLineBytes)
        try passes(.checking) { _ = try check.take($0) }
        let expected = try check.finish()

        var apply = ExportLineChecker(maxLineBytes: limits.maxImportLineBytes)
        var tally = ImportTally(maxListedRefusals: limits.maxListedImportRefusals)
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        var chunkBytes = 0
        func flush() throws {
            guard !receipts.isEmpty || !envelopes.isEmpty else { return }
            tally.add(try ingest(receipts: receipts, envelopes: envelopes))
            receipts.removeAll(keepingCapacity: true)
            envelopes.removeAll(keepingCapacity: true)
            chunkBytes = 0
        }
        try passes(.applying) { line in
            let item: ExportLineChecker.Item?
            do { item = try apply.take(line) } catch { throw Self.changed(error) }
            switch item {
            case .receipt(let r)?:
                receipts.append(r)
                chunkBytes += r.encoded.count
            case .envelope(let e)?:
                envelopes.append(e)
                chunkBytes += e.encoded.count
            case nil: return
            }
            if receipts.count + envelopes.count >= limits.importChunkItems || chunkBytes >= limits.importChunkBytes {
                try flush()
            }
        }
        let found: ExportLineChecker.Counts
        do { found = try apply.finish() } catch { throw Self.changed(error) }
        guard found == expected else {
            throw Self.changed(ReplicaError(.invalidImport, "it holds other lines than when it was checked"))
        }
        try flush()
        tally.receiptLines = found.receipts
        tally.envelopeLines = found.envelopes
        return tally
    }

    private static func changed(_ error: any Error) -> ReplicaError {
        ReplicaError(.invalidImport, "the file changed after it was checked (what was taken before stays): \(error)")
    }
}

/// Which pass of `Replica.importExport(passes:)` is reading.
public enum ImportPhase: Sendable, Equatable {
    /// The first pass: every line is checked, nothing written.
    case checking
    /// The second pass: lines are verified and ingested in chunks.
    case applying
}

/// Parses export lines one at a time (docs/PROTOCOL.md §13) and counts them against the header:
/// the state the two import passes share, with no I/O.
struct ExportLineChecker {
    /// A parsed content line.
    enum Item {
        case receipt(Receipt)
        case envelope(Envelope)
    }

    /// Receipt and envelope lines: announced by the header, or found.
    struct Counts: Equatable {
        var receipts = 0
        var envelopes = 0
    }

    let maxLineBytes: Int
    private var number = 0
    private var announced: Counts?
    private var found = Counts()

    init(maxLineBytes: Int) { self.maxLineBytes = maxLineBytes }

    /// Checks the next line; returns the receipt or envelope it holds (nil for the header and
    /// blank lines).
    mutating func take(_ line: String) throws -> Item? {
        number += 1
        let at = "import line \(number)"
        guard line.utf8.count <= maxLineBytes else {
            throw ReplicaError(.invalidImport, "\(at): longer than \(maxLineBytes) bytes (maxImportLineBytes)")
        }
        if line.allSatisfy(\.isWhitespace) { return nil }
        guard announced != nil else {
            announced = try Self.header(line, at: at)
            return nil
        }
        let json: JSON
        do { json = try JSON.parse(line) } catch { throw ReplicaError(.invalidImport, "\(at): \(error)") }
        guard case .string(let kind)? = json["kind"], case .string(let hex)? = json["data"],
            let data = PeerlogCrypto.bytes(fromHex: hex)
        else {
            throw ReplicaError(.invalidImport, "\(at): expected {\"kind\", \"data\"}")
        }
        do {
            switch kind {
            case "receipt":
                found.receipts += 1
                return .receipt(try Receipt(encoded: data))
            case "envelope":
                found.envelopes += 1
                return .envelope(try Envelope(encoded: data))
            default: throw ReplicaError(.invalidImport, "unknown kind \"\(kind)\"")
            }
        } catch { throw ReplicaError(.invalidImport, "\(at): \(error)") }
    }

    /// The counts, once every line was taken; throws if there was no header or the counts
    /// differ from the header's (a file cut off at a line boundary parses: this catches it).
    func finish() throws -> Counts {
        guard let announced else { throw ReplicaError(.invalidImport, "import: the file is empty") }
        guard found == announced else {
            throw ReplicaError(
                .invalidImport,
                "import: the file is incomplete: the header announces \(announced.receipts) receipts and \(announced.envelopes) envelopes, it holds \(found.receipts) and \(found.envelopes)"
            )
        }
        return found
    }

    private static func header(_ line: String, at: String) throws -> Counts {
        let header: JSON
        do { header = try JSON.parse(line) } catch { throw ReplicaError(.invalidImport, "\(at): \(error)") }
        guard header["format"] == .string(Replica.exportFormat) else {
            throw ReplicaError(
                .invalidImport, "\(at): not a peerlog export (no \"format\": \"\(Replica.exportFormat)\")")
        }
        guard header["version"] == .int(Replica.exportVersion) else {
            throw ReplicaError(
                .invalidImport, "\(at): unsupported export version \(header["version"].map(\.description) ?? "?")")
        }
        guard case .number(let r)? = header["receipts"], let receipts = Int(r), receipts >= 0,
            case .number(let e)? = header["envelopes"], let envelopes = Int(e), envelopes >= 0
        else {
            throw ReplicaError(.invalidImport, "\(at): header lacks the receipt and envelope counts")
        }
        return Counts(receipts: receipts, envelopes: envelopes)
    }
}
