import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// Items of batched runs (docs/PROTOCOL.md §3.5) stored once per run (§10, migration 0018):
/// `envelope_runs` holds a run's header and signature, and its leaves once all its seqs are
/// known; an item's `envelopes` row holds `run_id`, an empty signature (the header's), and as
/// payload its path (32-byte hashes) until the leaves are known, then
/// nothing. Reads rebuild the exact item (`EnvelopeRows`), byte for byte what was signed and sent.
extension StoreDB {
    /// Writes a committed envelope row: a single envelope whole, a run item in the run's form.
    /// `runs`: the run rows this transaction already looked up.
    package func insertEnvelope(
        _ e: Envelope, outcome: CommitOutcome, reason: String?, runs: inout EnvelopeRunRows
    ) throws {
        guard let run = e.run else {
            try insertEnvelopeRow(
                e, runID: nil, payload: e.storedSingle ?? e.payload, signature: e.signature, outcome, reason)
            return
        }
        // Strict decoding (§1) makes an item's payload the canonical encoding of its fields, so
        // the item rebuilt from them is the one received; debug builds check it.
        assert(Self.rebuildsExactly(e, run: run), "envelope item of seq \(e.seq) does not rebuild exactly")
        let known: (id: Int64, hasLeaves: Bool)
        if let found = runs.known[e.signature] {
            known = found
        } else {
            known = try runID(run, signature: e.signature, leaves: nil)
            runs.known[e.signature] = known
        }
        try insertEnvelopeRow(
            e, runID: known.id, payload: known.hasLeaves ? [] : Array(e.path.joined()), signature: [], outcome, reason)
        if !known.hasLeaves && e.seq == run.firstSeq + run.count - 1, try keepLeaves(of: run, id: known.id) {
            runs.known[e.signature] = (known.id, true)
        }
    }

    /// Keeps the leaves of each run whose every seq is among `items` (checked items of one
    /// ingest batch), before they commit: their rows then never hold a path. A run split across
    /// batches gets its leaves when its last seq commits (`keepLeaves`). `leaf`: the item's leaf
    /// when its path was checked against the signed root (`Envelope.checkPosition`); for the
    /// others the leaf is computed here, and the run's root checked.
    package func keepWholeRuns(
        _ items: [(envelope: Envelope, leaf: [UInt8]?)], runs known: inout EnvelopeRunRows
    ) throws {
        struct Signed: Hashable {
            let run: EnvelopeRun.Header
            let signature: [UInt8]
            // The signature alone tells runs apart (equality still compares the header too).
            func hash(into hasher: inout Hasher) { hasher.combine(signature) }
        }
        var runs = [Signed: (leaves: [UInt64: [UInt8]], checked: Bool)]()
        for (e, leaf) in items {
            guard let run = e.run else { continue }
            let signed = Signed(run: run, signature: e.signature)
            runs[signed, default: ([:], true)].leaves[e.seq] =
                leaf ?? EnvelopeRun.leafHash(seq: e.seq, receipt: e.receipt)
            if leaf == nil { runs[signed]!.checked = false }
        }
        for (signed, found) in runs
        where found.leaves.count == Int(signed.run.count) && known.known[signed.signature]?.hasLeaves != true {
            let run = signed.run
            let leaves = (0..<run.count).compactMap { found.leaves[run.firstSeq + $0] }
            // Every seq's path reached the signed root from its own leaf: those are the tree's leaves.
            guard leaves.count == Int(run.count), found.checked || EnvelopeRun.root(leaves: leaves[...]) == run.root
            else { continue }
            known.known[signed.signature] = try runID(run, signature: signed.signature, leaves: leaves)
        }
    }

    /// Signs in the rows `insertUnsignedEnvelope` wrote for the seqs of one run item list
    /// (`EnvelopeRun.sign`'s output, in seq order): one run row with its leaves, and one update
    /// of the items' rows.
    package func setRunForm(_ items: [Envelope]) throws {
        guard let first = items.first, let run = first.run, items.count == Int(run.count) else {
            for e in items { try setEnvelopeForm(e) }  // not one whole run: each item whole
            return
        }
        let leaves = items.map { EnvelopeRun.leafHash(seq: $0.seq, receipt: $0.receipt) }
        let id = try runID(run, signature: first.signature, leaves: leaves).id
        try execute(
            """
            UPDATE envelopes SET run_id = ?, payload = x'', signature = x''
            WHERE group_id = ? AND seq BETWEEN ? AND ?
            """, [id, run.group.bytes.blob, run.firstSeq.sql, (run.firstSeq + run.count - 1).sql])
    }

    private func insertEnvelopeRow(
        _ e: Envelope, runID: Int64?, payload: [UInt8], signature: [UInt8], _ outcome: CommitOutcome,
        _ reason: String?
    ) throws {
        try run(
            """
            INSERT INTO envelopes (group_id, seq, receipt_id, term, payload, signature, outcome, reason, run_id)
            VALUES (?, ?, (SELECT id FROM receipts WHERE cid = ?), ?, ?, ?, ?, ?, ?)
            """,
            .bytes(e.group.bytes), .int(e.seq.sql), .bytes(e.receipt.bytes), .int(e.term.sql), .bytes(payload),
            .bytes(signature), .text(outcome.rawValue), reason.map(Bound.text) ?? .null, runID.map(Bound.int) ?? .null)
    }

