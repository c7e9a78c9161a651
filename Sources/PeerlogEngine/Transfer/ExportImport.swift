import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

#if canImport(Glibc)
import Glibc
#endif

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
            let blobs = try db.wholeBlobs(for: group).filter { blobFiles.exists($0.id) }
            let pieces = blobs.reduce(0) { $0 + Self.pieceCount($1.layout) }
            announce(receiptCount, envelopeCount)
            var header: [(String, JSON)] = [
                ("format", .string(Self.exportFormat)), ("version", .int(Self.exportVersion)),
                ("group", .string(group.string)),
                ("receipts", .int(receiptCount)), ("envelopes", .int(envelopeCount)),
            ]
            if !blobs.isEmpty { header += [("blobs", .int(blobs.count)), ("blob_pieces", .int(pieces))] }
            try emit(JSON.object(header).serialized())
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
            for blob in blobs { try exportBlob(blob, emit: emit) }
            return (receipts, envelopes)
        }
    }

    /// Stored bytes in one `blob_piece` line (64 KiB: its hex fits `maxImportLineBytes`).
    static let blobPieceBytes = 65_536

    static func pieceCount(_ layout: BlobLayout) -> Int {
        Int((layout.storedSize + UInt64(blobPieceBytes) - 1) / UInt64(blobPieceBytes))
    }

    /// A blob's line, then its stored bytes in pieces, in order (docs/PROTOCOL.md §13).
    private func exportBlob(_ blob: StoredBlob, emit: (String) throws -> Void) throws {
        let layout = blob.layout
        try emit(
            JSON.object([
                ("kind", .string("blob")), ("blob", .string(blob.id.string)), ("size", .int(layout.size)),
                ("chunk", .int(layout.chunkBytes)), ("sealed", .bool(layout.sealed)),
                ("format", .int(layout.format.rawValue)),
            ]).serialized())
        var offset: UInt64 = 0
        while offset < layout.storedSize {
            let count = Int(min(UInt64(Self.blobPieceBytes), layout.storedSize - offset))
            let data = try blobFiles.read(blob.id, at: offset, count: count)
            try emit(
                JSON.object([
                    ("kind", .string("blob_piece")), ("blob", .string(blob.id.string)), ("offset", .int(offset)),
                    ("data", .string(hexString(data))),
                ]).serialized())
            offset += UInt64(count)
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
        var blob: BlobImport?
        func endBlob() throws {
            guard let b = blob else { return }
            blob = nil
            try b.finish(into: self, tally: &tally)
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
            case .blob(let id, let layout)?:
                // Blobs come after the log: what references them is in first.
                try flush()
                try endBlob()
                blob = try BlobImport(id: id, layout: layout, group: apply.group, replica: self)
                return
            case .blobPiece(_, _, let data)?:
                try blob?.take(data, replica: self)
                return
            case nil: return
            }
            let items = receipts.count + envelopes.count
            if items >= limits.importChunkItems || chunkBytes >= limits.importChunkBytes {
                // A batched run's items stay in one chunk (at most `EnvelopeRun.maxLength` − 1
                // more), so the store keeps its leaves at once rather than a path per item (§10).
                if envelopes.last?.continuesItsRun == true, items < limits.importChunkItems + Int(EnvelopeRun.maxLength)
                {
                    return
                }
                try flush()
            }
        }
        let found: ExportLineChecker.Counts
        do { found = try apply.finish() } catch { throw Self.changed(error) }
        guard found == expected else {
            throw Self.changed(ReplicaError(.invalidImport, "it holds other lines than when it was checked"))
        }
        try flush()
        try endBlob()
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
        case blob(BlobID, BlobLayout)
        case blobPiece(BlobID, offset: UInt64, data: [UInt8])
    }

    /// Receipt, envelope, blob and blob piece lines: announced by the header, or found.
    struct Counts: Equatable {
        var receipts = 0
        var envelopes = 0
        var blobs = 0
        var blobPieces = 0
    }

    let maxLineBytes: Int
    private var number = 0
    private var announced: Counts?
    private var found = Counts()
    /// The header's group (blobs are kept for it).
    private(set) var group: GroupID?
    /// The blob whose pieces are being read, and the next offset expected.
    private var open: (id: BlobID, layout: BlobLayout, next: UInt64)?

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
            (announced, group) = try Self.header(line, at: at)
            return nil
        }
        let json: JSON
        do { json = try JSON.parse(line) } catch { throw ReplicaError(.invalidImport, "\(at): \(error)") }
        if json["kind"] == .string("blob") {
            try closeBlob(at: at)
            return try blobLine(json, at: at)
        }
        guard case .string(let kind)? = json["kind"], case .string(let hex)? = json["data"],
            let data = PeerlogCrypto.bytes(fromHex: hex)
        else {
            throw ReplicaError(.invalidImport, "\(at): expected {\"kind\", \"data\"}")
        }
        if kind == "blob_piece" { return try piece(json, data, at: at) }
        try closeBlob(at: at)
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
        if let open, open.next != open.layout.storedSize {
            throw ReplicaError(
                .invalidImport, "import: blob \(open.id) ends at byte \(open.next) of \(open.layout.storedSize)")
        }
        guard found == announced else {
            throw ReplicaError(
                .invalidImport,
                "import: the file is incomplete: the header announces \(announced.receipts) receipts, \(announced.envelopes) envelopes, \(announced.blobs) blobs in \(announced.blobPieces) pieces; it holds \(found.receipts), \(found.envelopes), \(found.blobs) and \(found.blobPieces)"
            )
        }
        return found
    }

    /// A `blob` line: the blob whose pieces follow.
    private mutating func blobLine(_ json: JSON, at: String) throws -> Item {
        guard case .string(let text)? = json["blob"], let id = try? BlobID(string: text),
            case .number(let sizeText)? = json["size"], let size = UInt64(sizeText),
            case .number(let chunkText)? = json["chunk"], let chunk = UInt32(chunkText),
            case .bool(let sealed)? = json["sealed"]
        else {
            throw ReplicaError(.invalidImport, "\(at): a blob line has \"blob\", \"size\", \"chunk\" and \"sealed\"")
        }
        // No "format": a file exported before the second format (BLAKE2b).
        let format: BlobFormat?
        switch json["format"] {
        case nil: format = .blake2b
        case .number(let text)?: format = UInt8(text).flatMap(BlobFormat.init(rawValue:))
        default: format = nil
        }
        guard let format else {
            throw ReplicaError(.invalidImport, "\(at): a blob line's \"format\" is 1 or 2 (docs/PROTOCOL.md §24.1)")
        }
        let layout: BlobLayout
        do { layout = try BlobLayout(size: size, chunkBytes: chunk, sealed: sealed, format: format) } catch {
            throw ReplicaError(.invalidImport, "\(at): \(error)")
        }
        found.blobs += 1
        open = (id, layout, 0)
        return .blob(id, layout)
    }

    /// A `blob_piece` line: the next stored bytes of the open blob, in order.
    private mutating func piece(_ json: JSON, _ data: [UInt8], at: String) throws -> Item {
        guard let current = open, json["blob"] == .string(current.id.string),
            case .number(let offsetText)? = json["offset"], let offset = UInt64(offsetText), offset == current.next,
            !data.isEmpty, data.count <= Replica.blobPieceBytes,
            offset + UInt64(data.count) <= current.layout.storedSize
        else {
            throw ReplicaError(
                .invalidImport,
                "\(at): a blob_piece follows its blob line, in order, with 1…\(Replica.blobPieceBytes) bytes within the blob"
            )
        }
        found.blobPieces += 1
        open?.next = offset + UInt64(data.count)
        return .blobPiece(current.id, offset: offset, data: data)
    }

    /// Before any other line: the open blob's pieces must be complete.
    private mutating func closeBlob(at: String) throws {
        guard let current = open else { return }
        guard current.next == current.layout.storedSize else {
            throw ReplicaError(
                .invalidImport, "\(at): blob \(current.id) ends at byte \(current.next) of \(current.layout.storedSize)"
            )
        }
        open = nil
    }

    private static func header(_ line: String, at: String) throws -> (Counts, GroupID?) {
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
        // Optional: an export without blobs has neither.
        var counts = Counts(receipts: receipts, envelopes: envelopes)
        for (key, path) in [("blobs", \Counts.blobs), ("blob_pieces", \Counts.blobPieces)] {
            guard let value = header[key] else { continue }
            guard case .number(let n) = value, let count = Int(n), count >= 0 else {
                throw ReplicaError(.invalidImport, "\(at): \"\(key)\" must be a count")
            }
            counts[keyPath: path] = count
        }
        let group: GroupID? = if case .string(let g)? = header["group"] { try? GroupID(string: g) } else { nil }
        return (counts, group)
    }
}

