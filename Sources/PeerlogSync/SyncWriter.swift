import PeerlogEngine
import PeerlogModel

/// What a driver writes on a session's behalf: the batches a peer sent (`SyncAction.ingest`)
/// and the vectors it said it holds (`SyncAction.recordPeerVector`). `Replica` conforms.
public protocol SyncWriter: AnyObject {
    /// Verifies, stores and applies what `peer` sent.
    func ingest(receipts: [Receipt], envelopes: [Envelope], from peer: DeviceID?) throws -> IngestReport
    /// Replaces what `peer` last said it holds of `group` (the `peer_vectors` table).
    func recordPeerVector(peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]) throws
}

extension Replica: SyncWriter {}

extension SyncSession {
    /// For a driver that writes at once, in order: performs each `.ingest` in `actions` with
    /// `writer` and puts what ``ingested(_:)`` returns in its place, and records each
    /// `.recordPeerVector`. Returns the remaining actions (sends, closes, events) in order.
    /// A vector that cannot be recorded is dropped: it is advisory, and the peer's next one
    /// replaces it; a batch that cannot be ingested ends the session (`internal` error).
    public func settle(_ actions: [SyncAction], with writer: some SyncWriter) -> [SyncAction] {
        var out = [SyncAction]()
        out.reserveCapacity(actions.count)
        for action in actions {
            switch action {
            case .ingest(let batch):
                let outcome = Result {
                    try writer.ingest(receipts: batch.receipts, envelopes: batch.envelopes, from: batch.from)
                }
                out += settle(ingested(outcome), with: writer)
            case .recordPeerVector(let v):
                try? writer.recordPeerVector(
                    peer: v.peer, group: v.group, committed: v.committed, authors: v.countersByAuthor)
            case .send, .close, .event:
                out.append(action)
            }
        }
        return out
    }
}

extension PeerVector {
    /// The authors' counters by author (the highest, should the peer list one twice).
    public var countersByAuthor: [DeviceID: UInt64] {
        Dictionary(authors.map { ($0.author, $0.counter) }, uniquingKeysWith: max)
    }
}