    /// The run's row, made if new, and whether it holds the leaves (given here when the caller
    /// has them all).
    private func runID(
        _ run: EnvelopeRun.Header, signature: [UInt8], leaves: [[UInt8]]?
    ) throws -> (id: Int64, hasLeaves: Bool) {
        if let row = try row(
            "SELECT id, leaves IS NOT NULL AS known FROM envelope_runs WHERE group_id = ? AND first_seq = ? AND signature = ?",
            [run.group.bytes.blob, run.firstSeq.sql, signature.blob])
        {
            let (id, known): (Int64, Bool) = (row["id"], row["known"])
            if let leaves, !known { try setLeaves(leaves, of: run, id: id) }
            return (id, known || leaves != nil)
        }
        try execute(
            "INSERT INTO envelope_runs (group_id, first_seq, count, signature, header, leaves) VALUES (?, ?, ?, ?, ?, ?)",
            [
                run.group.bytes.blob, run.firstSeq.sql, run.count.sql, signature.blob, run.payload.blob,
                leaves.map { Array($0.joined()).blob },
            ])
        return (db.lastInsertedRowID, leaves != nil)
    }

    /// Once every seq of the run has its row, keeps the run's leaves and drops the items' paths.
    /// Whether it did.
    private func keepLeaves(of run: EnvelopeRun.Header, id: Int64) throws -> Bool {
        let last = run.firstSeq + run.count - 1
        let rows = try rows(
            """
            SELECT e.seq, r.cid FROM envelopes e JOIN receipts r ON r.id = e.receipt_id
            WHERE e.group_id = ? AND e.seq BETWEEN ? AND ? AND e.run_id = ? ORDER BY e.seq
            """,
            [run.group.bytes.blob, run.firstSeq.sql, last.sql, id])
        guard rows.count == Int(run.count) else { return false }
        let leaves = try rows.map {
            EnvelopeRun.leafHash(seq: UInt64(sql: $0["seq"]), receipt: try CID(bytes: ($0["cid"] as Data).bytes))
        }
        guard EnvelopeRun.root(leaves: leaves[...]) == run.root else { return false }
        try setLeaves(leaves, of: run, id: id)
        return true
    }

    /// Keeps a run's leaves (checked against its signed root) and drops its items' paths, which
    /// reads then rebuild from them.
    private func setLeaves(_ leaves: [[UInt8]], of run: EnvelopeRun.Header, id: Int64) throws {
        try execute("UPDATE envelope_runs SET leaves = ? WHERE id = ?", [Array(leaves.joined()).blob, id])
        try execute(
            """
            UPDATE envelopes SET payload = x''
            WHERE group_id = ? AND seq BETWEEN ? AND ? AND run_id = ? AND length(payload) > 0
            """, [run.group.bytes.blob, run.firstSeq.sql, (run.firstSeq + run.count - 1).sql, id])
    }

    /// Whether the item rebuilt from its run, seq, CID and path is the payload received: any
    /// other encoding (a peer's, not canonical) is kept whole.
    private static func rebuildsExactly(_ e: Envelope, run: EnvelopeRun.Header) -> Bool {
        Envelope(item: run, seq: e.seq, receipt: e.receipt, path: e.path, signature: e.signature).payload == e.payload
    }
}

/// The run rows one transaction found or made, by the run's signature: one lookup per run, not
/// per item. Only for the transaction that filled it (a rolled-back row must not be named).
package struct EnvelopeRunRows {
    var known = [[UInt8]: (id: Int64, hasLeaves: Bool)]()

    package init() {}
}