/// One blob of an import being written: its pieces are gathered into chunks, each hashed and
/// written to a temporary file; at the end the hashes must give the blob's id, and only then
/// does the file become the blob (docs/PROTOCOL.md §13).
struct BlobImport {
    let id: BlobID
    let layout: BlobLayout
    let group: GroupID?
    /// Held whole already: the pieces are read and dropped.
    let held: Bool
    let temporary: String
    var chunk: [UInt8] = []
    var index = 0
    var hashes: [UInt8] = []

    init(id: BlobID, layout: BlobLayout, group: GroupID?, replica: Replica) throws {
        self.id = id
        self.layout = layout
        self.group = group
        held = try replica.storedBlob(id)?.complete == true && replica.blobFiles.exists(id)
        temporary = replica.blobFiles.directory + "/.import-\(getpid())-\(id.hex)"
        if !held { unlink(temporary) }
    }

    mutating func take(_ data: [UInt8], replica: Replica) throws {
        guard !held else { return }
        chunk += data
        while index < layout.chunkCount, chunk.count >= layout.storedBytes(ofChunk: index) {
            let size = layout.storedBytes(ofChunk: index)
            try chunk.withUnsafeBytes { b in
                let stored = UnsafeRawBufferPointer(rebasing: b[0..<size])
                hashes += layout.chunkHash(stored)
                try replica.blobFiles.writeFile(temporary, stored, at: layout.storedOffset(ofChunk: index))
            }
            chunk.removeFirst(size)
            index += 1
        }
    }

    func finish(into replica: Replica, tally: inout ImportTally) throws {
        if held {
            tally.blobs += 1
            return
        }
        guard index == layout.chunkCount, chunk.isEmpty, layout.id(hashes: hashes) == id else {
            unlink(temporary)
            tally.refuseBlob("blob \(id): its bytes do not hash to its id (the file was changed); not kept")
            return
        }
        try replica.adoptImportedBlob(id, layout: layout, hashes: hashes, from: temporary, group: group)
        tally.blobs += 1
    }
}
