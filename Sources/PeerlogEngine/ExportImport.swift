import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Line-oriented JSON export of a group (docs/PROTOCOL.md §13): a header line, one line per
/// receipt (in author-counter order, equivocation evidence included), one line per envelope
/// (in seq order). Lossless: each line carries the exact container bytes in hex.
extension Replica {
    /// The header's `format` value; an import whose header lacks it fails with `.invalidImport`.
    public static let exportFormat = "peerlog-export"
    /// The header's `version`; an import of any other version fails with `.invalidImport`.
    public static let exportVersion = 1

    /// Writes the export line by line through `emit`; returns (receipts, envelopes) written.
    @discardableResult
    public func export(group: GroupID, emit: (String) throws -> Void) throws -> (receipts: Int, envelopes: Int) {
        try store.read { db in
            let receipts =
                try db.allReceipts(group: group).map(\.receipt).sorted {
                    $0.author != $1.author ? $0.author < $1.author : $0.counter < $1.counter
                } + (try db.equivocations(group: group))
            let hwm = try db.committedSeq(group: group)
            try emit(
                JSON.object([
                    ("format", .string(Self.exportFormat)), ("version", .int(Self.exportVersion)),
                    ("group", .string(group.string)),
                    ("receipts", .int(receipts.count)), ("envelopes", .int(hwm)),
                ]).serialized())
            for r in receipts {
                try emit(
                    JSON.object([
                        ("kind", .string("receipt")), ("cid", .string(r.cid.string)), ("type", .string(r.type)),
                        ("data", .string(hexString(r.encoded))),
                    ]).serialized())
            }
            var seq: UInt64 = 1
            var count = 0
            while seq <= hwm {
                let page = try db.envelopes(group: group, from: seq, to: min(hwm, seq + 999))
                for e in page {
                    try emit(
                        JSON.object([
                            ("kind", .string("envelope")), ("seq", .int(e.envelope.seq)),
                            ("cid", .string(e.envelope.receipt.string)),
                            ("data", .string(hexString(e.envelope.encoded))),
                        ]).serialized())
                    count += 1
                }
                seq += 1000
            }
            return (receipts.count, count)
        }
    }

    /// Parses an export (all lines) and ingests it: everything is verified; importing twice
    /// changes nothing. A malformed line fails the whole import before anything is written.
    public func importExport(lines: [String]) throws -> IngestReport {
        let content = lines.enumerated().filter { !$0.element.allSatisfy(\.isWhitespace) }
        guard let (headerIndex, headerLine) = content.first else {
            throw ReplicaError(.invalidImport, "import: the file is empty")
        }
        let at = "import line \(headerIndex + 1)"
        let header: JSON
        do { header = try JSON.parse(headerLine) } catch { throw ReplicaError(.invalidImport, "\(at): \(error)") }
        guard header["format"] == .string(Self.exportFormat) else {
            throw ReplicaError(.invalidImport, "\(at): not a peerlog export (no \"format\": \"\(Self.exportFormat)\")")
        }
        guard header["version"] == .int(Self.exportVersion) else {
            throw ReplicaError(
                .invalidImport, "\(at): unsupported export version \(header["version"].map(\.description) ?? "?")")
        }
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        guard case .number(let r)? = header["receipts"], let expectedReceipts = Int(r),
            case .number(let e)? = header["envelopes"], let expectedEnvelopes = Int(e)
        else {
            throw ReplicaError(.invalidImport, "\(at): header lacks the receipt and envelope counts")
        }
        for (index, line) in content.dropFirst() {
            let where_ = "import line \(index + 1)"
            let json: JSON
            do { json = try JSON.parse(line) } catch { throw ReplicaError(.invalidImport, "\(where_): \(error)") }
            guard case .string(let kind)? = json["kind"], case .string(let hex)? = json["data"],
                let data = PeerlogCrypto.bytes(fromHex: hex)
            else {
                throw ReplicaError(.invalidImport, "\(where_): expected {\"kind\", \"data\"}")
            }
            do {
                switch kind {
                case "receipt": receipts.append(try Receipt(encoded: data))
                case "envelope": envelopes.append(try Envelope(encoded: data))
                default: throw ReplicaError(.invalidImport, "unknown kind \"\(kind)\"")
                }
            } catch { throw ReplicaError(.invalidImport, "\(where_): \(error)") }
        }
        // A file cut off at a line boundary parses; the header's counts catch it.
        guard receipts.count == expectedReceipts, envelopes.count == expectedEnvelopes else {
            throw ReplicaError(
                .invalidImport,
                "import: the file is incomplete: the header announces \(expectedReceipts) receipts and \(expectedEnvelopes) envelopes, it holds \(receipts.count) and \(envelopes.count)"
            )
        }
        return try ingest(receipts: receipts, envelopes: envelopes)
    }
}