/// Rebuilds envelopes from rows selected with `columns` from `envelopes e` joined with `join`,
/// computing each run's tree once per reader.
package struct EnvelopeRows {
    /// The columns a read selects for `envelope(_:)`, the receipt's CID by its row.
    package static let columns = columns(cid: "(SELECT cid FROM receipts WHERE id = e.receipt_id)")

    /// The same for a read that joins the receipt already: `cid` names its CID column.
    package static func columns(cid: String) -> String {
        """
        e.seq AS e_seq, \(cid) AS e_cid, e.payload AS ep, e.signature AS es,
        e.run_id AS run_id, e.group_id AS e_group, e.term AS e_term,
        er.header AS run_header, er.signature AS run_signature, er.leaves AS run_leaves
        """
    }
    /// The join a read adds after `FROM envelopes e`.
    package static let join = "LEFT JOIN envelope_runs er ON er.id = e.run_id"

    private var runs = [Int64: (header: EnvelopeRun.Header, paths: [[[UInt8]]]?)]()

    package init() {}

    /// The payload and signature of one row, as sent: a single envelope's put back together
    /// from its stored form (or as stored, when whole), unparsed.
    package mutating func parts(_ row: Row) throws -> (payload: [UInt8], signature: [UInt8]) {
        try parts(NamedEnvelopeColumns(row: row))
    }

    /// The envelope of one row.
    package mutating func envelope(_ row: Row) throws -> Envelope { try envelope(NamedEnvelopeColumns(row: row)) }

    /// `parts` of a row read by position, `columns` selected from column `at` on.
    package mutating func parts(_ row: SteppedRow, at: Int32) throws -> (payload: [UInt8], signature: [UInt8]) {
        try parts(SteppedEnvelopeColumns(row: row, at: at))
    }

    private mutating func parts(_ row: some EnvelopeColumns) throws -> (payload: [UInt8], signature: [UInt8]) {
        guard row.runID != nil else { return (try Self.singlePayload(row), row.signature) }
        let e = try envelope(row)
        return (e.payload, e.signature)
    }

    private mutating func envelope(_ row: some EnvelopeColumns) throws -> Envelope {
        guard let id = row.runID else {
            return try Envelope(payload: Self.singlePayload(row), signature: row.signature)
        }
        let run = try self.run(id, row)
        let seq = row.seq
        let stored = row.storedPayload
        let path: [[UInt8]]
        if !stored.isEmpty {
            path = stride(from: 0, to: stored.count, by: 32).map { Array(stored[$0..<min($0 + 32, stored.count)]) }
        } else if let paths = run.paths, seq >= run.header.firstSeq, seq - run.header.firstSeq < UInt64(paths.count) {
            path = paths[Int(seq - run.header.firstSeq)]
        } else {
            throw StoreError(
                .unknownStoredValue, "envelope row of seq \(seq) has neither its path nor its run's leaves")
        }
        return Envelope(
            item: run.header, seq: seq, receipt: try CID(bytes: row.cid), path: path, signature: row.runSignature)
    }

    /// A single envelope's payload, from its stored form and the row's columns.
    private static func singlePayload(_ row: some EnvelopeColumns) throws -> [UInt8] {
        try Envelope.payload(
            stored: row.storedPayload, group: GroupID(bytes: row.group), seq: row.seq, receipt: CID(bytes: row.cid),
            term: row.term)
    }

    private mutating func run(
        _ id: Int64, _ row: some EnvelopeColumns
    ) throws -> (header: EnvelopeRun.Header, paths: [[[UInt8]]]?) {
        if let known = runs[id] { return known }
        let header = try Decoded.runHeaders.value(row.runHeader)
        var paths: [[[UInt8]]]?
        if let leaves = row.runLeaves, leaves.count == Int(header.count) * 32 {
            let tree = EnvelopeRun.tree(
                leaves: stride(from: 0, to: leaves.count, by: 32).map { Array(leaves[$0..<$0 + 32]) })
            guard tree.root == header.root else {
                throw StoreError(.unknownStoredValue, "envelope run \(id): its leaves do not give its signed root")
            }
            paths = tree.paths
        }
        runs[id] = (header, paths)
        return (header, paths)
    }
}

/// The columns `EnvelopeRows.columns` selects, however the read hands them over.
private protocol EnvelopeColumns {
    var seq: UInt64 { get }
    var cid: [UInt8] { get }
    /// A single envelope's stored form, or a run item's path (empty when the run keeps leaves).
    var storedPayload: [UInt8] { get }
    var signature: [UInt8] { get }
    var runID: Int64? { get }
    var group: [UInt8] { get }
    var term: UInt64 { get }
    var runHeader: [UInt8] { get }
    var runSignature: [UInt8] { get }
    var runLeaves: [UInt8]? { get }
}

/// A GRDB row, by the columns' names.
private struct NamedEnvelopeColumns: EnvelopeColumns {
    let row: Row
    var seq: UInt64 { UInt64(sql: row["e_seq"]) }
    var cid: [UInt8] { (row["e_cid"] as Data).bytes }
    var storedPayload: [UInt8] { (row["ep"] as Data).bytes }
    var signature: [UInt8] { (row["es"] as Data).bytes }
    var runID: Int64? { row["run_id"] }
    var group: [UInt8] { (row["e_group"] as Data).bytes }
    var term: UInt64 { UInt64(sql: row["e_term"]) }
    var runHeader: [UInt8] { (row["run_header"] as Data).bytes }
    var runSignature: [UInt8] { (row["run_signature"] as Data).bytes }
    var runLeaves: [UInt8]? { (row["run_leaves"] as Data?)?.bytes }
}

/// A row read by position, `EnvelopeRows.columns` from column `at` on, in their order.
private struct SteppedEnvelopeColumns: EnvelopeColumns {
    let row: SteppedRow
    let at: Int32
    var seq: UInt64 { row.uint(at) }
    var cid: [UInt8] { row.bytes(at + 1) }
    var storedPayload: [UInt8] { row.bytes(at + 2) }
    var signature: [UInt8] { row.bytes(at + 3) }
    var runID: Int64? { row.optionalInt(at + 4) }
    var group: [UInt8] { row.bytes(at + 5) }
    var term: UInt64 { row.uint(at + 6) }
    var runHeader: [UInt8] { row.bytes(at + 7) }
    var runSignature: [UInt8] { row.bytes(at + 8) }
    var runLeaves: [UInt8]? { row.optionalBytes(at + 9) }
}
