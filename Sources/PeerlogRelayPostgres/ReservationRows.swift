#if PostgreSQL
import NIOCore
import PeerlogModel

/// A batch of assignments as the column arrays one `INSERT … SELECT * FROM unnest(…)` takes.
struct ReservationRows: Sendable, CustomStringConvertible {
    let groups: [ByteBuffer]
    let seqs: [Int64]
    let cids: [ByteBuffer]
    let envelopes: [ByteBuffer]
    let receipts: [ByteBuffer]
    let description: String

    init(_ batch: [(envelope: Envelope, receipt: Receipt)]) throws {
        for (e, _) in batch where e.seq > UInt64(Int64.max) {
            throw RelayStoreError("seq \(e.seq) does not fit PostgreSQL's BIGINT", code: .outOfRange)
        }
        groups = batch.map { ByteBuffer(bytes: $0.envelope.group.bytes) }
        seqs = batch.map { Int64($0.envelope.seq) }
        cids = batch.map { ByteBuffer(bytes: $0.envelope.receipt.bytes) }
        envelopes = batch.map { ByteBuffer(bytes: $0.envelope.encoded) }
        receipts = batch.map { ByteBuffer(bytes: $0.receipt.encoded) }
        let groupIDs = Set(batch.map(\.envelope.group))
        let span =
            seqs.isEmpty
            ? "no seq" : seqs.count == 1 ? "seq \(seqs[0])" : "\(seqs.count) seqs \(seqs.min()!)…\(seqs.max()!)"
        description = span + (groupIDs.count == 1 ? " of group \(groupIDs.first!)" : " of \(groupIDs.count) groups")
    }
}
#endif
